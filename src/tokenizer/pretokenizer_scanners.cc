// Hand-written equivalents of the GPT-2 and Llama 3 / Qwen 2 pre-tokenizer patterns. Each
// function returns where the pattern's match starting at `pos` ends, trying the alternatives
// in the pattern's order exactly as a backtracking engine would (tests check this against
// tokenizer/regex.h on random and real text).
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"

namespace herd {
namespace {

enum : uint8_t { kL = 1, kN = 2, kS = 4 };  // \p{L}, \p{N}, \s

uint8_t Classify(uint32_t cp) {
  static const struct Ascii {
    uint8_t f[128];
    Ascii() {
      for (uint32_t c = 0; c < 128; ++c) {
        f[c] = 0;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) f[c] = kL;
        if (c >= '0' && c <= '9') f[c] = kN;
        if (unicode::IsWhitespace(c)) f[c] = kS;
      }
    }
  } ascii;
  if (cp < 128) return ascii.f[cp];
  if (unicode::IsWhitespace(cp)) return kS;
  auto cat = unicode::Bit(unicode::GetCategory(cp));
  if (cat & unicode::kLetter) return kL;
  if (cat & unicode::kNumber) return kN;
  return 0;
}

inline uint32_t At(const uint32_t* cps, size_t n, size_t i) { return i < n ? cps[i] : 0xFFFFFFFFu; }

// 's 't 're 've 'm 'll 'd after an apostrophe at pos; 0 if none. `fold`: case-insensitive.
size_t Contraction(const uint32_t* cps, size_t n, size_t pos, bool fold) {
  if (cps[pos] != '\'' || pos + 1 >= n) return 0;
  auto low = [fold](uint32_t c) { return fold && c >= 'A' && c <= 'Z' ? c + 32 : c; };
  uint32_t a = low(cps[pos + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  uint32_t b = low(At(cps, n, pos + 2));
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// The whitespace alternatives shared by both patterns: \s+(?!\S)|\s+ at a whitespace char.
size_t TrailingSpace(const uint32_t* cps, size_t n, size_t pos) {
  size_t k = pos;
  while (k < n && (Classify(cps[k]) & kS)) ++k;
  if (k == n || k - pos == 1) return k;  // at the end, or a single space before \S
  return k - 1;                          // leave the last space to prefix the next word
}

}  // namespace

size_t ScanGpt2(const uint32_t* cps, size_t n, size_t pos) {
  if (size_t c = Contraction(cps, n, pos, false)) return pos + c;
  size_t j = pos + (cps[pos] == ' ' ? 1 : 0);
  if (j < n) {
    uint8_t f = Classify(cps[j]);
    if (f == kL || f == kN) {
      while (j < n && Classify(cps[j]) == f) ++j;
      return j;
    }
    if (f == 0) {  // ?[^\s\p{L}\p{N}]+
      while (j < n && Classify(cps[j]) == 0) ++j;
      return j;
    }
  }
  return TrailingSpace(cps, n, pos);
}

size_t ScanLlama3(const uint32_t* cps, size_t n, size_t pos, int max_digits) {
  if (size_t c = Contraction(cps, n, pos, true)) return pos + c;
  uint32_t c0 = cps[pos];
  uint8_t f0 = Classify(c0);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t j = pos;
  if (f0 != kL && f0 != kN && c0 != '\r' && c0 != '\n' && pos + 1 < n && Classify(cps[pos + 1]) == kL) j = pos + 1;
  if (Classify(cps[j]) == kL) {
    while (j < n && Classify(cps[j]) == kL) ++j;
    return j;
  }
  // \p{N}{1,max}
  if (f0 == kN) {
    j = pos;
    while (j < n && j - pos < static_cast<size_t>(max_digits) && Classify(cps[j]) == kN) ++j;
    return j;
  }
  // ?[^\s\p{L}\p{N}]+[\r\n]*
  j = pos + (c0 == ' ' ? 1 : 0);
  if (j < n && Classify(cps[j]) == 0) {
    while (j < n && Classify(cps[j]) == 0) ++j;
    while (j < n && (cps[j] == '\r' || cps[j] == '\n')) ++j;
    return j;
  }
  // \s*[\r\n]+ : through the last line break of the whitespace run
  size_t k = pos;
  size_t last_break = n;
  while (k < n && (Classify(cps[k]) & kS)) {
    if (cps[k] == '\r' || cps[k] == '\n') last_break = k;
    ++k;
  }
  if (last_break != n) return last_break + 1;
  return TrailingSpace(cps, n, pos);
}

}  // namespace herd
