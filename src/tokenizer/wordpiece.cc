#include "tokenizer/wordpiece.h"

#include <algorithm>
#include <string>

#include "tokenizer/unicode.h"

namespace herd {
namespace {

constexpr size_t kMaxWordChars = 100;

bool IsChineseChar(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool IsBertWhitespace(uint32_t cp) { return cp == '\t' || cp == '\n' || cp == '\r' || unicode::IsWhitespace(cp); }

bool IsBertControl(uint32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return unicode::InMask(cp, unicode::kOther);
}

bool IsBertPunct(uint32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return true;
  return unicode::InMask(cp, unicode::kPunct);
}

void AppendUtf8(const std::u32string& s, size_t begin, size_t end, std::string* out) {
  for (size_t i = begin; i < end; ++i) unicode::AppendUtf8(s[i], out);
}

}  // namespace

Result<WordPieceModel> WordPieceModel::Build(const Vocab& vocab, const TokenLookup& lookup) {
  WordPieceModel m;
  m.lookup_ = &lookup;
  m.unk_ = vocab.unk != kNoToken ? vocab.unk : lookup.Find("[UNK]");
  for (TokenId id = 0; id < vocab.size(); ++id) {
    const std::string& t = vocab.tokens[static_cast<size_t>(id)];
    if (vocab.type(id) == TokenType::kNormal && t.rfind("\xE2\x96\x81", 0) == 0) m.space_prefixed_ = true;
    m.max_token_chars_ = std::max(m.max_token_chars_, unicode::DecodeAll(t).size());
  }
  return m;
}

std::vector<std::u32string> WordPieceModel::Words(std::string_view text) const {
  // Normalize: clean, isolate CJK, NFD, drop accents, lowercase.
  std::vector<uint32_t> cleaned;
  cleaned.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len;
    uint32_t cp = unicode::DecodeUtf8(text.data() + i, text.size() - i, &len);
    i += len;
    if (cp == unicode::kInvalid || cp == 0 || cp == 0xFFFD || IsBertControl(cp)) continue;
    if (IsBertWhitespace(cp)) {
      cleaned.push_back(' ');
    } else if (IsChineseChar(cp)) {
      cleaned.push_back(' ');
      cleaned.push_back(cp);
      cleaned.push_back(' ');
    } else {
      cleaned.push_back(cp);
    }
  }
  std::vector<uint32_t> lowered;
  lowered.reserve(cleaned.size());
  for (uint32_t cp : unicode::Nfd(cleaned)) {
    if (unicode::GetCategory(cp) == unicode::kMn) continue;
    unicode::AppendLower(cp, &lowered);
  }
  // Pre-tokenize: split on whitespace, isolate punctuation.
  std::vector<std::u32string> words;
  std::u32string cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(std::move(cur));
    cur.clear();
  };
  for (uint32_t cp : lowered) {
    if (IsBertWhitespace(cp)) {
      flush();
    } else if (IsBertPunct(cp)) {
      flush();
      words.push_back(std::u32string(1, static_cast<char32_t>(cp)));
    } else {
      cur.push_back(static_cast<char32_t>(cp));
    }
  }
  flush();
  return words;
}

void WordPieceModel::EncodeWord(const std::u32string& word, std::vector<TokenId>* out) const {
  if (word.size() > kMaxWordChars) {
    if (unk_ != kNoToken) out->push_back(unk_);
    return;
  }
  const size_t mark = out->size();
  std::string piece;
  for (size_t start = 0; start < word.size();) {
    TokenId found = kNoToken;
    size_t found_end = start;
    size_t max_end = std::min(word.size(), start + max_token_chars_);
    for (size_t end = max_end; end > start; --end) {
      piece.clear();
      if (space_prefixed_ && start == 0) piece = "\xE2\x96\x81";
      if (!space_prefixed_ && start > 0) piece = "##";
      AppendUtf8(word, start, end, &piece);
      TokenId id = lookup_->Find(piece);
      if (id != kNoToken) {
        found = id;
        found_end = end;
        break;
      }
    }
    if (found == kNoToken) {
      out->resize(mark);
      if (unk_ != kNoToken) out->push_back(unk_);
      return;
    }
    out->push_back(found);
    start = found_end;
  }
}

void WordPieceModel::Encode(std::string_view text, std::vector<TokenId>* out) const {
  for (const std::u32string& w : Words(text)) EncodeWord(w, out);
}

}  // namespace herd
