// Records as text in the formats of engine/format/record_parser.h, for file_sink:
//   lines  the fields as plain text (record_codec's AppendText) joined by TAB; null is empty.
//          The word count's `key<TAB>value` lines, byte for byte as before formats existed.
//   csv    RFC 4180 with `delimiter`; a field is quoted only when it holds the delimiter, '"',
//          '\r' or '\n', and an empty string is written "" so that it differs from null (an
//          empty field); values as text as in `lines`; records end with '\n'.
//   jsonl  record_codec's AppendJsonObject and '\n'.
// Whatever the csv writer writes, the csv reader reads back to the same row (for the same
// schema), and likewise for jsonl (a double that is NaN or infinite is written as null).
//
// Contract: appends only; allocation-free once `out` and `scratch` have grown.
#pragma once

#include <string>

#include "engine/dataflow/record_batch.h"
#include "engine/format/record_parser.h"

namespace cairn {

struct RecordWriterOptions {
  TextFormat format = TextFormat::kLines;
  char delimiter = ',';  // csv
};

// Appends row `row` of `b` and its '\n'. `scratch` is working space.
void AppendRecord(const RecordWriterOptions& o, const RecordBatch& b, size_t row, std::string* scratch, std::string* out);
// The same for every row of `b`, in order (one call per batch: the sink's hot path).
void AppendRecords(const RecordWriterOptions& o, const RecordBatch& b, std::string* scratch, std::string* out);

// Appends a csv header record (the field names) and its '\n'.
void AppendCsvHeader(const Schema& schema, char delimiter, std::string* out);

}  // namespace cairn
