// JSON object mode (OpenAI response_format json_object, Ollama format "json"): a TokenConstraint
// under which every sampled text is a prefix of one JSON object (see json_recognizer.h for the
// exact language) and generation can end only when the object is complete.
//
//   auto vocab = JsonVocabulary::Create(pieces);  // once per vocabulary; shared by all requests
//   JsonConstraint c(vocab, end_tokens);          // per sequence
//
// Rules of the mask:
//   - a token is allowed iff its bytes, fed to the recognizer one by one, are all accepted;
//   - tokens with an empty piece (control / special tokens) never are, except the end tokens;
//   - end tokens are allowed only when the object is complete, and then they are the only ones.
//
// Cost of Mask (one walk of a byte trie of the vocabulary from the current state, subtrees of
// refused bytes skipped; see token_trie.h). Inside a string with nothing pending — the common
// state, where almost every token is allowed — only the tokens that are not plain string
// content (that hold '"', '\', a control byte or a partial UTF-8 character) are walked; the
// plain ones are known in advance to be allowed and to leave the state as it is. Elsewhere the
// few bytes a state accepts prune the trie at its first levels; the row is then filled with
// -inf and the allowed logits put back. 128k tokens: 10-40 us in common states, <= 90 us after a
// backslash (bench/json_constraint_bench.cc, bench/results/json-constraint-*.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sampling/json_recognizer.h"
#include "sampling/token_constraint.h"
#include "sampling/token_trie.h"

namespace herd {

// The vocabulary prepared for JSON mode. Immutable; share one per model across requests.
class JsonVocabulary {
 public:
  // pieces[id]: the bytes token id stands for; empty for tokens that never produce text
  // (control, unknown, unused ids). pieces.size() is the logit row length.
  // O(total bytes + n log n); ~35 ms for a 128k vocabulary.
  static std::shared_ptr<const JsonVocabulary> Create(std::vector<std::string> pieces);

  int32_t n_vocab() const { return static_cast<int32_t>(pieces_.size()); }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  // Plain string content: non-empty, valid inside a string from a state with nothing pending,
  // leaving nothing pending and never closing the string.
  bool plain(int32_t id) const { return plain_[static_cast<size_t>(id)]; }
  int32_t n_plain() const { return n_plain_; }

  const TokenTrie& all() const { return all_; }                                 // every non-empty piece
  const TokenTrie& non_plain() const { return non_plain_; }                     // non-empty pieces that are not plain
  const std::vector<int32_t>& not_plain_ids() const { return not_plain_ids_; }  // incl. empty pieces

 private:
  std::vector<std::string> pieces_;
  std::vector<bool> plain_;
  int32_t n_plain_ = 0;
  TokenTrie all_, non_plain_;
  std::vector<int32_t> not_plain_ids_;
};

class JsonConstraint final : public TokenConstraint {
 public:
  // end_tokens: the ids that end generation (ids outside the vocabulary are ignored).
  JsonConstraint(std::shared_ptr<const JsonVocabulary> vocab, std::vector<int32_t> end_tokens,
                 const JsonLimits& limits = {});

  int32_t Mask(float* logits) override;
  bool Accept(int32_t token) override;
  bool IsComplete() const override { return state_.complete(); }
  std::unique_ptr<TokenConstraint> Clone() const override;

  // The tokens Mask would allow now, ascending (for tests; costs a Mask on a row of zeros).
  std::vector<int32_t> Allowed();
  const JsonRecognizer& state() const { return state_; }

 private:
  bool IsEnd(int32_t id) const;
  // Appends to allowed_ every non-end token of `trie` that the current state accepts.
  void Walk(const TokenTrie& trie);

  std::shared_ptr<const JsonVocabulary> vocab_;
  std::vector<int32_t> end_tokens_;  // sorted, unique, in range
  int32_t n_plain_ends_ = 0;         // end tokens whose piece is plain string content
  JsonRecognizer state_;
  // Scratch reused across steps.
  std::vector<JsonRecognizer> stack_;
  std::vector<int32_t> allowed_;
  std::vector<float> saved_;
};

}  // namespace herd
