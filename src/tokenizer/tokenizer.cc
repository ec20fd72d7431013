#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "io/gguf.h"
#include "tokenizer/byte_level.h"

namespace herd {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 '▁'

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s->size());
  size_t start = 0;
  for (size_t pos = s->find(from); pos != std::string::npos; pos = s->find(from, start)) {
    out.append(*s, start, pos - start);
    out.append(to);
    start = pos + from.size();
  }
  out.append(*s, start, std::string::npos);
  s->swap(out);
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Vocab> vocab) : vocab_(std::move(vocab)) {}

Result<std::unique_ptr<Tokenizer>> Tokenizer::Create(Vocab vocab) {
  HERD_RETURN_IF_ERROR(vocab.Validate());
  std::unique_ptr<Tokenizer> t(new Tokenizer(std::make_unique<Vocab>(std::move(vocab))));
  const Vocab& v = *t->vocab_;
  t->lookup_ = std::make_unique<TokenLookup>(v);
  t->specials_ = std::make_unique<SpecialTokenMatcher>(v);
  switch (v.model) {
    case TokenizerModel::kBpe: {
      auto pre = PreTokenizer::ForName(v.pre.empty() ? "default" : v.pre);
      if (!pre.ok()) return pre.status();
      t->pretokenizer_ = std::move(pre).value();
      HERD_ASSIGN_OR_RETURN(BpeModel bpe, BpeModel::Build(v, *t->lookup_));
      t->bpe_ = std::move(bpe);
      break;
    }
    case TokenizerModel::kSpm: {
      HERD_ASSIGN_OR_RETURN(SpmModel spm, SpmModel::Build(v, *t->lookup_));
      t->spm_ = std::move(spm);
      break;
    }
    case TokenizerModel::kWordPiece: {
      HERD_ASSIGN_OR_RETURN(WordPieceModel wp, WordPieceModel::Build(v, *t->lookup_));
      t->wordpiece_ = std::move(wp);
      break;
    }
  }
  return t;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& file) {
  HERD_ASSIGN_OR_RETURN(Vocab v, LoadVocab(file));
  auto t = Create(std::move(v));
  if (!t.ok()) return t.status().WithContext(file.path() + ": tokenizer");
  return t;
}

std::vector<TokenId> Tokenizer::Encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<TokenId> out;
  Encode(text, add_special, parse_special, &out);
  return out;
}

void Tokenizer::Encode(std::string_view text, bool add_special, bool parse_special, std::vector<TokenId>* out) const {
  const Vocab& v = *vocab_;
  if (add_special && v.add_bos) out->push_back(v.bos);
  std::vector<SpecialTokenMatcher::Fragment> frags;
  specials_->Partition(text, parse_special, &frags);
  bool after_special = true;  // the start of the text counts as "after a special token"
  for (const auto& f : frags) {
    if (f.token != kNoToken) {
      out->push_back(f.token);
      after_special = true;
    } else {
      EncodeRaw(text.substr(f.begin, f.end - f.begin), after_special, out);
      after_special = false;
    }
  }
  if (add_special && v.add_eos) out->push_back(v.eos);
  if (add_special && v.add_sep) out->push_back(v.sep);
}

void Tokenizer::EncodeRaw(std::string_view raw, bool after_special, std::vector<TokenId>* out) const {
  switch (vocab_->model) {
    case TokenizerModel::kSpm: {
      std::string text;
      text.reserve(raw.size() + 8);
      if (vocab_->add_space_prefix && after_special) text.push_back(' ');
      text.append(raw);
      ReplaceAll(&text, " ", kSpmSpace);
      spm_->Encode(text, out);
      break;
    }
    case TokenizerModel::kBpe: {
      static thread_local std::vector<std::pair<uint32_t, uint32_t>> words;
      words.clear();
      pretokenizer_->Split(raw, &words);
      for (auto [b, e] : words) bpe_->EncodeWord(raw.substr(b, e - b), out);
      break;
    }
    case TokenizerModel::kWordPiece: wordpiece_->Encode(raw, out); break;
  }
}

std::string Tokenizer::TokenToPiece(TokenId id, bool render_special) const {
  if (id < 0 || id >= vocab_->size()) return "";
  const std::string& text = vocab_->tokens[static_cast<size_t>(id)];
  switch (vocab_->type(id)) {
    case TokenType::kControl:
    case TokenType::kUnknown: return render_special ? text : "";
    case TokenType::kUserDefined: return text;
    case TokenType::kUnused:
    case TokenType::kUndefined: return "";
    case TokenType::kByte:
      if (text.size() == 6 && text.rfind("<0x", 0) == 0 && text[5] == '>') {
        return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
      }
      return "";
    case TokenType::kNormal: break;
  }
  std::string piece;
  switch (vocab_->model) {
    case TokenizerModel::kSpm:
      piece = text;
      ReplaceAll(&piece, kSpmSpace, " ");
      break;
    case TokenizerModel::kBpe: byte_level::Decode(text, &piece); break;
    case TokenizerModel::kWordPiece:
      if (wordpiece_->space_prefixed()) {
        piece = text;
        if (piece.rfind(kSpmSpace, 0) == 0) piece.replace(0, kSpmSpace.size(), " ");
      } else {
        piece = text.rfind("##", 0) == 0 ? text.substr(2) : " " + text;
      }
      break;
  }
  return piece;
}

bool Tokenizer::StripsLeadingSpace() const {
  return (vocab_->model == TokenizerModel::kSpm && vocab_->add_space_prefix) ||
         vocab_->model == TokenizerModel::kWordPiece;
}

std::string Tokenizer::Decode(const std::vector<TokenId>& ids, const DecodeOptions& opts) const {
  std::string out;
  for (TokenId id : ids) out += TokenToPiece(id, opts.render_special);
  if (opts.strip_leading_space && StripsLeadingSpace() && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

bool Tokenizer::IsEog(TokenId id) const {
  return std::find(vocab_->eog.begin(), vocab_->eog.end(), id) != vocab_->eog.end();
}

bool Tokenizer::IsControl(TokenId id) const {
  return id >= 0 && id < vocab_->size() && vocab_->type(id) == TokenType::kControl;
}

}  // namespace herd
