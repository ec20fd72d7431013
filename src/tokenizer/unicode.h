// Unicode helpers for the tokenizers: strict UTF-8 decoding/encoding, general categories,
// White_Space, canonical decomposition (NFD) and lowercase. Tables come from Python's
// unicodedata (see tools/gen_unicode_tables.py; UnicodeVersion() names the version); the
// reference tokenizers (Hugging Face, Oniguruma) use a version close to it, and the code points
// real text uses are the same in all recent versions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace herd::unicode {

// General categories, in the order of the generated table.
enum Category : uint8_t {
  kCn,
  kLu,
  kLl,
  kLt,
  kLm,
  kLo,
  kMn,
  kMc,
  kMe,
  kNd,
  kNl,
  kNo,
  kPc,
  kPd,
  kPs,
  kPe,
  kPi,
  kPf,
  kPo,
  kSm,
  kSc,
  kSk,
  kSo,
  kZs,
  kZl,
  kZp,
  kCc,
  kCf,
  kCs,
  kCo,
};

// Sets of categories as bit masks (bit = 1 << Category).
using CategoryMask = uint32_t;
constexpr CategoryMask Bit(Category c) { return CategoryMask{1} << c; }
constexpr CategoryMask kLetter = Bit(kLu) | Bit(kLl) | Bit(kLt) | Bit(kLm) | Bit(kLo);
constexpr CategoryMask kMark = Bit(kMn) | Bit(kMc) | Bit(kMe);
constexpr CategoryMask kNumber = Bit(kNd) | Bit(kNl) | Bit(kNo);
constexpr CategoryMask kPunct = Bit(kPc) | Bit(kPd) | Bit(kPs) | Bit(kPe) | Bit(kPi) | Bit(kPf) | Bit(kPo);
constexpr CategoryMask kSymbol = Bit(kSm) | Bit(kSc) | Bit(kSk) | Bit(kSo);
constexpr CategoryMask kSeparator = Bit(kZs) | Bit(kZl) | Bit(kZp);
constexpr CategoryMask kOther = Bit(kCn) | Bit(kCc) | Bit(kCf) | Bit(kCs) | Bit(kCo);

const char* UnicodeVersion();

// Category of a code point; kCn for unassigned and for values past 0x10FFFF.
Category GetCategory(uint32_t cp);
inline bool InMask(uint32_t cp, CategoryMask mask) { return (Bit(GetCategory(cp)) & mask) != 0; }

// The White_Space property (what Oniguruma's and Rust's \s / is_whitespace mean).
bool IsWhitespace(uint32_t cp);

// Canonical combining class (0 for most code points).
uint8_t CombiningClass(uint32_t cp);

// Appends the full canonical decomposition of `cp` (itself when it has none), not reordered.
void AppendDecomposition(uint32_t cp, std::vector<uint32_t>* out);
// NFD of a code point sequence: decomposition plus canonical ordering of combining marks.
std::vector<uint32_t> Nfd(const std::vector<uint32_t>& cps);

// Appends the lowercase of `cp` (usually one code point; U+0130 gives two).
void AppendLower(uint32_t cp, std::vector<uint32_t>* out);
// Single code point lowercase (the first of a multi code point result).
uint32_t ToLowerSimple(uint32_t cp);

// --- UTF-8 ---------------------------------------------------------------------------------

constexpr uint32_t kInvalid = 0xFFFFFFFFu;

// Decodes the character at s[0..n) (n >= 1). Returns its code point and sets *len to its byte
// length. A malformed sequence (bad lead byte, truncated, overlong, surrogate, > 0x10FFFF)
// returns kInvalid with *len = 1, so callers can keep the raw byte.
inline uint32_t DecodeUtf8(const char* s, size_t n, size_t* len) {
  const auto* u = reinterpret_cast<const uint8_t*>(s);
  uint8_t b0 = u[0];
  if (b0 < 0x80) {
    *len = 1;
    return b0;
  }
  *len = 1;
  auto cont = [&](size_t i) { return i < n && (u[i] & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (!cont(1)) return kInvalid;
    *len = 2;
    return ((b0 & 0x1Fu) << 6) | (u[1] & 0x3Fu);
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return kInvalid;
    uint32_t cp = ((b0 & 0x0Fu) << 12) | ((u[1] & 0x3Fu) << 6) | (u[2] & 0x3Fu);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return kInvalid;
    *len = 3;
    return cp;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return kInvalid;
    uint32_t cp = ((b0 & 0x07u) << 18) | ((u[1] & 0x3Fu) << 12) | ((u[2] & 0x3Fu) << 6) | (u[3] & 0x3Fu);
    if (cp < 0x10000 || cp > 0x10FFFF) return kInvalid;
    *len = 4;
    return cp;
  }
  return kInvalid;
}

// Appends the UTF-8 encoding of a valid code point.
void AppendUtf8(uint32_t cp, std::string* out);
std::string ToUtf8(uint32_t cp);

// Code points of a string; malformed bytes become U+FFFD (one per byte).
std::vector<uint32_t> DecodeAll(std::string_view s);

// Length of the longest prefix of `s` that ends on a character boundary, treating a trailing
// incomplete-but-valid-so-far multi-byte sequence as not yet complete. Malformed bytes count as
// complete (they will never become valid).
size_t CompleteUtf8Prefix(std::string_view s);

}  // namespace herd::unicode
