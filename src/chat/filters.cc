// jinja2's built-in filters and tests (the subset chat templates use), with HF's tojson.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "chat/builtins.h"

namespace herd::chat {
namespace {

// jinja2's soft_str: strings stay (Markup stays Markup), everything else becomes str(x).
Value SoftStr(const Value& v) { return v.is_string() ? v : Value::String(ToStr(v)); }

bool ArgBool(const CallArgs& args, size_t index, std::string_view name, bool def) {
  const Value* v = args.Get(index, name);
  return v ? v->Truthy() : def;
}

// Shifts positional arguments left by `n` (e.g. drop the filter/test name in map/select).
CallArgs Rest(const CallArgs& args, size_t n) {
  CallArgs out;
  for (size_t i = n; i < args.positional.size(); ++i) out.positional.push_back(args.positional[i]);
  out.keyword = args.keyword;
  return out;
}

// jinja2's make_attrgetter: "a.b.0" walks items/attributes.
Result<Value> AttrPath(const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    Value key = Value::String(part);
    if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      key = Value::Int(std::atoll(part.c_str()));
    }
    HERD_ASSIGN_OR_RETURN(cur, GetItem(cur, key));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return cur;
}

Result<Value> SelectOrReject(const Value& subject, CallArgs& args, bool select, bool by_attr) {
  if (!subject.Truthy()) return Value::List();  // jinja2 yields nothing for a falsy input (even None)
  HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(subject));
  std::string attr;
  size_t test_at = 0;
  if (by_attr) {
    const Value* a = args.Get(0, "attribute");
    if (!a || !a->is_string()) return InvalidArgument("selectattr/rejectattr need an attribute name");
    attr = a->str();
    test_at = 1;
  }
  const Value* test = test_at < args.positional.size() ? &args.positional[test_at] : nullptr;
  CallArgs test_args = Rest(args, test_at + 1);
  ValueList out;
  for (const Value& item : items) {
    Value probe = item;
    if (by_attr) {
      HERD_ASSIGN_OR_RETURN(probe, AttrPath(item, attr));
    }
    bool hit;
    if (test == nullptr) {
      hit = probe.Truthy();
    } else {
      HERD_ASSIGN_OR_RETURN(hit, ApplyTest(test->str(), probe, test_args));
    }
    if (hit == select) out.push_back(item);
  }
  return Value::List(std::move(out));
}

Result<Value> SortItems(ValueList items, bool reverse, bool case_sensitive, const std::string& attr, bool by_value) {
  auto key = [&](const Value& v) -> Result<Value> {
    Value k = v;
    if (by_value)
      k = v.list()[1];
    else if (v.is_tuple() && v.list().size() == 2 && attr == "\x01")
      k = v.list()[0];
    if (!attr.empty() && attr != "\x01") {
      HERD_ASSIGN_OR_RETURN(k, AttrPath(v, attr));
    }
    if (!case_sensitive && k.is_string()) k = Value::String(PyLower(k.str()));
    return k;
  };
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& v : items) {
    HERD_ASSIGN_OR_RETURN(Value k, key(v));
    keyed.emplace_back(std::move(k), std::move(v));
  }
  Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    Result<bool> lt = reverse ? Less(y.first, x.first) : Less(x.first, y.first);
    if (!lt.ok()) {
      error = lt.status();
      return false;
    }
    return *lt;
  });
  HERD_RETURN_IF_ERROR(error);
  ValueList out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::List(std::move(out));
}

std::string Indent(const std::string& text, const std::string& pad, bool first, bool blank) {
  std::string s = text + "\n";
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t e = s.find_first_of("\r\n", pos);
    lines.push_back(s.substr(pos, e - pos));
    pos = e + ((s[e] == '\r' && e + 1 < s.size() && s[e + 1] == '\n') ? 2 : 1);
  }
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) rv.append("\n").append(pad);
      rv.append(lines[i]);
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv.append("\n");
      if (!lines[i].empty()) rv.append(pad).append(lines[i]);
    }
  }
  return first ? std::string(pad).append(rv) : rv;
}

}  // namespace

Result<Value> ApplyFilter(const std::string& name, const Value& v, CallArgs& args) {
  const Value* a0 = args.Get(0, "");
  if (name == "tojson") {
    JsonOptions o;
    o.ensure_ascii = ArgBool(args, 0, "ensure_ascii", false);
    if (const Value* indent = args.Get(1, "indent"); indent && !indent->is_none()) {
      o.indent = static_cast<int>(indent->int_value());
    }
    if (const Value* seps = args.Get(2, "separators"); seps && seps->is_list() && seps->list().size() == 2) {
      o.item_sep = seps->list()[0].str();
      o.key_sep = seps->list()[1].str();
    }
    o.sort_keys = ArgBool(args, 3, "sort_keys", false);
    HERD_ASSIGN_OR_RETURN(std::string json, ToJson(v, o));
    return Value::String(std::move(json));
  }
  if (name == "trim") return Value::String(PyStrip(ToStr(v), args.Get(0, "chars"), true, true));
  if (name == "length" || name == "count") {
    HERD_ASSIGN_OR_RETURN(int64_t n, Length(v));
    return Value::Int(n);
  }
  if (name == "string") return SoftStr(v);
  if (name == "safe") return Value::String(ToStr(v), true);
  if (name == "e" || name == "escape") return v.is_markup() ? v : Value::String(HtmlEscape(ToStr(v)), true);
  if (name == "upper") return Value::String(PyUpper(ToStr(v)));
  if (name == "lower") return Value::String(PyLower(ToStr(v)));
  if (name == "title") return Value::String(PyTitle(ToStr(v)));
  if (name == "capitalize") return Value::String(PyCapitalize(ToStr(v)));
  if (name == "default" || name == "d") {
    const bool boolean = ArgBool(args, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.Truthy())) {
      const Value* def = args.Get(0, "default_value");
      return def ? *def : Value::String("");
    }
    return v;
  }
  if (name == "replace") {
    const Value* from = args.Get(0, "old");
    const Value* to = args.Get(1, "new");
    const Value* count = args.Get(2, "count");
    if (!from || !to) return InvalidArgument("replace needs two arguments");
    return Value::String(
        PyReplace(ToStr(v), ToStr(*from), ToStr(*to), count && !count->is_none() ? count->int_value() : -1));
  }
  if (name == "join") {
    HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(v));
    const Value* sep = args.Get(0, "d");
    const Value* attr = args.Get(1, "attribute");
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0 && sep) out += ToStr(*sep);
      Value item = items[i];
      if (attr) {
        HERD_ASSIGN_OR_RETURN(item, AttrPath(item, ToStr(*attr)));
      }
      out += ToStr(item);
    }
    return Value::String(std::move(out));
  }
  if (name == "list") {
    HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(v));
    return Value::List(std::move(items));
  }
  if (name == "first" || name == "last") {
    HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(v));
    if (items.empty()) return Value::Undefined(StrFormat("No %s item, sequence was empty.", name.c_str()));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::List();
    if (!v.is_dict()) return InvalidArgument(StrFormat("Can only get item pairs from a mapping, not %s", v.TypeName()));
    CallArgs none;
    return CallMethod(v, "items", none);
  }
  if (name == "dictsort") {
    if (!v.is_dict()) return InvalidArgument("dictsort needs a mapping");
    CallArgs none;
    HERD_ASSIGN_OR_RETURN(Value items, CallMethod(v, "items", none));
    const Value* by = args.Get(1, "by");
    const bool by_value = by && by->is_string() && by->str() == "value";
    return SortItems(items.list(), ArgBool(args, 2, "reverse", false), ArgBool(args, 0, "case_sensitive", false),
                     "\x01", by_value);
  }
  if (name == "sort") {
    HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(v));
    const Value* attr = args.Get(2, "attribute");
    return SortItems(std::move(items), ArgBool(args, 0, "reverse", false), ArgBool(args, 1, "case_sensitive", false),
                     attr ? ToStr(*attr) : "", false);
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::u32string cps = ToCodePoints(v.str());
      std::reverse(cps.begin(), cps.end());
      return Value::String(FromCodePoints(cps));
    }
    HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(v));
    std::reverse(items.begin(), items.end());
    return Value::List(std::move(items));
  }
  if (name == "unique") {
    HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(v));
    const bool cs = ArgBool(args, 0, "case_sensitive", false);
    ValueList out, seen;
    for (const Value& item : items) {
      Value k = (!cs && item.is_string()) ? Value::String(PyLower(item.str())) : item;
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return Equals(s, k); })) {
        seen.push_back(k);
        out.push_back(item);
      }
    }
    return Value::List(std::move(out));
  }
  if (name == "map") {
    if (!v.Truthy()) return Value::List();  // as jinja2: a falsy input (even None) maps to nothing
    HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(v));
    ValueList out;
    const Value* attr = args.Get(99, "attribute");
    for (const Value& item : items) {
      if (attr) {
        HERD_ASSIGN_OR_RETURN(Value x, AttrPath(item, ToStr(*attr)));
        if (x.is_undefined()) {
          if (const Value* def = args.Get(99, "default")) x = *def;
        }
        out.push_back(std::move(x));
      } else {
        if (!a0 || !a0->is_string()) return InvalidArgument("map needs a filter name or attribute=");
        CallArgs rest = Rest(args, 1);
        HERD_ASSIGN_OR_RETURN(Value x, ApplyFilter(a0->str(), item, rest));
        out.push_back(std::move(x));
      }
    }
    return Value::List(std::move(out));
  }
  if (name == "select" || name == "reject") return SelectOrReject(v, args, name == "select", false);
  if (name == "selectattr" || name == "rejectattr") return SelectOrReject(v, args, name == "selectattr", true);
  if (name == "attr") {
    if (!a0) return InvalidArgument("attr needs a name");
    return GetAttr(v, ToStr(*a0));
  }
  if (name == "int") {
    const Value* def = args.Get(0, "default");
    Value fallback = def ? *def : Value::Int(0);
    if (v.is_float()) return Value::Int(static_cast<int64_t>(v.float_value()));
    if (v.is_number()) return Value::Int(v.int_value());
    if (v.is_string()) {
      std::string s = PyStrip(v.str(), nullptr, true, true);
      char* end = nullptr;
      long long i = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end == s.c_str() + s.size()) return Value::Int(i);
      double f = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size()) return Value::Int(static_cast<int64_t>(f));
    }
    return fallback;
  }
  if (name == "float") {
    const Value* def = args.Get(0, "default");
    if (v.is_number()) return Value::Float(v.float_value());
    if (v.is_string()) {
      std::string s = PyStrip(v.str(), nullptr, true, true);
      char* end = nullptr;
      double f = std::strtod(s.c_str(), &end);
      if (!s.empty() && end == s.c_str() + s.size()) return Value::Float(f);
    }
    return def ? *def : Value::Float(0);
  }
  if (name == "abs") {
    if (v.is_float()) return Value::Float(std::fabs(v.float_value()));
    if (v.is_number()) return Value::Int(std::llabs(v.int_value()));
    return InvalidArgument(StrFormat("bad operand type for abs(): '%s'", v.TypeName()));
  }
  if (name == "round") {
    const Value* p = args.Get(0, "precision");
    const Value* method = args.Get(1, "method");
    const int64_t precision = p ? p->int_value() : 0;
    const std::string m = method ? ToStr(*method) : "common";
    if (!v.is_number()) return InvalidArgument("round needs a number");
    const double scale = std::pow(10.0, static_cast<double>(precision));
    double x = v.float_value() * scale;
    if (m == "common")
      x = std::nearbyint(x);  // Python's round: half to even
    else if (m == "ceil")
      x = std::ceil(x);
    else if (m == "floor")
      x = std::floor(x);
    else
      return InvalidArgument("method must be common, ceil or floor");
    return Value::Float(x / scale);
  }
  if (name == "indent") {
    const Value* width = args.Get(0, "width");
    std::string pad = width && width->is_string() ? width->str() : std::string(width ? width->int_value() : 4, ' ');
    return Value::String(Indent(ToStr(v), pad, ArgBool(args, 1, "first", false), ArgBool(args, 2, "blank", false)));
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : ToStr(v)) {
      bool w = std::isalnum(c) || c == '_' || c >= 0x80;
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value::Int(n);
  }
  if (name == "sum" || name == "min" || name == "max") {
    HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(v));
    const Value* attr = args.Get(name == "sum" ? 0 : 1, "attribute");
    if (name == "sum") {
      const Value* start = args.Get(1, "start");
      Value total = start ? *start : Value::Int(0);
      for (const Value& item : items) {
        Value x = item;
        if (attr) {
          HERD_ASSIGN_OR_RETURN(x, AttrPath(item, ToStr(*attr)));
        }
        HERD_ASSIGN_OR_RETURN(total, BinaryOp("+", total, x));
      }
      return total;
    }
    if (items.empty()) return Value::Undefined("No aggregated item, sequence was empty.");
    Value best = items[0];
    for (const Value& item : items) {
      HERD_ASSIGN_OR_RETURN(bool lt, Less(item, best));
      if (name == "min" ? lt : !lt && !Equals(item, best)) best = item;
    }
    return best;
  }
  return Unimplemented("no filter named '" + name + "'");
}

Result<bool> ApplyTest(const std::string& name, const Value& v, CallArgs& args) {
  const Value* a0 = args.Get(0, "");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict() && !v.is_namespace();
  if (name == "iterable") return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
  if (name == "sequence") return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.bool_value();
  if (name == "false") return v.is_bool() && !v.bool_value();
  if (name == "callable") return v.is_function();
  if (name == "escaped") return v.is_markup();
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    CallArgs none;
    HERD_ASSIGN_OR_RETURN(Value r, CallMethod(v, name == "lower" ? "islower" : "isupper", none));
    return r.bool_value();
  }
  if (name == "odd" || name == "even") {
    if (!v.is_number() || v.is_float()) return InvalidArgument(StrFormat("%s test needs an integer", name.c_str()));
    const bool odd = (v.int_value() % 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "divisibleby") {
    if (!a0 || !v.is_number() || !a0->is_number() || a0->float_value() == 0) {
      return InvalidArgument("divisibleby needs numbers");
    }
    return std::fmod(v.float_value(), a0->float_value()) == 0;
  }
  if (!a0) return Unimplemented("no test named '" + name + "' (or it needs an argument)");
  if (name == "eq" || name == "equalto" || name == "==") return Equals(v, *a0);
  if (name == "ne" || name == "!=") return !Equals(v, *a0);
  if (name == "lt" || name == "lessthan" || name == "<") return Less(v, *a0);
  if (name == "gt" || name == "greaterthan" || name == ">") return Less(*a0, v);
  if (name == "le" || name == "<=") {
    HERD_ASSIGN_OR_RETURN(bool gt, Less(*a0, v));
    return !gt;
  }
  if (name == "ge" || name == ">=") {
    HERD_ASSIGN_OR_RETURN(bool lt, Less(v, *a0));
    return !lt;
  }
  if (name == "in") return Contains(*a0, v);
  if (name == "sameas") {
    if (v.kind() != a0->kind()) return false;
    switch (v.kind()) {
      case Kind::kNone:
      case Kind::kUndefined: return true;
      case Kind::kBool:
      case Kind::kInt: return v.int_value() == a0->int_value();
      case Kind::kList: return &v.list() == &a0->list();
      case Kind::kDict: return &v.dict() == &a0->dict();
      default: return Equals(v, *a0);
    }
  }
  return Unimplemented("no test named '" + name + "'");
}

}  // namespace herd::chat
