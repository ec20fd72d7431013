#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/json_string.h"

namespace herd::chat {

const Value* ValueDict::Find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (Equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* ValueDict::Find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

void ValueDict::Set(Value key, Value value) {
  for (auto& [k, v] : items) {
    if (Equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::Get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::Undefined(std::string name) {
  Value v;
  v.str_ = std::move(name);
  return v;
}
Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.int_ = b ? 1 : 0;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.int_ = i;
  return v;
}
Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.float_ = f;
  return v;
}
Value Value::String(std::string s, bool markup) {
  Value v;
  v.kind_ = Kind::kString;
  v.str_ = std::move(s);
  v.flag_ = markup;
  return v;
}
Value Value::List(ValueList items, bool tuple) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<ValueList>(std::move(items));
  v.flag_ = tuple;
  return v;
}
Value Value::Dict(ValueDict dict, bool is_namespace) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<ValueDict>(std::move(dict));
  v.flag_ = is_namespace;
  return v;
}
Value Value::Func(std::string name, Function fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.str_ = std::move(name);
  v.func_ = std::make_shared<Function>(std::move(fn));
  return v;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return int_ != 0;
    case Kind::kFloat: return float_ != 0;
    case Kind::kString: return !str_.empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return flag_ || !dict_->items.empty();
    case Kind::kFunction: return true;
  }
  return false;
}

const char* Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return flag_ ? "Markup" : "str";
    case Kind::kList: return flag_ ? "tuple" : "list";
    case Kind::kDict: return flag_ ? "Namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "?";
}

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.float_value() == b.float_value();
    return a.int_value() == b.int_value();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return a.str() == b.str();
    case Kind::kList: {
      if (a.list().size() != b.list().size()) return false;
      for (size_t i = 0; i < a.list().size(); ++i) {
        if (!Equals(a.list()[i], b.list()[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (a.is_namespace() || b.is_namespace()) return &a.dict() == &b.dict();
      if (a.dict().items.size() != b.dict().items.size()) return false;
      for (const auto& [k, v] : a.dict().items) {
        const Value* other = b.dict().Find(k);
        if (other == nullptr || !Equals(v, *other)) return false;
      }
      return true;
    }
    case Kind::kFunction: return &a.func() == &b.func();
    default: return false;
  }
}

Result<bool> Less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.float_value() < b.float_value();
    return a.int_value() < b.int_value();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 order == code point order
  if (a.is_list() && b.is_list()) {
    const ValueList& x = a.list();
    const ValueList& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      return Less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  return InvalidArgument(StrFormat("'<' not supported between instances of '%s' and '%s'", a.TypeName(), b.TypeName()));
}

std::string FloatRepr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string out;
  size_t p = 0;
  if (sci[0] == '-') {
    out = "-";
    p = 1;
  }
  size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t i = p; i < e_pos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  int exp = std::atoi(sci.c_str() + e_pos + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int n = static_cast<int>(digits.size());
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      if (n <= exp + 1) {
        out += digits + std::string(exp + 1 - n, '0') + ".0";
      } else {
        out += digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
      }
    } else {
      out += "0." + std::string(-exp - 1, '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (n > 1) out += "." + digits.substr(1);
  char e[16];
  std::snprintf(e, sizeof(e), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + e;
}

namespace {

std::string StrRepr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

void JsonString(const std::string& s, bool ensure_ascii, std::string& out) {
  if (ensure_ascii) {
    out += '"';
    for (char32_t cp : ToCodePoints(s)) {
      if (cp < 0x80) {
        const char ascii = static_cast<char>(cp);
        AppendJsonEscaped(std::string_view(&ascii, 1), &out);
        continue;
      }
      char b[16];
      if (cp >= 0x10000) {
        char32_t v = cp - 0x10000;
        std::snprintf(b, sizeof(b), "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
      } else {
        std::snprintf(b, sizeof(b), "\\u%04x", static_cast<unsigned>(cp));
      }
      out += b;
    }
    out += '"';
    return;
  }
  out += '"';
  AppendJsonEscaped(s, &out);
  out += '"';
}

Status JsonRec(const Value& v, const JsonOptions& o, int level, std::string& out) {
  const int indent = o.indent;
  const std::string item_sep = !o.item_sep.empty() ? o.item_sep : indent >= 0 ? "," : ", ";
  const std::string key_sep = !o.key_sep.empty() ? o.key_sep : ": ";
  auto newline = [&](int lvl) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * lvl, ' ');
  };
  switch (v.kind()) {
    case Kind::kNone: out += "null"; return Status::Ok();
    case Kind::kBool: out += v.bool_value() ? "true" : "false"; return Status::Ok();
    case Kind::kInt: out += std::to_string(v.int_value()); return Status::Ok();
    case Kind::kFloat: {
      double f = v.float_value();
      if (std::isnan(f))
        out += "NaN";
      else if (std::isinf(f))
        out += f < 0 ? "-Infinity" : "Infinity";
      else
        out += FloatRepr(f);
      return Status::Ok();
    }
    case Kind::kString: JsonString(v.str(), o.ensure_ascii, out); return Status::Ok();
    case Kind::kList: {
      if (v.list().empty()) {
        out += "[]";
        return Status::Ok();
      }
      out += '[';
      bool first = true;
      for (const Value& item : v.list()) {
        if (!first) out += item_sep;
        first = false;
        if (indent >= 0) newline(level + 1);
        HERD_RETURN_IF_ERROR(JsonRec(item, o, level + 1, out));
      }
      if (indent >= 0) newline(level);
      out += ']';
      return Status::Ok();
    }
    case Kind::kDict: {
      if (v.is_namespace()) break;
      if (v.dict().items.empty()) {
        out += "{}";
        return Status::Ok();
      }
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& [k, val] : v.dict().items) {
        std::string key;
        if (k.is_string())
          key = k.str();
        else if (k.is_none())
          key = "null";
        else if (k.is_bool())
          key = k.bool_value() ? "true" : "false";
        else if (k.is_int())
          key = std::to_string(k.int_value());
        else if (k.is_float())
          key = FloatRepr(k.float_value());
        else
          return InvalidArgument(StrFormat("keys must be str, int, float, bool or None, not %s", k.TypeName()));
        entries.emplace_back(std::move(key), &val);
      }
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out += '{';
      bool first = true;
      for (const auto& [key, val] : entries) {
        if (!first) out += item_sep;
        first = false;
        if (indent >= 0) newline(level + 1);
        JsonString(key, o.ensure_ascii, out);
        out += key_sep;
        HERD_RETURN_IF_ERROR(JsonRec(*val, o, level + 1, out));
      }
      if (indent >= 0) newline(level);
      out += '}';
      return Status::Ok();
    }
    default: break;
  }
  return InvalidArgument(StrFormat("Object of type %s is not JSON serializable", v.TypeName()));
}

}  // namespace

std::string Repr(const Value& v) {
  switch (v.kind()) {
    case Kind::kString: return v.is_markup() ? "Markup(" + StrRepr(v.str()) + ")" : StrRepr(v.str());
    case Kind::kList: {
      std::string out = v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < v.list().size(); ++i) {
        if (i > 0) out += ", ";
        out += Repr(v.list()[i]);
      }
      if (v.is_tuple() && v.list().size() == 1) out += ",";
      return out + (v.is_tuple() ? ")" : "]");
    }
    case Kind::kDict: {
      if (v.is_namespace()) return "<Namespace>";
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : v.dict().items) {
        if (!first) out += ", ";
        first = false;
        out += Repr(k) + ": " + Repr(val);
      }
      return out + "}";
    }
    case Kind::kUndefined: return "Undefined";
    default: return ToStr(v);
  }
}

std::string ToStr(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return v.bool_value() ? "True" : "False";
    case Kind::kInt: return std::to_string(v.int_value());
    case Kind::kFloat: return FloatRepr(v.float_value());
    case Kind::kString: return v.str();
    case Kind::kFunction: return "<function " + v.str() + ">";
    default: return Repr(v);
  }
}

Result<std::string> ToJson(const Value& v, const JsonOptions& options) {
  std::string out;
  HERD_RETURN_IF_ERROR(JsonRec(v, options, 0, out));
  return out;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\'': out += "&#39;"; break;
      case '"': out += "&#34;"; break;
      default: out += c;
    }
  }
  return out;
}

std::u32string ToCodePoints(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      out += static_cast<char32_t>(c);
      ++i;
      continue;
    }
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out += cp;
    i += len;
  }
  return out;
}

std::string FromCodePoints(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  return out;
}

}  // namespace herd::chat
