// A tokenizer vocabulary, independent of the file it came from: tokens with scores and types,
// BPE merges, the model kind, the pre-tokenizer name, special token ids and the flags that
// say what Encode adds. LoadVocab reads it from GGUF `tokenizer.ggml.*` metadata.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace herd {

class GgufFile;

using TokenId = int32_t;
constexpr TokenId kNoToken = -1;

// `tokenizer.ggml.model`.
enum class TokenizerModel {
  kSpm,        // "llama": SentencePiece BPE (scores, byte fallback, dummy prefix)
  kBpe,        // "gpt2": byte-level BPE with merges and a pre-tokenizer
  kWordPiece,  // "bert": WordPiece
};
const char* TokenizerModelName(TokenizerModel model);

// `tokenizer.ggml.token_type` values (as in GGUF / SentencePiece).
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // BOS/EOS/chat markers: matched in text only when parsing specials
  kUserDefined = 4,  // added tokens: always matched in text, rendered verbatim
  kUnused = 5,
  kByte = 6,  // SentencePiece byte fallback <0xNN>
};

struct Vocab {
  TokenizerModel model = TokenizerModel::kSpm;
  std::string pre;  // `tokenizer.ggml.pre`; "" when absent (BPE then uses "default")

  std::vector<std::string> tokens;  // id -> text as stored (BPE: byte-level encoded)
  std::vector<float> scores;        // id -> score (SPM merge priority); may be empty
  std::vector<TokenType> types;     // id -> type; same size as tokens
  std::vector<std::string> merges;  // BPE: "left right", rank = index

  TokenId bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken, sep = kNoToken,
          pad = kNoToken, mask = kNoToken;
  TokenId fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken;
  std::vector<TokenId> eog;  // every id that ends generation (eos, eot, eom, ...)

  bool add_bos = false;           // Encode(add_special) prepends bos
  bool add_eos = false;           // Encode(add_special) appends eos
  bool add_sep = false;           // Encode(add_special) appends sep (BERT)
  bool add_space_prefix = false;  // SPM dummy prefix: " " before text at the start / after specials
  bool ignore_merges = false;     // BPE: a pre-token that is a whole token is taken as is (Llama 3)

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  TokenType type(TokenId id) const { return types[static_cast<size_t>(id)]; }

  // Checks sizes and that every special id is in range; errors name the problem.
  Status Validate() const;
  // Sets the flags that depend on the model and pre-tokenizer (add_bos, add_space_prefix,
  // ignore_merges, ...) to their defaults; LoadVocab then applies the file's own keys.
  void SetModelDefaults();
  // Fills `eog` from eos/eot/eom and well-known end-of-turn token texts.
  void CollectEog();
};

// Reads `tokenizer.ggml.*` from a GGUF file: model, pre, tokens, scores, token_type, merges,
// bos/eos/eot/eom/unknown/seperator/padding/mask/cls ids, add_bos_token, add_eos_token,
// add_sep_token, add_space_prefix. Unsupported models are Unimplemented errors.
Result<Vocab> LoadVocab(const GgufFile& file);

}  // namespace herd
