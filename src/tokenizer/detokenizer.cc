#include "tokenizer/detokenizer.h"

#include "tokenizer/unicode.h"

namespace herd {

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t cp = unicode::DecodeUtf8(s.data() + i, s.size() - i, &len);
    if (cp == unicode::kInvalid) {
      out.append("\xEF\xBF\xBD");
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions opts)
    : tokenizer_(tokenizer), opts_(opts), at_start_(opts.strip_leading_space && tokenizer.StripsLeadingSpace()) {}

std::string StreamingDetokenizer::Push(TokenId id) {
  std::string piece = tokenizer_.TokenToPiece(id, opts_.render_special);
  if (at_start_ && !piece.empty()) {
    if (piece[0] == ' ') piece.erase(0, 1);
    at_start_ = false;
  }
  pending_ += piece;
  size_t n = unicode::CompleteUtf8Prefix(pending_);
  std::string out = SanitizeUtf8(std::string_view(pending_).substr(0, n));
  pending_.erase(0, n);
  return out;
}

std::string StreamingDetokenizer::Finish() {
  std::string out = SanitizeUtf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace herd
