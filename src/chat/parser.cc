#include "chat/parser.h"

#include "chat/parser_internal.h"

namespace herd::chat {
namespace internal {

Result<Body> Parser::ParseBody(std::initializer_list<const char*> ends, std::string* which) {
  Body body;
  while (true) {
    const Token& tok = Cur();
    if (tok.type == Tok::kEof) {
      if (ends.size() == 0) return body;
      std::string names;
      for (const char* e : ends) names += std::string(names.empty() ? "" : " or ") + "'" + e + "'";
      return Error("unexpected end of template, expected " + names);
    }
    if (tok.type == Tok::kText) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kText;
      s->line = tok.line;
      s->column = tok.column;
      s->text = tok.text;
      body.push_back(std::move(s));
      Next();
      continue;
    }
    if (tok.type == Tok::kVarBegin) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::kOutput;
      s->line = tok.line;
      s->column = tok.column;
      Next();
      HERD_ASSIGN_OR_RETURN(s->expr, ParseTuple(true));
      if (Cur().type != Tok::kVarEnd) return Error("expected '}}', got " + Describe());
      Next();
      body.push_back(std::move(s));
      continue;
    }
    if (tok.type == Tok::kBlockBegin) {
      const Token& kw = Peek();
      for (const char* e : ends) {
        if (kw.type == Tok::kName && kw.text == e) {
          *which = e;
          Next();
          Next();
          return body;
        }
      }
      Next();
      HERD_ASSIGN_OR_RETURN(StmtPtr s, ParseStatement());
      body.push_back(std::move(s));
      continue;
    }
    return Error("unexpected " + Describe());
  }
}

Result<StmtPtr> Parser::ParseStatement() {
  auto s = std::make_unique<Stmt>();
  s->line = Cur().line;
  s->column = Cur().column;
  if (Cur().type != Tok::kName) return Error("expected a statement name, got " + Describe());
  std::string kw = Cur().text;
  Next();
  std::string which;
  if (kw == "for") return ParseFor(std::move(s));
  if (kw == "if") return ParseIf(std::move(s));
  if (kw == "set") return ParseSet(std::move(s));
  if (kw == "macro") return ParseMacro(std::move(s));
  if (kw == "break" || kw == "continue") {
    s->kind = kw == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  if (kw == "filter") {
    s->kind = StmtKind::kFilterBlock;
    HERD_ASSIGN_OR_RETURN(s->expr, ParseFilter(nullptr));
    while (IsOp("|")) {
      Next();
      HERD_ASSIGN_OR_RETURN(s->expr, ParseFilter(std::move(s->expr)));
    }
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    HERD_ASSIGN_OR_RETURN(s->body, ParseBody({"endfilter"}, &which));
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  if (kw == "call") {
    s->kind = StmtKind::kCallBlock;
    if (IsOp("(")) HERD_RETURN_IF_ERROR(ParseParams(*s));
    HERD_ASSIGN_OR_RETURN(s->expr, ParseExpr());
    if (s->expr->kind != ExprKind::kCall) return ErrorAt(Cur(), "expected a call after 'call'");
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    HERD_ASSIGN_OR_RETURN(s->body, ParseBody({"endcall"}, &which));
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  if (kw == "generation") {
    s->kind = StmtKind::kScope;
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    HERD_ASSIGN_OR_RETURN(s->body, ParseBody({"endgeneration"}, &which));
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  return ErrorAt(t_[i_ - 1], "unknown tag '" + kw + "'");
}

Result<std::vector<std::string>> Parser::ParseTargets() {
  std::vector<std::string> names;
  const bool paren = SkipOp("(");
  while (true) {
    HERD_ASSIGN_OR_RETURN(std::string name, ExpectName());
    names.push_back(std::move(name));
    if (!SkipOp(",")) break;
    if (Cur().type != Tok::kName) break;
  }
  if (paren) HERD_RETURN_IF_ERROR(ExpectOp(")"));
  return names;
}

Result<StmtPtr> Parser::ParseFor(StmtPtr s) {
  s->kind = StmtKind::kFor;
  HERD_ASSIGN_OR_RETURN(s->targets, ParseTargets());
  if (!SkipName("in")) return Error("expected 'in', got " + Describe());
  HERD_ASSIGN_OR_RETURN(s->expr, ParseTuple(false));
  if (SkipName("if")) {
    HERD_ASSIGN_OR_RETURN(s->cond, ParseExpr());
  }
  if (SkipName("recursive")) return Error("recursive loops are not supported");
  HERD_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string which;
  HERD_ASSIGN_OR_RETURN(s->body, ParseBody({"endfor", "else"}, &which));
  HERD_RETURN_IF_ERROR(ExpectBlockEnd());
  if (which == "else") {
    HERD_ASSIGN_OR_RETURN(s->else_body, ParseBody({"endfor"}, &which));
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
  }
  return s;
}

Result<StmtPtr> Parser::ParseIf(StmtPtr s) {
  s->kind = StmtKind::kIf;
  while (true) {
    HERD_ASSIGN_OR_RETURN(ExprPtr cond, ParseTuple(false));
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    std::string which;
    HERD_ASSIGN_OR_RETURN(Body body, ParseBody({"elif", "else", "endif"}, &which));
    s->branches.emplace_back(std::move(cond), std::move(body));
    if (which == "elif") continue;
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    if (which == "else") {
      HERD_ASSIGN_OR_RETURN(s->else_body, ParseBody({"endif"}, &which));
      HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    }
    return s;
  }
}

Result<StmtPtr> Parser::ParseSet(StmtPtr s) {
  s->kind = StmtKind::kSet;
  if (Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().text == ".") {
    s->targets.push_back(Cur().text);
    Next();
    Next();
    HERD_ASSIGN_OR_RETURN(s->text, ExpectName());
  } else {
    HERD_ASSIGN_OR_RETURN(s->targets, ParseTargets());
  }
  if (SkipOp("=")) {
    HERD_ASSIGN_OR_RETURN(s->expr, ParseTuple(true));
    HERD_RETURN_IF_ERROR(ExpectBlockEnd());
    return s;
  }
  if (s->targets.size() != 1 || !s->text.empty()) return Error("expected '='");
  s->kind = StmtKind::kSetBlock;
  while (SkipOp("|")) {
    HERD_ASSIGN_OR_RETURN(s->expr, ParseFilter(std::move(s->expr)));
  }
  HERD_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string which;
  HERD_ASSIGN_OR_RETURN(s->body, ParseBody({"endset"}, &which));
  HERD_RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

Status Parser::ParseParams(Stmt& s) {
  HERD_RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    if (!s.params.empty()) HERD_RETURN_IF_ERROR(ExpectOp(","));
    if (IsOp(")")) break;
    HERD_ASSIGN_OR_RETURN(std::string name, ExpectName());
    ExprPtr def;
    if (SkipOp("=")) {
      HERD_ASSIGN_OR_RETURN(def, ParseExpr());
    }
    s.params.emplace_back(std::move(name), std::move(def));
  }
  Next();
  return Status::Ok();
}

Result<StmtPtr> Parser::ParseMacro(StmtPtr s) {
  s->kind = StmtKind::kMacro;
  HERD_ASSIGN_OR_RETURN(s->text, ExpectName());
  HERD_RETURN_IF_ERROR(ParseParams(*s));
  HERD_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string which;
  HERD_ASSIGN_OR_RETURN(s->body, ParseBody({"endmacro"}, &which));
  if (Cur().type == Tok::kName) Next();  // {% endmacro name %}
  HERD_RETURN_IF_ERROR(ExpectBlockEnd());
  return s;
}

}  // namespace internal

Result<Body> Parse(std::string_view source) {
  HERD_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source));
  return internal::Parser(std::move(tokens)).ParseTemplate();
}

}  // namespace herd::chat
