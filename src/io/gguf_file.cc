// GgufFile accessors: lookups, typed getters with conversions, tensor views.
#include <cmath>
#include <limits>

#include "io/gguf.h"

namespace herd {

namespace {

bool IsUnsigned(GgufType t) {
  return t == GgufType::kUint8 || t == GgufType::kUint16 || t == GgufType::kUint32 || t == GgufType::kUint64;
}
bool IsSigned(GgufType t) {
  return t == GgufType::kInt8 || t == GgufType::kInt16 || t == GgufType::kInt32 || t == GgufType::kInt64;
}
bool IsFloat(GgufType t) { return t == GgufType::kFloat32 || t == GgufType::kFloat64; }

// The value of an integer-typed `v` if it lies in [lo, hi].
template <typename T>
std::optional<T> IntegerIn(const GgufValue& v) {
  constexpr int64_t lo = static_cast<int64_t>(std::numeric_limits<T>::min());
  constexpr uint64_t hi = static_cast<uint64_t>(std::numeric_limits<T>::max());
  if (IsUnsigned(v.type)) {
    if (v.u > hi) return std::nullopt;
    return static_cast<T>(v.u);
  }
  if (IsSigned(v.type)) {
    if (v.i < lo || (v.i > 0 && static_cast<uint64_t>(v.i) > hi)) return std::nullopt;
    return static_cast<T>(v.i);
  }
  return std::nullopt;
}

std::optional<float> NumberAsFloat(const GgufValue& v) {
  if (IsFloat(v.type)) return static_cast<float>(v.f);
  if (IsUnsigned(v.type)) return static_cast<float>(v.u);
  if (IsSigned(v.type)) return static_cast<float>(v.i);
  return std::nullopt;
}

}  // namespace

uint64_t GgufFile::file_size() const { return size_; }

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Status GgufFile::TypeError(std::string_view key, const GgufValue& v, const char* expected) const {
  return InvalidArgument(path_ + ": key '" + std::string(key) + "' has type " + v.TypeString() + ", expected " +
                         expected);
}

#define HERD_GGUF_FIND_OR_RETURN(v, key) \
  const GgufValue* v = Find(key);        \
  if (v == nullptr) return NotFound(path_ + ": missing key '" + std::string(key) + "'")

Result<std::string> GgufFile::GetString(std::string_view key) const {
  HERD_GGUF_FIND_OR_RETURN(v, key);
  if (v->type != GgufType::kString) return TypeError(key, *v, "str");
  return v->str;
}

Result<uint32_t> GgufFile::GetU32(std::string_view key) const {
  HERD_GGUF_FIND_OR_RETURN(v, key);
  std::optional<uint32_t> x = IntegerIn<uint32_t>(*v);
  if (!x) {
    if (IsUnsigned(v->type) || IsSigned(v->type)) {
      return InvalidArgument(path_ + ": key '" + std::string(key) + "' value " + v->ToString() +
                             " does not fit in u32");
    }
    return TypeError(key, *v, "an integer");
  }
  return *x;
}

Result<int64_t> GgufFile::GetI64(std::string_view key) const {
  HERD_GGUF_FIND_OR_RETURN(v, key);
  std::optional<int64_t> x = IntegerIn<int64_t>(*v);
  if (!x) {
    if (IsUnsigned(v->type)) {
      return InvalidArgument(path_ + ": key '" + std::string(key) + "' value " + v->ToString() +
                             " does not fit in i64");
    }
    return TypeError(key, *v, "an integer");
  }
  return *x;
}

Result<float> GgufFile::GetF32(std::string_view key) const {
  HERD_GGUF_FIND_OR_RETURN(v, key);
  std::optional<float> x = NumberAsFloat(*v);
  if (!x) return TypeError(key, *v, "a number");
  return *x;
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  HERD_GGUF_FIND_OR_RETURN(v, key);
  if (v->type != GgufType::kBool) return TypeError(key, *v, "bool");
  return v->b;
}

Result<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  HERD_GGUF_FIND_OR_RETURN(v, key);
  if (v->type != GgufType::kArray || v->array_type != GgufType::kString) return TypeError(key, *v, "arr[str]");
  std::vector<std::string> out;
  out.reserve(v->array.size());
  for (const GgufValue& s : v->array) out.push_back(s.str);
  return out;
}

Result<std::vector<float>> GgufFile::GetF32Array(std::string_view key) const {
  HERD_GGUF_FIND_OR_RETURN(v, key);
  const bool numeric = IsFloat(v->array_type) || IsUnsigned(v->array_type) || IsSigned(v->array_type);
  if (v->type != GgufType::kArray || !numeric) return TypeError(key, *v, "an array of numbers");
  std::vector<float> out;
  out.reserve(v->array.size());
  for (const GgufValue& x : v->array) out.push_back(*NumberAsFloat(x));
  return out;
}

Result<std::vector<int32_t>> GgufFile::GetI32Array(std::string_view key) const {
  HERD_GGUF_FIND_OR_RETURN(v, key);
  if (v->type != GgufType::kArray || !(IsUnsigned(v->array_type) || IsSigned(v->array_type))) {
    return TypeError(key, *v, "an array of integers");
  }
  std::vector<int32_t> out;
  out.reserve(v->array.size());
  for (size_t k = 0; k < v->array.size(); ++k) {
    std::optional<int32_t> x = IntegerIn<int32_t>(v->array[k]);
    if (!x) {
      return InvalidArgument(path_ + ": key '" + std::string(key) + "' item " + std::to_string(k) + " value " +
                             v->array[k].ToString() + " does not fit in i32");
    }
    out.push_back(*x);
  }
  return out;
}

#undef HERD_GGUF_FIND_OR_RETURN

Result<uint32_t> GgufFile::GetU32Or(std::string_view key, uint32_t dflt) const {
  if (!Has(key)) return dflt;
  return GetU32(key);
}

Result<float> GgufFile::GetF32Or(std::string_view key, float dflt) const {
  if (!Has(key)) return dflt;
  return GetF32(key);
}

const uint8_t* GgufFile::TensorData(const GgufTensorInfo& info) const { return base_ + data_offset_ + info.offset; }

TensorView GgufFile::View(const GgufTensorInfo& info) const {
  TensorView t;
  t.type = info.type;
  for (size_t d = 0; d < info.ne.size() && d < 4; ++d) t.ne[d] = info.ne[d];
  t.data = const_cast<uint8_t*>(TensorData(info));
  return t;
}

}  // namespace herd
