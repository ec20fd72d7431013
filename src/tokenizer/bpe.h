// Byte-level BPE over one pre-tokenized word: the word's bytes start as one symbol each (the
// token of its byte-level character); the adjacent pair with the lowest merge rank is merged
// (ties: leftmost first) until no pair has a rank. Pairs live in a priority queue over a
// linked list of symbols; stale entries are skipped when popped. Cost: O(n log n) per word of
// n bytes, plus one hash lookup per new adjacent pair.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tokenizer/token_lookup.h"
#include "tokenizer/vocab.h"

namespace herd {

class BpeModel {
 public:
  // Merges whose parts or result are not tokens are skipped (counted in skipped_merges()).
  static Result<BpeModel> Build(const Vocab& vocab, const TokenLookup& lookup);

  // Appends the tokens of one word given as raw bytes.
  void EncodeWord(std::string_view word, std::vector<TokenId>* out) const;

  size_t skipped_merges() const { return skipped_merges_; }

 private:
  struct Merge {
    int32_t rank;
    TokenId result;
  };
  static uint64_t Key(TokenId a, TokenId b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  std::array<TokenId, 256> byte_token_{};           // byte -> token of its byte-level character
  std::unordered_map<uint64_t, Merge> merges_;      // (left, right) -> rank, merged token
  std::unordered_map<std::string, TokenId> whole_;  // raw bytes -> normal token (ignore_merges)
  bool ignore_merges_ = false;
  TokenId unk_ = kNoToken;
  size_t skipped_merges_ = 0;
};

}  // namespace herd
