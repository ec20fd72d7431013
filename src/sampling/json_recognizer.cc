#include "sampling/json_recognizer.h"

#include "base/check.h"

namespace herd {
namespace {

constexpr const char* kLiterals[] = {"true", "false", "null"};
constexpr uint8_t kLiteralLength[] = {4, 5, 4};

bool IsWs(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(uint8_t c) { return c >= '0' && c <= '9'; }

int HexValue(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

JsonRecognizer::JsonRecognizer(const JsonLimits& limits) {
  HERD_CHECK(limits.max_depth >= 1 && limits.max_depth <= 128);
  HERD_CHECK(limits.max_whitespace >= 0 && limits.max_whitespace <= 255);
  HERD_CHECK(limits.max_integer_digits >= 1 && limits.max_integer_digits <= 255);
  HERD_CHECK(limits.max_exponent_digits >= 1 && limits.max_exponent_digits <= 255);
  max_depth_ = static_cast<uint8_t>(limits.max_depth);
  max_ws_ = static_cast<uint8_t>(limits.max_whitespace);
  max_int_digits_ = static_cast<uint8_t>(limits.max_integer_digits);
  max_exp_digits_ = static_cast<uint8_t>(limits.max_exponent_digits);
}

bool JsonRecognizer::Feed(std::string_view bytes) {
  for (char c : bytes) {
    if (!Step(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool JsonRecognizer::Whitespace() {
  if (ws_ >= max_ws_) return false;
  ++ws_;
  return true;
}

bool JsonRecognizer::Open(bool object) {
  if (depth_ >= max_depth_) return false;
  uint64_t& word = stack_[depth_ >> 6];
  const uint64_t bit = uint64_t{1} << (depth_ & 63);
  word = object ? (word | bit) : (word & ~bit);
  ++depth_;
  mode_ = object ? kObjectFirst : kArrayFirst;
  return true;
}

bool JsonRecognizer::Close(bool object) {
  if (depth_ == 0 || TopIsObject() != object) return false;
  --depth_;
  ValueDone();
  return true;
}

bool JsonRecognizer::StartValue(uint8_t c) {
  switch (c) {
    case '{': return Open(true);
    case '[': return Open(false);
    case '"':
      mode_ = kString;
      key_ = false;
      return true;
    case '-': mode_ = kMinus; return true;
    case '0': mode_ = kZero; return true;
    case 't':
    case 'f':
    case 'n':
      mode_ = kLiteral;
      lit_ = c == 't' ? 0 : c == 'f' ? 1 : 2;
      aux_ = 1;
      return true;
    default:
      if (c >= '1' && c <= '9') {
        mode_ = kInt;
        aux_ = 1;
        return true;
      }
      return false;
  }
}

// A byte that cannot continue a complete number ends it and is read as what follows a value.
// Numbers only occur inside containers (the top level is an object), so that is kAfterValue.
bool JsonRecognizer::EndNumber(uint8_t c) {
  mode_ = kAfterValue;
  ws_ = 0;
  return Step(c);
}

bool JsonRecognizer::Step(uint8_t c) {
  switch (mode_) {
    case kStart:
    case kObjectFirst:
    case kObjectKey:
    case kColon:
    case kValue:
    case kArrayFirst:
    case kAfterValue:
      if (IsWs(c)) return Whitespace();
      ws_ = 0;
      break;
    default: break;
  }
  switch (mode_) {
    case kStart: return c == '{' && Open(true);
    case kObjectFirst:
      if (c == '}') return Close(true);
      [[fallthrough]];
    case kObjectKey:
      if (c != '"') return false;
      mode_ = kString;
      key_ = true;
      return true;
    case kColon:
      if (c != ':') return false;
      mode_ = kValue;
      return true;
    case kArrayFirst:
      if (c == ']') return Close(false);
      [[fallthrough]];
    case kValue: return StartValue(c);
    case kAfterValue:
      if (c == ',') {
        mode_ = TopIsObject() ? kObjectKey : kValue;
        return true;
      }
      if (c == '}') return Close(true);
      if (c == ']') return Close(false);
      return false;

    case kString:
      if (c == '"') {
        if (key_) {
          mode_ = kColon;
        } else {
          ValueDone();
        }
        return true;
      }
      if (c == '\\') {
        mode_ = kEscape;
        return true;
      }
      if (c < 0x20) return false;
      if (c < 0x80) return true;
      // A UTF-8 lead byte: how many continuation bytes follow and the range of the first one
      // (the narrower ranges exclude overlong forms, surrogates and code points > U+10FFFF).
      lo_ = 0x80;
      hi_ = 0xBF;
      if (c >= 0xC2 && c <= 0xDF) {
        aux_ = 1;
      } else if (c >= 0xE0 && c <= 0xEF) {
        aux_ = 2;
        if (c == 0xE0) lo_ = 0xA0;
        if (c == 0xED) hi_ = 0x9F;
      } else if (c >= 0xF0 && c <= 0xF4) {
        aux_ = 3;
        if (c == 0xF0) lo_ = 0x90;
        if (c == 0xF4) hi_ = 0x8F;
      } else {
        return false;  // a continuation byte, C0/C1 or F5-FF
      }
      mode_ = kUtf8;
      return true;
    case kUtf8:
      if (c < lo_ || c > hi_) return false;
      lo_ = 0x80;
      hi_ = 0xBF;
      if (--aux_ == 0) mode_ = kString;
      return true;
    case kEscape:
      switch (c) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't': mode_ = kString; return true;
        case 'u':
          mode_ = kUnicode;
          low_ = false;
          aux_ = 0;
          code_ = 0;
          return true;
        default: return false;
      }
    case kUnicode: {
      const int v = HexValue(c);
      if (v < 0) return false;
      const uint32_t code = (uint32_t{code_} << 4) | static_cast<uint32_t>(v);
      const int left = 3 - aux_;  // hex digits still to come
      const uint32_t lo = code << (4 * left), hi = lo + (uint32_t{1} << (4 * left)) - 1;
      if (low_) {
        if (hi < 0xDC00 || lo > 0xDFFF) return false;  // no low surrogate has this prefix
      } else if (lo >= 0xDC00 && hi <= 0xDFFF) {
        return false;  // only lone low surrogates have this prefix
      }
      code_ = static_cast<uint16_t>(code);
      if (++aux_ < 4) return true;
      mode_ = !low_ && code >= 0xD800 && code <= 0xDBFF ? kLowBackslash : kString;
      return true;
    }
    case kLowBackslash:
      if (c != '\\') return false;
      mode_ = kLowU;
      return true;
    case kLowU:
      if (c != 'u') return false;
      mode_ = kUnicode;
      low_ = true;
      aux_ = 0;
      code_ = 0;
      return true;

    case kMinus:
      if (c == '0') {
        mode_ = kZero;
        return true;
      }
      if (c >= '1' && c <= '9') {
        mode_ = kInt;
        aux_ = 1;
        return true;
      }
      return false;
    case kZero:
    case kInt:
      if (IsDigit(c) && mode_ == kInt) {
        if (aux_ >= max_int_digits_) return false;
        ++aux_;
        return true;
      }
      if (c == '.') {
        mode_ = kDot;
        return true;
      }
      if (c == 'e' || c == 'E') {
        mode_ = kExp;
        return true;
      }
      return EndNumber(c);
    case kDot:
      if (!IsDigit(c)) return false;
      mode_ = kFrac;
      return true;
    case kFrac:
      if (IsDigit(c)) return true;
      if (c == 'e' || c == 'E') {
        mode_ = kExp;
        return true;
      }
      return EndNumber(c);
    case kExp:
      if (c == '+' || c == '-') {
        mode_ = kExpSign;
        return true;
      }
      [[fallthrough]];
    case kExpSign:
      if (!IsDigit(c)) return false;
      mode_ = kExpDigits;
      aux_ = 1;
      return true;
    case kExpDigits:
      if (IsDigit(c)) {
        if (aux_ >= max_exp_digits_) return false;
        ++aux_;
        return true;
      }
      return EndNumber(c);

    case kLiteral:
      if (c != static_cast<uint8_t>(kLiterals[lit_][aux_])) return false;
      if (++aux_ == kLiteralLength[lit_]) ValueDone();
      return true;
    case kDone: return false;
  }
  return false;
}

}  // namespace herd
