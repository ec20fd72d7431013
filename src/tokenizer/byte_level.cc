#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace herd::byte_level {
namespace {

struct Tables {
  std::array<uint32_t, 256> to_cp;
  std::array<int16_t, 512> from_cp;  // every mapped code point is < 0x144
  Tables() {
    from_cp.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = keep ? static_cast<uint32_t>(b) : next++;
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& T() {
  static const Tables tables;
  return tables;
}

}  // namespace

uint32_t ByteToCodePoint(uint8_t b) { return T().to_cp[b]; }

int CodePointToByte(uint32_t cp) { return cp < 512 ? T().from_cp[cp] : -1; }

std::string Encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) unicode::AppendUtf8(ByteToCodePoint(static_cast<uint8_t>(c)), &out);
  return out;
}

bool Decode(std::string_view text, std::string* bytes) {
  bool ok = true;
  for (size_t i = 0; i < text.size();) {
    size_t len;
    uint32_t cp = unicode::DecodeUtf8(text.data() + i, text.size() - i, &len);
    int b = cp == unicode::kInvalid ? -1 : CodePointToByte(cp);
    if (b >= 0) {
      bytes->push_back(static_cast<char>(b));
    } else {
      bytes->append(text.substr(i, len));
      ok = false;
    }
    i += len;
  }
  return ok;
}

}  // namespace herd::byte_level
