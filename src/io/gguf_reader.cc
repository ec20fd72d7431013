// GGUF parsing and validation. Every read is bounds-checked against the file size; counts and
// lengths read from the file are compared with the bytes that remain before anything is
// allocated, so a corrupt or hostile file yields an error, never a crash or a huge allocation.
#include <algorithm>
#include <cstring>
#include <limits>

#include "io/gguf.h"

namespace herd {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxArrayDepth = 16;           // arrays of arrays nested deeper are rejected
// All metadata array items together (a 256k-token vocabulary with scores, types and merges
// is about 1M). Caps the memory a crafted file can make the reader allocate.
constexpr uint64_t kMaxTotalArrayItems = uint64_t{1} << 24;

bool IsPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Smallest encoded size of one value of `type` (arrays: element type + count).
uint64_t MinEncodedSize(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool: return 1;
    case GgufType::kUint16:
    case GgufType::kInt16: return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32: return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
    case GgufType::kString: return 8;
    case GgufType::kArray: return 12;
  }
  return 1;
}

bool IsValidType(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kFloat64); }

std::string WeightTypeList() {
  std::string s;
  for (DType t : kWeightTypes) {
    if (!s.empty()) s += ", ";
    s += DTypeName(t);
  }
  return s;
}

}  // namespace

// Sequential little-endian reads over [data, data + size). `context` names what is being read
// ("key 'general.name'") for error messages.
class GgufCursor {
 public:
  GgufCursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  void set_context(std::string context) { context_ = std::move(context); }
  const std::string& context() const { return context_; }

  Status Truncated(const std::string& what) const {
    std::string msg = "truncated while reading " + what;
    if (!context_.empty()) msg += " of " + context_;
    return InvalidArgument(msg + " at offset " + std::to_string(pos_));
  }

  template <typename T>
  Status Read(T* out, const char* what) {
    if (remaining() < sizeof(T)) return Truncated(what);
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status ReadString(std::string* out, const char* what) {
    uint64_t len = 0;
    if (remaining() < sizeof(len)) return Truncated(std::string(what) + " length");
    std::memcpy(&len, data_ + pos_, sizeof(len));
    pos_ += sizeof(len);
    if (len > remaining()) return Truncated(std::string(what) + " (" + std::to_string(len) + " bytes)");
    out->assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return Status::Ok();
  }

  // Reads one value of `type` into `v`. `depth` counts enclosing arrays.
  Status ReadValue(GgufType type, GgufValue* v, int depth, uint64_t* total_items) {
    v->type = type;
    switch (type) {
      case GgufType::kUint8: return ReadUnsigned<uint8_t>(v);
      case GgufType::kUint16: return ReadUnsigned<uint16_t>(v);
      case GgufType::kUint32: return ReadUnsigned<uint32_t>(v);
      case GgufType::kUint64: return ReadUnsigned<uint64_t>(v);
      case GgufType::kInt8: return ReadSigned<int8_t>(v);
      case GgufType::kInt16: return ReadSigned<int16_t>(v);
      case GgufType::kInt32: return ReadSigned<int32_t>(v);
      case GgufType::kInt64: return ReadSigned<int64_t>(v);
      case GgufType::kFloat32: {
        float f = 0;
        HERD_RETURN_IF_ERROR(Read(&f, "f32 value"));
        v->f = f;
        return Status::Ok();
      }
      case GgufType::kFloat64: return Read(&v->f, "f64 value");
      case GgufType::kBool: {
        uint8_t b = 0;
        HERD_RETURN_IF_ERROR(Read(&b, "bool value"));
        v->b = b != 0;
        return Status::Ok();
      }
      case GgufType::kString: return ReadString(&v->str, "string");
      case GgufType::kArray: return ReadArray(v, depth, total_items);
    }
    return Internal("unreachable value type");
  }

 private:
  template <typename T>
  Status ReadUnsigned(GgufValue* v) {
    T x = 0;
    HERD_RETURN_IF_ERROR(Read(&x, "integer value"));
    v->u = x;
    return Status::Ok();
  }
  template <typename T>
  Status ReadSigned(GgufValue* v) {
    T x = 0;
    HERD_RETURN_IF_ERROR(Read(&x, "integer value"));
    v->i = x;
    return Status::Ok();
  }

  Status ReadArray(GgufValue* v, int depth, uint64_t* total_items) {
    if (depth >= kMaxArrayDepth) {
      return InvalidArgument(context_ + ": arrays nested more than " + std::to_string(kMaxArrayDepth) +
                             " levels deep at offset " + std::to_string(pos_));
    }
    uint32_t elem_type = 0;
    HERD_RETURN_IF_ERROR(Read(&elem_type, "array element type"));
    if (!IsValidType(elem_type)) {
      return InvalidArgument(context_ + ": array has unknown element type " + std::to_string(elem_type) +
                             " at offset " + std::to_string(pos_ - 4));
    }
    v->array_type = static_cast<GgufType>(elem_type);
    uint64_t count = 0;
    HERD_RETURN_IF_ERROR(Read(&count, "array length"));
    uint64_t min_size = MinEncodedSize(v->array_type);
    if (count > remaining() / min_size) {
      return InvalidArgument(context_ + ": array length " + std::to_string(count) + " at offset " +
                             std::to_string(pos_ - 8) + " does not fit in the remaining " +
                             std::to_string(remaining()) + " bytes of the file");
    }
    *total_items += count;
    if (*total_items > kMaxTotalArrayItems) {
      return ResourceExhausted(context_ + ": metadata arrays hold more than " + std::to_string(kMaxTotalArrayItems) +
                               " items in total");
    }
    v->array.resize(static_cast<size_t>(count));
    for (GgufValue& item : v->array) {
      HERD_RETURN_IF_ERROR(ReadValue(v->array_type, &item, depth + 1, total_items));
    }
    return Status::Ok();
  }

  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::string context_;
};

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  HERD_ASSIGN_OR_RETURN(file->mapping_, MappedFile::Open(path));
  file->base_ = file->mapping_.data();
  file->size_ = file->mapping_.size();
  HERD_RETURN_IF_ERROR(file->Parse().WithContext(path));
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::FromBytes(const std::vector<uint8_t>& bytes, const std::string& name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = name;
  file->owned_ = bytes;
  file->base_ = file->owned_.data();
  file->size_ = file->owned_.size();
  HERD_RETURN_IF_ERROR(file->Parse().WithContext(name));
  return file;
}

Status GgufFile::Parse() {
  GgufCursor in(base_, size_);
  uint32_t magic = 0;
  HERD_RETURN_IF_ERROR(in.Read(&magic, "magic"));
  if (magic != kGgufMagic) {
    std::string shown;
    for (int k = 0; k < 4; ++k) {
      unsigned char c = base_[k];
      shown += (c >= 0x20 && c < 0x7f) ? std::string(1, static_cast<char>(c)) : StrFormat("\\x%02x", c);
    }
    return InvalidArgument("bad magic \"" + shown + "\" (expected \"GGUF\"): not a GGUF file");
  }
  HERD_RETURN_IF_ERROR(in.Read(&version_, "version"));
  if (version_ != 2 && version_ != 3) {
    uint32_t swapped = __builtin_bswap32(version_);
    if (swapped >= 1 && swapped <= 3) {
      return Unimplemented(
          StrFormat("file is big-endian (version reads as 0x%08x); herd reads only little-endian GGUF", version_));
    }
    if (version_ == 1) return Unimplemented("unsupported version 1 (herd reads GGUF versions 2 and 3)");
    return InvalidArgument(StrFormat("unsupported version %u (herd reads GGUF versions 2 and 3)", version_));
  }
  uint64_t n_tensors = 0, n_kv = 0;
  HERD_RETURN_IF_ERROR(in.Read(&n_tensors, "tensor count"));
  HERD_RETURN_IF_ERROR(in.Read(&n_kv, "metadata count"));
  // Smallest encodings: key (u64 length) + type + 1-byte value; name (u64) + n_dims + ne + type + offset.
  if (n_kv > in.remaining() / 13) {
    return InvalidArgument(StrFormat("metadata count %llu does not fit in the remaining %llu bytes of the file",
                                     static_cast<unsigned long long>(n_kv),
                                     static_cast<unsigned long long>(in.remaining())));
  }
  if (n_tensors > in.remaining() / 32) {
    return InvalidArgument(StrFormat("tensor count %llu does not fit in the remaining %llu bytes of the file",
                                     static_cast<unsigned long long>(n_tensors),
                                     static_cast<unsigned long long>(in.remaining())));
  }
  HERD_RETURN_IF_ERROR(ParseMetadata(in, n_kv));
  HERD_RETURN_IF_ERROR(ParseTensorInfos(in, n_tensors));
  // The data section starts at the next multiple of the alignment (it may lie past the end of
  // a file that has no tensors).
  data_offset_ = (in.pos() + alignment_ - 1) / alignment_ * alignment_;
  return CheckTensorPlacement();
}

Status GgufFile::ParseMetadata(GgufCursor& in, uint64_t n_kv) {
  kv_.reserve(static_cast<size_t>(std::min<uint64_t>(n_kv, 4096)));  // a corrupt count must not pre-allocate
  uint64_t total_items = 0;
  for (uint64_t k = 0; k < n_kv; ++k) {
    in.set_context("metadata entry " + std::to_string(k));
    std::string key;
    HERD_RETURN_IF_ERROR(in.ReadString(&key, "key"));
    if (kv_index_.count(key) != 0) return InvalidArgument("duplicate key '" + key + "'");
    in.set_context("key '" + key + "'");
    uint32_t type = 0;
    HERD_RETURN_IF_ERROR(in.Read(&type, "value type"));
    if (!IsValidType(type)) {
      return InvalidArgument(StrFormat("key '%s' has unknown value type %u at offset %llu", key.c_str(), type,
                                       static_cast<unsigned long long>(in.pos() - 4)));
    }
    GgufValue value;
    HERD_RETURN_IF_ERROR(in.ReadValue(static_cast<GgufType>(type), &value, 0, &total_items));
    kv_index_.emplace(key, kv_.size());
    kv_.emplace_back(std::move(key), std::move(value));
  }
  in.set_context("");

  if (const GgufValue* a = Find("general.alignment")) {
    if (a->type != GgufType::kUint32) {
      return InvalidArgument(std::string("general.alignment has type ") + GgufTypeName(a->type) + ", expected u32");
    }
    if (!IsPowerOfTwo(a->u)) {
      return InvalidArgument("general.alignment " + std::to_string(a->u) + " is not a non-zero power of two");
    }
    alignment_ = a->u;
  }
  return Status::Ok();
}

Status GgufFile::ParseTensorInfos(GgufCursor& in, uint64_t n_tensors) {
  tensors_.reserve(static_cast<size_t>(std::min<uint64_t>(n_tensors, 4096)));
  for (uint64_t t = 0; t < n_tensors; ++t) {
    in.set_context("tensor info " + std::to_string(t));
    GgufTensorInfo info;
    HERD_RETURN_IF_ERROR(in.ReadString(&info.name, "name"));
    const std::string q = "tensor '" + info.name + "'";
    in.set_context(q);
    if (tensor_index_.count(info.name) != 0) return InvalidArgument("duplicate tensor name '" + info.name + "'");
    uint32_t n_dims = 0;
    HERD_RETURN_IF_ERROR(in.Read(&n_dims, "dimension count"));
    if (n_dims < 1 || n_dims > 4) {
      return InvalidArgument(q + " has " + std::to_string(n_dims) + " dimensions (herd reads 1 to 4)");
    }
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = 0;
      HERD_RETURN_IF_ERROR(in.Read(&ne, "dimension"));
      if (ne == 0 || ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return InvalidArgument(q + " has invalid size " + std::to_string(ne) + " in dimension " + std::to_string(d));
      }
      info.ne.push_back(static_cast<int64_t>(ne));
    }
    uint32_t type_id = 0;
    HERD_RETURN_IF_ERROR(in.Read(&type_id, "type"));
    std::optional<DType> type = DTypeFromId(type_id);
    if (!type) {
      return InvalidArgument(q + " has unknown type " + std::to_string(type_id) + " (herd reads " + WeightTypeList() +
                             ")");
    }
    info.type = *type;
    HERD_RETURN_IF_ERROR(in.Read(&info.offset, "data offset"));

    const DTypeTraits& traits = Traits(info.type);
    if (info.ne[0] % traits.block_size != 0) {
      return InvalidArgument(StrFormat("%s has ne[0] = %lld, not a multiple of the %s block size %lld", q.c_str(),
                                       static_cast<long long>(info.ne[0]), std::string(traits.name).c_str(),
                                       static_cast<long long>(traits.block_size)));
    }
    int64_t elements = 1;
    for (int64_t ne : info.ne) {
      if (__builtin_mul_overflow(elements, ne, &elements)) {
        return InvalidArgument(q + " has too many elements (the element count overflows 64 bits)");
      }
    }
    uint64_t rows = static_cast<uint64_t>(elements / info.ne[0]);
    uint64_t row_bytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(info.ne[0] / traits.block_size), traits.type_size, &row_bytes) ||
        __builtin_mul_overflow(rows, row_bytes, &info.bytes)) {
      return InvalidArgument(q + " has too many elements (its byte size overflows 64 bits)");
    }
    if (info.offset % alignment_ != 0) {
      return InvalidArgument(StrFormat("%s offset %llu is not a multiple of the alignment %llu", q.c_str(),
                                       static_cast<unsigned long long>(info.offset),
                                       static_cast<unsigned long long>(alignment_)));
    }
    tensor_index_.emplace(info.name, tensors_.size());
    tensors_.push_back(std::move(info));
  }
  in.set_context("");
  return Status::Ok();
}

Status GgufFile::CheckTensorPlacement() const {
  // Bounds: [data_offset + offset, + bytes) must lie inside the file.
  for (const GgufTensorInfo& t : tensors_) {
    uint64_t begin = 0, end = 0;
    if (__builtin_add_overflow(data_offset_, t.offset, &begin) || __builtin_add_overflow(begin, t.bytes, &end) ||
        end > size_) {
      // (offsets printed apart: their sum may be what overflowed)
      return OutOfRange(
          StrFormat("tensor '%s' (%llu bytes at data offset %llu, data section at %llu) extends past "
                    "end of file (size %llu)",
                    t.name.c_str(), static_cast<unsigned long long>(t.bytes), static_cast<unsigned long long>(t.offset),
                    static_cast<unsigned long long>(data_offset_), static_cast<unsigned long long>(size_)));
    }
  }
  // Overlap: sorted by offset, each tensor must end before the next begins.
  std::vector<const GgufTensorInfo*> sorted;
  sorted.reserve(tensors_.size());
  for (const GgufTensorInfo& t : tensors_) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < sorted.size(); ++k) {
    const GgufTensorInfo& a = *sorted[k - 1];
    const GgufTensorInfo& b = *sorted[k];
    if (a.offset + a.bytes > b.offset) {
      return InvalidArgument(StrFormat("tensors '%s' (data bytes %llu..%llu) and '%s' (data bytes %llu..%llu) overlap",
                                       a.name.c_str(), static_cast<unsigned long long>(a.offset),
                                       static_cast<unsigned long long>(a.offset + a.bytes), b.name.c_str(),
                                       static_cast<unsigned long long>(b.offset),
                                       static_cast<unsigned long long>(b.offset + b.bytes)));
    }
  }
  return Status::Ok();
}

}  // namespace herd
