// Splits a Jinja2 template into text and tag tokens, applying jinja2's whitespace rules with
// Hugging Face's settings: trim_blocks (drop the newline after a block or comment tag),
// lstrip_blocks (drop spaces/tabs before a block or comment tag at the start of a line),
// `-` on either side of a tag (strip all whitespace there), `+` (disable lstrip/trim), and
// keep_trailing_newline=False (one trailing newline of the source is dropped). \r\n and \r
// become \n as in jinja2. Cost: one pass over the source.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace herd::chat {

enum class Tok : uint8_t {
  kText,
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the unescaped value
  kInt,
  kFloat,
  kOp,  // text holds the operator: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int column = 1;
};

// Errors (unterminated tag/string/comment, a bad character) carry line and column.
Result<std::vector<Token>> Lex(std::string_view source);

}  // namespace herd::chat
