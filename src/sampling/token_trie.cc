#include "sampling/token_trie.h"

#include <algorithm>
#include <numeric>
#include <string_view>

#include "base/check.h"

namespace herd {

TokenTrie TokenTrie::Build(const std::vector<std::string>& pieces, const std::vector<bool>& include) {
  HERD_CHECK(include.size() == pieces.size());
  std::vector<int32_t> ids;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (include[i] && !pieces[i].empty()) ids.push_back(static_cast<int32_t>(i));
  }
  // std::string compares bytes as unsigned char, so siblings come out in byte order and a piece
  // comes before every piece it is a prefix of (its node exists before its descendants').
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return pieces[a] < pieces[b]; });

  TokenTrie t;
  std::vector<uint32_t> path;  // path[d]: the node at depth d + 1 on the current piece's path
  std::string_view prev;
  for (int32_t id : ids) {
    const std::string_view p = pieces[id];
    HERD_CHECK_MSG(p.size() <= 65535, "token %d is %zu bytes long", id, p.size());
    size_t lcp = 0;
    while (lcp < p.size() && lcp < prev.size() && p[lcp] == prev[lcp]) ++lcp;
    while (path.size() > lcp) {
      t.nodes_[path.back()].end = static_cast<uint32_t>(t.nodes_.size());
      path.pop_back();
    }
    for (size_t k = lcp; k < p.size(); ++k) {
      path.push_back(static_cast<uint32_t>(t.nodes_.size()));
      t.nodes_.push_back({0, static_cast<uint16_t>(k + 1), static_cast<uint8_t>(p[k])});
      t.token_begin_.push_back(static_cast<uint32_t>(t.tokens_.size()));
    }
    // The piece's node is the newest node: equal pieces are adjacent and nothing deeper was made.
    t.tokens_.push_back(id);
    t.max_depth_ = std::max(t.max_depth_, static_cast<int32_t>(p.size()));
    prev = p;
  }
  for (uint32_t node : path) t.nodes_[node].end = static_cast<uint32_t>(t.nodes_.size());
  t.token_begin_.push_back(static_cast<uint32_t>(t.tokens_.size()));
  return t;
}

}  // namespace herd
