// jinja2's built-in filters and tests, Python's str/list/dict methods as templates call them,
// and attribute/item access with the semantics of jinja2's ImmutableSandboxedEnvironment
// (mutating list/dict methods are unsafe; missing attributes give Undefined with jinja2's
// message). All return errors as messages without a location; the interpreter adds it.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/value.h"

namespace herd::chat {

// obj.name: dict key (or a bound method), string/list/dict method, namespace attribute.
Result<Value> GetAttr(const Value& obj, const std::string& name);
// obj[key]; falls back to GetAttr for string keys like jinja2.
Result<Value> GetItem(const Value& obj, const Value& key);
// obj[start:stop:step] for lists, tuples and strings (null Values = omitted).
Result<Value> GetSlice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// obj.name(args) for the methods of str, list and dict; Unimplemented when `name` is not one.
Result<Value> CallMethod(const Value& obj, const std::string& name, CallArgs& args);

// The elements a `for` loop visits: list items, dict keys, string characters; Undefined is empty.
Result<ValueList> Iterate(const Value& v);
// Python `item in container`.
Result<bool> Contains(const Value& container, const Value& item);
// len(v).
Result<int64_t> Length(const Value& v);

Result<Value> ApplyFilter(const std::string& name, const Value& subject, CallArgs& args);
Result<bool> ApplyTest(const std::string& name, const Value& subject, CallArgs& args);

// Python operators on values: + - * / // % ** and unary -.
Result<Value> BinaryOp(const std::string& op, const Value& a, const Value& b);
Result<Value> Negate(const Value& v);

// Python str methods on UTF-8 text.
std::string PyStrip(std::string_view s, const Value* chars, bool left, bool right);
std::string PyUpper(std::string_view s);
std::string PyLower(std::string_view s);
std::string PyTitle(std::string_view s);
std::string PyCapitalize(std::string_view s);
std::string PyReplace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
ValueList PySplit(std::string_view s, const Value* sep, int64_t maxsplit);

}  // namespace herd::chat
