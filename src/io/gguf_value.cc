// GgufValue constructors and the human-readable rendering used by `herd inspect`.
#include <charconv>
#include <cstdio>

#include "io/gguf.h"

namespace herd {

const char* GgufTypeName(GgufType type) {
  switch (type) {
    case GgufType::kUint8: return "u8";
    case GgufType::kInt8: return "i8";
    case GgufType::kUint16: return "u16";
    case GgufType::kInt16: return "i16";
    case GgufType::kUint32: return "u32";
    case GgufType::kInt32: return "i32";
    case GgufType::kFloat32: return "f32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "str";
    case GgufType::kArray: return "arr";
    case GgufType::kUint64: return "u64";
    case GgufType::kInt64: return "i64";
    case GgufType::kFloat64: return "f64";
  }
  return "?";
}

GgufValue GgufValue::U32(uint32_t v) {
  GgufValue x;
  x.type = GgufType::kUint32;
  x.u = v;
  return x;
}

GgufValue GgufValue::I32(int32_t v) {
  GgufValue x;
  x.type = GgufType::kInt32;
  x.i = v;
  return x;
}

GgufValue GgufValue::U64(uint64_t v) {
  GgufValue x;
  x.type = GgufType::kUint64;
  x.u = v;
  return x;
}

GgufValue GgufValue::F32(float v) {
  GgufValue x;
  x.type = GgufType::kFloat32;
  x.f = v;
  return x;
}

GgufValue GgufValue::Bool(bool v) {
  GgufValue x;
  x.type = GgufType::kBool;
  x.b = v;
  return x;
}

GgufValue GgufValue::Str(std::string v) {
  GgufValue x;
  x.type = GgufType::kString;
  x.str = std::move(v);
  return x;
}

GgufValue GgufValue::StrArray(std::vector<std::string> v) {
  GgufValue x;
  x.type = GgufType::kArray;
  x.array_type = GgufType::kString;
  x.array.reserve(v.size());
  for (auto& s : v) x.array.push_back(Str(std::move(s)));
  return x;
}

GgufValue GgufValue::F32Array(const std::vector<float>& v) {
  GgufValue x;
  x.type = GgufType::kArray;
  x.array_type = GgufType::kFloat32;
  x.array.reserve(v.size());
  for (float f : v) x.array.push_back(F32(f));
  return x;
}

GgufValue GgufValue::I32Array(const std::vector<int32_t>& v) {
  GgufValue x;
  x.type = GgufType::kArray;
  x.array_type = GgufType::kInt32;
  x.array.reserve(v.size());
  for (int32_t i : v) x.array.push_back(I32(i));
  return x;
}

namespace {

// Shortest text that reads back to the same value ("1e-05", not "9.99999974737875e-06").
template <typename F>
std::string FloatText(F v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// Double-quoted, with control characters, quotes and backslashes escaped; bytes >= 0x80 are
// passed through (UTF-8). Cut after `max_bytes` bytes with a note of the full length.
std::string Quote(const std::string& s, size_t max_bytes) {
  std::string out = "\"";
  size_t n = s.size() < max_bytes ? s.size() : max_bytes;
  for (size_t k = 0; k < n; ++k) {
    unsigned char c = static_cast<unsigned char>(s[k]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += "\"";
  if (n < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

}  // namespace

std::string GgufValue::ToString(size_t max_array_items, size_t max_string_bytes) const {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kUint16:
    case GgufType::kUint32:
    case GgufType::kUint64: return std::to_string(u);
    case GgufType::kInt8:
    case GgufType::kInt16:
    case GgufType::kInt32:
    case GgufType::kInt64: return std::to_string(i);
    case GgufType::kFloat32: return FloatText(static_cast<float>(f));
    case GgufType::kFloat64: return FloatText(f);
    case GgufType::kBool: return b ? "true" : "false";
    case GgufType::kString: return Quote(str, max_string_bytes);
    case GgufType::kArray: {
      std::string out = "[";
      size_t n = array.size() < max_array_items ? array.size() : max_array_items;
      for (size_t k = 0; k < n; ++k) {
        if (k > 0) out += ", ";
        out += array[k].ToString(max_array_items, max_string_bytes);
      }
      if (n < array.size()) out += (n > 0 ? ", ... (" : "... (") + std::to_string(array.size()) + " items)";
      return out + "]";
    }
  }
  return "?";
}

std::string GgufValue::TypeString() const {
  if (type != GgufType::kArray) return GgufTypeName(type);
  std::string elem = array.empty() ? std::string(GgufTypeName(array_type)) : array[0].TypeString();
  return "arr[" + elem + "," + std::to_string(array.size()) + "]";
}

}  // namespace herd
