// The expression evaluator: runs a compiled program (program.h) over a batch, one instruction
// at a time, each a loop over every row of the batch (docs/configuration.md, "Expressions",
// has the semantics: NULL rules, division by zero, CAST failures).
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/dataflow/record_codec.h"
#include "engine/expr/expr.h"
#include "engine/expr/program.h"

namespace cairn {
namespace {

bool IsIntLike(FieldType t) { return t == FieldType::kInt64 || t == FieldType::kTimestamp || t == FieldType::kBool; }
bool IsVar(FieldType t) { return t == FieldType::kString || t == FieldType::kBytes; }

// Sizes r for n rows of `type`, every row not null.
void Prepare(ExprColumn* r, size_t n, FieldType type) {
  r->null.assign(n, 0);
  if (IsIntLike(type)) {
    r->i.resize(n);
  } else if (type == FieldType::kDouble) {
    r->d.resize(n);
  } else {
    r->s.resize(n);
  }
}

// Strings built into r->arena: Begin, then per row append to r->arena and Put, then Finish
// makes the views (the arena may move while it grows, so offsets are kept in r->i meanwhile).
void BeginArena(ExprColumn* r, size_t n) {
  r->arena.clear();
  r->i.resize(n);
}
void PutArena(ExprColumn* r, size_t row, size_t start) {
  r->i[row] = static_cast<int64_t>(static_cast<uint64_t>(start) << 32 | static_cast<uint32_t>(r->arena.size() - start));
}
void FinishArena(ExprColumn* r, size_t n) {
  r->s.resize(n);
  for (size_t k = 0; k < n; ++k) {
    uint64_t c = static_cast<uint64_t>(r->i[k]);
    r->s[k] = std::string_view(r->arena.data() + (c >> 32), static_cast<uint32_t>(c));
  }
}

void OrNulls(const ExprColumn& a, const ExprColumn& b, size_t n, ExprColumn* r) {
  for (size_t k = 0; k < n; ++k) r->null[k] = a.null[k] | b.null[k];
}

template <typename T>
bool Cmp(ExprSub sub, const T& a, const T& b) {
  switch (sub) {
    case ExprSub::kEq: return a == b;
    case ExprSub::kNe: return a != b;
    case ExprSub::kLt: return a < b;
    case ExprSub::kLe: return a <= b;
    case ExprSub::kGt: return a > b;
    case ExprSub::kGe: return a >= b;
    default: return false;
  }
}

// One loop per comparison operator, so that the switch is not inside the row loop.
template <typename V>
void CompareLoop(ExprSub sub, const V& a, const V& b, size_t n, ExprColumn* r) {
  switch (sub) {
    case ExprSub::kEq: for (size_t k = 0; k < n; ++k) r->i[k] = a[k] == b[k]; break;
    case ExprSub::kNe: for (size_t k = 0; k < n; ++k) r->i[k] = a[k] != b[k]; break;
    case ExprSub::kLt: for (size_t k = 0; k < n; ++k) r->i[k] = a[k] < b[k]; break;
    case ExprSub::kLe: for (size_t k = 0; k < n; ++k) r->i[k] = a[k] <= b[k]; break;
    case ExprSub::kGt: for (size_t k = 0; k < n; ++k) r->i[k] = a[k] > b[k]; break;
    case ExprSub::kGe: for (size_t k = 0; k < n; ++k) r->i[k] = a[k] >= b[k]; break;
    default: break;
  }
}

void ArithI(ExprSub sub, const ExprColumn& a, const ExprColumn& b, size_t n, ExprColumn* r) {
  const int64_t* x = a.i.data();
  const int64_t* y = b.i.data();
  int64_t* z = r->i.data();
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  switch (sub) {
    case ExprSub::kAdd: for (size_t k = 0; k < n; ++k) z[k] = static_cast<int64_t>(u(x[k]) + u(y[k])); break;
    case ExprSub::kSub: for (size_t k = 0; k < n; ++k) z[k] = static_cast<int64_t>(u(x[k]) - u(y[k])); break;
    case ExprSub::kMul: for (size_t k = 0; k < n; ++k) z[k] = static_cast<int64_t>(u(x[k]) * u(y[k])); break;
    case ExprSub::kDiv:
      for (size_t k = 0; k < n; ++k) {
        if (y[k] == 0) {
          z[k] = 0;
          r->null[k] = 1;
        } else {
          z[k] = y[k] == -1 ? static_cast<int64_t>(0 - u(x[k])) : x[k] / y[k];
        }
      }
      break;
    case ExprSub::kMod:
      for (size_t k = 0; k < n; ++k) {
        if (y[k] == 0) {
          z[k] = 0;
          r->null[k] = 1;
        } else {
          z[k] = y[k] == -1 ? 0 : x[k] % y[k];
        }
      }
      break;
    default: break;
  }
}

void ArithD(ExprSub sub, const ExprColumn& a, const ExprColumn& b, size_t n, ExprColumn* r) {
  const double* x = a.d.data();
  const double* y = b.d.data();
  double* z = r->d.data();
  switch (sub) {
    case ExprSub::kAdd: for (size_t k = 0; k < n; ++k) z[k] = x[k] + y[k]; break;
    case ExprSub::kSub: for (size_t k = 0; k < n; ++k) z[k] = x[k] - y[k]; break;
    case ExprSub::kMul: for (size_t k = 0; k < n; ++k) z[k] = x[k] * y[k]; break;
    case ExprSub::kDiv:
    case ExprSub::kMod:
      for (size_t k = 0; k < n; ++k) {
        if (y[k] == 0) {
          z[k] = 0;
          r->null[k] = 1;
        } else {
          z[k] = sub == ExprSub::kDiv ? x[k] / y[k] : std::fmod(x[k], y[k]);
        }
      }
      break;
    default: break;
  }
}

size_t Utf8Len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

// SQL LIKE: % any run of characters, _ one character (UTF-8), \ makes the next character
// literal. Backtracks to the last %, so it is linear for patterns with one %.
bool Like(std::string_view s, std::string_view p) {
  size_t si = 0, pi = 0, star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '%') {
      star_p = ++pi;
      star_s = si;
      continue;
    }
    if (pi < p.size()) {
      if (p[pi] == '_') {
        si += Utf8Len(static_cast<unsigned char>(s[si]));
        ++pi;
        continue;
      }
      size_t lit = pi;
      if (p[pi] == '\\' && pi + 1 < p.size()) lit = pi + 1;
      if (p[lit] == s[si]) {
        pi = lit + 1;
        ++si;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p;
    star_s += Utf8Len(static_cast<unsigned char>(s[star_s]));
    si = star_s;
  }
  if (si > s.size()) return false;  // a _ that ran past a truncated UTF-8 tail
  while (pi < p.size() && p[pi] == '%') ++pi;
  return pi == p.size();
}

// Byte offset of character `c` (0-based, UTF-8) of s, or s.size() past the end.
size_t CharOffset(std::string_view s, int64_t c) {
  size_t b = 0;
  for (int64_t k = 0; k < c && b < s.size(); ++k) b += Utf8Len(static_cast<unsigned char>(s[b]));
  return std::min(b, s.size());
}

void AppendValueText(const ExprColumn& a, FieldType from, size_t k, std::string* out) {
  char buf[32];
  switch (from) {
    case FieldType::kInt64: {
      auto res = std::to_chars(buf, buf + sizeof buf, a.i[k]);
      out->append(buf, res.ptr);
      return;
    }
    case FieldType::kDouble: {
      auto res = std::to_chars(buf, buf + sizeof buf, a.d[k]);
      out->append(buf, res.ptr);
      return;
    }
    case FieldType::kBool: out->append(a.i[k] ? "true" : "false"); return;
    case FieldType::kTimestamp: AppendTimestamp(a.i[k], out); return;
    case FieldType::kString:
    case FieldType::kBytes: out->append(a.s[k]); return;
  }
}

bool DoubleToInt(double v, int64_t* out) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return false;  // NaN too
  *out = static_cast<int64_t>(v);
  return true;
}

std::string_view StripPlus(std::string_view s) { return s.size() > 1 && s[0] == '+' ? s.substr(1) : s; }

bool ParseBoolText(std::string_view s, bool* v) {
  auto is = [&](const char* w) {
    size_t n = std::strlen(w);
    if (s.size() != n) return false;
    for (size_t k = 0; k < n; ++k)
      if (std::tolower(static_cast<unsigned char>(s[k])) != w[k]) return false;
    return true;
  };
  if (is("true") || is("t") || is("1")) {
    *v = true;
    return true;
  }
  if (is("false") || is("f") || is("0")) {
    *v = false;
    return true;
  }
  return false;
}

void Cast(const ExprInstr& in, const ExprColumn& a, size_t n, ExprColumn* r) {
  const FieldType from = in.from, to = in.type;
  r->null = a.null;
  if (to == FieldType::kString || to == FieldType::kBytes) {
    if (IsVar(from)) {
      r->s.assign(a.s.begin(), a.s.begin() + static_cast<ptrdiff_t>(n));
      return;
    }
    BeginArena(r, n);
    for (size_t k = 0; k < n; ++k) {
      size_t start = r->arena.size();
      if (!a.null[k]) AppendValueText(a, from, k, &r->arena);
      PutArena(r, k, start);
    }
    FinishArena(r, n);
    return;
  }
  for (size_t k = 0; k < n; ++k) {
    if (a.null[k]) {
      if (to == FieldType::kDouble) r->d[k] = 0; else r->i[k] = 0;
      continue;
    }
    bool ok = true;
    if (to == FieldType::kDouble) {
      double v = 0;
      if (IsIntLike(from)) {
        v = static_cast<double>(a.i[k]);
      } else {
        std::string_view s = StripPlus(a.s[k]);
        auto res = std::from_chars(s.data(), s.data() + s.size(), v);
        ok = res.ec == std::errc() && res.ptr == s.data() + s.size() && !s.empty();
      }
      r->d[k] = ok ? v : 0;
    } else if (to == FieldType::kBool) {
      bool v = false;
      if (IsIntLike(from)) v = a.i[k] != 0;
      else if (from == FieldType::kDouble) v = a.d[k] != 0;
      else ok = ParseBoolText(a.s[k], &v);
      r->i[k] = ok && v;
    } else {  // int64, timestamp
      int64_t v = 0;
      if (IsIntLike(from)) {
        v = a.i[k];
      } else if (from == FieldType::kDouble) {
        ok = DoubleToInt(a.d[k], &v);
      } else if (to == FieldType::kTimestamp) {
        ok = ParseTimestamp(a.s[k], &v);
      } else {
        std::string_view s = StripPlus(a.s[k]);
        auto res = std::from_chars(s.data(), s.data() + s.size(), v);
        ok = res.ec == std::errc() && res.ptr == s.data() + s.size() && !s.empty();
      }
      r->i[k] = ok ? v : 0;
    }
    if (!ok) r->null[k] = 1;
  }
}

// Copies row k of `a` (of `type`) into row k of r.
inline void CopyRow(const ExprColumn& a, FieldType type, size_t k, ExprColumn* r) {
  r->null[k] = a.null[k];
  if (IsIntLike(type)) r->i[k] = a.i[k];
  else if (type == FieldType::kDouble) r->d[k] = a.d[k];
  else r->s[k] = a.s[k];
}

constexpr std::array<bool, 256> MakeSpaceTable() {
  std::array<bool, 256> t{};
  t[' '] = t['\t'] = t['\n'] = t['\r'] = t['\v'] = t['\f'] = true;
  return t;
}
constexpr std::array<bool, 256> kIsSpace = MakeSpaceTable();

int64_t Pow10(int64_t e) {
  int64_t p = 1;
  for (int64_t k = 0; k < e; ++k) p *= 10;
  return p;
}

void Call(const ExprInstr& in, const std::vector<ExprColumn>& regs, size_t n, ExprColumn* r) {
  auto arg = [&](size_t k) -> const ExprColumn& { return regs[static_cast<size_t>(in.args[k])]; };
  const size_t argc = in.args.size();
  const ExprColumn& a = arg(0);
  switch (in.fn) {
    case ExprFn::kLower:
    case ExprFn::kUpper: {
      r->null = a.null;
      BeginArena(r, n);
      const bool up = in.fn == ExprFn::kUpper;
      for (size_t k = 0; k < n; ++k) {
        size_t start = r->arena.size();
        r->arena.append(a.s[k]);
        for (size_t j = start; j < r->arena.size(); ++j) {
          char& c = r->arena[j];
          if (up && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
          if (!up && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
        }
        PutArena(r, k, start);
      }
      FinishArena(r, n);
      return;
    }
    case ExprFn::kTrim:
      r->null = a.null;
      for (size_t k = 0; k < n; ++k) {
        std::string_view s = a.s[k];
        while (!s.empty() && kIsSpace[static_cast<unsigned char>(s.front())]) s.remove_prefix(1);
        while (!s.empty() && kIsSpace[static_cast<unsigned char>(s.back())]) s.remove_suffix(1);
        r->s[k] = s;
      }
      return;
    case ExprFn::kLength:
      r->null = a.null;
      for (size_t k = 0; k < n; ++k) {
        std::string_view s = a.s[k];
        if (in.from == FieldType::kBytes) {
          r->i[k] = static_cast<int64_t>(s.size());
        } else {
          int64_t c = 0;
          for (unsigned char ch : s) c += (ch & 0xC0) != 0x80;
          r->i[k] = c;
        }
      }
      return;
    case ExprFn::kSubstr: {
      const ExprColumn& st = arg(1);
      const ExprColumn* len = argc == 3 ? &arg(2) : nullptr;
      for (size_t k = 0; k < n; ++k) {
        r->null[k] = a.null[k] | st.null[k] | (len ? len->null[k] : 0);
        r->s[k] = std::string_view();
        if (r->null[k]) continue;
        // Characters [start, start + len) counted from 1, as in SQL; a start below 1 still
        // counts towards len; a negative len is NULL.
        const int64_t start = st.i[k];
        int64_t end = std::numeric_limits<int64_t>::max();
        if (len != nullptr) {
          if (len->i[k] < 0) {
            r->null[k] = 1;
            continue;
          }
          if (__builtin_add_overflow(start, len->i[k], &end)) end = std::numeric_limits<int64_t>::max();
        }
        const int64_t b = std::max<int64_t>(start, 1) - 1;
        if (end <= b + 1) continue;  // nothing left (also keeps end - 1 from overflowing)
        const int64_t e = end - 1;
        std::string_view s = a.s[k];
        size_t bo = CharOffset(s, b);
        size_t eo = e == std::numeric_limits<int64_t>::max() - 1 ? s.size() : bo + CharOffset(s.substr(bo), e - b);
        r->s[k] = s.substr(bo, eo - bo);
      }
      return;
    }
    case ExprFn::kConcat:
      BeginArena(r, n);
      for (size_t k = 0; k < n; ++k) {
        size_t start = r->arena.size();
        for (size_t j = 0; j < argc; ++j)
          if (!arg(j).null[k]) r->arena.append(arg(j).s[k]);
        PutArena(r, k, start);
      }
      FinishArena(r, n);
      return;
    case ExprFn::kReplace: {
      const ExprColumn& f = arg(1);
      const ExprColumn& t = arg(2);
      BeginArena(r, n);
      for (size_t k = 0; k < n; ++k) {
        r->null[k] = a.null[k] | f.null[k] | t.null[k];
        size_t start = r->arena.size();
        if (!r->null[k]) {
          std::string_view s = a.s[k], from = f.s[k];
          if (from.empty()) {
            r->arena.append(s);
          } else {
            size_t at = 0;
            for (size_t hit; (hit = s.find(from, at)) != std::string_view::npos; at = hit + from.size()) {
              r->arena.append(s.substr(at, hit - at));
              r->arena.append(t.s[k]);
            }
            r->arena.append(s.substr(at));
          }
        }
        PutArena(r, k, start);
      }
      FinishArena(r, n);
      return;
    }
    case ExprFn::kStartsWith:
    case ExprFn::kEndsWith: {
      const ExprColumn& p = arg(1);
      OrNulls(a, p, n, r);
      for (size_t k = 0; k < n; ++k) {
        std::string_view s = a.s[k], x = p.s[k];
        r->i[k] = in.fn == ExprFn::kStartsWith ? s.substr(0, x.size()) == x
                                               : s.size() >= x.size() && s.substr(s.size() - x.size()) == x;
      }
      return;
    }
    case ExprFn::kAbs:
    case ExprFn::kFloor:
    case ExprFn::kCeil:
    case ExprFn::kRound: {
      r->null = a.null;
      const ExprColumn* digits = argc == 2 ? &arg(1) : nullptr;
      if (digits != nullptr)
        for (size_t k = 0; k < n; ++k) r->null[k] |= digits->null[k];
      if (in.type == FieldType::kDouble) {
        for (size_t k = 0; k < n; ++k) {
          double x = a.d[k];
          switch (in.fn) {
            case ExprFn::kAbs: x = std::fabs(x); break;
            case ExprFn::kFloor: x = std::floor(x); break;
            case ExprFn::kCeil: x = std::ceil(x); break;
            default: {
              int64_t d = digits ? digits->i[k] : 0;
              if (d == 0) {
                x = std::round(x);
              } else if (d > 0) {
                double p = std::pow(10.0, static_cast<double>(std::min<int64_t>(d, 400)));
                if (std::isfinite(x * p)) x = std::round(x * p) / p;
              } else {
                double p = std::pow(10.0, static_cast<double>(std::min<int64_t>(-(d + 1), 400) + 1));
                x = std::isfinite(p) ? std::round(x / p) * p : 0.0;
              }
            }
          }
          r->d[k] = x;
        }
      } else {
        for (size_t k = 0; k < n; ++k) {
          int64_t x = a.i[k];
          if (in.fn == ExprFn::kAbs) {
            x = x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x;
          } else if (in.fn == ExprFn::kRound && digits != nullptr && digits->i[k] < 0) {
            // Round to a multiple of 10^-digits, half away from zero.
            if (digits->i[k] <= -19) {
              x = 0;
            } else {
              int64_t p = Pow10(-digits->i[k]), q = x / p, rem = x % p;
              if (rem >= 0 ? rem >= p - rem : -rem >= p + rem) q += rem >= 0 ? 1 : -1;
              x = static_cast<int64_t>(static_cast<uint64_t>(q) * static_cast<uint64_t>(p));
            }
          }
          r->i[k] = x;
        }
      }
      return;
    }
    case ExprFn::kCoalesce:
      for (size_t k = 0; k < n; ++k) {
        size_t j = 0;
        while (j + 1 < argc && arg(j).null[k]) ++j;
        CopyRow(arg(j), in.type, k, r);
      }
      return;
  }
}

}  // namespace

void RunProgram(const std::vector<ExprInstr>& code, const RecordBatch& batch, std::vector<ExprColumn>* regs) {
  const size_t n = batch.size();
  for (size_t pc = 0; pc < code.size(); ++pc) {
    const ExprInstr& in = code[pc];
    ExprColumn* r = &(*regs)[pc];
    auto arg = [&](size_t k) -> const ExprColumn& { return (*regs)[static_cast<size_t>(in.args[k])]; };
    if (in.op == ExprOp::kNull) {
      r->null.assign(n, 1);
      r->i.assign(n, 0);
      r->d.assign(n, 0);
      r->s.assign(n, std::string_view());
      continue;
    }
    Prepare(r, n, in.type);
    switch (in.op) {
      case ExprOp::kField: {
        // One pass over the rows per field: a row's null bits and its cell share a cache line.
        const size_t f = static_cast<size_t>(in.field);
        uint8_t* null = r->null.data();
        if (in.type == FieldType::kDouble) {
          for (size_t k = 0; k < n; ++k) {
            null[k] = batch.IsNull(k, f);
            r->d[k] = batch.GetDouble(k, f);
          }
        } else if (IsVar(in.type)) {
          for (size_t k = 0; k < n; ++k) {
            null[k] = batch.IsNull(k, f);
            r->s[k] = batch.GetString(k, f);
          }
        } else {
          const bool is_bool = in.type == FieldType::kBool;
          for (size_t k = 0; k < n; ++k) {
            null[k] = batch.IsNull(k, f);
            int64_t v = batch.GetInt64(k, f);
            r->i[k] = is_bool ? v != 0 : v;
          }
        }
        break;
      }
      case ExprOp::kConst:
        if (in.type == FieldType::kDouble) r->d.assign(n, in.cd);
        else if (IsVar(in.type)) r->s.assign(n, std::string_view(in.cs));
        else r->i.assign(n, in.ci);
        break;
      case ExprOp::kNull: break;
      case ExprOp::kIntToDouble:
        r->null = arg(0).null;
        for (size_t k = 0; k < n; ++k) r->d[k] = static_cast<double>(arg(0).i[k]);
        break;
      case ExprOp::kArithI:
        OrNulls(arg(0), arg(1), n, r);
        ArithI(in.sub, arg(0), arg(1), n, r);
        break;
      case ExprOp::kArithD:
        OrNulls(arg(0), arg(1), n, r);
        ArithD(in.sub, arg(0), arg(1), n, r);
        break;
      case ExprOp::kNegI:
        r->null = arg(0).null;
        for (size_t k = 0; k < n; ++k) r->i[k] = static_cast<int64_t>(0 - static_cast<uint64_t>(arg(0).i[k]));
        break;
      case ExprOp::kNegD:
        r->null = arg(0).null;
        for (size_t k = 0; k < n; ++k) r->d[k] = -arg(0).d[k];
        break;
      case ExprOp::kCmpI:
        OrNulls(arg(0), arg(1), n, r);
        CompareLoop(in.sub, arg(0).i, arg(1).i, n, r);
        break;
      case ExprOp::kCmpD:
        OrNulls(arg(0), arg(1), n, r);
        CompareLoop(in.sub, arg(0).d, arg(1).d, n, r);
        break;
      case ExprOp::kCmpS:
        OrNulls(arg(0), arg(1), n, r);
        CompareLoop(in.sub, arg(0).s, arg(1).s, n, r);
        break;
      case ExprOp::kAnd:
      case ExprOp::kOr: {
        // AND: FALSE if either is FALSE, else NULL if either is NULL, else TRUE; OR: the dual.
        const ExprColumn& a = arg(0);
        const ExprColumn& b = arg(1);
        const int64_t decisive = in.op == ExprOp::kAnd ? 0 : 1;
        for (size_t k = 0; k < n; ++k) {
          const bool da = !a.null[k] && (a.i[k] != 0) == decisive, db = !b.null[k] && (b.i[k] != 0) == decisive;
          const bool dec = da || db;
          r->null[k] = !dec && (a.null[k] | b.null[k]);
          r->i[k] = dec ? decisive : !r->null[k] && !decisive;
        }
        break;
      }
      case ExprOp::kNot:
        r->null = arg(0).null;
        for (size_t k = 0; k < n; ++k) r->i[k] = !r->null[k] && arg(0).i[k] == 0;
        break;
      case ExprOp::kIsNull:
        for (size_t k = 0; k < n; ++k) r->i[k] = (arg(0).null[k] != 0) != in.negate;
        break;
      case ExprOp::kLike:
        OrNulls(arg(0), arg(1), n, r);
        for (size_t k = 0; k < n; ++k) r->i[k] = !r->null[k] && Like(arg(0).s[k], arg(1).s[k]) != in.negate;
        break;
      case ExprOp::kConcat:
        OrNulls(arg(0), arg(1), n, r);
        BeginArena(r, n);
        for (size_t k = 0; k < n; ++k) {
          size_t start = r->arena.size();
          if (!r->null[k]) {
            r->arena.append(arg(0).s[k]);
            r->arena.append(arg(1).s[k]);
          }
          PutArena(r, k, start);
        }
        FinishArena(r, n);
        break;
      case ExprOp::kCase: {
        const size_t pairs = (in.args.size() - (in.has_else ? 1 : 0)) / 2;
        for (size_t k = 0; k < n; ++k) {
          size_t j = 0;
          while (j < pairs && (arg(2 * j).null[k] || arg(2 * j).i[k] == 0)) ++j;
          if (j < pairs) {
            CopyRow(arg(2 * j + 1), in.type, k, r);
          } else if (in.has_else) {
            CopyRow(arg(in.args.size() - 1), in.type, k, r);
          } else {
            r->null[k] = 1;
            if (IsIntLike(in.type)) r->i[k] = 0;
            else if (in.type == FieldType::kDouble) r->d[k] = 0;
            else r->s[k] = std::string_view();
          }
        }
        break;
      }
      case ExprOp::kCast: Cast(in, arg(0), n, r); break;
      case ExprOp::kCall: Call(in, *regs, n, r); break;
    }
  }
}

bool ParseTimestamp(std::string_view s, int64_t* ms) {
  size_t p = 0;
  auto num = [&](size_t digits, int64_t* v) {
    if (p + digits > s.size()) return false;
    *v = 0;
    for (size_t k = 0; k < digits; ++k) {
      char c = s[p + k];
      if (c < '0' || c > '9') return false;
      *v = *v * 10 + (c - '0');
    }
    p += digits;
    return true;
  };
  auto lit = [&](char c) {
    if (p < s.size() && s[p] == c) {
      ++p;
      return true;
    }
    return false;
  };
  int64_t y, mo, d, h = 0, mi = 0, sec = 0, frac = 0;
  if (!num(4, &y) || !lit('-') || !num(2, &mo) || !lit('-') || !num(2, &d)) return false;
  if (p < s.size() && (s[p] == 'T' || s[p] == ' ')) {
    ++p;
    if (!num(2, &h) || !lit(':') || !num(2, &mi) || !lit(':') || !num(2, &sec)) return false;
    if (lit('.')) {
      size_t digits = 0;
      while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
        if (digits < 3) frac = frac * 10 + (s[p] - '0');
        ++digits;
        ++p;
      }
      if (digits == 0) return false;
      for (size_t k = digits; k < 3; ++k) frac *= 10;
    }
  }
  lit('Z');
  if (p != s.size()) return false;
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] || (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 ||
      sec > 59)
    return false;
  // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
  const int64_t yy = mo <= 2 ? y - 1 : y;
  const int64_t era = yy / 400;
  const int64_t yoe = yy - era * 400;
  const int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  *ms = ((days * 24 + h) * 60 + mi) * 60000 + sec * 1000 + frac;
  return true;
}

void SelectTrue(const ExprColumn& c, size_t n, std::vector<uint32_t>* rows) {
  for (size_t k = 0; k < n; ++k)
    if (!c.null[k] && c.i[k] != 0) rows->push_back(static_cast<uint32_t>(k));
}

void WriteColumn(const ExprColumn& c, FieldType type, size_t n, RecordBatch* out, size_t first, size_t f) {
  switch (type) {
    case FieldType::kString:
    case FieldType::kBytes:
      for (size_t k = 0; k < n; ++k)
        if (!c.null[k]) out->SetString(first + k, f, c.s[k]);
      return;
    case FieldType::kDouble:
      for (size_t k = 0; k < n; ++k)
        if (!c.null[k]) out->SetDouble(first + k, f, c.d[k]);
      return;
    case FieldType::kBool:
      for (size_t k = 0; k < n; ++k)
        if (!c.null[k]) out->SetBool(first + k, f, c.i[k] != 0);
      return;
    case FieldType::kInt64:
    case FieldType::kTimestamp:
      for (size_t k = 0; k < n; ++k)
        if (!c.null[k]) out->SetInt64(first + k, f, c.i[k]);
      return;
  }
}

}  // namespace cairn
