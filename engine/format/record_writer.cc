#include "engine/format/record_writer.h"

#include <charconv>
#include <cstring>

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
  for (size_t i = 0; i < rows; ++i) {
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
        p = std::to_chars(p, p + kMaxInt64Chars, b.GetInt64(i, f)).ptr;
      } else {
        std::string_view v = b.GetString(i, f);
        std::memcpy(p, v.data(), v.size());
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
