// GGUF v3 writer. The header (metadata + tensor infos) is serialized in memory; tensor data is
// produced one tensor at a time by each tensor's fill callback into one reused buffer (as
// large as the largest tensor) and streamed out, so peak memory is header + largest tensor.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/check.h"
#include "io/gguf.h"

namespace herd {

namespace {

constexpr uint32_t kVersion = 3;

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

class HeaderBuilder {
 public:
  // resize + memcpy rather than insert(): g++ 12 reports a false -Wstringop-overflow on the latter.
  template <typename T>
  void Put(T x) {
    PutBytes(&x, sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    PutBytes(s.data(), s.size());
  }
  void PutBytes(const void* p, size_t n) {
    if (n == 0) return;
    size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, p, n);
  }
  void PutValue(const GgufValue& v) {
    switch (v.type) {
      case GgufType::kUint8: Put(static_cast<uint8_t>(v.u)); break;
      case GgufType::kInt8: Put(static_cast<int8_t>(v.i)); break;
      case GgufType::kUint16: Put(static_cast<uint16_t>(v.u)); break;
      case GgufType::kInt16: Put(static_cast<int16_t>(v.i)); break;
      case GgufType::kUint32: Put(static_cast<uint32_t>(v.u)); break;
      case GgufType::kInt32: Put(static_cast<int32_t>(v.i)); break;
      case GgufType::kUint64: Put(static_cast<uint64_t>(v.u)); break;
      case GgufType::kInt64: Put(static_cast<int64_t>(v.i)); break;
      case GgufType::kFloat32: Put(static_cast<float>(v.f)); break;
      case GgufType::kFloat64: Put(static_cast<double>(v.f)); break;
      case GgufType::kBool: Put(static_cast<uint8_t>(v.b ? 1 : 0)); break;
      case GgufType::kString: PutString(v.str); break;
      case GgufType::kArray:
        Put(static_cast<uint32_t>(v.array_type));
        Put<uint64_t>(v.array.size());
        for (const GgufValue& item : v.array) {
          HERD_CHECK_MSG(item.type == v.array_type, "GGUF array of %s holds a %s item", GgufTypeName(v.array_type),
                         GgufTypeName(item.type));
          PutValue(item);
        }
        break;
    }
  }
  void PadTo(uint64_t alignment) { out_.resize(AlignUp(out_.size(), alignment), 0); }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

// Destination of the serialized file: memory or a FILE*.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status Write(const uint8_t* p, uint64_t n) = 0;
};

class BytesSink : public Sink {
 public:
  explicit BytesSink(std::vector<uint8_t>* out) : out_(out) {}
  Status Write(const uint8_t* p, uint64_t n) override {
    if (n == 0) return Status::Ok();
    size_t at = out_->size();
    out_->resize(at + n);
    std::memcpy(out_->data() + at, p, n);
    return Status::Ok();
  }

 private:
  std::vector<uint8_t>* out_;
};

class FileSink : public Sink {
 public:
  FileSink(std::FILE* f, const std::string& path) : f_(f), path_(path) {}
  Status Write(const uint8_t* p, uint64_t n) override {
    if (n > 0 && std::fwrite(p, 1, n, f_) != n) return IoError(path_ + ": write failed: " + std::strerror(errno));
    return Status::Ok();
  }

 private:
  std::FILE* f_;
  const std::string& path_;
};

}  // namespace

void GgufWriter::Set(std::string key, GgufValue value) {
  if (key == "general.alignment") {
    HERD_CHECK_MSG(value.type == GgufType::kUint32 && value.u != 0 && (value.u & (value.u - 1)) == 0,
                   "general.alignment must be a u32 power of two");
    alignment_ = static_cast<uint32_t>(value.u);
  }
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  kv_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::SetAlignment(uint32_t alignment) { Set("general.alignment", GgufValue::U32(alignment)); }

void GgufWriter::AddTensor(std::string name, DType type, std::vector<int64_t> ne, FillFn fill) {
  HERD_CHECK_MSG(!ne.empty() && ne.size() <= 4, "tensor '%s' has %zu dimensions", name.c_str(), ne.size());
  for (int64_t n : ne) HERD_CHECK_MSG(n > 0, "tensor '%s' has a dimension of size %lld", name.c_str(), (long long)n);
  HERD_CHECK_MSG(ne[0] % Traits(type).block_size == 0, "tensor '%s': ne[0] = %lld is not a multiple of %lld",
                 name.c_str(), (long long)ne[0], (long long)Traits(type).block_size);
  for (const PendingTensor& t : tensors_) HERD_CHECK_MSG(t.name != name, "duplicate tensor '%s'", name.c_str());
  tensors_.push_back({std::move(name), type, std::move(ne), std::move(fill)});
}

namespace {

uint64_t TensorBytes(DType type, const std::vector<int64_t>& ne) {
  uint64_t rows = 1;
  for (size_t d = 1; d < ne.size(); ++d) rows *= static_cast<uint64_t>(ne[d]);
  return rows * RowBytes(type, ne[0]);
}

}  // namespace

// Serializes the whole file into `sink`. Tensor data offsets are aligned; the last tensor is
// not padded (the file ends where its data ends).
static Status WriteGguf(const std::vector<std::pair<std::string, GgufValue>>& kv, uint32_t alignment,
                        const auto& tensors, Sink& sink) {
  HeaderBuilder h;
  h.Put<uint32_t>(0x46554747);  // "GGUF"
  h.Put<uint32_t>(kVersion);
  h.Put<uint64_t>(tensors.size());
  h.Put<uint64_t>(kv.size());
  for (const auto& [key, value] : kv) {
    h.PutString(key);
    h.Put(static_cast<uint32_t>(value.type));
    h.PutValue(value);
  }
  uint64_t offset = 0, max_bytes = 0;
  for (const auto& t : tensors) {
    h.PutString(t.name);
    h.Put<uint32_t>(t.ne.size());
    for (int64_t n : t.ne) h.Put<uint64_t>(n);
    h.Put(static_cast<uint32_t>(t.type));
    h.Put<uint64_t>(offset);
    uint64_t bytes = TensorBytes(t.type, t.ne);
    max_bytes = std::max(max_bytes, bytes);
    offset = AlignUp(offset + bytes, alignment);
  }
  if (!tensors.empty()) h.PadTo(alignment);
  HERD_RETURN_IF_ERROR(sink.Write(h.bytes().data(), h.bytes().size()));

  std::vector<uint8_t> buf(static_cast<size_t>(max_bytes));
  static const uint8_t kZeros[256] = {};
  for (size_t k = 0; k < tensors.size(); ++k) {
    const auto& t = tensors[k];
    uint64_t bytes = TensorBytes(t.type, t.ne);
    if (t.fill) {
      t.fill(buf.data(), bytes);
    } else {
      std::memset(buf.data(), 0, bytes);
    }
    HERD_RETURN_IF_ERROR(sink.Write(buf.data(), bytes));
    if (k + 1 < tensors.size()) {
      uint64_t pad = AlignUp(bytes, alignment) - bytes;
      while (pad > 0) {
        uint64_t n = std::min<uint64_t>(pad, sizeof(kZeros));
        HERD_RETURN_IF_ERROR(sink.Write(kZeros, n));
        pad -= n;
      }
    }
  }
  return Status::Ok();
}

std::vector<uint8_t> GgufWriter::WriteToBytes() const {
  std::vector<uint8_t> out;
  BytesSink sink(&out);
  Status s = WriteGguf(kv_, alignment_, tensors_, sink);
  HERD_CHECK_MSG(s.ok(), "%s", s.message().c_str());
  return out;
}

Status GgufWriter::Write(const std::string& path) const {
  // Written under a temporary name and renamed, so a crash never leaves a half-written model.
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return IoError(path + ": cannot create: " + std::strerror(errno));
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  FileSink sink(f, path);
  Status s = WriteGguf(kv_, alignment_, tensors_, sink);
  if (std::fclose(f) != 0 && s.ok()) s = IoError(path + ": close failed: " + std::strerror(errno));
  if (s.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    s = IoError(path + ": rename from " + tmp + " failed: " + std::strerror(errno));
  }
  if (!s.ok()) std::remove(tmp.c_str());
  return s;
}

}  // namespace herd
