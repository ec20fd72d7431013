// Prompt text of a target token length, built without the server's tokenizer.
//
// Text is random words from a fixed list of common English words (seeded, so a run is
// reproducible). A TokenCounter says how many tokens a text is: exact when the server has a
// tokenize route (herd's and llama.cpp's POST /tokenize), otherwise an estimate from a measured
// tokens-per-word ratio. With an exact counter Fit() searches the word count until the text has
// the target length (within one word's tokens: the count of the closest prefix is kept).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace herd::bench {

// The word list (a few hundred common English words).
const std::vector<std::string>& CommonWords();

struct TokenCounter {
  double tokens_per_word = 1.3;  // the ratio used to guess word counts
  // Exact count of a text (the server's tokenizer, no special tokens); nullopt when unavailable
  // or failing (then the estimate is used).
  std::function<std::optional<int>(const std::string&)> exact;
  // The count of `text`: exact when possible, else words * tokens_per_word (rounded).
  int Count(const std::string& text, bool* was_exact = nullptr) const;
};

struct FittedText {
  std::string text;
  int tokens = 0;      // its length by the counter
  bool exact = false;  // counted by the server's tokenizer
};

class PromptText {
 public:
  PromptText(uint64_t seed, const TokenCounter* counter) : rng_(seed), counter_(counter) {}

  // `n` random words joined by spaces.
  std::string Words(int n);
  // `prefix` followed by random words so that the whole text is about `tokens` tokens long
  // (`prefix` alone may already be longer: then it is returned as is).
  FittedText Fit(const std::string& prefix, int tokens);

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  const TokenCounter* counter_;
};

}  // namespace herd::bench
