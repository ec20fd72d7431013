// TokenTrie: the byte strings of a vocabulary's tokens as a trie laid out in preorder, for
// walking every token from a recognizer state at once (constrained decoding).
//
// Each node is one byte at one depth; node i's subtree is [i, end). A walk keeps one state per
// depth: a node's state is its parent's state stepped by the node's byte, and a refused byte
// skips the whole subtree. So the cost of a walk is the number of nodes whose parent was
// accepted, not the number of tokens, and it reads the node array front to back.
//
// Immutable after Build; walks are const and may run on many threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace herd {

class TokenTrie {
 public:
  TokenTrie() = default;

  // A trie of the tokens i with include[i] and a non-empty pieces[i] (the token's bytes).
  // Tokens with equal pieces share a node. O(total bytes + n log n) (a sort of the pieces).
  static TokenTrie Build(const std::vector<std::string>& pieces, const std::vector<bool>& include);

  // Calls emit(token, state) for every token whose bytes `step` accepts one by one from
  // `start`, with the state after its last byte. `step(State&, uint8_t) -> bool` advances a
  // copy of the parent's state; it is called once per visited node. `stack` is scratch (one
  // State per depth; reused across walks to avoid allocating).
  template <class State, class Step, class Emit>
  void Walk(const State& start, Step&& step, Emit&& emit, std::vector<State>& stack) const {
    if (stack.size() < static_cast<size_t>(max_depth_) + 1) stack.resize(static_cast<size_t>(max_depth_) + 1);
    stack[0] = start;
    const uint32_t n = static_cast<uint32_t>(nodes_.size());
    uint32_t i = 0;
    while (i < n) {
      const Node& node = nodes_[i];
      State s = stack[node.depth - 1];
      if (!step(s, node.byte)) {
        i = node.end;
        continue;
      }
      for (uint32_t t = token_begin_[i]; t < token_begin_[i + 1]; ++t) emit(tokens_[t], s);
      stack[node.depth] = s;
      ++i;
    }
  }

  size_t n_nodes() const { return nodes_.size(); }
  size_t n_tokens() const { return tokens_.size(); }
  int32_t max_depth() const { return max_depth_; }

 private:
  struct Node {
    uint32_t end;    // one past the last node of this subtree
    uint16_t depth;  // 1 for the first byte of a piece
    uint8_t byte;
  };

  std::vector<Node> nodes_;
  std::vector<uint32_t> token_begin_;  // [n_nodes + 1]: node i's tokens are tokens_[begin[i], begin[i + 1])
  std::vector<int32_t> tokens_;
  int32_t max_depth_ = 0;
};

}  // namespace herd
