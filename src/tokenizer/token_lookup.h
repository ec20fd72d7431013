// Exact text -> token id lookup over a vocabulary's token strings (views into the Vocab, which
// must outlive it). When a text occurs twice, the higher id wins (as llama.cpp loads GGUF).
#pragma once

#include <string_view>
#include <unordered_map>

#include "tokenizer/vocab.h"

namespace herd {

class TokenLookup {
 public:
  explicit TokenLookup(const Vocab& vocab) {
    map_.reserve(vocab.tokens.size() * 2);
    for (TokenId id = 0; id < vocab.size(); ++id) map_[vocab.tokens[static_cast<size_t>(id)]] = id;
  }
  TokenId Find(std::string_view text) const {
    auto it = map_.find(text);
    return it == map_.end() ? kNoToken : it->second;
  }

 private:
  std::unordered_map<std::string_view, TokenId> map_;
};

}  // namespace herd
