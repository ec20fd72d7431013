#include "tokenizer/bpe.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace herd {

Result<BpeModel> BpeModel::Build(const Vocab& vocab, const TokenLookup& lookup) {
  BpeModel m;
  m.ignore_merges_ = vocab.ignore_merges;
  m.unk_ = vocab.unk;
  for (int b = 0; b < 256; ++b) {
    m.byte_token_[static_cast<size_t>(b)] =
        lookup.Find(unicode::ToUtf8(byte_level::ByteToCodePoint(static_cast<uint8_t>(b))));
  }
  m.merges_.reserve(vocab.merges.size() * 2);
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    std::string_view merge = vocab.merges[rank];
    size_t space = merge.find(' ', 1);  // a part may itself be a space character in odd vocabularies
    TokenId left = kNoToken, right = kNoToken, result = kNoToken;
    if (space != std::string_view::npos) {
      std::string_view a = merge.substr(0, space), b = merge.substr(space + 1);
      left = lookup.Find(a);
      right = lookup.Find(b);
      result = lookup.Find(std::string(a) + std::string(b));
    }
    if (left == kNoToken || right == kNoToken || result == kNoToken) {
      ++m.skipped_merges_;
      continue;
    }
    m.merges_.emplace(Key(left, right), Merge{static_cast<int32_t>(rank), result});  // first rank wins
  }
  if (m.ignore_merges_) {
    for (TokenId id = 0; id < vocab.size(); ++id) {
      if (vocab.type(id) != TokenType::kNormal) continue;
      std::string raw;
      if (byte_level::Decode(vocab.tokens[static_cast<size_t>(id)], &raw)) m.whole_[raw] = id;
    }
  }
  return m;
}

void BpeModel::EncodeWord(std::string_view word, std::vector<TokenId>* out) const {
  const size_t n = word.size();
  if (n == 0) return;
  auto emit = [&](TokenId id) {
    if (id != kNoToken) {
      out->push_back(id);
    } else if (unk_ != kNoToken) {
      out->push_back(unk_);
    }
  };
  if (n == 1) {
    emit(byte_token_[static_cast<uint8_t>(word[0])]);
    return;
  }
  if (ignore_merges_) {
    auto it = whole_.find(std::string(word));
    if (it != whole_.end()) {
      out->push_back(it->second);
      return;
    }
  }

  struct Candidate {
    int32_t rank;
    int32_t left;
    TokenId left_id, right_id, result;
  };
  // Scratch reused across calls on this thread.
  static thread_local std::vector<TokenId> ids;
  static thread_local std::vector<int32_t> prev, next;
  static thread_local std::vector<Candidate> heap;
  ids.resize(n);
  prev.resize(n);
  next.resize(n);
  heap.clear();
  for (size_t i = 0; i < n; ++i) {
    ids[i] = byte_token_[static_cast<uint8_t>(word[i])];
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  // Min-heap on (rank, left).
  auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  auto try_add = [&](int32_t left) {
    if (left < 0) return;
    int32_t right = next[static_cast<size_t>(left)];
    if (right < 0) return;
    TokenId a = ids[static_cast<size_t>(left)], b = ids[static_cast<size_t>(right)];
    if (a == kNoToken || b == kNoToken) return;
    auto it = merges_.find(Key(a, b));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, a, b, it->second.result});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (size_t i = 0; i + 1 < n; ++i) try_add(static_cast<int32_t>(i));

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Candidate c = heap.back();
    heap.pop_back();
    auto left = static_cast<size_t>(c.left);
    int32_t right = next[left];
    // Stale: the left symbol changed, or its right neighbour is no longer the same token.
    if (ids[left] != c.left_id || right < 0 || ids[static_cast<size_t>(right)] != c.right_id) continue;
    auto r = static_cast<size_t>(right);
    ids[left] = c.result;
    next[left] = next[r];
    if (next[r] >= 0) prev[static_cast<size_t>(next[r])] = c.left;
    ids[r] = kNoToken - 1;  // dead
    try_add(prev[left]);
    try_add(c.left);
  }
  for (int32_t i = 0; i >= 0; i = next[static_cast<size_t>(i)]) emit(ids[static_cast<size_t>(i)]);
}

}  // namespace herd
