#include "chat/interpreter.h"

#include "chat/builtins.h"

namespace herd::chat {

const Value* Frame::Find(const std::string& name) const {
  for (const Frame* f = this; f != nullptr; f = f->parent.get()) {
    auto it = f->vars.find(name);
    if (it != f->vars.end()) return &it->second;
  }
  return nullptr;
}

namespace {

using FramePtr = std::shared_ptr<Frame>;
enum class Flow { kNormal, kBreak, kContinue };

Status Located(int line, int column, const Status& st) {
  if (st.ok() || st.message().rfind("line ", 0) == 0) return st;
  return Status(st.code(), StrFormat("line %d, column %d: %s", line, column, st.message().c_str()));
}

FramePtr Child(const FramePtr& parent) {
  auto f = std::make_shared<Frame>();
  f->parent = parent;
  return f;
}

class Interp {
 public:
  Status Exec(const Body& body, const FramePtr& f, std::string& out, Flow& flow) {
    for (const StmtPtr& s : body) {
      HERD_RETURN_IF_ERROR(Located(s->line, s->column, ExecStmt(*s, f, out, flow)));
      if (flow != Flow::kNormal) return Status::Ok();
    }
    return Status::Ok();
  }

  Result<Value> Eval(const Expr& e, const FramePtr& f) {
    Result<Value> r = EvalImpl(e, f);
    if (!r.ok()) return Located(e.line, e.column, r.status());
    return r;
  }

 private:
  Result<Value> EvalImpl(const Expr& e, const FramePtr& f);
  Status ExecStmt(const Stmt& s, const FramePtr& f, std::string& out, Flow& flow);
  Status ExecFor(const Stmt& s, const FramePtr& f, std::string& out);
  Status Assign(const std::vector<std::string>& targets, const Value& v, Frame& f);
  Result<CallArgs> EvalArgs(const Expr& e, const FramePtr& f, size_t first);
  Result<Value> Call(const Value& callee, CallArgs& args, const std::string& what);
  Value MakeMacro(const Stmt& s, const FramePtr& f);
  Result<Value> ApplyFilterChain(const Expr& filter, Value subject, const FramePtr& f);

  const Value* filter_subject_ = nullptr;
};

Result<CallArgs> Interp::EvalArgs(const Expr& e, const FramePtr& f, size_t first) {
  CallArgs args;
  for (size_t i = first; i < e.args.size(); ++i) {
    HERD_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i], f));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [name, expr] : e.kwargs) {
    HERD_ASSIGN_OR_RETURN(Value v, Eval(*expr, f));
    args.keyword.emplace_back(name, std::move(v));
  }
  return args;
}

Result<Value> Interp::Call(const Value& callee, CallArgs& args, const std::string& what) {
  if (callee.is_function()) return callee.func()(args);
  if (callee.is_undefined()) return InvalidArgument(callee.str().empty() ? what + " is undefined" : callee.str());
  return InvalidArgument(StrFormat("'%s' object is not callable", callee.TypeName()));
}

Result<Value> Interp::ApplyFilterChain(const Expr& filter, Value subject, const FramePtr& f) {
  const Value* saved = filter_subject_;
  filter_subject_ = &subject;
  Result<Value> r = Eval(filter, f);
  filter_subject_ = saved;
  return r;
}

Result<Value> Interp::EvalImpl(const Expr& e, const FramePtr& f) {
  switch (e.kind) {
    case ExprKind::kLiteral: return e.literal;
    case ExprKind::kName: {
      if (const Value* v = f->Find(e.name)) return *v;
      return Value::Undefined("'" + e.name + "' is undefined");
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      ValueList items;
      for (const ExprPtr& a : e.args) {
        HERD_ASSIGN_OR_RETURN(Value v, Eval(*a, f));
        items.push_back(std::move(v));
      }
      return Value::List(std::move(items), e.kind == ExprKind::kTuple);
    }
    case ExprKind::kDict: {
      ValueDict dict;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        HERD_ASSIGN_OR_RETURN(Value k, Eval(*e.args[i], f));
        HERD_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i + 1], f));
        dict.Set(std::move(k), std::move(v));
      }
      return Value::Dict(std::move(dict));
    }
    case ExprKind::kAttr: {
      HERD_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0], f));
      return GetAttr(obj, e.name);
    }
    case ExprKind::kItem: {
      HERD_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0], f));
      HERD_ASSIGN_OR_RETURN(Value key, Eval(*e.args[1], f));
      return GetItem(obj, key);
    }
    case ExprKind::kSlice: {
      HERD_ASSIGN_OR_RETURN(Value obj, Eval(*e.args[0], f));
      Value parts[3];
      for (int k = 0; k < 3; ++k) {
        if (e.args[k + 1]) {
          HERD_ASSIGN_OR_RETURN(parts[k], Eval(*e.args[k + 1], f));
        }
      }
      return GetSlice(obj, parts[0], parts[1], parts[2]);
    }
    case ExprKind::kCall: {
      const Expr& target = *e.args[0];
      if (target.kind == ExprKind::kAttr) {
        HERD_ASSIGN_OR_RETURN(Value obj, Eval(*target.args[0], f));
        HERD_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, f, 1));
        if (obj.is_string() || obj.is_list() ||
            (obj.is_dict() && !obj.is_namespace() && !obj.dict().Find(target.name))) {
          Result<Value> r = CallMethod(obj, target.name, args);
          if (r.ok() || r.status().code() != StatusCode::kUnimplemented) return r;
        }
        HERD_ASSIGN_OR_RETURN(Value callee, GetAttr(obj, target.name));
        return Call(callee, args, target.name);
      }
      HERD_ASSIGN_OR_RETURN(Value callee, Eval(target, f));
      HERD_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, f, 1));
      return Call(callee, args, target.kind == ExprKind::kName ? "'" + target.name + "'" : "callee");
    }
    case ExprKind::kFilter: {
      Value subject;
      if (e.args[0]) {
        HERD_ASSIGN_OR_RETURN(subject, Eval(*e.args[0], f));
      } else if (filter_subject_ != nullptr) {
        subject = *filter_subject_;
      }
      HERD_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, f, 1));
      return ApplyFilter(e.name, subject, args);
    }
    case ExprKind::kTest: {
      HERD_ASSIGN_OR_RETURN(Value subject, Eval(*e.args[0], f));
      HERD_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, f, 1));
      HERD_ASSIGN_OR_RETURN(bool r, ApplyTest(e.name, subject, args));
      return Value::Bool(r != e.negated);
    }
    case ExprKind::kUnary: {
      HERD_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0], f));
      if (e.name == "not") return Value::Bool(!v.Truthy());
      if (e.name == "-") return Negate(v);
      return v;
    }
    case ExprKind::kBinary: {
      HERD_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0], f));
      if (e.name == "and") return a.Truthy() ? Eval(*e.args[1], f) : Result<Value>(a);
      if (e.name == "or") return a.Truthy() ? Result<Value>(a) : Eval(*e.args[1], f);
      HERD_ASSIGN_OR_RETURN(Value b, Eval(*e.args[1], f));
      if (e.name == "~") return Value::String(ToStr(a) + ToStr(b));
      return BinaryOp(e.name, a, b);
    }
    case ExprKind::kCompare: {
      HERD_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0], f));
      for (size_t i = 0; i < e.ops.size(); ++i) {
        HERD_ASSIGN_OR_RETURN(Value right, Eval(*e.args[i + 1], f));
        const std::string& op = e.ops[i];
        bool r;
        if (op == "==")
          r = Equals(left, right);
        else if (op == "!=")
          r = !Equals(left, right);
        else if (op == "<") {
          HERD_ASSIGN_OR_RETURN(r, Less(left, right));
        } else if (op == ">") {
          HERD_ASSIGN_OR_RETURN(r, Less(right, left));
        } else if (op == "<=") {
          HERD_ASSIGN_OR_RETURN(bool gt, Less(right, left));
          r = !gt;
        } else if (op == ">=") {
          HERD_ASSIGN_OR_RETURN(bool lt, Less(left, right));
          r = !lt;
        } else {
          HERD_ASSIGN_OR_RETURN(r, Contains(right, left));
          if (op == "notin") r = !r;
        }
        if (!r) return Value::Bool(false);
        left = std::move(right);
      }
      return Value::Bool(true);
    }
    case ExprKind::kCond: {
      HERD_ASSIGN_OR_RETURN(Value c, Eval(*e.args[0], f));
      if (c.Truthy()) return Eval(*e.args[1], f);
      if (e.args[2]) return Eval(*e.args[2], f);
      return Value::Undefined("the inline if-expression evaluated to false and no else section was defined.");
    }
  }
  return Internal("unknown expression");
}

Status Interp::Assign(const std::vector<std::string>& targets, const Value& v, Frame& f) {
  if (targets.size() == 1) {
    f.vars[targets[0]] = v;
    return Status::Ok();
  }
  HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(v));
  if (items.size() != targets.size()) {
    return InvalidArgument(
        items.size() > targets.size()
            ? StrFormat("too many values to unpack (expected %zu)", targets.size())
            : StrFormat("not enough values to unpack (expected %zu, got %zu)", targets.size(), items.size()));
  }
  for (size_t i = 0; i < targets.size(); ++i) f.vars[targets[i]] = items[i];
  return Status::Ok();
}

Status Interp::ExecFor(const Stmt& s, const FramePtr& f, std::string& out) {
  HERD_ASSIGN_OR_RETURN(Value seq, Eval(*s.expr, f));
  HERD_ASSIGN_OR_RETURN(ValueList items, Iterate(seq));
  if (s.cond) {
    ValueList kept;
    for (Value& item : items) {
      FramePtr probe = Child(f);
      HERD_RETURN_IF_ERROR(Assign(s.targets, item, *probe));
      HERD_ASSIGN_OR_RETURN(Value c, Eval(*s.cond, probe));
      if (c.Truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    Flow flow = Flow::kNormal;
    return Exec(s.else_body, f, out, flow);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    FramePtr iter = Child(f);
    HERD_RETURN_IF_ERROR(Assign(s.targets, items[i], *iter));
    ValueDict loop;
    loop.items.reserve(12);
    loop.items.emplace_back(Value::String("index"), Value::Int(i + 1));
    loop.items.emplace_back(Value::String("index0"), Value::Int(i));
    loop.items.emplace_back(Value::String("revindex"), Value::Int(n - i));
    loop.items.emplace_back(Value::String("revindex0"), Value::Int(n - i - 1));
    loop.items.emplace_back(Value::String("first"), Value::Bool(i == 0));
    loop.items.emplace_back(Value::String("last"), Value::Bool(i == n - 1));
    loop.items.emplace_back(Value::String("length"), Value::Int(n));
    loop.items.emplace_back(Value::String("depth"), Value::Int(1));
    loop.items.emplace_back(Value::String("depth0"), Value::Int(0));
    loop.items.emplace_back(Value::String("previtem"),
                            i > 0 ? items[i - 1] : Value::Undefined("there is no previous item"));
    loop.items.emplace_back(Value::String("nextitem"),
                            i + 1 < n ? items[i + 1] : Value::Undefined("there is no next item"));
    loop.items.emplace_back(Value::String("cycle"), Value::Func("cycle", [i](CallArgs& args) -> Result<Value> {
                              if (args.positional.empty()) return InvalidArgument("no items for cycling given");
                              return args.positional[i % args.positional.size()];
                            }));
    iter->vars["loop"] = Value::Dict(std::move(loop));
    Flow flow = Flow::kNormal;
    HERD_RETURN_IF_ERROR(Exec(s.body, iter, out, flow));
    if (flow == Flow::kBreak) break;
  }
  return Status::Ok();
}

Value Interp::MakeMacro(const Stmt& s, const FramePtr& f) {
  std::weak_ptr<Frame> def_frame = f;
  const Stmt* stmt = &s;
  return Value::Func(s.text, [this, stmt, def_frame](CallArgs& args) -> Result<Value> {
    FramePtr parent = def_frame.lock();
    if (!parent) return InvalidArgument("macro '" + stmt->text + "' called after its scope ended");
    FramePtr frame = Child(parent);
    if (args.positional.size() > stmt->params.size()) {
      return InvalidArgument(
          StrFormat("macro '%s' takes not more than %zu argument(s)", stmt->text.c_str(), stmt->params.size()));
    }
    for (const auto& [name, value] : args.keyword) {
      bool known = name == "caller";
      for (const auto& p : stmt->params) known = known || p.first == name;
      if (!known) return InvalidArgument("macro '" + stmt->text + "' takes no keyword argument '" + name + "'");
      if (name == "caller") frame->vars["caller"] = value;
    }
    for (size_t i = 0; i < stmt->params.size(); ++i) {
      const auto& [name, def] = stmt->params[i];
      const Value* given = args.Get(i, name);
      if (given) {
        frame->vars[name] = *given;
      } else if (def) {
        HERD_ASSIGN_OR_RETURN(Value v, Eval(*def, frame));
        frame->vars[name] = std::move(v);
      } else {
        frame->vars[name] = Value::Undefined("parameter '" + name + "' was not provided");
      }
    }
    std::string out;
    Flow flow = Flow::kNormal;
    HERD_RETURN_IF_ERROR(Exec(stmt->body, frame, out, flow));
    return Value::String(std::move(out));
  });
}

Status Interp::ExecStmt(const Stmt& s, const FramePtr& f, std::string& out, Flow& flow) {
  switch (s.kind) {
    case StmtKind::kText: out += s.text; return Status::Ok();
    case StmtKind::kOutput: {
      HERD_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, f));
      out += ToStr(v);
      return Status::Ok();
    }
    case StmtKind::kIf:
      for (const auto& [cond, body] : s.branches) {
        HERD_ASSIGN_OR_RETURN(Value c, Eval(*cond, f));
        if (c.Truthy()) return Exec(body, f, out, flow);
      }
      return Exec(s.else_body, f, out, flow);
    case StmtKind::kFor: return ExecFor(s, f, out);
    case StmtKind::kSet: {
      HERD_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, f));
      if (s.text.empty()) return Assign(s.targets, v, *f);
      const Value* ns = f->Find(s.targets[0]);
      if (ns == nullptr || !ns->is_namespace())
        return InvalidArgument("cannot assign attribute on non-namespace object");
      ns->dict().Set(Value::String(s.text), std::move(v));
      return Status::Ok();
    }
    case StmtKind::kSetBlock: {
      std::string text;
      Flow inner = Flow::kNormal;
      HERD_RETURN_IF_ERROR(Exec(s.body, f, text, inner));
      Value v = Value::String(std::move(text));
      if (s.expr) {
        HERD_ASSIGN_OR_RETURN(v, ApplyFilterChain(*s.expr, std::move(v), f));
      }
      f->vars[s.targets[0]] = std::move(v);
      return Status::Ok();
    }
    case StmtKind::kMacro: f->vars[s.text] = MakeMacro(s, f); return Status::Ok();
    case StmtKind::kCallBlock: {
      Value caller = MakeMacro(s, f);
      const Expr& call = *s.expr;
      HERD_ASSIGN_OR_RETURN(Value callee, Eval(*call.args[0], f));
      HERD_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(call, f, 1));
      args.keyword.emplace_back("caller", std::move(caller));
      HERD_ASSIGN_OR_RETURN(Value v, Call(callee, args, "callee"));
      out += ToStr(v);
      return Status::Ok();
    }
    case StmtKind::kFilterBlock: {
      std::string text;
      Flow inner = Flow::kNormal;
      HERD_RETURN_IF_ERROR(Exec(s.body, f, text, inner));
      HERD_ASSIGN_OR_RETURN(Value v, ApplyFilterChain(*s.expr, Value::String(std::move(text)), f));
      out += ToStr(v);
      return Status::Ok();
    }
    case StmtKind::kBreak: flow = Flow::kBreak; return Status::Ok();
    case StmtKind::kContinue: flow = Flow::kContinue; return Status::Ok();
    case StmtKind::kScope: return Exec(s.body, f, out, flow);
  }
  return Internal("unknown statement");
}

}  // namespace

Result<std::string> Render(const Body& body, std::unordered_map<std::string, Value> globals,
                           const RenderOptions& options) {
  auto g = std::make_shared<Frame>();
  g->vars["range"] = Value::Func("range", [](CallArgs& args) -> Result<Value> {
    int64_t start = 0, stop = 0, step = 1;
    const auto& p = args.positional;
    if (p.size() == 1) {
      stop = p[0].int_value();
    } else if (p.size() >= 2) {
      start = p[0].int_value();
      stop = p[1].int_value();
      if (p.size() > 2) step = p[2].int_value();
    }
    if (step == 0) return InvalidArgument("range() arg 3 must not be zero");
    ValueList out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(Value::Int(i));
    return Value::List(std::move(out));
  });
  auto make_dict = [](bool ns) {
    return [ns](CallArgs& args) -> Result<Value> {
      ValueDict d;
      for (const Value& p : args.positional) {
        if (!p.is_dict()) return InvalidArgument("positional argument must be a mapping");
        for (const auto& [k, v] : p.dict().items) d.Set(k, v);
      }
      for (const auto& [k, v] : args.keyword) d.Set(Value::String(k), v);
      return Value::Dict(std::move(d), ns);
    };
  };
  g->vars["dict"] = Value::Func("dict", make_dict(false));
  g->vars["namespace"] = Value::Func("namespace", make_dict(true));
  g->vars["raise_exception"] = Value::Func("raise_exception", [](CallArgs& args) -> Result<Value> {
    const Value* msg = args.Get(0, "message");
    return InvalidArgument(msg ? ToStr(*msg) : "raise_exception called");
  });
  auto clock = options.strftime_now;
  g->vars["strftime_now"] = Value::Func("strftime_now", [clock](CallArgs& args) -> Result<Value> {
    const Value* fmt = args.Get(0, "format");
    if (!fmt || !fmt->is_string()) return InvalidArgument("strftime_now needs a format string");
    if (!clock) return Unimplemented("strftime_now: no clock given");
    return Value::String(clock(fmt->str()));
  });
  for (auto& [k, v] : globals) g->vars[k] = std::move(v);
  FramePtr root = Child(g);
  std::string out;
  Flow flow = Flow::kNormal;
  Interp interp;
  HERD_RETURN_IF_ERROR(interp.Exec(body, root, out, flow));
  return out;
}

}  // namespace herd::chat
