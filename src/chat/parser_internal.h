// Internal to src/chat: the recursive-descent parser shared by parser.cc (statements) and
// parser_expr.cc (expressions, with jinja2's operator precedence).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/lexer.h"

namespace herd::chat::internal {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Result<Body> ParseTemplate() {
    std::string end;
    HERD_ASSIGN_OR_RETURN(Body body, ParseBody({}, &end));
    return body;
  }

 private:
  const Token& Cur() const { return t_[i_]; }
  const Token& Peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void Next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool IsOp(const char* op) const { return Cur().type == Tok::kOp && Cur().text == op; }
  bool IsName(const char* name) const { return Cur().type == Tok::kName && Cur().text == name; }
  bool SkipOp(const char* op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(const char* name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }
  Status Error(const std::string& msg) const { return ErrorAt(Cur(), msg); }
  static Status ErrorAt(const Token& t, const std::string& msg) {
    return InvalidArgument(StrFormat("line %d, column %d: %s", t.line, t.column, msg.c_str()));
  }
  std::string Describe() const {
    switch (Cur().type) {
      case Tok::kEof: return "end of template";
      case Tok::kBlockEnd: return "'%}'";
      case Tok::kVarEnd: return "'}}'";
      case Tok::kText: return "text";
      default: return "'" + Cur().text + "'";
    }
  }
  Status ExpectOp(const char* op) {
    if (SkipOp(op)) return Status::Ok();
    return Error(StrFormat("expected '%s', got %s", op, Describe().c_str()));
  }
  Result<std::string> ExpectName() {
    if (Cur().type != Tok::kName) return Error("expected a name, got " + Describe());
    std::string name = Cur().text;
    Next();
    return name;
  }
  Status ExpectBlockEnd() {
    if (Cur().type == Tok::kBlockEnd) {
      Next();
      return Status::Ok();
    }
    return Error("expected '%}', got " + Describe());
  }
  ExprPtr Node(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }

  Result<Body> ParseBody(std::initializer_list<const char*> ends, std::string* which);
  Result<StmtPtr> ParseStatement();
  Result<StmtPtr> ParseFor(StmtPtr s);
  Result<StmtPtr> ParseIf(StmtPtr s);
  Result<StmtPtr> ParseSet(StmtPtr s);
  Result<StmtPtr> ParseMacro(StmtPtr s);
  Result<std::vector<std::string>> ParseTargets();
  Status ParseParams(Stmt& s);

  Result<ExprPtr> ParseTuple(bool condexpr);
  Result<ExprPtr> ParseExpr(bool condexpr = true);
  Result<ExprPtr> ParseOr();
  Result<ExprPtr> ParseAnd();
  Result<ExprPtr> ParseNot();
  Result<ExprPtr> ParseCompare();
  Result<ExprPtr> ParseMath1();
  Result<ExprPtr> ParseConcat();
  Result<ExprPtr> ParseMath2();
  Result<ExprPtr> ParsePow();
  Result<ExprPtr> ParseUnary(bool with_filter);
  Result<ExprPtr> ParsePrimary();
  Result<ExprPtr> ParsePostfix(ExprPtr node);
  Result<ExprPtr> ParseFilterExpr(ExprPtr node);
  Result<ExprPtr> ParseFilter(ExprPtr node);
  Status ParseCallArgs(Expr& e);

  std::vector<Token> t_;
  size_t i_ = 0;
};

}  // namespace herd::chat::internal
