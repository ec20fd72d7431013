#include "chat/lexer.h"

#include <cstdlib>
#include <cstring>

#include "chat/value.h"

namespace herd::chat {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

std::string Normalize(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  Result<std::vector<Token>> Run();

 private:
  enum class Trail { kNone, kTrimNewline, kStripAll };

  Status Error(size_t pos, const std::string& msg) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InvalidArgument(StrFormat("line %d, column %d: %s", line, col, msg.c_str()));
  }
  void Locate(size_t pos, Token& t) {
    // Advance the cached line/column to pos (positions only move forward).
    for (; loc_pos_ < pos; ++loc_pos_) {
      if (src_[loc_pos_] == '\n') {
        ++loc_line_;
        loc_col_ = 1;
      } else {
        ++loc_col_;
      }
    }
    t.line = loc_line_;
    t.column = loc_col_;
  }
  void Emit(Tok type, size_t pos, std::string text = {}) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    Locate(pos, t);
    tokens_.push_back(std::move(t));
  }
  // Lexes the inside of a tag starting at pos; returns the position after the end marker.
  Result<size_t> LexTag(size_t pos, bool block, Trail& trail);
  Result<size_t> LexString(size_t pos);

  std::string src_;
  std::vector<Token> tokens_;
  size_t loc_pos_ = 0;
  int loc_line_ = 1, loc_col_ = 1;
};

Result<std::vector<Token>> Lexer::Run() {
  const size_t n = src_.size();
  size_t pos = 0;
  Trail trail = Trail::kNone;
  while (true) {
    if (trail == Trail::kStripAll) {
      while (pos < n && IsSpace(src_[pos])) ++pos;
    } else if (trail == Trail::kTrimNewline && pos < n && src_[pos] == '\n') {
      ++pos;
    }
    trail = Trail::kNone;
    size_t tag = pos;
    while (true) {
      tag = src_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= n) {
        tag = std::string::npos;
        break;
      }
      char k = src_[tag + 1];
      if (k == '{' || k == '%' || k == '#') break;
      ++tag;
    }
    size_t text_end = tag == std::string::npos ? n : tag;
    std::string_view text(src_.data() + pos, text_end - pos);
    char kind = 0, mod = 0;
    if (tag != std::string::npos) {
      kind = src_[tag + 1];
      mod = tag + 2 < n ? src_[tag + 2] : 0;
      if (mod == '-') {
        while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
      } else if (kind != '{' && mod != '+') {
        size_t nl = text.rfind('\n');
        size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
        bool line_starting = pos == 0 || src_[pos - 1] == '\n';
        if ((l_pos > 0 || line_starting) && l_pos < text.size()) {
          bool all_ws = true;
          for (size_t i = l_pos; i < text.size(); ++i) all_ws = all_ws && IsSpace(text[i]);
          if (all_ws) text = text.substr(0, l_pos);
        }
      }
    }
    if (!text.empty()) Emit(Tok::kText, pos, std::string(text));
    if (tag == std::string::npos) break;
    size_t p = tag + 2;
    if (mod == '-' || (mod == '+' && kind != '{')) ++p;
    if (kind == '#') {
      size_t end = src_.find("#}", p);
      if (end == std::string::npos) return Error(tag, "unterminated comment");
      if (end > p && src_[end - 1] == '-')
        trail = Trail::kStripAll;
      else if (end > p && src_[end - 1] == '+')
        trail = Trail::kNone;
      else
        trail = Trail::kTrimNewline;
      pos = end + 2;
      continue;
    }
    const bool block = kind == '%';
    Emit(block ? Tok::kBlockBegin : Tok::kVarBegin, tag);
    HERD_ASSIGN_OR_RETURN(pos, LexTag(p, block, trail));
  }
  Emit(Tok::kEof, n);
  return std::move(tokens_);
}

Result<size_t> Lexer::LexTag(size_t pos, bool block, Trail& trail) {
  const size_t n = src_.size();
  const char close = block ? '%' : '}';
  int depth = 0;
  while (true) {
    while (pos < n && IsSpace(src_[pos])) ++pos;
    if (pos >= n) return Error(pos, block ? "unexpected end of template, expected '%}'" : "expected '}}'");
    const char c = src_[pos];
    if (depth == 0) {
      if (c == '-' && pos + 2 < n && src_[pos + 1] == close && src_[pos + 2] == '}') {
        Emit(block ? Tok::kBlockEnd : Tok::kVarEnd, pos);
        trail = Trail::kStripAll;
        return pos + 3;
      }
      if (block && c == '+' && pos + 2 < n && src_[pos + 1] == '%' && src_[pos + 2] == '}') {
        Emit(Tok::kBlockEnd, pos);
        trail = Trail::kNone;
        return pos + 3;
      }
      if (c == close && pos + 1 < n && src_[pos + 1] == '}') {
        Emit(block ? Tok::kBlockEnd : Tok::kVarEnd, pos);
        trail = block ? Trail::kTrimNewline : Trail::kNone;
        return pos + 2;
      }
    }
    if (IsNameStart(c)) {
      size_t e = pos;
      while (e < n && IsNameChar(src_[e])) ++e;
      Emit(Tok::kName, pos, src_.substr(pos, e - pos));
      pos = e;
      continue;
    }
    if (IsDigit(c)) {
      size_t e = pos;
      while (e < n && (IsDigit(src_[e]) || src_[e] == '_')) ++e;
      bool is_float = false;
      if (e + 1 < n && src_[e] == '.' && IsDigit(src_[e + 1])) {
        is_float = true;
        ++e;
        while (e < n && (IsDigit(src_[e]) || src_[e] == '_')) ++e;
      }
      if (e < n && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t x = e + 1;
        if (x < n && (src_[x] == '+' || src_[x] == '-')) ++x;
        if (x < n && IsDigit(src_[x])) {
          is_float = true;
          e = x;
          while (e < n && IsDigit(src_[e])) ++e;
        }
      }
      std::string digits;
      for (size_t i = pos; i < e; ++i) {
        if (src_[i] != '_') digits += src_[i];
      }
      Emit(is_float ? Tok::kFloat : Tok::kInt, pos, digits);
      if (is_float)
        tokens_.back().float_value = std::strtod(digits.c_str(), nullptr);
      else
        tokens_.back().int_value = std::strtoll(digits.c_str(), nullptr, 10);
      pos = e;
      continue;
    }
    if (c == '\'' || c == '"') {
      HERD_ASSIGN_OR_RETURN(pos, LexString(pos));
      continue;
    }
    static const char* kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    bool matched = false;
    for (const char* op : kTwo) {
      if (src_.compare(pos, 2, op) == 0) {
        Emit(Tok::kOp, pos, op);
        pos += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::strchr("+-*/%~<>=()[]{},.:|", c) != nullptr) {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) return Error(pos, StrFormat("unexpected '%c'", c));
        --depth;
      }
      Emit(Tok::kOp, pos, std::string(1, c));
      ++pos;
      continue;
    }
    return Error(pos, StrFormat("unexpected character '%c'", c));
  }
}

// Python string literal escapes (jinja2 decodes literals with "unicode-escape").
Result<size_t> Lexer::LexString(size_t pos) {
  const size_t n = src_.size();
  const char quote = src_[pos];
  std::string value;
  size_t i = pos + 1;
  while (true) {
    if (i >= n) return Error(pos, "unterminated string");
    char c = src_[i];
    if (c == quote) break;
    if (c != '\\' || i + 1 >= n) {
      value += c;
      ++i;
      continue;
    }
    char e = src_[i + 1];
    i += 2;
    switch (e) {
      case 'n': value += '\n'; break;
      case 't': value += '\t'; break;
      case 'r': value += '\r'; break;
      case '\\': value += '\\'; break;
      case '\'': value += '\''; break;
      case '"': value += '"'; break;
      case 'a': value += '\a'; break;
      case 'b': value += '\b'; break;
      case 'f': value += '\f'; break;
      case 'v': value += '\v'; break;
      case '\n': break;
      case 'x':
      case 'u':
      case 'U': {
        size_t len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (i + len > n) return Error(i, "truncated escape");
        std::string hex = src_.substr(i, len);
        char32_t cp = static_cast<char32_t>(std::strtoul(hex.c_str(), nullptr, 16));
        value += FromCodePoints(std::u32string(1, cp));
        i += len;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0';
          for (int k = 0; k < 2 && i < n && src_[i] >= '0' && src_[i] <= '7'; ++k) v = v * 8 + (src_[i++] - '0');
          value += FromCodePoints(std::u32string(1, static_cast<char32_t>(v)));
        } else {
          value += '\\';
          value += e;
        }
    }
  }
  Emit(Tok::kString, pos, std::move(value));
  return i + 1;
}

}  // namespace

Result<std::vector<Token>> Lex(std::string_view source) { return Lexer(Normalize(source)).Run(); }

}  // namespace herd::chat
