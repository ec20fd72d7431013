// WordPiece ("bert" vocabularies) with BERT's basic pre-tokenization, as Hugging Face's
// BertNormalizer + BertPreTokenizer do it for uncased models:
//   drop NUL, U+FFFD and control/format characters; whitespace becomes a separator; CJK
//   ideographs become words of their own; NFD and removal of non-spacing marks (accents);
//   lowercase; punctuation (Unicode P* and ASCII symbols) becomes one-character words.
// Each word is then split greedily into the longest vocabulary pieces from the left; if some
// position has no piece, or the word is longer than 100 characters, the word becomes [UNK].
// Vocabularies come in two spellings: GGUF files converted by llama.cpp mark word starts
// with '▁' and store continuations bare; original ones store continuations with "##".
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/token_lookup.h"
#include "tokenizer/vocab.h"

namespace herd {

class WordPieceModel {
 public:
  static Result<WordPieceModel> Build(const Vocab& vocab, const TokenLookup& lookup);

  // Appends the tokens of raw text.
  void Encode(std::string_view text, std::vector<TokenId>* out) const;
  // BERT pre-tokenization only (lowercased, accent-stripped words); for tests.
  std::vector<std::u32string> Words(std::string_view text) const;

  bool space_prefixed() const { return space_prefixed_; }

 private:
  void EncodeWord(const std::u32string& word, std::vector<TokenId>* out) const;

  const TokenLookup* lookup_ = nullptr;
  TokenId unk_ = kNoToken;
  bool space_prefixed_ = false;  // '▁' word starts (llama.cpp GGUF) instead of "##" continuations
  size_t max_token_chars_ = 0;
};

}  // namespace herd
