#include "tokenizer/spm.h"

#include <algorithm>
#include <cstdio>

#include "tokenizer/unicode.h"

namespace herd {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581

}  // namespace

Result<SpmModel> SpmModel::Build(const Vocab& vocab, const TokenLookup& lookup) {
  SpmModel m;
  m.vocab_ = &vocab;
  m.lookup_ = &lookup;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    m.byte_tokens_[static_cast<size_t>(b)] = lookup.Find(name);
  }
  m.splits_words_ = true;
  for (TokenId id = 0; id < vocab.size() && m.splits_words_; ++id) {
    if (vocab.type(id) != TokenType::kNormal) continue;
    std::string_view t = vocab.tokens[static_cast<size_t>(id)];
    for (size_t pos = t.find(kSpace, 1); pos != std::string_view::npos; pos = t.find(kSpace, pos + 1)) {
      if (pos < kSpace.size() || t.substr(pos - kSpace.size(), kSpace.size()) != kSpace) {
        m.splits_words_ = false;
        break;
      }
    }
  }
  return m;
}

TokenId SpmModel::Mergeable(std::string_view text) const {
  TokenId id = lookup_->Find(text);
  return id != kNoToken && vocab_->type(id) == TokenType::kNormal ? id : kNoToken;
}

void SpmModel::Encode(std::string_view text, std::vector<TokenId>* out, bool split_words) const {
  if (!splits_words_ || !split_words) {
    EncodeRun(text, out);
    return;
  }
  // Cut before every '▁' that follows another character.
  size_t start = 0;
  for (size_t pos = text.find(kSpace, 1); pos != std::string_view::npos; pos = text.find(kSpace, pos + 1)) {
    if (pos >= kSpace.size() && text.substr(pos - kSpace.size(), kSpace.size()) == kSpace) continue;
    EncodeRun(text.substr(start, pos - start), out);
    start = pos;
  }
  EncodeRun(text.substr(start), out);
}

void SpmModel::EncodeRun(std::string_view text, std::vector<TokenId>* out) const {
  if (text.empty()) return;
  struct Sym {
    uint32_t start, len;
    int32_t prev, next;
  };
  struct Candidate {
    float score;
    int32_t left, right;
    uint32_t len;
  };
  static thread_local std::vector<Sym> syms;
  static thread_local std::vector<Candidate> heap;
  syms.clear();
  heap.clear();
  for (size_t i = 0; i < text.size();) {
    size_t len;
    unicode::DecodeUtf8(text.data() + i, text.size() - i, &len);
    auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(len), idx - 1, idx + 1});
    i += len;
  }
  syms.back().next = -1;
  // Max-heap on score, then leftmost.
  auto before = [](const Candidate& a, const Candidate& b) {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  };
  const std::vector<float>& scores = vocab_->scores;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Sym& l = syms[static_cast<size_t>(left)];
    const Sym& r = syms[static_cast<size_t>(right)];
    TokenId id = Mergeable(text.substr(l.start, l.len + r.len));
    if (id == kNoToken) return;
    float score = scores.empty() ? 0.0f : scores[static_cast<size_t>(id)];
    heap.push_back({score, left, right, l.len + r.len});
    std::push_heap(heap.begin(), heap.end(), before);
  };
  for (size_t i = 1; i < syms.size(); ++i) try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), before);
    Candidate c = heap.back();
    heap.pop_back();
    Sym& l = syms[static_cast<size_t>(c.left)];
    Sym& r = syms[static_cast<size_t>(c.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != c.len || l.next != c.right) continue;  // stale
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[static_cast<size_t>(r.next)].prev = c.left;
    try_add(l.prev, c.left);
    try_add(c.left, l.next);
  }
  for (int32_t i = 0; i >= 0; i = syms[static_cast<size_t>(i)].next) {
    const Sym& s = syms[static_cast<size_t>(i)];
    std::string_view piece = text.substr(s.start, s.len);
    TokenId id = lookup_->Find(piece);
    if (id != kNoToken && (vocab_->type(id) == TokenType::kNormal || vocab_->type(id) == TokenType::kUserDefined)) {
      out->push_back(id);
      continue;
    }
    for (char ch : piece) {
      TokenId b = byte_tokens_[static_cast<uint8_t>(ch)];
      if (b != kNoToken) {
        out->push_back(b);
      } else if (vocab_->unk != kNoToken) {
        out->push_back(vocab_->unk);
        break;  // one unk per unknown character
      }
    }
  }
}

}  // namespace herd
