// SentencePiece BPE ("llama" vocabularies: Llama 2, Mistral, Phi-3). The input is already
// escaped (spaces as U+2581 '▁', dummy prefix added by the caller). Symbols start as UTF-8
// characters; the adjacent pair whose concatenation is a normal token with the highest score
// is merged (ties: leftmost first) until no pair forms a token. A leftover character that is
// not a token is emitted as its <0xNN> byte tokens (byte fallback), else as unk.
// Cost: O(n log n) in the text length, one hash lookup per new adjacent pair.
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/token_lookup.h"
#include "tokenizer/vocab.h"

namespace herd {

class SpmModel {
 public:
  static Result<SpmModel> Build(const Vocab& vocab, const TokenLookup& lookup);

  // Appends the tokens of escaped text. `split_words = false` merges over the whole text even
  // when splits_words() (same result; for tests).
  void Encode(std::string_view text, std::vector<TokenId>* out, bool split_words = true) const;

  // True when no mergeable token has '▁' right after another character, so words ("▁..."
  // runs) never merge with each other and can be encoded one at a time.
  bool splits_words() const { return splits_words_; }

 private:
  void EncodeRun(std::string_view text, std::vector<TokenId>* out) const;
  TokenId Mergeable(std::string_view text) const;

  const Vocab* vocab_ = nullptr;
  const TokenLookup* lookup_ = nullptr;
  std::array<TokenId, 256> byte_tokens_{};
  bool splits_words_ = false;
};

}  // namespace herd
