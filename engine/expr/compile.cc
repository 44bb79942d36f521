// The expression compiler: lexer, recursive-descent parser into a small tree, and the type
// checker, which emits the typed instructions of program.h as it checks (docs/configuration.md,
// "Expressions").
#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expr/expr.h"
#include "engine/expr/program.h"

namespace cairn {
namespace {

// ---- lexer -----------------------------------------------------------------------------------

enum class Tok { kEnd, kIdent, kQuotedIdent, kString, kInt, kDouble, kSymbol };

struct Token {
  Tok kind = Tok::kEnd;
  int col = 1;        // 1-based column of its first character
  std::string text;   // identifier, string value, symbol, or the number's digits
  uint64_t u = 0;     // kInt: the value (may exceed int64 max by one, for a negated minimum)
  double d = 0;       // kDouble
};

// What a token looks like in a message.
std::string Show(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd: return "the end of the expression";
    case Tok::kString: return "'" + t.text + "'";
    case Tok::kQuotedIdent: return "\"" + t.text + "\"";
    default: return "'" + t.text + "'";
  }
}

struct Error {
  int col = 0;
  std::string what;
};

bool Lex(std::string_view s, std::vector<Token>* out, Error* err) {
  size_t i = 0;
  auto fail = [&](size_t at, std::string what) {
    err->col = static_cast<int>(at) + 1;
    err->what = std::move(what);
    return false;
  };
  while (true) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    Token t;
    t.col = static_cast<int>(i) + 1;
    if (i == s.size()) {
      out->push_back(t);
      return true;
    }
    const char c = s[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t b = i;
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      // A qualified name, `input.field` (a join's fields): one identifier.
      while (i + 1 < s.size() && s[i] == '.' && (std::isalpha(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_')) {
        ++i;
        while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      }
      t.kind = Tok::kIdent;
      t.text = std::string(s.substr(b, i - b));
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t b = i;
      bool real = false;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      if (i < s.size() && s[i] == '.') {
        real = true;
        ++i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      }
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
          real = true;
          i = j;
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
        }
      }
      if (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_'))
        return fail(b, "malformed number '" + std::string(s.substr(b, i + 1 - b)) + "'");
      t.text = std::string(s.substr(b, i - b));
      if (real) {
        t.kind = Tok::kDouble;
        auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), t.d);
        if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size())
          return fail(b, "number '" + t.text + "' is out of range");
      } else {
        t.kind = Tok::kInt;
        auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), t.u);
        if (r.ec != std::errc() || t.u > uint64_t{1} << 63)
          return fail(b, "integer " + t.text + " is out of range for int64");
      }
    } else if (c == '\'') {
      size_t b = i++;
      t.kind = Tok::kString;
      while (true) {
        if (i == s.size()) return fail(b, "unterminated string literal (strings are in single quotes, '' is a quote)");
        if (s[i] == '\'') {
          if (i + 1 < s.size() && s[i + 1] == '\'') {
            t.text.push_back('\'');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        t.text.push_back(s[i++]);
      }
    } else if (c == '"') {
      size_t b = i++;
      t.kind = Tok::kQuotedIdent;
      while (true) {
        if (i == s.size()) return fail(b, "unterminated quoted field name");
        if (s[i] == '"') {
          if (i + 1 < s.size() && s[i + 1] == '"') {
            t.text.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        t.text.push_back(s[i++]);
      }
      if (t.text.empty()) return fail(b, "empty quoted field name");
    } else {
      static const char* const kTwo[] = {"<=", ">=", "<>", "!=", "||", "=="};
      t.kind = Tok::kSymbol;
      size_t len = 0;
      for (const char* two : kTwo) {
        if (s.substr(i, 2) == two) {
          t.text = two;
          len = 2;
        }
      }
      if (len == 0) {
        if (std::string_view("+-*/%=<>(),").find(c) == std::string_view::npos)
          return fail(i, std::string("unexpected character '") + c + "'");
        t.text = std::string(1, c);
        len = 1;
      }
      if (t.text == "==") t.text = "=";
      i += len;
    }
    out->push_back(std::move(t));
  }
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

const char* const kKeywords[] = {"AND", "OR",   "NOT",  "IS",   "NULL", "LIKE", "IN",    "CASE",
                                 "WHEN", "THEN", "ELSE", "END", "CAST", "AS",   "TRUE", "FALSE"};

bool IsKeyword(const Token& t) {
  if (t.kind != Tok::kIdent) return false;
  for (const char* k : kKeywords)
    if (IEquals(t.text, k)) return true;
  return false;
}

// ---- parser ----------------------------------------------------------------------------------

struct Node {
  enum Kind { kInt, kDouble, kString, kBool, kNull, kField, kNeg, kNot, kBinary, kAnd, kOr, kIsNull, kLike, kIn,
              kCase, kCast, kCall };
  Kind kind = kNull;
  int col = 1;
  std::string text;  // field or function name, operator symbol, string literal
  int64_t i = 0;
  double d = 0;
  bool negated = false;     // IS NOT NULL, NOT LIKE, NOT IN
  bool has_operand = false; // CASE x WHEN ...: kids[0] is x
  bool has_else = false;
  FieldType cast_to = FieldType::kString;
  std::vector<std::unique_ptr<Node>> kids;
};
using NodePtr = std::unique_ptr<Node>;

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  bool Parse(NodePtr* out, Error* err) {
    err_ = err;
    *out = Or();
    if (*out == nullptr) return false;
    if (Peek().kind != Tok::kEnd) return Fail(Peek(), "unexpected " + Show(Peek()) + " after a complete expression");
    return true;
  }

 private:
  const Token& Peek(size_t ahead = 0) const { return t_[std::min(p_ + ahead, t_.size() - 1)]; }
  const Token& Next() { return t_[p_ < t_.size() - 1 ? p_++ : p_]; }
  bool IsKw(const char* kw, size_t ahead = 0) const {
    const Token& t = Peek(ahead);
    return t.kind == Tok::kIdent && IEquals(t.text, kw);
  }
  bool IsSym(const char* s) const { return Peek().kind == Tok::kSymbol && Peek().text == s; }
  bool Fail(const Token& at, std::string what) {
    if (err_->what.empty()) {
      err_->col = at.col;
      err_->what = std::move(what);
    }
    return false;
  }
  NodePtr FailNull(const Token& at, std::string what) {
    Fail(at, std::move(what));
    return nullptr;
  }
  bool Expect(const char* what, bool keyword) {
    if (keyword ? IsKw(what) : IsSym(what)) {
      Next();
      return true;
    }
    return Fail(Peek(), std::string("expected ") + (keyword ? "" : "'") + what + (keyword ? "" : "'") + " but found " +
                            Show(Peek()));
  }
  static NodePtr Make(Node::Kind k, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->col = at.col;
    n->text = at.text;
    return n;
  }
  static NodePtr Make2(Node::Kind k, const Token& at, NodePtr a, NodePtr b) {
    NodePtr n = Make(k, at);
    n->kids.push_back(std::move(a));
    if (b) n->kids.push_back(std::move(b));
    return n;
  }

  NodePtr Or() {
    NodePtr l = And();
    while (l && IsKw("OR")) {
      const Token op = Next();
      NodePtr r = And();
      if (!r) return nullptr;
      l = Make2(Node::kOr, op, std::move(l), std::move(r));
    }
    return l;
  }
  NodePtr And() {
    NodePtr l = Not();
    while (l && IsKw("AND")) {
      const Token op = Next();
      NodePtr r = Not();
      if (!r) return nullptr;
      l = Make2(Node::kAnd, op, std::move(l), std::move(r));
    }
    return l;
  }
  NodePtr Not() {
    if (IsKw("NOT")) {
      const Token op = Next();
      NodePtr x = Not();
      if (!x) return nullptr;
      return Make2(Node::kNot, op, std::move(x), nullptr);
    }
    return Comparison();
  }
  NodePtr Comparison() {
    NodePtr l = Additive();
    while (l) {
      if (Peek().kind == Tok::kSymbol &&
          (IsSym("=") || IsSym("<>") || IsSym("!=") || IsSym("<") || IsSym("<=") || IsSym(">") || IsSym(">="))) {
        const Token op = Next();
        NodePtr r = Additive();
        if (!r) return nullptr;
        l = Make2(Node::kBinary, op, std::move(l), std::move(r));
      } else if (IsKw("IS")) {
        const Token op = Next();
        bool neg = false;
        if (IsKw("NOT")) {
          Next();
          neg = true;
        }
        if (!Expect("NULL", true)) return nullptr;
        l = Make2(Node::kIsNull, op, std::move(l), nullptr);
        l->negated = neg;
      } else if (IsKw("LIKE") || (IsKw("NOT") && IsKw("LIKE", 1))) {
        bool neg = IsKw("NOT");
        if (neg) Next();
        const Token op = Next();
        NodePtr r = Additive();
        if (!r) return nullptr;
        l = Make2(Node::kLike, op, std::move(l), std::move(r));
        l->negated = neg;
      } else if (IsKw("IN") || (IsKw("NOT") && IsKw("IN", 1))) {
        bool neg = IsKw("NOT");
        if (neg) Next();
        const Token op = Next();
        if (!Expect("(", false)) return nullptr;
        NodePtr in = Make2(Node::kIn, op, std::move(l), nullptr);
        in->negated = neg;
        do {
          NodePtr item = Or();
          if (!item) return nullptr;
          in->kids.push_back(std::move(item));
        } while (IsSym(",") && (Next(), true));
        if (!Expect(")", false)) return nullptr;
        l = std::move(in);
      } else {
        break;
      }
    }
    return l;
  }
  NodePtr Additive() {
    NodePtr l = Multiplicative();
    while (l && (IsSym("+") || IsSym("-") || IsSym("||"))) {
      const Token op = Next();
      NodePtr r = Multiplicative();
      if (!r) return nullptr;
      l = Make2(Node::kBinary, op, std::move(l), std::move(r));
    }
    return l;
  }
  NodePtr Multiplicative() {
    NodePtr l = Unary();
    while (l && (IsSym("*") || IsSym("/") || IsSym("%"))) {
      const Token op = Next();
      NodePtr r = Unary();
      if (!r) return nullptr;
      l = Make2(Node::kBinary, op, std::move(l), std::move(r));
    }
    return l;
  }
  NodePtr Unary() {
    if (IsSym("-")) {
      const Token op = Next();
      // -9223372036854775808 is a literal; every other negative literal folds too.
      if (Peek().kind == Tok::kInt) {
        const Token lit = Next();
        NodePtr n = Make(Node::kInt, op);
        n->i = static_cast<int64_t>(0 - lit.u);
        return n;
      }
      NodePtr x = Unary();
      if (!x) return nullptr;
      return Make2(Node::kNeg, op, std::move(x), nullptr);
    }
    if (IsSym("+")) {
      Next();
      return Unary();
    }
    return Primary();
  }
  NodePtr Primary() {
    const Token& t = Peek();
    switch (t.kind) {
      case Tok::kEnd: return FailNull(t, "unexpected end of the expression");
      case Tok::kInt: {
        if (t.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          return FailNull(t, "integer " + t.text + " is out of range for int64");
        NodePtr n = Make(Node::kInt, Next());
        n->i = static_cast<int64_t>(t_[p_ - 1].u);
        return n;
      }
      case Tok::kDouble: {
        NodePtr n = Make(Node::kDouble, Next());
        n->d = t_[p_ - 1].d;
        return n;
      }
      case Tok::kString: return Make(Node::kString, Next());
      case Tok::kQuotedIdent: return Make(Node::kField, Next());
      case Tok::kSymbol: {
        if (IsSym("(")) {
          Next();
          NodePtr x = Or();
          if (!x || !Expect(")", false)) return nullptr;
          return x;
        }
        return FailNull(t, "unexpected " + Show(t));
      }
      case Tok::kIdent: break;
    }
    if (IsKw("TRUE") || IsKw("FALSE")) {
      NodePtr n = Make(Node::kBool, t);
      n->i = IsKw("TRUE") ? 1 : 0;
      Next();
      return n;
    }
    if (IsKw("NULL")) return Make(Node::kNull, Next());
    if (IsKw("CASE")) return Case();
    if (IsKw("CAST")) return Cast();
    if (IsKeyword(t)) return FailNull(t, "unexpected keyword " + Show(t) + " (a field of that name is written \"" + t.text + "\")");
    if (Peek(1).kind == Tok::kSymbol && Peek(1).text == "(") {
      NodePtr call = Make(Node::kCall, Next());
      Next();  // (
      if (!IsSym(")")) {
        do {
          NodePtr a = Or();
          if (!a) return nullptr;
          call->kids.push_back(std::move(a));
        } while (IsSym(",") && (Next(), true));
      }
      if (!Expect(")", false)) return nullptr;
      return call;
    }
    return Make(Node::kField, Next());
  }
  NodePtr Case() {
    NodePtr n = Make(Node::kCase, Next());
    if (!IsKw("WHEN")) {
      NodePtr x = Or();
      if (!x) return nullptr;
      n->kids.push_back(std::move(x));
      n->has_operand = true;
    }
    if (!IsKw("WHEN")) return FailNull(Peek(), "expected WHEN but found " + Show(Peek()));
    while (IsKw("WHEN")) {
      Next();
      NodePtr c = Or();
      if (!c || !Expect("THEN", true)) return nullptr;
      NodePtr v = Or();
      if (!v) return nullptr;
      n->kids.push_back(std::move(c));
      n->kids.push_back(std::move(v));
    }
    if (IsKw("ELSE")) {
      Next();
      NodePtr e = Or();
      if (!e) return nullptr;
      n->kids.push_back(std::move(e));
      n->has_else = true;
    }
    if (!Expect("END", true)) return nullptr;
    return n;
  }
  NodePtr Cast() {
    NodePtr n = Make(Node::kCast, Next());
    if (!Expect("(", false)) return nullptr;
    NodePtr x = Or();
    if (!x || !Expect("AS", true)) return nullptr;
    const Token& ty = Peek();
    if (ty.kind != Tok::kIdent) return FailNull(ty, "expected a type name but found " + Show(ty));
    static const struct {
      const char* name;
      FieldType type;
    } kTypes[] = {{"string", FieldType::kString},   {"varchar", FieldType::kString}, {"text", FieldType::kString},
                  {"bytes", FieldType::kBytes},     {"int64", FieldType::kInt64},    {"bigint", FieldType::kInt64},
                  {"int", FieldType::kInt64},       {"integer", FieldType::kInt64},  {"double", FieldType::kDouble},
                  {"float", FieldType::kDouble},    {"bool", FieldType::kBool},      {"boolean", FieldType::kBool},
                  {"timestamp", FieldType::kTimestamp}};
    bool found = false;
    for (const auto& k : kTypes) {
      if (IEquals(ty.text, k.name)) {
        n->cast_to = k.type;
        found = true;
      }
    }
    if (!found)
      return FailNull(ty, "unknown type '" + ty.text + "' (types: string, bytes, int64, double, bool, timestamp; " +
                              "also varchar, text, bigint, int, integer, float, boolean)");
    Next();
    if (!Expect(")", false)) return nullptr;
    n->kids.push_back(std::move(x));
    return n;
  }

  std::vector<Token> t_;
  size_t p_ = 0;
  Error* err_ = nullptr;
};

// ---- type checker and code generation ----------------------------------------------------------

struct Typed {
  int reg = -1;
  ExprType type;
  std::string name;  // the field's name, when the expression is a field
};

bool IsNumeric(const ExprType& t) { return !t.null_literal && (t.type == FieldType::kInt64 || t.type == FieldType::kDouble); }
bool IsText(const ExprType& t) { return !t.null_literal && t.type == FieldType::kString; }

std::string Describe(const Typed& x) {
  return x.name.empty() ? x.type.ToString() : x.type.ToString() + " '" + x.name + "'";
}

ExprType Of(FieldType t) {
  ExprType e;
  e.type = t;
  return e;
}

struct FnSpec {
  const char* name;
  ExprFn fn;
  int min_args, max_args;  // max -1: any number
};

const FnSpec kFunctions[] = {
    {"abs", ExprFn::kAbs, 1, 1},          {"ceil", ExprFn::kCeil, 1, 1},          {"coalesce", ExprFn::kCoalesce, 1, -1},
    {"concat", ExprFn::kConcat, 1, -1},   {"ends_with", ExprFn::kEndsWith, 2, 2}, {"floor", ExprFn::kFloor, 1, 1},
    {"length", ExprFn::kLength, 1, 1},    {"lower", ExprFn::kLower, 1, 1},        {"replace", ExprFn::kReplace, 3, 3},
    {"round", ExprFn::kRound, 1, 2},      {"starts_with", ExprFn::kStartsWith, 2, 2},
    {"substr", ExprFn::kSubstr, 2, 3},    {"trim", ExprFn::kTrim, 1, 1},          {"upper", ExprFn::kUpper, 1, 1},
};

std::string FunctionNames() {
  std::string s;
  for (const FnSpec& f : kFunctions) s += std::string(s.empty() ? "" : ", ") + f.name;
  return s;
}

class Checker {
 public:
  Checker(const Schema& schema, ExprProgram::Impl* impl) : schema_(schema), impl_(impl) {}

  bool Check(const Node& n, Typed* out, Error* err) {
    err_ = err;
    return Visit(n, out);
  }

 private:
  bool Fail(int col, std::string what) {
    err_->col = col;
    err_->what = std::move(what);
    return false;
  }
  int Emit(ExprInstr in) {
    impl_->code.push_back(std::move(in));
    return static_cast<int>(impl_->code.size()) - 1;
  }
  int EmitOp(ExprOp op, FieldType type, std::vector<int> args) {
    ExprInstr in;
    in.op = op;
    in.type = type;
    in.args = std::move(args);
    return Emit(std::move(in));
  }
  Typed Null() {
    Typed t;
    t.type.null_literal = true;
    t.reg = EmitOp(ExprOp::kNull, FieldType::kBool, {});
    return t;
  }
  // x as a double (x is int64 or double or NULL).
  int AsDouble(const Typed& x) {
    if (x.type.null_literal || x.type.type == FieldType::kDouble) return x.reg;
    return EmitOp(ExprOp::kIntToDouble, FieldType::kDouble, {x.reg});
  }

  // The common type of `xs` (CASE values, coalesce arguments, IN items): all one type, or int64
  // mixed with double (double); NULLs fit anything. false on a mismatch (err set at `col`).
  bool Unify(const std::vector<Typed>& xs, const std::vector<int>& cols, const char* what, ExprType* out) {
    out->null_literal = true;
    size_t first = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
      const ExprType& t = xs[k].type;
      if (t.null_literal) continue;
      if (out->null_literal) {
        *out = t;
        first = k;
        continue;
      }
      if (t.type == out->type) continue;
      if (IsNumeric(t) && IsNumeric(*out)) {
        out->type = FieldType::kDouble;
        continue;
      }
      return Fail(cols[k], std::string(what) + " mixes " + Describe(xs[first]) + " and " + Describe(xs[k]));
    }
    return true;
  }
  // xs[k] converted to type t (after Unify).
  int Convert(const Typed& x, const ExprType& t) {
    if (!t.null_literal && t.type == FieldType::kDouble && !x.type.null_literal && x.type.type == FieldType::kInt64)
      return AsDouble(x);
    return x.reg;
  }

  bool Compare(const Typed& l, const Typed& r, ExprSub sub, int col, Typed* out) {
    out->type = Of(FieldType::kBool);
    if (l.type.null_literal || r.type.null_literal) {
      out->reg = EmitOp(ExprOp::kNull, FieldType::kBool, {});
      return true;
    }
    ExprInstr in;
    in.sub = sub;
    in.type = FieldType::kBool;
    const FieldType a = l.type.type, b = r.type.type;
    if (IsNumeric(l.type) && IsNumeric(r.type)) {
      if (a == FieldType::kInt64 && b == FieldType::kInt64) {
        in.op = ExprOp::kCmpI;
        in.args = {l.reg, r.reg};
      } else {
        in.op = ExprOp::kCmpD;
        in.args = {AsDouble(l), AsDouble(r)};
      }
    } else if (a == b && (a == FieldType::kString || a == FieldType::kBytes)) {
      in.op = ExprOp::kCmpS;
      in.args = {l.reg, r.reg};
    } else if (a == b) {  // bool with bool, timestamp with timestamp
      in.op = ExprOp::kCmpI;
      in.args = {l.reg, r.reg};
    } else {
      return Fail(col, "cannot compare " + Describe(l) + " with " + Describe(r));
    }
    out->reg = Emit(std::move(in));
    return true;
  }

  bool Arith(const Typed& l, const Typed& r, const std::string& op, int col, Typed* out) {
    const ExprSub sub = op == "+" ? ExprSub::kAdd : op == "-" ? ExprSub::kSub : op == "*" ? ExprSub::kMul
                        : op == "/" ? ExprSub::kDiv : ExprSub::kMod;
    auto bad = [&] { return Fail(col, "cannot apply '" + op + "' to " + Describe(l) + " and " + Describe(r)); };
    const bool ln = l.type.null_literal, rn = r.type.null_literal;
    const FieldType a = l.type.type, b = r.type.type;
    auto ok_side = [&](bool n, FieldType t) { return n || t == FieldType::kInt64 || t == FieldType::kDouble || t == FieldType::kTimestamp; };
    if (!ok_side(ln, a) || !ok_side(rn, b)) return bad();
    const bool lt = !ln && a == FieldType::kTimestamp, rt = !rn && b == FieldType::kTimestamp;
    ExprType result;
    if (lt || rt) {
      // timestamp +/- int64 -> timestamp; int64 + timestamp -> timestamp; timestamp - timestamp -> int64.
      if (sub == ExprSub::kAdd && lt && rt) return bad();
      if (sub != ExprSub::kAdd && sub != ExprSub::kSub) return bad();
      if (sub == ExprSub::kSub && !lt) return bad();
      if ((lt && !rn && !rt && b != FieldType::kInt64) || (rt && !ln && !lt && a != FieldType::kInt64)) return bad();
      result = Of(lt && rt ? FieldType::kInt64 : FieldType::kTimestamp);
    } else if (ln && rn) {
      result.null_literal = true;
    } else {
      result = Of((!ln && a == FieldType::kDouble) || (!rn && b == FieldType::kDouble) ? FieldType::kDouble : FieldType::kInt64);
    }
    out->type = result;
    if (ln || rn) {
      out->reg = EmitOp(ExprOp::kNull, result.null_literal ? FieldType::kBool : result.type, {});
      return true;
    }
    ExprInstr in;
    in.sub = sub;
    in.type = result.type;
    if (result.type == FieldType::kDouble) {
      in.op = ExprOp::kArithD;
      in.args = {AsDouble(l), AsDouble(r)};
    } else {
      in.op = ExprOp::kArithI;
      in.args = {l.reg, r.reg};
    }
    out->reg = Emit(std::move(in));
    return true;
  }

  bool Bool(const Typed& x, int col, const char* what) {
    if (x.type.null_literal || x.type.type == FieldType::kBool) return true;
    return Fail(col, std::string(what) + " must be bool, got " + Describe(x));
  }

  bool Visit(const Node& n, Typed* out) {
    switch (n.kind) {
      case Node::kInt:
      case Node::kDouble:
      case Node::kString:
      case Node::kBool: {
        ExprInstr in;
        in.op = ExprOp::kConst;
        in.type = n.kind == Node::kInt      ? FieldType::kInt64
                  : n.kind == Node::kDouble ? FieldType::kDouble
                  : n.kind == Node::kString ? FieldType::kString
                                            : FieldType::kBool;
        in.ci = n.i;
        in.cd = n.d;
        in.cs = n.text;
        out->type = Of(in.type);
        out->reg = Emit(std::move(in));
        return true;
      }
      case Node::kNull: *out = Null(); return true;
      case Node::kField: {
        int f = schema_.IndexOf(n.text);
        if (f < 0 && n.text.find('.') == std::string::npos) {
          // An unqualified name stands for the one qualified field `<input>.<name>`, if just one.
          int matches = 0;
          for (size_t k = 0; k < schema_.size(); ++k) {
            const std::string& name = schema_.field(k).name;
            if (name.size() > n.text.size() && name[name.size() - n.text.size() - 1] == '.' &&
                name.compare(name.size() - n.text.size(), n.text.size(), n.text) == 0 && matches++ == 0)
              f = static_cast<int>(k);
          }
          if (matches > 1)
            return Fail(n.col, "field '" + n.text + "' is ambiguous: qualify it with its input (fields: " +
                                   schema_.FieldNames() + ")");
        }
        if (f < 0) return Fail(n.col, "unknown field '" + n.text + "' (fields: " + schema_.FieldNames() + ")");
        ExprInstr in;
        in.op = ExprOp::kField;
        in.field = f;
        in.type = schema_.field(static_cast<size_t>(f)).type;
        out->type = Of(in.type);
        out->name = n.text;
        out->reg = Emit(std::move(in));
        return true;
      }
      case Node::kNeg: {
        Typed x;
        if (!Visit(*n.kids[0], &x)) return false;
        if (x.type.null_literal) {
          *out = x;
          return true;
        }
        if (!IsNumeric(x.type)) return Fail(n.col, "cannot negate " + Describe(x));
        out->type = x.type;
        out->reg = EmitOp(x.type.type == FieldType::kDouble ? ExprOp::kNegD : ExprOp::kNegI, x.type.type, {x.reg});
        return true;
      }
      case Node::kNot: {
        Typed x;
        if (!Visit(*n.kids[0], &x) || !Bool(x, n.kids[0]->col, "the operand of NOT")) return false;
        out->type = Of(FieldType::kBool);
        out->reg = EmitOp(ExprOp::kNot, FieldType::kBool, {x.reg});
        return true;
      }
      case Node::kAnd:
      case Node::kOr: {
        Typed l, r;
        const char* what = n.kind == Node::kAnd ? "an operand of AND" : "an operand of OR";
        if (!Visit(*n.kids[0], &l) || !Bool(l, n.kids[0]->col, what)) return false;
        if (!Visit(*n.kids[1], &r) || !Bool(r, n.kids[1]->col, what)) return false;
        out->type = Of(FieldType::kBool);
        out->reg = EmitOp(n.kind == Node::kAnd ? ExprOp::kAnd : ExprOp::kOr, FieldType::kBool, {l.reg, r.reg});
        return true;
      }
      case Node::kBinary: {
        Typed l, r;
        if (!Visit(*n.kids[0], &l) || !Visit(*n.kids[1], &r)) return false;
        const std::string& op = n.text;
        if (op == "||") {
          auto text = [](const Typed& x) { return x.type.null_literal || x.type.type == FieldType::kString; };
          if (!text(l) || !text(r))
            return Fail(n.col, "cannot apply '||' to " + Describe(l) + " and " + Describe(r) + " (it joins strings)");
          out->type = Of(FieldType::kString);
          out->reg = EmitOp(ExprOp::kConcat, FieldType::kString, {l.reg, r.reg});
          return true;
        }
        if (op == "+" || op == "-" || op == "*" || op == "/" || op == "%") return Arith(l, r, op, n.col, out);
        const ExprSub sub = op == "=" ? ExprSub::kEq : (op == "<>" || op == "!=") ? ExprSub::kNe : op == "<" ? ExprSub::kLt
                            : op == "<=" ? ExprSub::kLe : op == ">" ? ExprSub::kGt : ExprSub::kGe;
        return Compare(l, r, sub, n.col, out);
      }
      case Node::kIsNull: {
        Typed x;
        if (!Visit(*n.kids[0], &x)) return false;
        ExprInstr in;
        in.op = ExprOp::kIsNull;
        in.type = FieldType::kBool;
        in.negate = n.negated;
        in.args = {x.reg};
        out->type = Of(FieldType::kBool);
        out->reg = Emit(std::move(in));
        return true;
      }
      case Node::kLike: {
        Typed x, p;
        if (!Visit(*n.kids[0], &x) || !Visit(*n.kids[1], &p)) return false;
        auto text = [](const Typed& t) {
          return t.type.null_literal || t.type.type == FieldType::kString || t.type.type == FieldType::kBytes;
        };
        if (!text(x)) return Fail(n.kids[0]->col, "LIKE needs a string, got " + Describe(x));
        if (!text(p)) return Fail(n.kids[1]->col, "the pattern of LIKE must be a string, got " + Describe(p));
        ExprInstr in;
        in.op = ExprOp::kLike;
        in.type = FieldType::kBool;
        in.negate = n.negated;
        in.args = {x.reg, p.reg};
        out->type = Of(FieldType::kBool);
        out->reg = Emit(std::move(in));
        return true;
      }
      case Node::kIn: {
        // x IN (a, b) is x = a OR x = b; NOT IN negates that (SQL's NULL rules follow).
        Typed x;
        if (!Visit(*n.kids[0], &x)) return false;
        int acc = -1;
        for (size_t k = 1; k < n.kids.size(); ++k) {
          Typed item, eq;
          if (!Visit(*n.kids[k], &item) || !Compare(x, item, ExprSub::kEq, n.kids[k]->col, &eq)) return false;
          acc = acc < 0 ? eq.reg : EmitOp(ExprOp::kOr, FieldType::kBool, {acc, eq.reg});
        }
        if (n.negated) acc = EmitOp(ExprOp::kNot, FieldType::kBool, {acc});
        out->type = Of(FieldType::kBool);
        out->reg = acc;
        return true;
      }
      case Node::kCase: return CaseExpr(n, out);
      case Node::kCast: return CastExpr(n, out);
      case Node::kCall: return Call(n, out);
    }
    return Fail(n.col, "unknown expression");
  }

  bool CaseExpr(const Node& n, Typed* out) {
    size_t k = 0;
    Typed operand;
    if (n.has_operand && !Visit(*n.kids[k++], &operand)) return false;
    const size_t end = n.kids.size() - (n.has_else ? 1 : 0);
    std::vector<int> conds;
    std::vector<Typed> values;
    std::vector<int> cols;
    for (; k < end; k += 2) {
      Typed c, v;
      if (!Visit(*n.kids[k], &c)) return false;
      if (n.has_operand) {
        Typed eq;
        if (!Compare(operand, c, ExprSub::kEq, n.kids[k]->col, &eq)) return false;
        c = eq;
      } else if (!Bool(c, n.kids[k]->col, "a WHEN condition")) {
        return false;
      }
      if (!Visit(*n.kids[k + 1], &v)) return false;
      conds.push_back(c.reg);
      values.push_back(v);
      cols.push_back(n.kids[k + 1]->col);
    }
    if (n.has_else) {
      Typed e;
      if (!Visit(*n.kids.back(), &e)) return false;
      values.push_back(e);
      cols.push_back(n.kids.back()->col);
    }
    ExprType t;
    if (!Unify(values, cols, "CASE", &t)) return false;
    ExprInstr in;
    in.op = ExprOp::kCase;
    in.type = t.null_literal ? FieldType::kBool : t.type;
    in.has_else = n.has_else;
    for (size_t j = 0; j < conds.size(); ++j) {
      in.args.push_back(conds[j]);
      in.args.push_back(Convert(values[j], t));
    }
    if (n.has_else) in.args.push_back(Convert(values.back(), t));
    out->type = t;
    out->reg = Emit(std::move(in));
    return true;
  }

  bool CastExpr(const Node& n, Typed* out) {
    Typed x;
    if (!Visit(*n.kids[0], &x)) return false;
    const FieldType to = n.cast_to;
    out->type = Of(to);
    if (x.type.null_literal) {
      out->reg = EmitOp(ExprOp::kNull, to, {});
      return true;
    }
    const FieldType from = x.type.type;
    const bool ok = from == to || to == FieldType::kString ||
                    (from == FieldType::kBytes ? false
                     : to == FieldType::kBytes ? from == FieldType::kString
                     : to == FieldType::kBool  ? from != FieldType::kTimestamp
                     : to == FieldType::kTimestamp ? from != FieldType::kBool
                                                   : true);
    if (!ok) return Fail(n.col, std::string("cannot cast ") + Describe(x) + " to " + FieldTypeName(to));
    if (from == to) {
      out->reg = x.reg;
      return true;
    }
    ExprInstr in;
    in.op = ExprOp::kCast;
    in.type = to;
    in.from = from;
    in.args = {x.reg};
    out->reg = Emit(std::move(in));
    return true;
  }

  bool Call(const Node& n, Typed* out) {
    const FnSpec* spec = nullptr;
    for (const FnSpec& f : kFunctions)
      if (IEquals(n.text, f.name)) spec = &f;
    if (spec == nullptr) return Fail(n.col, "unknown function '" + n.text + "' (functions: " + FunctionNames() + ")");
    const int argc = static_cast<int>(n.kids.size());
    if (argc < spec->min_args || (spec->max_args >= 0 && argc > spec->max_args)) {
      std::string takes = spec->max_args < 0 ? "at least " + std::to_string(spec->min_args)
                          : spec->min_args == spec->max_args
                              ? std::to_string(spec->min_args)
                              : std::to_string(spec->min_args) + " or " + std::to_string(spec->max_args);
      const bool one = spec->max_args == 1 || (spec->max_args < 0 && spec->min_args == 1);
      return Fail(n.col, "function " + std::string(spec->name) + " takes " + takes + " argument" + (one ? "" : "s") +
                             ", got " + std::to_string(argc));
    }
    std::vector<Typed> args(n.kids.size());
    std::vector<int> cols;
    for (size_t k = 0; k < n.kids.size(); ++k) {
      if (!Visit(*n.kids[k], &args[k])) return false;
      cols.push_back(n.kids[k]->col);
    }
    auto need = [&](size_t k, bool ok, const char* what) {
      if (ok || args[k].type.null_literal) return true;
      return Fail(cols[k], "argument " + std::to_string(k + 1) + " of " + spec->name + " must be " + what + ", got " +
                               Describe(args[k]));
    };
    auto is = [&](size_t k, FieldType t) { return !args[k].type.null_literal && args[k].type.type == t; };
    ExprInstr in;
    in.op = ExprOp::kCall;
    in.fn = spec->fn;
    for (const Typed& a : args) in.args.push_back(a.reg);
    ExprType result;
    switch (spec->fn) {
      case ExprFn::kLower:
      case ExprFn::kUpper:
      case ExprFn::kTrim:
        if (!need(0, IsText(args[0].type), "string")) return false;
        result = Of(FieldType::kString);
        break;
      case ExprFn::kLength:
        if (!need(0, IsText(args[0].type) || is(0, FieldType::kBytes), "string or bytes")) return false;
        result = Of(FieldType::kInt64);
        in.from = args[0].type.null_literal ? FieldType::kString : args[0].type.type;
        break;
      case ExprFn::kSubstr:
        if (!need(0, IsText(args[0].type), "string") || !need(1, is(1, FieldType::kInt64), "int64") ||
            (argc == 3 && !need(2, is(2, FieldType::kInt64), "int64")))
          return false;
        result = Of(FieldType::kString);
        break;
      case ExprFn::kConcat: result = Of(FieldType::kString); break;  // any types, as CAST(x AS string)
      case ExprFn::kReplace:
        for (size_t k = 0; k < 3; ++k)
          if (!need(k, IsText(args[k].type), "string")) return false;
        result = Of(FieldType::kString);
        break;
      case ExprFn::kStartsWith:
      case ExprFn::kEndsWith:
        for (size_t k = 0; k < 2; ++k)
          if (!need(k, IsText(args[k].type) || is(k, FieldType::kBytes), "string or bytes")) return false;
        result = Of(FieldType::kBool);
        break;
      case ExprFn::kAbs:
      case ExprFn::kFloor:
      case ExprFn::kCeil:
      case ExprFn::kRound:
        if (!need(0, IsNumeric(args[0].type), "int64 or double")) return false;
        if (argc == 2 && !need(1, is(1, FieldType::kInt64), "int64")) return false;
        result = args[0].type;  // NULL stays NULL
        break;
      case ExprFn::kCoalesce: {
        if (!Unify(args, cols, "coalesce", &result)) return false;
        for (size_t k = 0; k < args.size(); ++k) in.args[k] = Convert(args[k], result);
        break;
      }
    }
    if (spec->fn == ExprFn::kConcat) {
      // The evaluator needs each argument's type to print it.
      in.args.clear();
      for (const Typed& a : args) {
        if (a.type.null_literal || a.type.type == FieldType::kString || a.type.type == FieldType::kBytes) {
          in.args.push_back(a.reg);
        } else {
          ExprInstr c;
          c.op = ExprOp::kCast;
          c.type = FieldType::kString;
          c.from = a.type.type;
          c.args = {a.reg};
          in.args.push_back(Emit(std::move(c)));
        }
      }
    }
    if (result.null_literal) {
      out->type = result;
      out->reg = EmitOp(ExprOp::kNull, FieldType::kBool, {});
      return true;
    }
    in.type = result.type;
    if (spec->fn != ExprFn::kLength) in.from = args[0].type.null_literal ? result.type : args[0].type.type;
    out->type = result;
    out->reg = Emit(std::move(in));
    return true;
  }

  const Schema& schema_;
  ExprProgram::Impl* impl_;
  Error* err_ = nullptr;
};

}  // namespace

ExprProgram::ExprProgram(SchemaRef input) : input_(std::move(input)), impl_(std::make_unique<Impl>()) {}
ExprProgram::~ExprProgram() = default;
ExprProgram::ExprProgram(ExprProgram&&) noexcept = default;
ExprProgram& ExprProgram::operator=(ExprProgram&&) noexcept = default;

Status ExprProgram::Add(std::string_view text, const std::string& place) {
  Error err;
  std::vector<Token> toks;
  NodePtr tree;
  const size_t mark = impl_->code.size();
  bool ok = Lex(text, &toks, &err) && Parser(std::move(toks)).Parse(&tree, &err);
  Typed result;
  if (ok) ok = Checker(*input_, impl_.get()).Check(*tree, &result, &err);
  if (!ok) {
    impl_->code.resize(mark);
    return Status::InvalidArgument(place + ", column " + std::to_string(err.col) + ": " + err.what);
  }
  impl_->outputs.push_back(result.reg);
  impl_->types.push_back(result.type);
  impl_->regs.resize(impl_->code.size());
  return Status::OK();
}

size_t ExprProgram::size() const { return impl_->outputs.size(); }
ExprType ExprProgram::type(size_t k) const { return impl_->types[k]; }

void ExprProgram::Evaluate(const RecordBatch& batch) { RunProgram(impl_->code, batch, &impl_->regs); }

const ExprColumn& ExprProgram::result(size_t k) const { return impl_->regs[static_cast<size_t>(impl_->outputs[k])]; }

}  // namespace cairn
