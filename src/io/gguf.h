// GGUF v2/v3 model files, read over a memory mapping.
//
// Layout (little-endian): magic "GGUF", u32 version, u64 n_tensors, u64 n_kv, then n_kv
// key/value pairs (string key, u32 value type, value), then n_tensors tensor infos (string
// name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset), padding to `general.alignment`
// (default 32), then the tensor data; each tensor's offset is relative to that data section
// and aligned. Strings are u64 length + bytes (no terminator). Arrays are u32 element type,
// u64 count, elements (arrays of arrays and arrays of strings are allowed).
//
// Open() validates everything up front; afterwards accessors cannot fail on structure, only
// on missing keys or wrong value types (which return a Status naming the key).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "io/mmap_file.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace herd {

enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

const char* GgufTypeName(GgufType type);

// One metadata value. Scalars use the member matching `type`; integers of every width are
// kept in `i` (signed) or `u` (unsigned 64-bit), floats in `f`. Arrays keep their element type
// and elements (possibly arrays themselves).
struct GgufValue {
  GgufType type = GgufType::kUint8;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  bool b = false;
  std::string str;
  GgufType array_type = GgufType::kUint8;
  std::vector<GgufValue> array;

  static GgufValue U32(uint32_t v);
  static GgufValue I32(int32_t v);
  static GgufValue U64(uint64_t v);
  static GgufValue F32(float v);
  static GgufValue Bool(bool v);
  static GgufValue Str(std::string v);
  static GgufValue StrArray(std::vector<std::string> v);
  static GgufValue F32Array(const std::vector<float>& v);
  static GgufValue I32Array(const std::vector<int32_t>& v);

  // For `herd inspect`: arrays show their first `max_array_items` items then "... (N items)";
  // strings are quoted and escaped, cut after `max_string_bytes` bytes with "... (N bytes)".
  std::string ToString(size_t max_array_items = 8, size_t max_string_bytes = SIZE_MAX) const;
  // "u32", "str", "arr[str,32000]", "arr[arr[i32,2],5]".
  std::string TypeString() const;
};

struct GgufTensorInfo {
  std::string name;
  DType type;
  std::vector<int64_t> ne;  // innermost first, as stored
  uint64_t offset;          // relative to the data section
  uint64_t bytes;           // computed from type and shape
};

class GgufCursor;  // gguf_reader.cc: bounds-checked reads over the file bytes

class GgufFile {
 public:
  // Maps `path` and validates header, metadata, tensor infos (known type, shape divisible by
  // the block size, in bounds, aligned, not overlapping). Errors name the file and the problem.
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Same validation over bytes in memory (tests); the buffer is copied.
  static Result<std::unique_ptr<GgufFile>> FromBytes(const std::vector<uint8_t>& bytes,
                                                     const std::string& name = "<memory>");

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const;

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // Typed getters: NotFound if missing, InvalidArgument if the type does not convert.
  // Integer getters accept any integer type whose value fits.
  Result<std::string> GetString(std::string_view key) const;
  Result<uint32_t> GetU32(std::string_view key) const;
  Result<int64_t> GetI64(std::string_view key) const;
  Result<float> GetF32(std::string_view key) const;  // accepts f32/f64 and integers
  Result<bool> GetBool(std::string_view key) const;
  Result<std::vector<std::string>> GetStringArray(std::string_view key) const;
  Result<std::vector<float>> GetF32Array(std::string_view key) const;
  Result<std::vector<int32_t>> GetI32Array(std::string_view key) const;
  // Getters with a default when the key is absent (still an error on a wrong type).
  Result<uint32_t> GetU32Or(std::string_view key, uint32_t dflt) const;
  Result<float> GetF32Or(std::string_view key, float dflt) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;
  // A view of the tensor's bytes inside the mapping (read-only memory: do not write).
  TensorView View(const GgufTensorInfo& info) const;
  const uint8_t* TensorData(const GgufTensorInfo& info) const;

 private:
  GgufFile() = default;
  Status Parse();  // gguf_reader.cc; errors without the path prefix (Open/FromBytes add it)
  Status ParseMetadata(GgufCursor& in, uint64_t n_kv);
  Status ParseTensorInfos(GgufCursor& in, uint64_t n_tensors);
  Status CheckTensorPlacement() const;
  Status TypeError(std::string_view key, const GgufValue& v, const char* expected) const;

  std::string path_;
  MappedFile mapping_;
  std::vector<uint8_t> owned_;  // FromBytes only
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> kv_index_;      // key -> index in kv_
  std::unordered_map<std::string, size_t> tensor_index_;  // name -> index in tensors_
};

// Writes GGUF v3. Tensor data is produced by a callback at Write() time, one tensor at a time,
// so multi-gigabyte models are written without holding them in memory.
class GgufWriter {
 public:
  using FillFn = std::function<void(uint8_t* dst, uint64_t bytes)>;

  void Set(std::string key, GgufValue value);  // replaces an existing key
  void SetAlignment(uint32_t alignment);       // also writes general.alignment
  // ne innermost first; ne[0] must be a multiple of the type's block size.
  void AddTensor(std::string name, DType type, std::vector<int64_t> ne, FillFn fill);
  Status Write(const std::string& path) const;
  std::vector<uint8_t> WriteToBytes() const;  // tests

 private:
  struct PendingTensor {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    FillFn fill;
  };
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<PendingTensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace herd
