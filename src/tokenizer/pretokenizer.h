// Pre-tokenization for byte-level BPE: splits text into the pieces ("words") that BPE merges
// never cross. A pre-tokenizer is a sequence of published regexes applied one after another:
// each regex splits every current piece into its matches and the text between them (Hugging
// Face `Split(..., behavior=Isolated)`); a piece's boundaries act as the ends of the text for
// later regexes. The families are selected by GGUF `tokenizer.ggml.pre` (see ForName).
//
// The most used patterns (GPT-2, Llama 3, Qwen 2) run through hand-written scanners that
// give exactly the regex's matches (tests compare them with the regex engine); the rest use
// tokenizer/regex.h. Cost: O(text) for all published families.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tokenizer/regex.h"

namespace herd {

class PreTokenizer {
 public:
  // Hand-written scanners equivalent to a published pattern.
  enum class Scanner {
    kNone,
    kGpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    kLlama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|...
    kQwen2,   // as kLlama3 with \p{N} (single digits)
  };

  // The pre-tokenizer for a `tokenizer.ggml.pre` name. Unknown names are an Unimplemented
  // error naming the name (callers may fall back to "default").
  static Result<PreTokenizer> ForName(std::string_view name);
  // A pre-tokenizer from explicit patterns (tests, custom vocabularies).
  static Result<PreTokenizer> FromPatterns(const std::vector<std::string>& patterns, bool use_scanners = true);

  // Splits `text` into pieces; appends [begin, end) byte ranges covering all of `text` in order.
  // Malformed UTF-8 bytes are kept (one unassigned character each).
  void Split(std::string_view text, std::vector<std::pair<uint32_t, uint32_t>>* pieces) const;
  std::vector<std::string> SplitToStrings(std::string_view text) const;  // tests, tools

  const std::string& name() const { return name_; }
  const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  struct Step {
    Scanner scanner = Scanner::kNone;
    std::shared_ptr<const Regex> regex;
  };
  // Match starting exactly at `pos` in cps[0, n): end, or -1.
  static long MatchStep(const Step& step, const uint32_t* cps, size_t n, size_t pos);

  std::string name_;
  std::vector<std::string> patterns_;
  std::vector<Step> steps_;
};

// Hand-written scanners (pretokenizer_scanners.cc): the end of the pattern's match at `pos`
// (pos < n; these patterns match at every position).
size_t ScanGpt2(const uint32_t* cps, size_t n, size_t pos);
size_t ScanLlama3(const uint32_t* cps, size_t n, size_t pos, int max_digits);

}  // namespace herd
