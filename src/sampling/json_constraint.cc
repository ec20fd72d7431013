#include "sampling/json_constraint.h"

#include <algorithm>
#include <limits>

namespace herd {
namespace {

constexpr float kBanned = -std::numeric_limits<float>::infinity();

}  // namespace

std::shared_ptr<const JsonVocabulary> JsonVocabulary::Create(std::vector<std::string> pieces) {
  auto v = std::make_shared<JsonVocabulary>();
  v->pieces_ = std::move(pieces);
  const size_t n = v->pieces_.size();
  v->plain_.assign(n, false);
  JsonRecognizer in_string;
  in_string.Feed("{\"");
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = v->pieces_[i];
    bool plain = false;
    if (!p.empty() && p.find('"') == std::string::npos) {
      JsonRecognizer r = in_string;
      plain = r.Feed(p) && r.in_plain_string();
    }
    v->plain_[i] = plain;
    if (plain) {
      ++v->n_plain_;
    } else {
      v->not_plain_ids_.push_back(static_cast<int32_t>(i));
    }
  }
  v->all_ = TokenTrie::Build(v->pieces_, std::vector<bool>(n, true));
  std::vector<bool> non_plain(n);
  for (size_t i = 0; i < n; ++i) non_plain[i] = !v->plain_[i];
  v->non_plain_ = TokenTrie::Build(v->pieces_, non_plain);
  return v;
}

JsonConstraint::JsonConstraint(std::shared_ptr<const JsonVocabulary> vocab, std::vector<int32_t> end_tokens,
                               const JsonLimits& limits)
    : vocab_(std::move(vocab)), state_(limits) {
  for (int32_t id : end_tokens) {
    if (id >= 0 && id < vocab_->n_vocab()) end_tokens_.push_back(id);
  }
  std::sort(end_tokens_.begin(), end_tokens_.end());
  end_tokens_.erase(std::unique(end_tokens_.begin(), end_tokens_.end()), end_tokens_.end());
  for (int32_t id : end_tokens_) n_plain_ends_ += vocab_->plain(id) ? 1 : 0;
}

std::unique_ptr<TokenConstraint> JsonConstraint::Clone() const { return std::make_unique<JsonConstraint>(*this); }

bool JsonConstraint::IsEnd(int32_t id) const { return std::binary_search(end_tokens_.begin(), end_tokens_.end(), id); }

void JsonConstraint::Walk(const TokenTrie& trie) {
  trie.Walk(
      state_, [](JsonRecognizer& s, uint8_t byte) { return s.Step(byte); },
      [&](int32_t id, const JsonRecognizer&) {
        if (!IsEnd(id)) allowed_.push_back(id);
      },
      stack_);
}

int32_t JsonConstraint::Mask(float* logits) {
  const int32_t n = vocab_->n_vocab();
  allowed_.clear();
  if (state_.complete()) {
    allowed_ = end_tokens_;
  } else if (state_.in_plain_string()) {
    // Plain tokens keep their logits; every other token is banned unless the walk allows it.
    Walk(vocab_->non_plain());
    saved_.resize(allowed_.size());
    for (size_t i = 0; i < allowed_.size(); ++i) saved_[i] = logits[allowed_[i]];
    for (int32_t id : vocab_->not_plain_ids()) logits[id] = kBanned;
    for (size_t i = 0; i < allowed_.size(); ++i) logits[allowed_[i]] = saved_[i];
    for (int32_t id : end_tokens_) logits[id] = kBanned;
    return vocab_->n_plain() - n_plain_ends_ + static_cast<int32_t>(allowed_.size());
  } else {
    Walk(vocab_->all());
  }
  saved_.resize(allowed_.size());
  for (size_t i = 0; i < allowed_.size(); ++i) saved_[i] = logits[allowed_[i]];
  std::fill(logits, logits + n, kBanned);
  for (size_t i = 0; i < allowed_.size(); ++i) logits[allowed_[i]] = saved_[i];
  return static_cast<int32_t>(allowed_.size());
}

bool JsonConstraint::Accept(int32_t token) {
  if (IsEnd(token)) return state_.complete();
  if (token < 0 || token >= vocab_->n_vocab() || state_.complete()) return false;
  const std::string& piece = vocab_->piece(token);
  if (piece.empty()) return false;
  JsonRecognizer next = state_;
  if (!next.Feed(piece)) return false;
  state_ = next;
  return true;
}

std::vector<int32_t> JsonConstraint::Allowed() {
  std::vector<float> row(static_cast<size_t>(vocab_->n_vocab()), 0.0f);
  Mask(row.data());
  std::vector<int32_t> out;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] == 0.0f) out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

}  // namespace herd
