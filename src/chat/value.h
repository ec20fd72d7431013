// The values a Jinja2 template computes with, modelled on the Python objects jinja2 sees when
// Hugging Face renders a chat template: None, bool, int, float, str (optionally Markup), list
// (or tuple), dict (insertion-ordered; also jinja2's namespace), callables and Undefined.
// Lists, dicts and callables are shared by reference like Python objects. Conversions to text
// follow Python exactly (str(), repr(), json.dumps as HF's tojson calls it), because renders must
// be byte-identical to Python's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace herd::chat {

class Value;
using ValueList = std::vector<Value>;

// Insertion-ordered mapping with Python key equality (1 == 1.0 == True). Lookup is linear:
// template dicts hold a handful of keys.
struct ValueDict {
  std::vector<std::pair<Value, Value>> items;

  const Value* Find(const Value& key) const;
  const Value* Find(std::string_view key) const;
  void Set(Value key, Value value);
};

// Arguments of a call: positional, then keyword (name, value) in source order.
struct CallArgs {
  ValueList positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`, else nullptr.
  const Value* Get(size_t index, std::string_view name) const;
};

using Function = std::function<Result<Value>(CallArgs& args)>;

enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

class Value {
 public:
  Value() = default;  // Undefined
  static Value Undefined(std::string name = {});
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double f);
  static Value String(std::string s, bool markup = false);
  static Value List(ValueList items = {}, bool tuple = false);
  static Value Dict(ValueDict dict = {}, bool is_namespace = false);
  static Value Func(std::string name, Function fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  bool is_markup() const { return kind_ == Kind::kString && flag_; }
  bool is_tuple() const { return kind_ == Kind::kList && flag_; }
  bool is_namespace() const { return kind_ == Kind::kDict && flag_; }

  bool bool_value() const { return int_ != 0; }
  int64_t int_value() const { return int_; }  // also bool as 0/1
  double float_value() const { return kind_ == Kind::kFloat ? float_ : static_cast<double>(int_); }
  const std::string& str() const { return str_; }  // string; for Undefined the missing name
  ValueList& list() const { return *list_; }
  ValueDict& dict() const { return *dict_; }
  const Function& func() const { return *func_; }

  // Python truthiness (Undefined is false).
  bool Truthy() const;
  // Python type name for messages ("str", "dict", "NoneType", "Undefined").
  const char* TypeName() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool flag_ = false;  // string: Markup; list: tuple; dict: namespace
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<Function> func_;
};

// Python ==.
bool Equals(const Value& a, const Value& b);
// Python <; error for unorderable types.
Result<bool> Less(const Value& a, const Value& b);

// Python str(): how {{ x }} prints a value (Undefined prints "").
std::string ToStr(const Value& v);
// Python repr().
std::string Repr(const Value& v);
// Python repr() of a float ("1.0", "0.1", "1e+20", "inf").
std::string FloatRepr(double f);
// Python json.dumps options (HF's tojson passes ensure_ascii=False by default).
struct JsonOptions {
  int indent = -1;  // < 0: None (one line)
  bool sort_keys = false;
  bool ensure_ascii = false;
  std::string item_sep;  // empty: json.dumps' default (", " without indent, "," with)
  std::string key_sep;   // empty: ": "
};
// json.dumps(v, ...) byte for byte; error for values JSON cannot hold (Undefined, functions).
Result<std::string> ToJson(const Value& v, const JsonOptions& options = {});
// markupsafe.escape of a string.
std::string HtmlEscape(std::string_view s);

// Unicode code points of UTF-8 text (invalid bytes map to themselves) and back; Python strings
// index by code point.
std::u32string ToCodePoints(std::string_view s);
std::string FromCodePoints(std::u32string_view s);

}  // namespace herd::chat
