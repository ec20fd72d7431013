#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace herd {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) {
  nodes_.emplace_back();
  for (TokenId id = 0; id < vocab.size(); ++id) {
    TokenType t = vocab.type(id);
    bool always = t == TokenType::kUserDefined;
    bool parsed = t == TokenType::kControl || t == TokenType::kUnknown;
    const std::string& text = vocab.tokens[static_cast<size_t>(id)];
    if ((!always && !parsed) || text.empty()) continue;
    int32_t node = 0;
    for (char ch : text) {
      auto b = static_cast<uint8_t>(ch);
      int32_t next = Child(node, b);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        auto& kids = nodes_[static_cast<size_t>(node)].kids;
        kids.insert(std::upper_bound(kids.begin(), kids.end(), std::make_pair(b, INT32_MIN),
                                     [](const auto& x, const auto& y) { return x.first < y.first; }),
                    {b, next});
        nodes_.emplace_back();
      }
      node = next;
    }
    can_start_[static_cast<uint8_t>(text[0])] = true;
    // Duplicate texts: the higher id wins, as in the text lookup.
    (always ? nodes_[static_cast<size_t>(node)].any : nodes_[static_cast<size_t>(node)].parsed) = id;
  }
}

int32_t SpecialTokenMatcher::Child(int32_t node, uint8_t byte) const {
  const auto& kids = nodes_[static_cast<size_t>(node)].kids;
  auto it = std::lower_bound(kids.begin(), kids.end(), byte, [](const auto& k, uint8_t b) { return k.first < b; });
  return it != kids.end() && it->first == byte ? it->second : -1;
}

void SpecialTokenMatcher::Partition(std::string_view text, bool parse_special, std::vector<Fragment>* out) const {
  const auto n = static_cast<uint32_t>(text.size());
  uint32_t raw_start = 0;
  for (uint32_t i = 0; i < n;) {
    if (!can_start_[static_cast<uint8_t>(text[i])]) {
      ++i;
      continue;
    }
    TokenId best = kNoToken;
    uint32_t best_end = i;
    int32_t node = 0;
    for (uint32_t j = i; j < n; ++j) {
      node = Child(node, static_cast<uint8_t>(text[j]));
      if (node < 0) break;
      const Node& nd = nodes_[static_cast<size_t>(node)];
      TokenId hit = nd.any;
      if (parse_special && nd.parsed != kNoToken && (hit == kNoToken || nd.parsed > hit)) hit = nd.parsed;
      if (hit != kNoToken) best = hit, best_end = j + 1;
    }
    if (best == kNoToken) {
      ++i;
      continue;
    }
    if (raw_start < i) out->push_back({kNoToken, raw_start, i});
    out->push_back({best, i, best_end});
    i = raw_start = best_end;
  }
  if (raw_start < n) out->push_back({kNoToken, raw_start, n});
}

}  // namespace herd
