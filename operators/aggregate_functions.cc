#include "operators/aggregate_functions.h"

#include <cctype>
#include <cstring>

#include "engine/base/coding.h"

namespace cairn {

namespace {

// Parses "fn(arg)" of one `aggregates` entry against the input schema.
Status ParseAggregate(const ParamEntry& e, const Schema& input, const std::string& op, AggregateSpec* a) {
  auto error = [&](const std::string& what) {
    return Status::InvalidArgument(e.location + ": operator '" + op + "': aggregate '" + e.key + "' (\"" + e.value +
                                   "\"): " + what);
  };
  std::string text;
  for (char c : e.value)
    if (c != ' ' && c != '\t') text += c;
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close != text.size() - 1 || close < open)
    return error("expected function(field), e.g. sum(bytes) or count(*)");
  std::string fn = text.substr(0, open), arg = text.substr(open + 1, close - open - 1);
  for (char& c : fn) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  a->name = e.key;
  if (fn == "count" && arg == "*") {
    a->fn = AggregateFn::kCountStar;
    a->out = FieldType::kInt64;
    return Status::OK();
  }
  if (fn == "count") a->fn = AggregateFn::kCount;
  else if (fn == "sum") a->fn = AggregateFn::kSum;
  else if (fn == "min") a->fn = AggregateFn::kMin;
  else if (fn == "max") a->fn = AggregateFn::kMax;
  else if (fn == "avg") a->fn = AggregateFn::kAvg;
  else return error("unknown function '" + fn + "' (functions: count(*), count, sum, min, max, avg)");
  if (arg.empty()) return error(fn + " needs a field");
  a->field = input.IndexOf(arg);
  if (a->field < 0) return error("no field '" + arg + "' in the input " + input.ToString());
  a->in = input.field(static_cast<size_t>(a->field)).type;
  const bool numeric = a->in == FieldType::kInt64 || a->in == FieldType::kDouble;
  switch (a->fn) {
    case AggregateFn::kCount: a->out = FieldType::kInt64; break;
    case AggregateFn::kSum:
      if (!numeric) return error("sum needs an int64 or double field, and '" + arg + "' is " + FieldTypeName(a->in));
      a->out = a->in;
      break;
    case AggregateFn::kAvg:
      if (!numeric) return error("avg needs an int64 or double field, and '" + arg + "' is " + FieldTypeName(a->in));
      a->out = FieldType::kDouble;
      break;
    default:  // min, max: any ordered type
      if (a->in == FieldType::kBool) return error(fn + " needs an ordered field, and '" + arg + "' is bool");
      a->out = a->in;
  }
  return Status::OK();
}

double AsDouble(uint64_t cell) {
  double d;
  std::memcpy(&d, &cell, 8);
  return d;
}
uint64_t Bits(double d) {
  uint64_t c;
  std::memcpy(&c, &d, 8);
  return c;
}

}  // namespace

Status ParseAggregates(const OperatorConfig& c, const Schema& input, const std::vector<std::string>& reserved,
                       std::vector<AggregateSpec>* out) {
  out->clear();
  for (const ParamEntry& e : c.GetEntries("aggregates")) {
    for (const std::string& k : c.key_by)
      if (k == e.key)
        return Status::InvalidArgument(e.location + ": operator '" + c.id + "': aggregate '" + e.key +
                                       "' has the name of a key field");
    for (const std::string& r : reserved)
      if (r == e.key)
        return Status::InvalidArgument(e.location + ": operator '" + c.id + "': aggregate '" + e.key +
                                       "' has the name of an output field of its own");
    AggregateSpec a;
    CAIRN_RETURN_IF_ERROR(ParseAggregate(e, input, c.id, &a));
    out->push_back(std::move(a));
  }
  if (out->empty())
    return Status::InvalidArgument(c.Where("aggregates") + ": operator '" + c.id + "' has no aggregates");
  return Status::OK();
}

void AggregateAccumulators::Reset() {
  for (Acc& a : accs_) a = Acc{};
}

bool AggregateAccumulators::StoresString(size_t k) const {
  const AggregateSpec& g = (*specs_)[k];
  return IsVariableLength(g.out) && g.fn != AggregateFn::kCount && g.fn != AggregateFn::kCountStar;
}

void AggregateAccumulators::Add(const RecordBatch& in, size_t i) {
  for (size_t k = 0; k < accs_.size(); ++k) {
    const AggregateSpec& g = (*specs_)[k];
    Acc* a = &accs_[k];
    if (g.fn == AggregateFn::kCountStar) {
      a->seen = true;
      a->cell = static_cast<uint64_t>(static_cast<int64_t>(a->cell) + 1);
      continue;
    }
    size_t f = static_cast<size_t>(g.field);
    if (in.IsNull(i, f)) continue;
    const bool first = !a->seen;
    a->seen = true;
    switch (g.fn) {
      case AggregateFn::kCountStar:
      case AggregateFn::kCount: a->cell = static_cast<uint64_t>(static_cast<int64_t>(a->cell) + 1); break;
      case AggregateFn::kSum:
        if (g.in == FieldType::kDouble) {
          a->cell = Bits((first ? 0.0 : AsDouble(a->cell)) + in.GetDouble(i, f));
        } else {
          a->cell = static_cast<uint64_t>(static_cast<int64_t>(first ? 0 : a->cell) + in.GetInt64(i, f));
        }
        break;
      case AggregateFn::kAvg:
        a->cell = Bits((first ? 0.0 : AsDouble(a->cell)) +
                       (g.in == FieldType::kDouble ? in.GetDouble(i, f) : static_cast<double>(in.GetInt64(i, f))));
        a->n = (first ? 0 : a->n) + 1;
        break;
      case AggregateFn::kMin:
      case AggregateFn::kMax: {
        const bool want_less = g.fn == AggregateFn::kMin;
        if (IsVariableLength(g.in)) {
          std::string_view v = in.GetString(i, f);
          if (first || (want_less ? v < a->s : v > a->s)) a->s.assign(v.data(), v.size());
        } else if (g.in == FieldType::kDouble) {
          double v = in.GetDouble(i, f);
          if (first || (want_less ? v < AsDouble(a->cell) : v > AsDouble(a->cell))) a->cell = Bits(v);
        } else {
          int64_t v = in.GetInt64(i, f);
          if (first || (want_less ? v < static_cast<int64_t>(a->cell) : v > static_cast<int64_t>(a->cell)))
            a->cell = static_cast<uint64_t>(v);
        }
      }
    }
  }
}

void AggregateAccumulators::Merge(const AggregateAccumulators& other) {
  for (size_t k = 0; k < accs_.size(); ++k) {
    const AggregateSpec& g = (*specs_)[k];
    Acc& a = accs_[k];
    const Acc& b = other.accs_[k];
    if (!b.seen) continue;
    if (!a.seen) {
      a = b;
      continue;
    }
    switch (g.fn) {
      case AggregateFn::kCountStar:
      case AggregateFn::kCount: a.cell = static_cast<uint64_t>(static_cast<int64_t>(a.cell) + static_cast<int64_t>(b.cell)); break;
      case AggregateFn::kSum:
        a.cell = g.in == FieldType::kDouble ? Bits(AsDouble(a.cell) + AsDouble(b.cell))
                                            : static_cast<uint64_t>(static_cast<int64_t>(a.cell) + static_cast<int64_t>(b.cell));
        break;
      case AggregateFn::kAvg:
        a.cell = Bits(AsDouble(a.cell) + AsDouble(b.cell));
        a.n += b.n;
        break;
      case AggregateFn::kMin:
      case AggregateFn::kMax: {
        const bool want_less = g.fn == AggregateFn::kMin;
        if (IsVariableLength(g.in)) {
          if (want_less ? b.s < a.s : b.s > a.s) a.s = b.s;
        } else if (g.in == FieldType::kDouble) {
          if (want_less ? AsDouble(b.cell) < AsDouble(a.cell) : AsDouble(b.cell) > AsDouble(a.cell)) a.cell = b.cell;
        } else {
          int64_t x = static_cast<int64_t>(a.cell), y = static_cast<int64_t>(b.cell);
          if (want_less ? y < x : y > x) a.cell = b.cell;
        }
      }
    }
  }
}

void AggregateAccumulators::Write(RecordBatch* out, size_t r, size_t base) const {
  for (size_t k = 0; k < accs_.size(); ++k) {
    const AggregateSpec& g = (*specs_)[k];
    const Acc& a = accs_[k];
    size_t f = base + k;
    if (g.fn == AggregateFn::kCountStar || g.fn == AggregateFn::kCount) {
      out->SetInt64(r, f, a.seen ? static_cast<int64_t>(a.cell) : 0);
      continue;
    }
    if (!a.seen) continue;  // null: no non-null value yet (SQL)
    if (g.fn == AggregateFn::kAvg) {
      out->SetDouble(r, f, AsDouble(a.cell) / static_cast<double>(a.n));
    } else if (IsVariableLength(g.out)) {
      out->SetString(r, f, a.s);
    } else if (g.out == FieldType::kDouble) {
      out->SetDouble(r, f, AsDouble(a.cell));
    } else {
      out->SetInt64(r, f, static_cast<int64_t>(a.cell));
    }
  }
}

void AggregateAccumulators::Encode(std::string* out) const {
  out->clear();
  for (size_t k = 0; k < accs_.size(); ++k) {
    const Acc& a = accs_[k];
    out->push_back(a.seen ? 1 : 0);
    if (StoresString(k)) {
      PutLengthPrefixed(out, a.s);
    } else {
      PutFixed64(out, a.cell);
    }
    if ((*specs_)[k].fn == AggregateFn::kAvg) PutFixed64(out, static_cast<uint64_t>(a.n));
  }
}

bool AggregateAccumulators::Decode(std::string_view bytes) {
  Decoder d(bytes);
  for (size_t k = 0; k < accs_.size(); ++k) {
    Acc& a = accs_[k];
    uint8_t seen;
    if (!d.GetByte(&seen) || seen > 1) return false;
    a.seen = seen == 1;
    if (StoresString(k)) {
      std::string_view s;
      if (!d.GetLengthPrefixedView(&s)) return false;
      a.s.assign(s.data(), s.size());
    } else if (!d.GetFixed64(&a.cell)) {
      return false;
    }
    uint64_t n = 0;
    if ((*specs_)[k].fn == AggregateFn::kAvg && !d.GetFixed64(&n)) return false;
    a.n = static_cast<int64_t>(n);
  }
  return d.done();
}

}  // namespace cairn
