// Records as bytes and text: the encoding of schemas and rows in channel state, the key a keyed
// operator groups by (KeySelector), and records as JSON and as text for sinks and `cairn state
// dump`.
//
// Row encoding (channel state; docs/checkpoints.md): the row's null bits (fixed64), then each
// non-null field in order: int64, timestamp, double (IEEE bits) and bool (0/1) as fixed64,
// string and bytes length-prefixed. A schema: the field count (fixed64), then per field its
// name (length-prefixed) and its type (one byte, FieldType). Decoding is bounds-checked and
// returns false on malformed bytes, never reading past them.
//
// Key encoding: a key of one string or bytes field is that field's bytes (so the word count's
// keys are its words); any other key is, per key field, a tag byte (0 null, 1 present) then
// the value (fixed64, or length-prefixed bytes). A key's hash is KeyHash of its encoding, which
// decides its key group (engine/base/key_groups.h): partitioner and state agree by construction.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/coding.h"
#include "engine/base/key_groups.h"
#include "engine/base/status.h"
#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/schema.h"

namespace cairn {

void EncodeSchema(const Schema& schema, std::string* out);
bool DecodeSchema(Decoder* d, SchemaRef* out);

void EncodeRow(const RecordBatch& b, size_t row, std::string* out);
// Appends every row of `b`, the same bytes as EncodeRow of each in turn, sizing `out` once for
// them (channel state and network frames encode whole batches).
void EncodeRows(const RecordBatch& b, std::string* out);
// Appends one row, of b's schema, read from `d`.
bool DecodeRow(Decoder* d, RecordBatch* b);

// Selects the key fields of a record, by name, and makes its key bytes and hash.
class KeySelector {
 public:
  KeySelector() = default;
  // InvalidArgument naming the first of `fields` that `schema` lacks.
  static Status Make(const Schema& schema, const std::vector<std::string>& fields, KeySelector* out);

  // The key bytes of row `row`: a view of the field itself for a single string or bytes key,
  // else encoded into *scratch (which the view then points into).
  std::string_view Key(const RecordBatch& b, size_t row, std::string* scratch) const {
    if (single_bytes_) return b.GetString(row, static_cast<size_t>(fields_[0]));
    scratch->clear();
    EncodeComposite(b, row, scratch);
    return *scratch;
  }
  uint64_t Hash(const RecordBatch& b, size_t row, std::string* scratch) const { return KeyHash(Key(b, row, scratch)); }
  const std::vector<int>& fields() const { return fields_; }
  bool empty() const { return fields_.empty(); }
  // The key is one string or bytes field, used as it is.
  bool single_bytes() const { return single_bytes_; }

 private:
  void EncodeComposite(const RecordBatch& b, size_t row, std::string* out) const;
  std::vector<int> fields_;
  std::vector<FieldType> types_;
  bool single_bytes_ = false;
};

// Appends the key fields of an encoded key (KeySelector's encoding for `types`) to row `row`
// of `b`, at fields `at`; false when malformed.
bool DecodeKeyInto(std::string_view key, const std::vector<FieldType>& types, const std::vector<int>& at,
                   RecordBatch* b, size_t row);

// "2026-12-01T06:35:17.123Z": a timestamp in ISO-8601, UTC, with milliseconds.
void AppendTimestamp(int64_t ms, std::string* out);
// A JSON string literal of `s` (quotes and escapes; bytes that are not UTF-8 escaped as \u00XX).
void AppendJsonString(std::string_view s, std::string* out);
// Field `f` of row `row` as a JSON value: null, a number, true/false, a string (timestamps as
// ISO-8601 strings, bytes as strings with escapes).
void AppendJsonValue(const RecordBatch& b, size_t row, size_t f, std::string* out);
// Row `row` as a JSON object of its fields by name, in schema order.
void AppendJsonObject(const RecordBatch& b, size_t row, std::string* out);
// Field `f` as plain text (the `lines` format): numbers in decimal (doubles shortest round
// trip), true/false, strings as they are, timestamps ISO-8601, null as the empty string.
// Inline for the word count's sink: a string and an int64 per record.
void AppendTextSlow(const RecordBatch& b, size_t row, size_t f, std::string* out);
inline __attribute__((always_inline)) void AppendText(const RecordBatch& b, size_t row, size_t f, std::string* out) {
  if (b.IsNull(row, f)) return;
  switch (b.type(f)) {
    case FieldType::kString:
    case FieldType::kBytes: out->append(b.GetString(row, f)); return;
    case FieldType::kInt64: {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, b.GetInt64(row, f));
      out->append(buf, r.ptr);
      return;
    }
    default: AppendTextSlow(b, row, f, out);
  }
}

}  // namespace cairn
