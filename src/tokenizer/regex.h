// A small backtracking regular-expression engine over Unicode code points, enough for the
// pre-tokenizer patterns that tokenizers publish (Oniguruma / PCRE flavour):
//   literals and escapes (\r \n \t \f \v \\ \. ...), `.`, classes `[...]` with ranges and
//   negation, \s \S \d \D \w \W, \p{L} \p{Lu} \p{N} \p{P} \p{S} \p{M} ... and \P{..},
//   groups (?:..) (?i:..) (?=..) (?!..) and plain (..) (not capturing), alternation,
//   quantifiers ? * + {n} {n,} {n,m} (greedy; a trailing ? makes them lazy), anchors ^ and $
//   ($ matches at the end or before '\n', as in Oniguruma).
// Matching follows backtracking priority (leftmost, first alternative, greedy), so results
// equal those of the engines the patterns were written for. No backreferences or captures.
//
// Cost: linear in the text for the published pre-tokenizer patterns; worst case exponential
// for pathological nested quantifiers (not used by any tokenizer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace herd {

class Regex {
 public:
  static Result<Regex> Compile(std::string_view pattern);

  // Longest-by-priority match starting exactly at `pos` in cps[0, n); returns its end or -1.
  // Code points >= 0x110000 are treated as unassigned characters (used for malformed bytes).
  long MatchAt(const uint32_t* cps, size_t n, size_t pos) const;
  // Leftmost match at or after `from`; false if none. Empty matches are skipped.
  bool Search(const uint32_t* cps, size_t n, size_t from, size_t* begin, size_t* end) const;

  const std::string& pattern() const { return pattern_; }

  // Program representation (public for the compiler in regex.cc).
  enum class Op : uint8_t { kChar, kCharFold, kClass, kAny, kSplit, kJmp, kMatch, kBegin, kEnd, kLook };
  struct Inst {
    Op op;
    bool negative = false;  // kLook: (?!..) instead of (?=..)
    uint32_t c = 0;         // kChar/kCharFold: code point; kClass: class index
    int x = 0, y = 0;       // kSplit: preferred / other target; kJmp: x; kLook: body x, continue y
  };
  struct ClassItem {
    uint32_t lo = 0, hi = 0;  // range, used when mask == 0 and !space and !word
    uint32_t mask = 0;        // category mask (unicode::CategoryMask)
    bool space = false;       // \s
    bool word = false;        // \w
    bool negate = false;      // \S \P{..} \W inside a class
  };
  struct Class {
    std::vector<ClassItem> items;
    bool negate = false;
    bool fold = false;  // case-insensitive
    bool Matches(uint32_t cp) const;
  };

 private:
  bool Run(int pc, const uint32_t* cps, size_t n, size_t pos, size_t* end) const;

  std::string pattern_;
  std::vector<Inst> prog_;
  std::vector<Class> classes_;
  friend class RegexCompiler;
};

}  // namespace herd
