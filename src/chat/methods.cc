// Attribute/item access, Python str/list/dict methods, iteration and operators.
#include <algorithm>
#include <cmath>
#include <optional>

#include "chat/builtins.h"

namespace herd::chat {
namespace {

Status UndefinedError(const Value& u) { return InvalidArgument(u.str().empty() ? "value is undefined" : u.str()); }

// jinja2's object_type_repr: "dict object", "None", ...
std::string ObjectTypeRepr(const Value& v) {
  if (v.is_none()) return "None";
  return std::string(v.TypeName()) + " object";
}

Value MissingAttr(const Value& obj, const std::string& name) {
  return Value::Undefined(StrFormat("'%s' has no attribute '%s'", ObjectTypeRepr(obj).c_str(), name.c_str()));
}

bool IsPySpace(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

bool IsMethodOf(const Value& obj, const std::string& name) {
  static const char* kStr[] = {"strip",    "lstrip",  "rstrip",  "split",   "rsplit",     "startswith",
                               "endswith", "upper",   "lower",   "title",   "capitalize", "replace",
                               "find",     "rfind",   "count",   "join",    "splitlines", "isdigit",
                               "isalpha",  "isspace", "isalnum", "islower", "isupper"};
  static const char* kDict[] = {"items", "keys", "values", "get", "copy"};
  static const char* kList[] = {"count", "index", "copy"};
  auto in = [&](const auto& names) {
    return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return name == n; });
  };
  if (obj.is_string()) return in(kStr);
  if (obj.is_dict() && !obj.is_namespace()) return in(kDict);
  if (obj.is_list()) return in(kList);
  return false;
}

bool IsUnsafeMutator(const Value& obj, const std::string& name) {
  static const char* kList[] = {"append", "pop", "insert", "extend", "remove", "clear", "sort", "reverse"};
  static const char* kDict[] = {"pop", "popitem", "update", "setdefault", "clear"};
  auto in = [&](const auto& names) {
    return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return name == n; });
  };
  return (obj.is_list() && in(kList)) || (obj.is_dict() && !obj.is_namespace() && in(kDict));
}

Value BoundMethod(const Value& obj, const std::string& name) {
  return Value::Func(name, [obj, name](CallArgs& args) { return CallMethod(obj, name, args); });
}

int64_t NormalizeIndex(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

}  // namespace

Result<Value> GetAttr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_namespace()) {
    if (const Value* v = obj.dict().Find(name)) return *v;
    return MissingAttr(obj, name);
  }
  if (IsUnsafeMutator(obj, name)) {
    return Value::Undefined("access to attribute '" + name + "' of '" + obj.TypeName() + "' object is unsafe.");
  }
  if (IsMethodOf(obj, name)) return BoundMethod(obj, name);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().Find(name)) return *v;
  }
  return MissingAttr(obj, name);
}

Result<Value> GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_dict() && !obj.is_namespace()) {
    if (const Value* v = obj.dict().Find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    if (obj.is_list()) {
      const int64_t n = static_cast<int64_t>(obj.list().size());
      const int64_t i = NormalizeIndex(key.int_value(), n);
      if (i >= 0 && i < n) return obj.list()[i];
    } else {
      std::u32string cps = ToCodePoints(obj.str());
      const int64_t n = static_cast<int64_t>(cps.size());
      const int64_t i = NormalizeIndex(key.int_value(), n);
      if (i >= 0 && i < n) return Value::String(FromCodePoints(cps.substr(i, 1)));
    }
    return Value::Undefined(StrFormat("'%s' has no element %s", ObjectTypeRepr(obj).c_str(), Repr(key).c_str()));
  }
  if (key.is_string()) return GetAttr(obj, key.str());
  return Value::Undefined(StrFormat("'%s' has no element %s", ObjectTypeRepr(obj).c_str(), Repr(key).c_str()));
}

Result<Value> GetSlice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (!obj.is_list() && !obj.is_string()) {
    return InvalidArgument(StrFormat("'%s' object is not subscriptable", obj.TypeName()));
  }
  auto opt = [](const Value& v) -> Result<std::optional<int64_t>> {
    if (v.is_undefined() || v.is_none()) return std::optional<int64_t>();
    if (!v.is_int() && !v.is_bool()) return InvalidArgument("slice indices must be integers or None");
    return std::optional<int64_t>(v.int_value());
  };
  HERD_ASSIGN_OR_RETURN(auto a, opt(start));
  HERD_ASSIGN_OR_RETURN(auto b, opt(stop));
  HERD_ASSIGN_OR_RETURN(auto c, opt(step));
  const int64_t st = c.value_or(1);
  if (st == 0) return InvalidArgument("slice step cannot be zero");
  std::u32string cps;
  int64_t n;
  if (obj.is_string()) {
    cps = ToCodePoints(obj.str());
    n = static_cast<int64_t>(cps.size());
  } else {
    n = static_cast<int64_t>(obj.list().size());
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t lo = adjust(a, st < 0 ? n - 1 : 0);
  const int64_t hi = adjust(b, st < 0 ? -1 : n);
  std::vector<int64_t> idx;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) idx.push_back(i);
  if (obj.is_string()) {
    std::u32string out;
    for (int64_t i : idx) out += cps[i];
    return Value::String(FromCodePoints(out));
  }
  ValueList out;
  for (int64_t i : idx) out.push_back(obj.list()[i]);
  return Value::List(std::move(out), obj.is_tuple());
}

std::string PyStrip(std::string_view s, const Value* chars, bool left, bool right) {
  std::u32string cps = ToCodePoints(s);
  std::u32string set;
  const bool custom = chars != nullptr && chars->is_string();
  if (custom) set = ToCodePoints(chars->str());
  auto strip_it = [&](char32_t c) { return custom ? set.find(c) != std::u32string::npos : IsPySpace(c); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strip_it(cps[b])) ++b;
  if (right)
    while (e > b && strip_it(cps[e - 1])) --e;
  return FromCodePoints(std::u32string_view(cps).substr(b, e - b));
}

std::string PyUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

std::string PyLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

std::string PyTitle(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    const bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
    if (lower && !prev_cased)
      c = static_cast<char>(c - 32);
    else if (upper && prev_cased)
      c = static_cast<char>(c + 32);
    prev_cased = lower || upper || static_cast<unsigned char>(c) >= 0x80;
  }
  return out;
}

std::string PyCapitalize(std::string_view s) {
  std::string out = PyLower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

std::string PyReplace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` between characters
    std::u32string cps = ToCodePoints(s);
    int64_t done = 0;
    for (char32_t c : cps) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += FromCodePoints(std::u32string(1, c));
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

ValueList PySplit(std::string_view s, const Value* sep, int64_t maxsplit) {
  ValueList out;
  if (sep == nullptr || sep->is_none() || sep->is_undefined()) {
    std::u32string cps = ToCodePoints(s);
    size_t i = 0;
    while (true) {
      while (i < cps.size() && IsPySpace(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        size_t e = cps.size();
        while (e > i && IsPySpace(cps[e - 1])) --e;
        out.push_back(Value::String(FromCodePoints(std::u32string_view(cps).substr(i, e - i))));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !IsPySpace(cps[j])) ++j;
      out.push_back(Value::String(FromCodePoints(std::u32string_view(cps).substr(i, j - i))));
      i = j;
    }
    return out;
  }
  const std::string& d = sep->str();
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    size_t hit = s.find(d, pos);
    if (hit == std::string_view::npos || d.empty()) break;
    out.push_back(Value::String(std::string(s.substr(pos, hit - pos))));
    pos = hit + d.size();
  }
  out.push_back(Value::String(std::string(s.substr(pos))));
  return out;
}

Result<Value> CallMethod(const Value& obj, const std::string& name, CallArgs& args) {
  if (obj.is_string()) {
    const std::string& s = obj.str();
    const Value* a0 = args.Get(0, "");
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      return Value::String(PyStrip(s, a0, name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") {
      const Value* sep = args.Get(0, "sep");
      const Value* max = args.Get(1, "maxsplit");
      if (sep && sep->is_string() && sep->str().empty()) return InvalidArgument("empty separator");
      int64_t maxsplit = max ? max->int_value() : -1;
      if (name == "rsplit" && maxsplit >= 0) return Unimplemented("rsplit with maxsplit");
      return Value::List(PySplit(s, sep, maxsplit));
    }
    if (name == "startswith" || name == "endswith") {
      if (!a0) return InvalidArgument(name + "() takes at least 1 argument");
      ValueList prefixes = a0->is_list() ? a0->list() : ValueList{*a0};
      for (const Value& p : prefixes) {
        if (!p.is_string()) return InvalidArgument(name + " first arg must be str or a tuple of str");
        const std::string& x = p.str();
        bool hit = name == "startswith" ? s.compare(0, x.size(), x) == 0
                                        : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
        if (hit) return Value::Bool(true);
      }
      return Value::Bool(false);
    }
    if (name == "upper") return Value::String(PyUpper(s));
    if (name == "lower") return Value::String(PyLower(s));
    if (name == "title") return Value::String(PyTitle(s));
    if (name == "capitalize") return Value::String(PyCapitalize(s));
    if (name == "replace") {
      const Value* from = args.Get(0, "old");
      const Value* to = args.Get(1, "new");
      const Value* count = args.Get(2, "count");
      if (!from || !to || !from->is_string() || !to->is_string()) return InvalidArgument("replace() needs two strings");
      return Value::String(PyReplace(s, from->str(), to->str(), count ? count->int_value() : -1));
    }
    if (name == "find" || name == "rfind" || name == "count") {
      if (!a0 || !a0->is_string()) return InvalidArgument(name + "() needs a string");
      const std::string& x = a0->str();
      if (name == "count") {
        if (x.empty()) return Value::Int(static_cast<int64_t>(ToCodePoints(s).size()) + 1);
        int64_t n = 0;
        for (size_t p = s.find(x); p != std::string::npos; p = s.find(x, p + x.size())) ++n;
        return Value::Int(n);
      }
      size_t p = name == "find" ? s.find(x) : s.rfind(x);
      if (p == std::string::npos) return Value::Int(-1);
      return Value::Int(static_cast<int64_t>(ToCodePoints(s.substr(0, p)).size()));
    }
    if (name == "join") {
      if (!a0) return InvalidArgument("join() takes exactly one argument");
      HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(*a0));
      std::string out;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_string()) {
          return InvalidArgument(
              StrFormat("sequence item %zu: expected str instance, %s found", i, items[i].TypeName()));
        }
        if (i > 0) out += s;
        out += items[i].str();
      }
      return Value::String(std::move(out));
    }
    if (name == "splitlines") {
      ValueList out;
      size_t pos = 0;
      while (pos < s.size()) {
        size_t e = s.find_first_of("\r\n", pos);
        if (e == std::string::npos) {
          out.push_back(Value::String(s.substr(pos)));
          break;
        }
        out.push_back(Value::String(s.substr(pos, e - pos)));
        pos = e + ((s[e] == '\r' && e + 1 < s.size() && s[e + 1] == '\n') ? 2 : 1);
      }
      return Value::List(std::move(out));
    }
    if (name.rfind("is", 0) == 0) {
      std::u32string cps = ToCodePoints(s);
      if (cps.empty()) return Value::Bool(false);
      bool ok = true, cased = false;
      for (char32_t c : cps) {
        const bool digit = c >= '0' && c <= '9';
        const bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
        cased = cased || lower || upper;
        if (name == "isdigit")
          ok = ok && digit;
        else if (name == "isalpha")
          ok = ok && (lower || upper);
        else if (name == "isalnum")
          ok = ok && (lower || upper || digit);
        else if (name == "isspace")
          ok = ok && IsPySpace(c);
        else if (name == "islower")
          ok = ok && !upper;
        else if (name == "isupper")
          ok = ok && !lower;
      }
      if (name == "islower" || name == "isupper") ok = ok && cased;
      return Value::Bool(ok);
    }
  } else if (obj.is_dict() && !obj.is_namespace()) {
    if (name == "items" || name == "keys" || name == "values") {
      ValueList out;
      for (const auto& [k, v] : obj.dict().items) {
        if (name == "items")
          out.push_back(Value::List({k, v}, /*tuple=*/true));
        else
          out.push_back(name == "keys" ? k : v);
      }
      return Value::List(std::move(out));
    }
    if (name == "get") {
      const Value* key = args.Get(0, "key");
      if (!key) return InvalidArgument("get expected at least 1 argument, got 0");
      if (const Value* v = obj.dict().Find(*key)) return *v;
      const Value* def = args.Get(1, "default");
      return def ? *def : Value::None();
    }
    if (name == "copy") return Value::Dict(obj.dict());
  } else if (obj.is_list()) {
    if (name == "count" || name == "index") {
      const Value* x = args.Get(0, "value");
      if (!x) return InvalidArgument(name + "() takes exactly one argument");
      int64_t n = 0;
      for (size_t i = 0; i < obj.list().size(); ++i) {
        if (!Equals(obj.list()[i], *x)) continue;
        if (name == "index") return Value::Int(static_cast<int64_t>(i));
        ++n;
      }
      if (name == "index") return InvalidArgument(Repr(*x) + " is not in list");
      return Value::Int(n);
    }
    if (name == "copy") return Value::List(obj.list());
  }
  if (obj.is_undefined()) return UndefinedError(obj);
  if (IsUnsafeMutator(obj, name)) {
    return InvalidArgument("access to attribute '" + name + "' of '" + obj.TypeName() + "' object is unsafe.");
  }
  return Unimplemented(StrFormat("'%s' object has no method '%s'", obj.TypeName(), name.c_str()));
}

Result<ValueList> Iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return ValueList{};
    case Kind::kList: return v.list();
    case Kind::kDict: {
      if (v.is_namespace()) break;
      ValueList keys;
      for (const auto& kv : v.dict().items) keys.push_back(kv.first);
      return keys;
    }
    case Kind::kString: {
      ValueList chars;
      for (char32_t c : ToCodePoints(v.str())) chars.push_back(Value::String(FromCodePoints(std::u32string(1, c))));
      return chars;
    }
    default: break;
  }
  return InvalidArgument(StrFormat("'%s' object is not iterable", v.TypeName()));
}

Result<bool> Contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) {
      return InvalidArgument(StrFormat("'in <string>' requires string as left operand, not %s", item.TypeName()));
    }
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_dict() && !container.is_namespace()) return container.dict().Find(item) != nullptr;
  if (container.is_list()) {
    for (const Value& x : container.list()) {
      if (Equals(x, item)) return true;
    }
    return false;
  }
  if (container.is_undefined()) return false;
  return InvalidArgument(StrFormat("argument of type '%s' is not iterable", container.TypeName()));
}

Result<int64_t> Length(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return int64_t{0};
    case Kind::kString: return static_cast<int64_t>(ToCodePoints(v.str()).size());
    case Kind::kList: return static_cast<int64_t>(v.list().size());
    case Kind::kDict:
      if (!v.is_namespace()) return static_cast<int64_t>(v.dict().items.size());
      break;
    default: break;
  }
  return InvalidArgument(StrFormat("object of type '%s' has no len()", v.TypeName()));
}

}  // namespace herd::chat
