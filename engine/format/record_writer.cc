#include "engine/format/record_writer.h"

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

void AppendRecords(const RecordWriterOptions& o, const RecordBatch& b, std::string* scratch, std::string* out) {
  const size_t rows = b.size(), fields = b.num_fields();
  if (o.format != TextFormat::kLines) {
    for (size_t i = 0; i < rows; ++i) AppendRecord(o, b, i, scratch, out);
    return;
  }
  // lines: the fields as text joined by TAB (the word count's `word<TAB>count`), inlined.
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
