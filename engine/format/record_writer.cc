#include "engine/format/record_writer.h"

#include <charconv>
#include <cstring>

#include "engine/base/short_bytes.h"
#include "engine/dataflow/record_codec.h"
#include "engine/format/csv.h"

namespace cairn {

void AppendRecord(const RecordWriterOptions& o, const RecordBatch& b, size_t row, std::string* scratch, std::string* out) {
  const size_t fields = b.num_fields();
  switch (o.format) {
    case TextFormat::kLines:
      for (size_t f = 0; f < fields; ++f) {
        if (f > 0) out->push_back('\t');
        AppendText(b, row, f, out);
      }
      break;
    case TextFormat::kCsv:
      for (size_t f = 0; f < fields; ++f) {
        if (f > 0) out->push_back(o.delimiter);
        if (b.IsNull(row, f)) continue;
        if (IsVariableLength(b.schema()->field(f).type)) {
          AppendCsvField(b.GetString(row, f), o.delimiter, true, out);
        } else {
          scratch->clear();
          AppendText(b, row, f, scratch);
          AppendCsvField(*scratch, o.delimiter, false, out);
        }
      }
      break;
    case TextFormat::kJsonl: AppendJsonObject(b, row, out); break;
  }
  out->push_back('\n');
}

namespace {

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// std::to_chars for an int64, inline (the changelog formats one per record): writes the
// decimal digits of `v` at `p` and returns the end.
__attribute__((always_inline)) inline char* FormatInt64(char* p, int64_t v) {
  uint64_t u = static_cast<uint64_t>(v);
  if (v < 0) {
    *p++ = '-';
    u = 0 - u;
  }
  // Digits: from the bit length (log10(2) ~ 1233 / 4096), then one comparison.
  static constexpr uint64_t kPow10[20] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
                                          10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
                                          100000000000ull, 1000000000000ull, 10000000000000ull,
                                          100000000000000ull, 1000000000000000ull, 10000000000000000ull,
                                          100000000000000000ull, 1000000000000000000ull,
                                          10000000000000000000ull};
  const uint64_t odd = u | 1;  // the powers of 10 above 1 are even: compares as u does, and 0 has 1 digit
  const size_t t = static_cast<size_t>(64 - __builtin_clzll(odd)) * 1233 >> 12;
  const size_t len = t + (odd >= kPow10[t] ? 1 : 0);
  char* end = p + len;
  char* q = end;
  while (u >= 100) {
    const size_t r = static_cast<size_t>(u % 100) * 2;
    u /= 100;
    q -= 2;
    q[0] = kDigitPairs[r];
    q[1] = kDigitPairs[r + 1];
  }
  if (u >= 10) {
    q[-2] = kDigitPairs[u * 2];
    q[-1] = kDigitPairs[u * 2 + 1];
  } else {
    q[-1] = static_cast<char>('0' + u);
  }
  return end;
}

// lines, when every field is a string, bytes or int64 (the word count's `word<TAB>count`):
// each row is written into a stack buffer (sized per row for its longest text), appended to
// `out` a buffer at a time. False, appending nothing, for other schemas.
bool AppendPlainLines(const RecordBatch& b, std::string* out) {
  const size_t rows = b.size(), fields = b.num_fields();
  constexpr size_t kMaxInt64Chars = 20;  // "-9223372036854775808"
  size_t fixed = fields;                 // the TABs and the '\n'
  for (size_t f = 0; f < fields; ++f) {
    FieldType t = b.type(f);
    if (t == FieldType::kInt64) {
      fixed += kMaxInt64Chars;
    } else if (!IsVariableLength(t)) {
      return false;
    }
  }
  char buf[8192];
  size_t used = 0;
  // The word count's `word<TAB>count` (a text field, then an int64): one test per row, no
  // per-field dispatch. A row with a null (or too long for the buffer) takes the general path.
  size_t i = 0;
  if (fields == 2 && IsVariableLength(b.type(0)) && b.type(1) == FieldType::kInt64) {
    for (; i < rows; ++i) {
      if (b.null_bits(i) != 0) break;
      const std::string_view v = b.GetString(i, 0);
      if (v.size() + fixed > sizeof buf) break;
      if (used + v.size() + fixed > sizeof buf) {
        out->append(buf, used);
        used = 0;
      }
      char* p = buf + used;
      CopyShortBytes(p, v.data(), v.size());
      p += v.size();
      *p++ = '\t';
      p = FormatInt64(p, b.GetInt64(i, 1));
      *p++ = '\n';
      used = static_cast<size_t>(p - buf);
    }
  }
  for (; i < rows; ++i) {
    size_t need = fixed;  // a null field's cell is 0: length 0
    for (size_t f = 0; f < fields; ++f)
      if (IsVariableLength(b.type(f))) need += static_cast<uint32_t>(b.GetCell(i, f));
    if (used + need > sizeof buf) {
      out->append(buf, used);
      used = 0;
      if (need > sizeof buf) {  // a long row: field by field
        for (size_t f = 0; f < fields; ++f) {
          if (f > 0) out->push_back('\t');
          AppendText(b, i, f, out);
        }
        out->push_back('\n');
        continue;
      }
    }
    char* p = buf + used;
    for (size_t f = 0; f < fields; ++f) {
      if (f > 0) *p++ = '\t';
      if (b.IsNull(i, f)) continue;
      if (b.type(f) == FieldType::kInt64) {
        p = FormatInt64(p, b.GetInt64(i, f));
      } else {
        std::string_view v = b.GetString(i, f);
        CopyShortBytes(p, v.data(), v.size());
        p += v.size();
      }
    }
    *p++ = '\n';
    used = static_cast<size_t>(p - buf);
  }
  out->append(buf, used);
  return true;
}

}  // namespace

void AppendRecords(const RecordWriterOptions& o, const RecordBatch& b, std::string* scratch, std::string* out) {
  const size_t rows = b.size(), fields = b.num_fields();
  if (o.format != TextFormat::kLines) {
    for (size_t i = 0; i < rows; ++i) AppendRecord(o, b, i, scratch, out);
    return;
  }
  // lines: the fields as text joined by TAB (the word count's `word<TAB>count`), inlined.
  if (AppendPlainLines(b, out)) return;
  for (size_t i = 0; i < rows; ++i) {
    for (size_t f = 0; f < fields; ++f) {
      if (f > 0) out->push_back('\t');
      AppendText(b, i, f, out);
    }
    out->push_back('\n');
  }
}

void AppendCsvHeader(const Schema& schema, char delimiter, std::string* out) {
  for (size_t f = 0; f < schema.size(); ++f) {
    if (f > 0) out->push_back(delimiter);
    AppendCsvField(schema.field(f).name, delimiter, true, out);
  }
  out->push_back('\n');
}

}  // namespace cairn
