// Field values from text: how the csv and jsonl formats turn the text of a field into a value of
// its FieldType, and the timestamp syntax both accept (docs/configuration.md, "Formats").
//
// A parsed value is a FieldValue: null, a cell (the bits RecordBatch stores for int64,
// timestamp, double and bool) or a view of string/bytes text. A record is parsed whole into a
// row of FieldValues first and only then appended to a batch (CommitRow), so that a malformed
// record leaves the batch untouched.
//
// Contract: the functions here are pure and thread-compatible; views in a FieldValue point into
// the text they were parsed from and live as long as it does. Nothing allocates.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/schema.h"

namespace cairn {

struct FieldValue {
  bool null = true;
  uint64_t cell = 0;      // int64, timestamp, double (IEEE bits), bool (0/1)
  std::string_view text;  // string and bytes
};

// Appends one row of `values` (one per field of b's schema, in order) to `b`.
void CommitRow(const std::vector<FieldValue>& values, RecordBatch* b);

// A timestamp in milliseconds since the epoch from `text`: either an integer of ms ("-12",
// "1764570917123") or ISO-8601: a date "2026-12-01", optionally followed by 'T' or ' ' and a
// time "06:35:17" with an optional fraction (".1" to ".123456789"; truncated to ms) and an
// optional zone "Z", "+01:00", "-0530" (none: UTC). False with *why set otherwise.
bool ParseTimestampText(std::string_view text, int64_t* ms, std::string* why);

// The value of a field of type `t` from its text (csv). Empty text is null for every type but
// string and bytes, whose value it is. int64: decimal integer; double: decimal or exponent
// notation, "nan", "inf"; bool: true/false (any case) or 1/0; timestamp: ParseTimestampText.
// False with *why set (e.g. "expected an int64, got 'x'") otherwise.
bool ParseTextValue(FieldType t, std::string_view text, FieldValue* out, std::string* why);

}  // namespace cairn
