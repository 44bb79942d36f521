// Text formats of records in files (file_source, file_sink; docs/configuration.md, "Formats"):
//   lines  one `line` string field per line in; fields joined by TAB out (the default)
//   csv    RFC 4180 (engine/format/csv.h); fields in schema order; delimiter configurable
//   jsonl  one JSON object per line, fields by name (parsed with simdjson)
//
// A RecordParser turns the text of one csv or jsonl record into a row of its schema. Null
// rules: csv: an empty field is null unless the field is a string or bytes, whose value is then
// ""; jsonl: a JSON null or an absent key is null; keys not in the schema are ignored. Values
// convert as engine/format/values.h says; in jsonl a string field takes a JSON string only, an
// int64 an integer, a double any number, a bool true/false, a timestamp an integer of ms or an
// ISO-8601 string.
//
// Contract: Parse appends exactly one row or, when the record is malformed, none (the batch is
// untouched). It allocates nothing per record once warmed up. Not thread-safe: one parser per
// reader.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/schema.h"

namespace cairn {

enum class TextFormat { kLines, kCsv, kJsonl };
// "lines", "csv", "jsonl".
const char* TextFormatName(TextFormat f);
bool ParseTextFormat(std::string_view name, TextFormat* f);

// What is wrong with a malformed record: the field at fault (-1: the record as a whole) and why.
struct RecordError {
  int field = -1;
  std::string why;
};

class RecordParser {
 public:
  virtual ~RecordParser() = default;
  // Parses one record (its text without the '\n' that ends it) into a row appended to *out
  // (whose schema is the parser's). False, with *err set, when malformed.
  virtual bool Parse(std::string_view record, RecordBatch* out, RecordError* err) = 0;
};

// A parser of csv (with `delimiter`) or jsonl records of `schema`; null for kLines.
std::unique_ptr<RecordParser> NewRecordParser(TextFormat format, SchemaRef schema, char delimiter = ',');

}  // namespace cairn
