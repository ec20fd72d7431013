// The syntax tree of a parsed Jinja2 template. Nodes keep the line and column where they start
// so that render errors can point into the template.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace herd::chat {

enum class ExprKind : uint8_t {
  kLiteral,  // literal
  kName,     // name
  kList,     // args: items
  kTuple,    // args: items
  kDict,     // args: key0, value0, key1, value1, ...
  kAttr,     // args[0].name
  kItem,     // args[0][args[1]]
  kSlice,    // args[0][args[1]:args[2]:args[3]] (null parts allowed)
  kCall,     // args[0](args[1..], kwargs)
  kFilter,   // args[0] | name(args[1..], kwargs); args[0] null inside a filter block
  kTest,     // args[0] is [not] name(args[1..], kwargs)
  kUnary,    // name in {"-", "+", "not"}
  kBinary,   // args[0] name args[1]; name in {+ - * / // % ** ~ and or}
  kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ...; ops in {== != < <= > >= in notin}
  kCond,     // args[1] if args[0] else args[2] (args[2] may be null)
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0, column = 0;
  Value literal;
  std::string name;
  std::vector<std::unique_ptr<Expr>> args;
  std::vector<std::pair<std::string, std::unique_ptr<Expr>>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
};
using ExprPtr = std::unique_ptr<Expr>;

enum class StmtKind : uint8_t {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // branches (cond, body); else_body
  kFor,          // for targets in expr [if cond]: body; else_body
  kSet,          // set targets[0][.attr] = expr, or set t0, t1 = expr
  kSetBlock,     // set targets[0] %}body{% endset; expr: optional filter applied to the body
  kMacro,        // macro name(params): body
  kCallBlock,    // call(params) expr: body is the caller
  kFilterBlock,  // filter expr: body
  kBreak,
  kContinue,
  kScope,  // body only (e.g. HF's {% generation %})
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind = StmtKind::kText;
  int line = 0, column = 0;
  std::string text;  // text; macro name; attribute for `set ns.attr`
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::string> targets;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters and their defaults (may be null)
};

}  // namespace herd::chat
