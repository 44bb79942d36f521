// A RecordBatch is the unit in which records move: a sequence of rows of one Schema, stored row
// by row in one vector of 8-byte cells, with every string and bytes value in one arena.
//
// Layout: a row is 1 + fields cells. Cell 0 holds the row's null bits (bit f set: field f is
// null); cell 1 + f holds field f: an int64 or timestamp, a double's bits, a bool as 0/1, or for
// string and bytes the value's arena offset (high 32 bits) and length (low 32 bits).
//
// Contract: appending amortises to no allocation per record (the cells, the arena and their
// capacity survive clear()), so a batch is reused rather than freed. Values returned by
// GetString stay valid until the batch is cleared or appended to. Setting a field of the wrong
// type is a programmer error (asserted in debug builds). Not thread-safe: a batch is owned by
// one thread at a time and handed over whole through a channel; its SchemaRef is shared.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "engine/dataflow/schema.h"

namespace cairn {

// The schema of a batch made without one: (key string, a int64, b int64), which the Add(key,
// a, b) shorthand below fills (tests and the bank use it).
const SchemaRef& KeyValueSchema();

class RecordBatch {
 public:
  RecordBatch() : RecordBatch(KeyValueSchema()) {}
  explicit RecordBatch(SchemaRef schema) { set_schema(std::move(schema)); }

  const SchemaRef& schema() const { return schema_; }
  // Clears the batch and makes it hold records of `schema`.
  void set_schema(SchemaRef schema) {
    clear();
    schema_ = std::move(schema);
    fields_ = schema_->size();
    stride_ = fields_ + 1;
  }
  size_t num_fields() const { return fields_; }
  // Clears the batch; it then holds records of `schema` (cheap when it already does).
  void Reset(const SchemaRef& schema) {
    if (schema_ != schema) {
      set_schema(schema);
    } else {
      clear();
    }
  }

  size_t size() const { return rows_; }
  bool empty() const { return rows_ == 0; }
  size_t arena_bytes() const { return arena_.size(); }
  // Approximate bytes held by the records, for batch-size limits and statistics.
  size_t bytes() const { return arena_.size() + cells_.size() * sizeof(uint64_t); }

  void clear() {
    cells_.clear();
    arena_.clear();
    rows_ = 0;
  }
  void reserve(size_t rows, size_t arena) {
    cells_.reserve(rows * stride_);
    arena_.reserve(arena);
  }

  // Appends a row with every field null and returns its index.
  size_t AddRow() {
    cells_.resize(cells_.size() + stride_, 0);
    cells_[cells_.size() - stride_] = fields_ == 64 ? ~uint64_t{0} : (uint64_t{1} << fields_) - 1;
    return rows_++;
  }
  void SetNull(size_t row, size_t f) { null_bits(row) |= uint64_t{1} << f; }
  void SetInt64(size_t row, size_t f, int64_t v) {
    assert(IsInt64Like(type(f)));
    Set(row, f, static_cast<uint64_t>(v));
  }
  void SetDouble(size_t row, size_t f, double v) {
    assert(type(f) == FieldType::kDouble);
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    Set(row, f, bits);
  }
  void SetBool(size_t row, size_t f, bool v) {
    assert(type(f) == FieldType::kBool);
    Set(row, f, v ? 1 : 0);
  }
  // For string and bytes fields: copies `v` into the arena.
  void SetString(size_t row, size_t f, std::string_view v) {
    assert(IsVariableLength(type(f)));
    uint64_t offset = arena_.size();
    arena_.append(v.data(), v.size());
    Set(row, f, offset << 32 | static_cast<uint32_t>(v.size()));
  }

  bool IsNull(size_t row, size_t f) const { return (cell(row, 0) >> f) & 1; }
  uint64_t null_bits(size_t row) const { return cell(row, 0); }
  // A null field reads as 0, 0.0, false or "".
  int64_t GetInt64(size_t row, size_t f) const { return static_cast<int64_t>(cell(row, f + 1)); }
  double GetDouble(size_t row, size_t f) const {
    double v;
    uint64_t bits = cell(row, f + 1);
    std::memcpy(&v, &bits, 8);
    return v;
  }
  bool GetBool(size_t row, size_t f) const { return cell(row, f + 1) != 0; }
  std::string_view GetString(size_t row, size_t f) const {
    uint64_t c = cell(row, f + 1);
    return std::string_view(arena_.data() + (c >> 32), static_cast<uint32_t>(c));
  }
  // The raw cell of a field (bits of an int64, double or bool).
  uint64_t GetCell(size_t row, size_t f) const { return cell(row, f + 1); }

  // Appends rows [begin, end) of `other`, which has the same schema.
  void AppendRange(const RecordBatch& other, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) AddFrom(other, i);
  }
  // Appends row `i` of `other`, which has the same schema.
  void AddFrom(const RecordBatch& other, size_t i) {
    const uint64_t* src = other.cells_.data() + i * stride_;
    size_t at = cells_.size();
    cells_.insert(cells_.end(), src, src + stride_);
    ++rows_;
    if (schema_->has_variable_length()) {
      for (size_t f = 0; f < fields_; ++f) {
        if (!IsVariableLength(type(f))) continue;
        uint64_t c = src[f + 1];
        uint64_t offset = arena_.size();
        arena_.append(other.arena_.data() + (c >> 32), static_cast<uint32_t>(c));
        cells_[at + f + 1] = offset << 32 | static_cast<uint32_t>(c);
      }
    }
  }

  // Copies field `f` of row `row` of `from` into field `to_f` of row `to_row` (of the same type).
  void CopyFieldFrom(const RecordBatch& from, size_t row, size_t f, size_t to_row, size_t to_f) {
    if (from.IsNull(row, f)) {
      SetNull(to_row, to_f);
    } else if (IsVariableLength(type(to_f))) {
      SetString(to_row, to_f, from.GetString(row, f));
    } else {
      Set(to_row, to_f, from.GetCell(row, f));
    }
  }

  // Shorthand for the KeyValueSchema: a row (key, a, b), and its fields.
  void Add(std::string_view key, int64_t a = 0, int64_t b = 0) {
    size_t r = AddRow();
    SetString(r, 0, key);
    if (fields_ > 1) SetInt64(r, 1, a);
    if (fields_ > 2) SetInt64(r, 2, b);
  }
  std::string_view key(size_t i) const { return GetString(i, 0); }
  int64_t a(size_t i) const { return fields_ > 1 ? GetInt64(i, 1) : 0; }
  int64_t b(size_t i) const { return fields_ > 2 ? GetInt64(i, 2) : 0; }

 private:
  FieldType type(size_t f) const { return schema_->field(f).type; }
  uint64_t cell(size_t row, size_t c) const { return cells_[row * stride_ + c]; }
  uint64_t& null_bits(size_t row) { return cells_[row * stride_]; }
  void Set(size_t row, size_t f, uint64_t v) {
    cells_[row * stride_ + f + 1] = v;
    null_bits(row) &= ~(uint64_t{1} << f);
  }

  SchemaRef schema_;
  size_t fields_ = 0;
  size_t stride_ = 1;
  size_t rows_ = 0;
  std::vector<uint64_t> cells_;
  std::string arena_;
};

}  // namespace cairn
