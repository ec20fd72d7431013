#include "tokenizer/regex.h"

#include <memory>
#include <utility>

#include "tokenizer/unicode.h"

namespace herd {

namespace {

using unicode::CategoryMask;

struct Node {
  enum Kind { kEmpty, kChar, kClass, kAny, kBegin, kEnd, kConcat, kAlt, kRepeat, kLook } kind = kEmpty;
  uint32_t c = 0;  // kChar: code point; kClass: class index
  bool fold = false;
  int min = 0, max = 0;  // kRepeat; max < 0: unbounded
  bool greedy = true;
  bool negative = false;  // kLook
  std::vector<std::unique_ptr<Node>> kids;
};
using NodePtr = std::unique_ptr<Node>;

NodePtr MakeNode(Node::Kind kind) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  return n;
}

bool CategoryByName(std::string_view name, CategoryMask* mask) {
  using namespace unicode;
  struct Entry {
    const char* name;
    CategoryMask mask;
  };
  static const Entry kEntries[] = {
      {"L", kLetter},   {"Lu", Bit(kLu)}, {"Ll", Bit(kLl)}, {"Lt", Bit(kLt)},  {"Lm", Bit(kLm)}, {"Lo", Bit(kLo)},
      {"M", kMark},     {"Mn", Bit(kMn)}, {"Mc", Bit(kMc)}, {"Me", Bit(kMe)},  {"N", kNumber},   {"Nd", Bit(kNd)},
      {"Nl", Bit(kNl)}, {"No", Bit(kNo)}, {"P", kPunct},    {"Pc", Bit(kPc)},  {"Pd", Bit(kPd)}, {"Ps", Bit(kPs)},
      {"Pe", Bit(kPe)}, {"Pi", Bit(kPi)}, {"Pf", Bit(kPf)}, {"Po", Bit(kPo)},  {"S", kSymbol},   {"Sm", Bit(kSm)},
      {"Sc", Bit(kSc)}, {"Sk", Bit(kSk)}, {"So", Bit(kSo)}, {"Z", kSeparator}, {"Zs", Bit(kZs)}, {"Zl", Bit(kZl)},
      {"Zp", Bit(kZp)}, {"C", kOther},    {"Cc", Bit(kCc)}, {"Cf", Bit(kCf)},  {"Cs", Bit(kCs)}, {"Co", Bit(kCo)},
      {"Cn", Bit(kCn)},
  };
  for (const auto& e : kEntries) {
    if (name == e.name) {
      *mask = e.mask;
      return true;
    }
  }
  return false;
}

}  // namespace

bool Regex::Class::Matches(uint32_t cp) const {
  auto test = [this](uint32_t c) {
    for (const ClassItem& it : items) {
      bool hit;
      if (it.space) {
        hit = unicode::IsWhitespace(c);
      } else if (it.word) {
        hit = unicode::InMask(
            c, unicode::kLetter | unicode::kMark | unicode::Bit(unicode::kNd) | unicode::Bit(unicode::kPc));
      } else if (it.mask) {
        hit = unicode::InMask(c, it.mask);
      } else {
        hit = c >= it.lo && c <= it.hi;
      }
      if (hit != it.negate) return true;
    }
    return false;
  };
  bool hit = test(cp) || (fold && test(unicode::ToLowerSimple(cp)));
  return hit != negate;
}

class RegexCompiler {
 public:
  RegexCompiler(std::string_view pattern, Regex* re) : re_(re) { p_ = unicode::DecodeAll(pattern); }

  Status Compile() {
    NodePtr root;
    HERD_RETURN_IF_ERROR(ParseAlt(false, &root));
    if (i_ != p_.size()) return Error("unbalanced ')'");
    Emit(*root);
    re_->prog_.push_back({Regex::Op::kMatch});
    return Status::Ok();
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument(StrFormat("regex '%s': %s at character %zu", re_->pattern_.c_str(), what.c_str(), i_));
  }
  bool AtEnd() const { return i_ >= p_.size(); }
  uint32_t Peek() const { return p_[i_]; }

  Status ParseAlt(bool fold, NodePtr* out) {
    auto alt = MakeNode(Node::kAlt);
    for (;;) {
      auto cat = MakeNode(Node::kConcat);
      while (!AtEnd() && Peek() != '|' && Peek() != ')') {
        NodePtr atom;
        HERD_RETURN_IF_ERROR(ParseRepeat(fold, &atom));
        cat->kids.push_back(std::move(atom));
      }
      alt->kids.push_back(std::move(cat));
      if (AtEnd() || Peek() != '|') break;
      ++i_;
    }
    *out = alt->kids.size() == 1 ? std::move(alt->kids[0]) : std::move(alt);
    return Status::Ok();
  }

  Status ParseRepeat(bool fold, NodePtr* out) {
    NodePtr atom;
    HERD_RETURN_IF_ERROR(ParseAtom(fold, &atom));
    while (!AtEnd()) {
      int mn, mx;
      uint32_t c = Peek();
      if (c == '?') {
        mn = 0, mx = 1;
      } else if (c == '*') {
        mn = 0, mx = -1;
      } else if (c == '+') {
        mn = 1, mx = -1;
      } else if (c == '{' && ParseBraces(&mn, &mx)) {
        --i_;  // ParseBraces leaves i_ after '}'; the ++ below expects it on the last char
      } else {
        break;
      }
      ++i_;
      auto rep = MakeNode(Node::kRepeat);
      rep->min = mn, rep->max = mx;
      if (!AtEnd() && Peek() == '?') {
        rep->greedy = false;
        ++i_;
      }
      rep->kids.push_back(std::move(atom));
      atom = std::move(rep);
    }
    *out = std::move(atom);
    return Status::Ok();
  }

  // {n}, {n,}, {n,m}; false (and i_ unchanged) when the brace is not a quantifier.
  bool ParseBraces(int* mn, int* mx) {
    size_t j = i_ + 1;
    auto number = [&](int* v) {
      size_t start = j;
      *v = 0;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') *v = *v * 10 + static_cast<int>(p_[j++] - '0');
      return j > start;
    };
    if (!number(mn)) return false;
    *mx = *mn;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      if (!number(mx)) *mx = -1;
    }
    if (j >= p_.size() || p_[j] != '}') return false;
    i_ = j + 1;
    return true;
  }

  Status ParseAtom(bool fold, NodePtr* out) {
    uint32_t c = p_[i_++];
    switch (c) {
      case '(': {
        bool look = false, negative = false, group_fold = fold;
        if (!AtEnd() && Peek() == '?') {
          ++i_;
          if (AtEnd()) return Error("bad group");
          uint32_t k = p_[i_++];
          if (k == ':') {
          } else if (k == '=' || k == '!') {
            look = true, negative = k == '!';
          } else if (k == 'i' && !AtEnd() && Peek() == ':') {
            ++i_, group_fold = true;
          } else {
            return Error("unsupported group kind");
          }
        }
        NodePtr inner;
        HERD_RETURN_IF_ERROR(ParseAlt(group_fold, &inner));
        if (AtEnd() || Peek() != ')') return Error("missing ')'");
        ++i_;
        if (look) {
          auto n = MakeNode(Node::kLook);
          n->negative = negative;
          n->kids.push_back(std::move(inner));
          *out = std::move(n);
        } else {
          *out = std::move(inner);
        }
        return Status::Ok();
      }
      case '[': return ParseClass(fold, out);
      case '.': *out = MakeNode(Node::kAny); return Status::Ok();
      case '^': *out = MakeNode(Node::kBegin); return Status::Ok();
      case '$': *out = MakeNode(Node::kEnd); return Status::Ok();
      case '\\': {
        Regex::ClassItem item;
        uint32_t lit;
        bool is_class = false;
        HERD_RETURN_IF_ERROR(ParseEscape(&item, &lit, &is_class));
        if (is_class) {
          Regex::Class cls;
          cls.items.push_back(item);
          *out = ClassNode(std::move(cls));
        } else {
          *out = CharNode(lit, fold);
        }
        return Status::Ok();
      }
      case '?':
      case '*':
      case '+': return Error("quantifier without operand");
      default: *out = CharNode(c, fold); return Status::Ok();
    }
  }

  NodePtr CharNode(uint32_t c, bool fold) {
    auto n = MakeNode(Node::kChar);
    n->c = fold ? unicode::ToLowerSimple(c) : c;
    n->fold = fold;
    return n;
  }
  NodePtr ClassNode(Regex::Class cls) {
    auto n = MakeNode(Node::kClass);
    n->c = static_cast<uint32_t>(re_->classes_.size());
    re_->classes_.push_back(std::move(cls));
    return n;
  }

  // After a backslash: either a class item (\s, \p{L}, ...) or a literal code point.
  Status ParseEscape(Regex::ClassItem* item, uint32_t* lit, bool* is_class) {
    if (AtEnd()) return Error("trailing backslash");
    uint32_t c = p_[i_++];
    *is_class = true;
    *item = Regex::ClassItem{};
    switch (c) {
      case 's': item->space = true; return Status::Ok();
      case 'S': item->space = true, item->negate = true; return Status::Ok();
      case 'w': item->word = true; return Status::Ok();
      case 'W': item->word = true, item->negate = true; return Status::Ok();
      case 'd': item->mask = unicode::Bit(unicode::kNd); return Status::Ok();
      case 'D': item->mask = unicode::Bit(unicode::kNd), item->negate = true; return Status::Ok();
      case 'p':
      case 'P': {
        std::string name;
        if (!AtEnd() && Peek() == '{') {
          ++i_;
          while (!AtEnd() && Peek() != '}') name.push_back(static_cast<char>(p_[i_++]));
          if (AtEnd()) return Error("unterminated \\p{");
          ++i_;
        } else if (!AtEnd()) {
          name.push_back(static_cast<char>(p_[i_++]));
        }
        if (!CategoryByName(name, &item->mask)) return Error("unknown property '" + name + "'");
        item->negate = c == 'P';
        return Status::Ok();
      }
      default: break;
    }
    *is_class = false;
    switch (c) {
      case 'r': *lit = '\r'; break;
      case 'n': *lit = '\n'; break;
      case 't': *lit = '\t'; break;
      case 'f': *lit = '\f'; break;
      case 'v': *lit = '\v'; break;
      case '0': *lit = 0; break;
      case 'x': {
        uint32_t v = 0;
        int digits = 0;
        bool braced = !AtEnd() && Peek() == '{';
        if (braced) ++i_;
        while (!AtEnd() && (braced || digits < 2)) {
          uint32_t h = Peek();
          int d = h >= '0' && h <= '9'   ? int(h - '0')
                  : h >= 'a' && h <= 'f' ? int(h - 'a' + 10)
                  : h >= 'A' && h <= 'F' ? int(h - 'A' + 10)
                                         : -1;
          if (d < 0) break;
          v = v * 16 + static_cast<uint32_t>(d), ++digits, ++i_;
        }
        if (braced) {
          if (AtEnd() || Peek() != '}') return Error("bad \\x{...}");
          ++i_;
        }
        if (digits == 0) return Error("bad \\x escape");
        *lit = v;
        break;
      }
      default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return Error("unsupported escape");
        *lit = c;  // escaped punctuation stands for itself
    }
    return Status::Ok();
  }

  Status ParseClass(bool fold, NodePtr* out) {
    Regex::Class cls;
    cls.fold = fold;
    if (!AtEnd() && Peek() == '^') cls.negate = true, ++i_;
    bool first = true;
    for (;;) {
      if (AtEnd()) return Error("unterminated '['");
      uint32_t c = p_[i_++];
      if (c == ']' && !first) break;
      first = false;
      Regex::ClassItem item;
      uint32_t lo = c;
      if (c == '\\') {
        bool is_class = false;
        HERD_RETURN_IF_ERROR(ParseEscape(&item, &lo, &is_class));
        if (is_class) {
          cls.items.push_back(item);
          continue;
        }
      } else if (c == '[') {
        return Error("nested classes are not supported");
      }
      uint32_t hi = lo;
      if (i_ + 1 < p_.size() && Peek() == '-' && p_[i_ + 1] != ']') {
        ++i_;
        uint32_t h = p_[i_++];
        if (h == '\\') {
          bool is_class = false;
          Regex::ClassItem dummy;
          HERD_RETURN_IF_ERROR(ParseEscape(&dummy, &h, &is_class));
          if (is_class) return Error("class escape as a range end");
        }
        hi = h;
        if (hi < lo) return Error("reversed range");
      }
      item.lo = lo, item.hi = hi;
      cls.items.push_back(item);
    }
    *out = ClassNode(std::move(cls));
    return Status::Ok();
  }

  int Pc() const { return static_cast<int>(re_->prog_.size()); }
  int Add(Regex::Inst inst) {
    re_->prog_.push_back(inst);
    return Pc() - 1;
  }

  void Emit(const Node& n) {
    auto& prog = re_->prog_;
    switch (n.kind) {
      case Node::kEmpty: break;
      case Node::kChar: Add({n.fold ? Regex::Op::kCharFold : Regex::Op::kChar, false, n.c}); break;
      case Node::kClass: Add({Regex::Op::kClass, false, n.c}); break;
      case Node::kAny: Add({Regex::Op::kAny}); break;
      case Node::kBegin: Add({Regex::Op::kBegin}); break;
      case Node::kEnd: Add({Regex::Op::kEnd}); break;
      case Node::kConcat:
        for (const auto& k : n.kids) Emit(*k);
        break;
      case Node::kAlt: {
        std::vector<int> jumps;
        for (size_t k = 0; k < n.kids.size(); ++k) {
          if (k + 1 == n.kids.size()) {
            Emit(*n.kids[k]);
            break;
          }
          int split = Add({Regex::Op::kSplit});
          prog[split].x = Pc();
          Emit(*n.kids[k]);
          jumps.push_back(Add({Regex::Op::kJmp}));
          prog[split].y = Pc();
        }
        for (int j : jumps) prog[j].x = Pc();
        break;
      }
      case Node::kRepeat: {
        for (int k = 0; k < n.min; ++k) Emit(*n.kids[0]);
        if (n.max < 0) {
          int split = Add({Regex::Op::kSplit});
          Emit(*n.kids[0]);
          int jmp = Add({Regex::Op::kJmp});
          prog[jmp].x = split;
          SetSplit(split, split + 1, Pc(), n.greedy);
        } else {
          std::vector<int> splits;
          for (int k = n.min; k < n.max; ++k) {
            splits.push_back(Add({Regex::Op::kSplit}));
            Emit(*n.kids[0]);
          }
          for (int s : splits) SetSplit(s, s + 1, Pc(), n.greedy);
        }
        break;
      }
      case Node::kLook: {
        int look = Add({Regex::Op::kLook, n.negative});
        prog[look].x = Pc();
        Emit(*n.kids[0]);
        Add({Regex::Op::kMatch});
        prog[look].y = Pc();
        break;
      }
    }
  }
  void SetSplit(int split, int body, int exit, bool greedy) {
    re_->prog_[split].x = greedy ? body : exit;
    re_->prog_[split].y = greedy ? exit : body;
  }

  Regex* re_;
  std::vector<uint32_t> p_;
  size_t i_ = 0;
};

Result<Regex> Regex::Compile(std::string_view pattern) {
  Regex re;
  re.pattern_ = std::string(pattern);
  RegexCompiler compiler(pattern, &re);
  HERD_RETURN_IF_ERROR(compiler.Compile());
  return re;
}

bool Regex::Run(int pc0, const uint32_t* cps, size_t n, size_t pos0, size_t* end) const {
  // Depth-first search over (pc, pos) with an explicit stack of alternatives.
  // The stack is shared by nested runs (lookaheads), each working above its own base.
  static thread_local std::vector<std::pair<int, size_t>> stack;
  const size_t base = stack.size();
  stack.emplace_back(pc0, pos0);
  while (stack.size() > base) {
    auto [pc, pos] = stack.back();
    stack.pop_back();
    for (;;) {
      const Inst& in = prog_[pc];
      bool ok = true;
      switch (in.op) {
        case Op::kChar:
          ok = pos < n && cps[pos] == in.c;
          ++pos, ++pc;
          break;
        case Op::kCharFold:
          ok = pos < n && unicode::ToLowerSimple(cps[pos]) == in.c;
          ++pos, ++pc;
          break;
        case Op::kClass:
          ok = pos < n && classes_[in.c].Matches(cps[pos]);
          ++pos, ++pc;
          break;
        case Op::kAny:
          ok = pos < n && cps[pos] != '\n';
          ++pos, ++pc;
          break;
        case Op::kSplit:
          stack.emplace_back(in.y, pos);
          pc = in.x;
          break;
        case Op::kJmp: pc = in.x; break;
        case Op::kMatch:
          *end = pos;
          stack.resize(base);
          return true;
        case Op::kBegin:
          ok = pos == 0 || cps[pos - 1] == '\n';
          ++pc;
          break;
        case Op::kEnd:
          ok = pos == n || cps[pos] == '\n';
          ++pc;
          break;
        case Op::kLook: {
          size_t e;
          ok = Run(in.x, cps, n, pos, &e) != in.negative;
          pc = in.y;
          break;
        }
      }
      if (!ok) break;
    }
  }
  return false;
}

long Regex::MatchAt(const uint32_t* cps, size_t n, size_t pos) const {
  size_t end;
  return Run(0, cps, n, pos, &end) ? static_cast<long>(end) : -1;
}

bool Regex::Search(const uint32_t* cps, size_t n, size_t from, size_t* begin, size_t* end) const {
  for (size_t pos = from; pos < n; ++pos) {
    size_t e;
    if (Run(0, cps, n, pos, &e) && e > pos) {
      *begin = pos, *end = e;
      return true;
    }
  }
  return false;
}

}  // namespace herd
