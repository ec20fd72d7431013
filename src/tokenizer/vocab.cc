#include "tokenizer/vocab.h"

#include <algorithm>
#include <string_view>

namespace herd {

const char* TokenizerModelName(TokenizerModel model) {
  switch (model) {
    case TokenizerModel::kSpm: return "llama";
    case TokenizerModel::kBpe: return "gpt2";
    case TokenizerModel::kWordPiece: return "bert";
  }
  return "?";
}

Status Vocab::Validate() const {
  if (tokens.empty()) return InvalidArgument("vocabulary has no tokens");
  if (types.size() != tokens.size())
    return InvalidArgument(StrFormat("token_type has %zu entries, tokens %zu", types.size(), tokens.size()));
  if (!scores.empty() && scores.size() != tokens.size())
    return InvalidArgument(StrFormat("scores has %zu entries, tokens %zu", scores.size(), tokens.size()));
  const std::pair<const char*, TokenId> ids[] = {
      {"bos", bos},         {"eos", eos},         {"eot", eot},         {"eom", eom},
      {"unknown", unk},     {"separator", sep},   {"padding", pad},     {"mask", mask},
      {"fim_pre", fim_pre}, {"fim_suf", fim_suf}, {"fim_mid", fim_mid},
  };
  for (auto [name, id] : ids) {
    if (id != kNoToken && (id < 0 || id >= size()))
      return OutOfRange(StrFormat("%s token id %d is outside the vocabulary (%d tokens)", name, id, size()));
  }
  for (TokenId id : eog) {
    if (id < 0 || id >= size()) return OutOfRange(StrFormat("end-of-generation id %d out of range", id));
  }
  if (add_bos && bos == kNoToken) return InvalidArgument("add_bos is set but there is no bos token");
  if (add_eos && eos == kNoToken) return InvalidArgument("add_eos is set but there is no eos token");
  if (add_sep && sep == kNoToken) return InvalidArgument("add_sep is set but there is no separator token");
  return Status::Ok();
}

void Vocab::SetModelDefaults() {
  add_bos = add_eos = add_sep = add_space_prefix = ignore_merges = false;
  switch (model) {
    case TokenizerModel::kSpm:
      add_bos = true;
      add_space_prefix = true;
      break;
    case TokenizerModel::kWordPiece:
      add_bos = true;  // [CLS]
      add_sep = true;  // [SEP]
      break;
    case TokenizerModel::kBpe: {
      static const char* const kLlama3Like[] = {"llama3",  "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
                                                "pixtral", "midm-2.0", "lfm2",      "tekken"};
      for (const char* name : kLlama3Like) {
        if (pre == name) add_bos = ignore_merges = true;
      }
      if (pre == "chameleon") add_bos = true;
      if (pre == "jina-v1-en" || pre == "jina-v2-code" || pre == "roberta-bpe") add_sep = true;
      break;
    }
  }
}

void Vocab::CollectEog() {
  eog.clear();
  auto add = [this](TokenId id) {
    if (id != kNoToken && std::find(eog.begin(), eog.end(), id) == eog.end()) eog.push_back(id);
  };
  add(eos);
  add(eot);
  add(eom);
  static const std::string_view kEndTexts[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>",    "<end_of_turn>",   "<|endoftext|>",      "<|eom_id|>",
      "<EOT>",      "_<EOT>",     "<|return|>", "<|end_of_text|>", "<end_of_utterance>", "<｜end▁of▁sentence｜>",
  };
  for (TokenId id = 0; id < size(); ++id) {
    TokenType t = type(id);
    if (t != TokenType::kControl && t != TokenType::kUserDefined) continue;
    for (std::string_view e : kEndTexts) {
      if (tokens[static_cast<size_t>(id)] == e) add(id);
    }
  }
}

}  // namespace herd
