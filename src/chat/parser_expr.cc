// Expression parsing: jinja2's precedence (low to high) is conditional, or, and, not,
// comparison (incl. in / not in), + -, ~, * / // %, **, unary - +, then postfix (.attr, [item],
// [a:b:c], call) and filters/tests (| f, is t).
#include "chat/parser_internal.h"

namespace herd::chat::internal {

Result<ExprPtr> Parser::ParseTuple(bool condexpr) {
  const Token start = Cur();
  HERD_ASSIGN_OR_RETURN(ExprPtr first, ParseExpr(condexpr));
  if (!IsOp(",")) return first;
  ExprPtr tuple = Node(ExprKind::kTuple, start);
  tuple->args.push_back(std::move(first));
  while (SkipOp(",")) {
    if (Cur().type == Tok::kBlockEnd || Cur().type == Tok::kVarEnd || IsOp(")")) break;
    HERD_ASSIGN_OR_RETURN(ExprPtr item, ParseExpr(condexpr));
    tuple->args.push_back(std::move(item));
  }
  return tuple;
}

Result<ExprPtr> Parser::ParseExpr(bool condexpr) {
  HERD_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
  if (!condexpr) return expr;
  while (IsName("if")) {
    const Token at = Cur();
    Next();
    ExprPtr node = Node(ExprKind::kCond, at);
    HERD_ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
    node->args.push_back(std::move(cond));
    node->args.push_back(std::move(expr));
    ExprPtr other;
    if (SkipName("else")) {
      HERD_ASSIGN_OR_RETURN(other, ParseExpr(true));
    }
    node->args.push_back(std::move(other));
    expr = std::move(node);
  }
  return expr;
}

Result<ExprPtr> Parser::ParseOr() {
  HERD_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
  while (IsName("or")) {
    ExprPtr node = Node(ExprKind::kBinary, Cur());
    node->name = "or";
    Next();
    HERD_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::ParseAnd() {
  HERD_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
  while (IsName("and")) {
    ExprPtr node = Node(ExprKind::kBinary, Cur());
    node->name = "and";
    Next();
    HERD_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
    node->args.push_back(std::move(left));
    node->args.push_back(std::move(right));
    left = std::move(node);
  }
  return left;
}

Result<ExprPtr> Parser::ParseNot() {
  if (IsName("not")) {
    ExprPtr node = Node(ExprKind::kUnary, Cur());
    node->name = "not";
    Next();
    HERD_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
    node->args.push_back(std::move(operand));
    return node;
  }
  return ParseCompare();
}

Result<ExprPtr> Parser::ParseCompare() {
  const Token start = Cur();
  HERD_ASSIGN_OR_RETURN(ExprPtr left, ParseMath1());
  ExprPtr node;
  while (true) {
    std::string op;
    if (Cur().type == Tok::kOp && (IsOp("==") || IsOp("!=") || IsOp("<") || IsOp("<=") || IsOp(">") || IsOp(">="))) {
      op = Cur().text;
      Next();
    } else if (IsName("in")) {
      op = "in";
      Next();
    } else if (IsName("not") && Peek().type == Tok::kName && Peek().text == "in") {
      op = "notin";
      Next();
      Next();
    } else {
      break;
    }
    if (!node) {
      node = Node(ExprKind::kCompare, start);
      node->args.push_back(std::move(left));
    }
    HERD_ASSIGN_OR_RETURN(ExprPtr right, ParseMath1());
    node->ops.push_back(op);
    node->args.push_back(std::move(right));
  }
  return node ? std::move(node) : std::move(left);
}

#define HERD_BINARY_LEVEL(Fn, Next_, ...)                         \
  Result<ExprPtr> Parser::Fn() {                                  \
    HERD_ASSIGN_OR_RETURN(ExprPtr left, Next_);                   \
    while (true) {                                                \
      bool hit = false;                                           \
      for (const char* op : {__VA_ARGS__}) hit = hit || IsOp(op); \
      if (!hit) return left;                                      \
      ExprPtr node = Node(ExprKind::kBinary, Cur());              \
      node->name = Cur().text;                                    \
      Next();                                                     \
      HERD_ASSIGN_OR_RETURN(ExprPtr right, Next_);                \
      node->args.push_back(std::move(left));                      \
      node->args.push_back(std::move(right));                     \
      left = std::move(node);                                     \
    }                                                             \
  }

HERD_BINARY_LEVEL(ParseMath1, ParseConcat(), "+", "-")
HERD_BINARY_LEVEL(ParseConcat, ParseMath2(), "~")
HERD_BINARY_LEVEL(ParseMath2, ParsePow(), "*", "/", "//", "%")
HERD_BINARY_LEVEL(ParsePow, ParseUnary(true), "**")
#undef HERD_BINARY_LEVEL

Result<ExprPtr> Parser::ParseUnary(bool with_filter) {
  ExprPtr node;
  if (IsOp("-") || IsOp("+")) {
    node = Node(ExprKind::kUnary, Cur());
    node->name = Cur().text;
    Next();
    HERD_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
    node->args.push_back(std::move(operand));
  } else {
    HERD_ASSIGN_OR_RETURN(node, ParsePrimary());
  }
  HERD_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
  if (with_filter) {
    HERD_ASSIGN_OR_RETURN(node, ParseFilterExpr(std::move(node)));
  }
  return node;
}

Result<ExprPtr> Parser::ParsePrimary() {
  const Token tok = Cur();
  switch (tok.type) {
    case Tok::kName: {
      Next();
      ExprPtr node = Node(ExprKind::kLiteral, tok);
      if (tok.text == "true" || tok.text == "True")
        node->literal = Value::Bool(true);
      else if (tok.text == "false" || tok.text == "False")
        node->literal = Value::Bool(false);
      else if (tok.text == "none" || tok.text == "None")
        node->literal = Value::None();
      else {
        node->kind = ExprKind::kName;
        node->name = tok.text;
      }
      return node;
    }
    case Tok::kString: {
      std::string s;
      while (Cur().type == Tok::kString) {
        s += Cur().text;
        Next();
      }
      ExprPtr node = Node(ExprKind::kLiteral, tok);
      node->literal = Value::String(std::move(s));
      return node;
    }
    case Tok::kInt:
    case Tok::kFloat: {
      Next();
      ExprPtr node = Node(ExprKind::kLiteral, tok);
      node->literal = tok.type == Tok::kInt ? Value::Int(tok.int_value) : Value::Float(tok.float_value);
      return node;
    }
    case Tok::kOp:
      if (tok.text == "(") {
        Next();
        if (SkipOp(")")) return Node(ExprKind::kTuple, tok);
        HERD_ASSIGN_OR_RETURN(ExprPtr inner, ParseTuple(true));
        HERD_RETURN_IF_ERROR(ExpectOp(")"));
        return inner;
      }
      if (tok.text == "[" || tok.text == "{") {
        const bool dict = tok.text == "{";
        const char* close = dict ? "}" : "]";
        Next();
        ExprPtr node = Node(dict ? ExprKind::kDict : ExprKind::kList, tok);
        while (!IsOp(close)) {
          if (!node->args.empty()) {
            HERD_RETURN_IF_ERROR(ExpectOp(","));
            if (IsOp(close)) break;
          }
          HERD_ASSIGN_OR_RETURN(ExprPtr item, ParseExpr());
          node->args.push_back(std::move(item));
          if (dict) {
            HERD_RETURN_IF_ERROR(ExpectOp(":"));
            HERD_ASSIGN_OR_RETURN(ExprPtr value, ParseExpr());
            node->args.push_back(std::move(value));
          }
        }
        Next();
        return node;
      }
      break;
    default: break;
  }
  return Error("unexpected " + Describe());
}

Status Parser::ParseCallArgs(Expr& e) {
  HERD_RETURN_IF_ERROR(ExpectOp("("));
  bool first = true;
  while (!IsOp(")")) {
    if (!first) {
      HERD_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(")")) break;
    }
    first = false;
    if (Cur().type == Tok::kName && Peek().type == Tok::kOp && Peek().text == "=") {
      std::string name = Cur().text;
      Next();
      Next();
      HERD_ASSIGN_OR_RETURN(ExprPtr value, ParseExpr());
      e.kwargs.emplace_back(std::move(name), std::move(value));
      continue;
    }
    if (!e.kwargs.empty()) return Error("positional argument follows keyword argument");
    HERD_ASSIGN_OR_RETURN(ExprPtr value, ParseExpr());
    e.args.push_back(std::move(value));
  }
  Next();
  return Status::Ok();
}

Result<ExprPtr> Parser::ParsePostfix(ExprPtr node) {
  while (true) {
    const Token at = Cur();
    if (IsOp(".")) {
      Next();
      if (Cur().type == Tok::kName) {
        ExprPtr attr = Node(ExprKind::kAttr, at);
        attr->name = Cur().text;
        attr->args.push_back(std::move(node));
        node = std::move(attr);
      } else if (Cur().type == Tok::kInt) {
        ExprPtr item = Node(ExprKind::kItem, at);
        item->args.push_back(std::move(node));
        ExprPtr key = Node(ExprKind::kLiteral, Cur());
        key->literal = Value::Int(Cur().int_value);
        item->args.push_back(std::move(key));
        node = std::move(item);
      } else {
        return Error("expected an attribute name, got " + Describe());
      }
      Next();
    } else if (IsOp("[")) {
      Next();
      ExprPtr parts[3];
      bool slice = false;
      for (int k = 0; k < 3; ++k) {
        if (!IsOp(":") && !IsOp("]")) {
          HERD_ASSIGN_OR_RETURN(parts[k], ParseExpr());
        }
        if (k < 2 && SkipOp(":")) {
          slice = true;
          continue;
        }
        break;
      }
      HERD_RETURN_IF_ERROR(ExpectOp("]"));
      ExprPtr sub = Node(slice ? ExprKind::kSlice : ExprKind::kItem, at);
      sub->args.push_back(std::move(node));
      if (!slice && !parts[0]) return ErrorAt(at, "empty subscript");
      sub->args.push_back(std::move(parts[0]));
      if (slice) {
        sub->args.push_back(std::move(parts[1]));
        sub->args.push_back(std::move(parts[2]));
      }
      node = std::move(sub);
    } else if (IsOp("(")) {
      ExprPtr call = Node(ExprKind::kCall, at);
      call->line = node->line;  // errors point at the callee, not at '('
      call->column = node->column;
      call->args.push_back(std::move(node));
      HERD_RETURN_IF_ERROR(ParseCallArgs(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::ParseFilter(ExprPtr node) {
  const Token at = Cur();
  ExprPtr f = Node(ExprKind::kFilter, at);
  HERD_ASSIGN_OR_RETURN(f->name, ExpectName());
  while (IsOp(".")) {
    Next();
    HERD_ASSIGN_OR_RETURN(std::string part, ExpectName());
    f->name += "." + part;
  }
  f->args.push_back(std::move(node));
  if (IsOp("(")) HERD_RETURN_IF_ERROR(ParseCallArgs(*f));
  return f;
}

Result<ExprPtr> Parser::ParseFilterExpr(ExprPtr node) {
  while (true) {
    if (IsOp("|")) {
      Next();
      HERD_ASSIGN_OR_RETURN(node, ParseFilter(std::move(node)));
    } else if (IsName("is")) {
      ExprPtr test = Node(ExprKind::kTest, Cur());
      Next();
      test->negated = SkipName("not");
      HERD_ASSIGN_OR_RETURN(test->name, ExpectName());
      test->args.push_back(std::move(node));
      const Token& c = Cur();
      if (IsOp("(")) {
        HERD_RETURN_IF_ERROR(ParseCallArgs(*test));
      } else if ((c.type == Tok::kName || c.type == Tok::kString || c.type == Tok::kInt || c.type == Tok::kFloat ||
                  IsOp("[") || IsOp("{")) &&
                 !IsName("else") && !IsName("or") && !IsName("and")) {
        HERD_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
        HERD_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
        test->args.push_back(std::move(arg));
      }
      node = std::move(test);
    } else if (IsOp("(")) {
      ExprPtr call = Node(ExprKind::kCall, Cur());
      call->args.push_back(std::move(node));
      HERD_RETURN_IF_ERROR(ParseCallArgs(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

}  // namespace herd::chat::internal
