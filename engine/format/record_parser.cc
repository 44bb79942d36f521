#include "engine/format/record_parser.h"

#include <vector>

#include "engine/format/csv.h"
#include "engine/format/jsonl_parser.h"
#include "engine/format/values.h"

namespace cairn {

const char* TextFormatName(TextFormat f) {
  switch (f) {
    case TextFormat::kLines: return "lines";
    case TextFormat::kCsv: return "csv";
    case TextFormat::kJsonl: return "jsonl";
  }
  return "?";
}

bool ParseTextFormat(std::string_view name, TextFormat* f) {
  for (TextFormat t : {TextFormat::kLines, TextFormat::kCsv, TextFormat::kJsonl}) {
    if (name == TextFormatName(t)) {
      *f = t;
      return true;
    }
  }
  return false;
}

namespace {

class CsvParser final : public RecordParser {
 public:
  CsvParser(SchemaRef schema, char delimiter) : schema_(std::move(schema)), splitter_(delimiter), values_(schema_->size()) {}

  bool Parse(std::string_view record, RecordBatch* out, RecordError* err) override {
    size_t bad = 0;
    if (!splitter_.Split(record, &bad, &err->why)) {
      err->field = bad < schema_->size() ? static_cast<int>(bad) : -1;
      return false;
    }
    if (splitter_.size() != schema_->size()) {
      err->field = -1;
      err->why = "expected " + std::to_string(schema_->size()) + " fields (" + schema_->FieldNames() + "), got " +
                 std::to_string(splitter_.size());
      return false;
    }
    for (size_t f = 0; f < values_.size(); ++f) {
      if (!ParseTextValue(schema_->field(f).type, splitter_.field(f), &values_[f], &err->why)) {
        err->field = static_cast<int>(f);
        return false;
      }
    }
    CommitRow(values_, out);
    return true;
  }

 private:
  SchemaRef schema_;
  CsvSplitter splitter_;
  std::vector<FieldValue> values_;
};

}  // namespace

std::unique_ptr<RecordParser> NewRecordParser(TextFormat format, SchemaRef schema, char delimiter) {
  switch (format) {
    case TextFormat::kCsv: return std::make_unique<CsvParser>(std::move(schema), delimiter);
    case TextFormat::kJsonl: return NewJsonlParser(std::move(schema));
    case TextFormat::kLines: return nullptr;
  }
  return nullptr;
}

}  // namespace cairn
