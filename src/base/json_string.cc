#include "base/json_string.h"

#include <cstdio>

namespace herd {

void AppendJsonEscaped(std::string_view s, std::string* out) {
  out->reserve(out->size() + s.size() + 2);
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof(b), "\\u%04x", c);
          *out += b;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
}

}  // namespace herd
