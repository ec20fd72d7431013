// JsonRecognizer: a byte-at-a-time pushdown recognizer of one JSON document (RFC 8259) whose
// top-level value is an object — what constrained decoding in "JSON object mode" needs.
//
// Step(byte) answers whether the bytes so far followed by `byte` are still a prefix of some
// valid document, and advances. The recognizer is *live*: every prefix it accepts can be
// completed (so a decoder that only takes accepted bytes never paints itself into a corner).
// That is why a few checks come early: a \u escape digit is refused as soon as no 4-digit
// value with that prefix can be valid.
//
// The language, exactly:
//   document   = ws object                        (nothing after the closing brace)
//   value      = object | array | string | number | true | false | null
//   ws         = runs of at most `max_whitespace` bytes of space, \t, \n, \r (between tokens)
//   string     = '"' *( unescaped UTF-8 | escape ) '"'   unescaped: no '"', '\\', bytes < 0x20;
//                UTF-8 validated (no overlongs, no surrogates, <= U+10FFFF)
//   escape     = \" \\ \/ \b \f \n \r \t | \uXXXX   a high surrogate \uD800-\uDBFF must be
//                followed by a low one \uDC00-\uDFFF; a lone low surrogate is refused (as
//                strict parsers such as nlohmann::json and Python's json do for UTF-8 output)
//   number     = -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
//   nesting    = at most `max_depth` open objects/arrays
//   magnitude  = at most `max_integer_digits` integer digits and `max_exponent_digits` exponent
//                digits, so that every number is a finite double (strict parsers — Go's
//                encoding/json, nlohmann::json — reject 1e999; the defaults bound numbers by 1e199)
//
// A value of 32 bytes, trivially copyable: constrained decoding copies it once per trie node.
// Step is O(1), no allocation.
#pragma once

#include <cstdint>
#include <string_view>

namespace herd {

struct JsonLimits {
  int32_t max_depth = 64;            // open objects + arrays, in [1, 128]
  int32_t max_whitespace = 20;       // consecutive whitespace bytes outside strings, in [0, 255]
  int32_t max_integer_digits = 100;  // in [1, 255]
  int32_t max_exponent_digits = 2;   // in [1, 255]
};

class JsonRecognizer {
 public:
  explicit JsonRecognizer(const JsonLimits& limits = {});

  // Advances by one byte. Returns false (and leaves the state unspecified) if no valid
  // document starts with the bytes so far plus `byte`.
  bool Step(uint8_t byte);
  // Steps through every byte; false as soon as one is refused.
  bool Feed(std::string_view bytes);

  // The top-level object has been closed: the document is complete; no byte is accepted now.
  bool complete() const { return mode_ == kDone; }
  // Inside a string with no escape or UTF-8 sequence pending: every byte of plain string content
  // leaves the recognizer exactly as it is (constrained decoding precomputes those tokens).
  bool in_plain_string() const { return mode_ == kString; }
  int32_t depth() const { return depth_; }

 private:
  enum Mode : uint8_t {
    kStart,         // before the document: ws or '{'
    kObjectFirst,   // after '{': ws, '"' (a key) or '}'
    kObjectKey,     // after ',' in an object: ws or '"'
    kColon,         // after a key: ws or ':'
    kValue,         // after ':' or ',' in an array: ws or a value
    kArrayFirst,    // after '[': ws, a value or ']'
    kAfterValue,    // after a value in a container: ws, ',' or the matching close
    kString,        // in a string, nothing pending
    kEscape,        // after '\'
    kUnicode,       // in \uXXXX: aux_ digits read, code_ their value
    kLowBackslash,  // after a high surrogate escape: '\' must follow
    kLowU,          // ... then 'u'
    kUtf8,          // in a multi-byte character: aux_ continuation bytes left, next in [lo_, hi_]
    kMinus,         // number: after '-'
    kZero,          // number: integer part is 0
    kInt,           // number: in integer digits (first was 1-9), aux_ of them
    kDot,           // number: after '.'
    kFrac,          // number: in fraction digits
    kExp,           // number: after e/E
    kExpSign,       // number: after the exponent sign
    kExpDigits,     // number: in exponent digits, aux_ of them
    kLiteral,       // in true/false/null: lit_ which one, aux_ bytes matched
    kDone,          // the top-level object is closed
  };

  bool Whitespace();
  bool StartValue(uint8_t c);
  bool Open(bool object);
  bool Close(bool object);
  bool EndNumber(uint8_t c);
  void ValueDone() { mode_ = depth_ == 0 ? kDone : kAfterValue; }
  bool TopIsObject() const { return (stack_[(depth_ - 1) >> 6] >> ((depth_ - 1) & 63)) & 1; }

  Mode mode_ = kStart;
  uint8_t ws_ = 0;  // consecutive whitespace bytes
  uint8_t depth_ = 0;
  uint8_t max_depth_;
  uint8_t max_ws_;
  uint8_t max_int_digits_;
  uint8_t max_exp_digits_;
  bool key_ = false;  // the string being read is an object key
  bool low_ = false;  // kUnicode: reading the low half of a surrogate pair
  uint8_t aux_ = 0;
  uint8_t lit_ = 0;
  uint8_t lo_ = 0, hi_ = 0;
  uint16_t code_ = 0;
  uint64_t stack_[2] = {0, 0};  // bit d: level d is an object (1) or an array (0)
};

}  // namespace herd
