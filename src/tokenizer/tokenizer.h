// Text <-> token ids for the three vocabulary kinds herd loads from GGUF: SentencePiece BPE
// ("llama"), byte-level BPE with a pre-tokenizer ("gpt2") and WordPiece ("bert").
//
// Encode(text, add_special, parse_special):
//   1. special tokens are cut out of the text (user-defined always; control/unknown only
//      with parse_special), leftmost-longest;
//   2. each raw fragment is tokenized by the model (SPM: ' ' -> '▁', plus the dummy prefix
//      " " at the start and after a special token when add_space_prefix; BPE: pre-tokenizer
//      then merges per word; WordPiece: BERT normalization then greedy longest pieces);
//   3. with add_special, BOS / EOS / SEP are added as the vocabulary's flags say.
// The fixture conventions (expected ids from Hugging Face) are add_special = false and
// parse_special = false.
//
// Thread safety: all methods are const and may be called from many threads at once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm.h"
#include "tokenizer/token_lookup.h"
#include "tokenizer/vocab.h"
#include "tokenizer/wordpiece.h"

namespace herd {

class GgufFile;

struct DecodeOptions {
  bool render_special = false;  // control / unknown tokens as their text instead of nothing
  // Remove the single leading space the encoder's dummy prefix produced (SPM with
  // add_space_prefix, WordPiece). Set false when decoding a continuation mid-text.
  bool strip_leading_space = true;
};

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> Create(Vocab vocab);
  static Result<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& file);

  const Vocab& vocab() const { return *vocab_; }
  int32_t n_tokens() const { return vocab_->size(); }

  std::vector<TokenId> Encode(std::string_view text, bool add_special = false, bool parse_special = false) const;
  void Encode(std::string_view text, bool add_special, bool parse_special, std::vector<TokenId>* out) const;

  // The bytes one token stands for: SPM '▁' -> ' ' and <0xNN> -> the byte; byte-level BPE
  // characters -> their bytes; WordPiece '▁' word start -> ' '; user-defined tokens verbatim;
  // control/unknown tokens "" unless render_special. May be a partial UTF-8 character.
  std::string TokenToPiece(TokenId id, bool render_special = false) const;
  // Concatenated pieces (raw bytes; may contain malformed UTF-8 if the ids do).
  std::string Decode(const std::vector<TokenId>& ids, const DecodeOptions& opts = {}) const;
  // Whether Decode strips one leading space for this vocabulary (strip_leading_space).
  bool StripsLeadingSpace() const;

  TokenId TextToToken(std::string_view text) const { return lookup_->Find(text); }
  bool IsEog(TokenId id) const;
  bool IsControl(TokenId id) const;

 private:
  explicit Tokenizer(std::unique_ptr<Vocab> vocab);
  void EncodeRaw(std::string_view raw, bool after_special, std::vector<TokenId>* out) const;

  std::unique_ptr<Vocab> vocab_;  // stable address: the lookup holds views into its strings
  std::unique_ptr<TokenLookup> lookup_;
  std::unique_ptr<SpecialTokenMatcher> specials_;
  std::optional<PreTokenizer> pretokenizer_;
  std::optional<BpeModel> bpe_;
  std::optional<SpmModel> spm_;
  std::optional<WordPieceModel> wordpiece_;
};

}  // namespace herd
