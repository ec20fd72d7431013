// Python's arithmetic operators on template values (jinja2 evaluates them as Python does).
#include <cmath>

#include "chat/builtins.h"

namespace herd::chat {
namespace {

Status Unsupported(const std::string& op, const Value& a, const Value& b) {
  return InvalidArgument(
      StrFormat("unsupported operand type(s) for %s: '%s' and '%s'", op.c_str(), a.TypeName(), b.TypeName()));
}

Value Repeat(const Value& seq, int64_t times) {
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return Value::String(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return Value::List(std::move(out), seq.is_tuple());
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

Result<Value> BinaryOp(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) return InvalidArgument(a.str().empty() ? "value is undefined" : a.str());
  if (b.is_undefined()) return InvalidArgument(b.str().empty() ? "value is undefined" : b.str());
  const bool nums = a.is_number() && b.is_number();
  const bool ints = nums && !a.is_float() && !b.is_float();
  if (op == "+") {
    if (ints) return Value::Int(a.int_value() + b.int_value());
    if (nums) return Value::Float(a.float_value() + b.float_value());
    if (a.is_string() && b.is_string()) {
      if (a.is_markup() && !b.is_markup()) return Value::String(a.str() + HtmlEscape(b.str()), true);
      if (b.is_markup() && !a.is_markup()) return Value::String(HtmlEscape(a.str()) + b.str(), true);
      return Value::String(a.str() + b.str(), a.is_markup());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      ValueList out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return Value::List(std::move(out), a.is_tuple());
    }
    if (a.is_string() && !a.is_markup()) {
      return InvalidArgument(StrFormat("can only concatenate str (not \"%s\") to str", b.TypeName()));
    }
    if (a.is_list()) {
      return InvalidArgument(
          StrFormat("can only concatenate %s (not \"%s\") to %s", a.TypeName(), b.TypeName(), a.TypeName()));
    }
    return Unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) return Value::Int(a.int_value() - b.int_value());
    if (nums) return Value::Float(a.float_value() - b.float_value());
    return Unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) return Value::Int(a.int_value() * b.int_value());
    if (nums) return Value::Float(a.float_value() * b.float_value());
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return Repeat(a, b.int_value());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return Repeat(b, a.int_value());
    return Unsupported(op, a, b);
  }
  if (!nums) return Unsupported(op, a, b);
  if (op == "/") {
    if (b.float_value() == 0) return InvalidArgument("division by zero");
    return Value::Float(a.float_value() / b.float_value());
  }
  if (op == "//" || op == "%") {
    if (b.float_value() == 0)
      return InvalidArgument(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
    if (ints) {
      int64_t q = FloorDiv(a.int_value(), b.int_value());
      return Value::Int(op == "//" ? q : a.int_value() - q * b.int_value());
    }
    double x = a.float_value(), y = b.float_value();
    double q = std::floor(x / y);
    return Value::Float(op == "//" ? q : x - q * y);
  }
  if (op == "**") {
    if (ints && b.int_value() >= 0) {
      int64_t r = 1;
      for (int64_t i = 0; i < b.int_value(); ++i) r *= a.int_value();
      return Value::Int(r);
    }
    return Value::Float(std::pow(a.float_value(), b.float_value()));
  }
  return Internal("unknown operator " + op);
}

Result<Value> Negate(const Value& v) {
  if (v.is_undefined()) return InvalidArgument(v.str().empty() ? "value is undefined" : v.str());
  if (v.is_float()) return Value::Float(-v.float_value());
  if (v.is_number()) return Value::Int(-v.int_value());
  return InvalidArgument(StrFormat("bad operand type for unary -: '%s'", v.TypeName()));
}

}  // namespace herd::chat
