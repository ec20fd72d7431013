// Finds special tokens in text before model tokenization. User-defined tokens are always
// matched; control and unknown tokens only when the caller parses specials. Matching is
// leftmost-longest over a byte trie (as Hugging Face's added-token matcher), so the text
// between matches goes to the model and matched tokens are emitted as they are.
// Cost: O(text length x longest token) worst case; one table lookup per byte that cannot
// start a special token.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/vocab.h"

namespace herd {

class SpecialTokenMatcher {
 public:
  struct Fragment {
    TokenId token;        // kNoToken: raw text [begin, end)
    uint32_t begin, end;  // byte range in the text (the token's text when token != kNoToken)
  };

  explicit SpecialTokenMatcher(const Vocab& vocab);

  // Splits `text` into raw fragments and special tokens, in order.
  void Partition(std::string_view text, bool parse_special, std::vector<Fragment>* out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> kids;  // sorted by byte
    TokenId any = kNoToken;                         // token ending here that is always matched (user-defined)
    TokenId parsed = kNoToken;                      // token ending here matched only when parsing specials
  };
  int32_t Child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_;
  std::array<bool, 256> can_start_{};
};

}  // namespace herd
