// A RecordBatch is the unit in which records move: a sequence of rows of one Schema, stored row
// by row in one vector of 8-byte cells, with every string and bytes value in one arena.
//
// Layout: a row is 1 + fields cells. Cell 0 holds the row's null bits (bit f set: field f is
// null); cell 1 + f holds field f: an int64 or timestamp, a double's bits, a bool as 0/1, or for
// string and bytes the value's arena offset (high 32 bits) and length (low 32 bits).
//
// Key hashes: a batch may also carry, per row, the KeyHash of the row's key for a list of key
// fields (key_hash_fields(), KeySelector's field indices into this schema), so that a hash
// edge's consumer does not hash each key again. Only AddFromWithHash (what a hash edge appends)
// and the copies below (copy assignment, AppendRange from a batch whose hashes are valid) record
// them; every other append (AddRow, AddFrom, DecodeRow, ...) leaves its row without one, which
// makes the batch's hashes invalid until it is cleared. So HasKeyHashes() is true only when
// every row has the hash of exactly its key, and a consumer that finds it false hashes itself.
// A row appended with a hash must not have its key fields set afterwards.
//
// Contract: appending amortises to no allocation per record (the cells, the arena and their
// capacity survive clear()), so a batch is reused rather than freed. Values returned by
// GetString stay valid until the batch is cleared or appended to. Setting a field of the wrong
// type is a programmer error (asserted in debug builds). Not thread-safe: a batch is owned by
// one thread at a time and handed over whole through a channel; its SchemaRef is shared.
#pragma once

#include <algorithm>
#include <cassert>
#include <memory>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/short_bytes.h"
#include "engine/dataflow/schema.h"

namespace cairn {

// The schema of a batch made without one: (key string, a int64, b int64), which the Add(key,
// a, b) shorthand below fills (tests and the bank use it).
const SchemaRef& KeyValueSchema();

// The bytes of a batch's string and bytes values, appended one after another. Like a
// std::string without the terminator and the length checks: the batch's hot paths append to it
// per record. Capacity survives clear().
class BatchArena {
 public:
  BatchArena() = default;
  ~BatchArena() {
    if (data_ != kNone) delete[] data_;
  }
  BatchArena(const BatchArena& o) { *this = o; }
  BatchArena& operator=(const BatchArena& o) {
    if (this == &o) return *this;
    size_ = 0;
    reserve(o.size_);
    if (o.size_ > 0) std::memcpy(data_, o.data_, o.size_);
    size_ = o.size_;
    return *this;
  }
  BatchArena(BatchArena&& o) noexcept { swap(o); }
  BatchArena& operator=(BatchArena&& o) noexcept {
    swap(o);
    return *this;
  }
  void swap(BatchArena& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }

  size_t size() const { return size_; }
  const char* data() const { return data_; }  // never null
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > capacity_) Grow(n);
  }
  // Bulk appends: after reserve(size() + n), write up to n bytes at end(), then Commit them.
  char* end() { return data_ + size_; }
  void Commit(size_t n) { size_ += n; }
  // Appends `n` bytes at `p`; returns the offset they start at.
  size_t Append(const char* p, size_t n) {
    size_t offset = size_;
    if (n > capacity_ - size_) Grow(size_ + n);
    CopyShortBytes(data_ + size_, p, n);  // mostly words of a few bytes
    size_ += n;
    return offset;
  }

 private:
  void Grow(size_t need) {
    size_t cap = std::max<size_t>({need, capacity_ * 2, 256});
    char* next = new char[cap];
    if (size_ > 0) std::memcpy(next, data_, size_);
    if (data_ != kNone) delete[] data_;
    data_ = next;
    capacity_ = cap;
  }
  static inline char kNone[1] = {0};  // data_ before the first allocation (never written)
  char* data_ = kNone;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

class RecordBatch {
 public:
  RecordBatch() : RecordBatch(KeyValueSchema()) {}
  explicit RecordBatch(SchemaRef schema) { set_schema(std::move(schema)); }
  RecordBatch(const RecordBatch& o) { *this = o; }
  RecordBatch& operator=(const RecordBatch& o) {
    if (this == &o) return *this;
    set_schema(o.schema_);
    Reserve(o.size_);
    if (o.size_ > 0) std::memcpy(cells_.get(), o.cells_.get(), o.size_ * sizeof(uint64_t));
    size_ = o.size_;
    rows_ = o.rows_;
    arena_ = o.arena_;
    hash_fields_ = o.hash_fields_;
    hashed_rows_ = 0;
    if (o.hashes_valid()) {
      ReserveHashes(o.rows_);
      if (o.rows_ > 0) std::memcpy(hashes_.get(), o.hashes_.get(), o.rows_ * sizeof(uint64_t));
      hashed_rows_ = o.rows_;
    }
    return *this;
  }
  RecordBatch(RecordBatch&& o) noexcept { swap(o); }
  RecordBatch& operator=(RecordBatch&& o) noexcept {
    swap(o);
    return *this;
  }
  void swap(RecordBatch& o) noexcept {
    std::swap(schema_, o.schema_);
    std::swap(fields_, o.fields_);
    std::swap(stride_, o.stride_);
    std::swap(rows_, o.rows_);
    std::swap(cells_, o.cells_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    std::swap(types_, o.types_);
    std::swap(var_fields_, o.var_fields_);
    std::swap(all_null_, o.all_null_);
    std::swap(one_var_field_, o.one_var_field_);
    std::swap(arena_, o.arena_);
    std::swap(hashes_, o.hashes_);
    std::swap(hash_capacity_, o.hash_capacity_);
    std::swap(hashed_rows_, o.hashed_rows_);
    std::swap(hash_fields_, o.hash_fields_);
  }
  friend void swap(RecordBatch& a, RecordBatch& b) noexcept { a.swap(b); }

  const SchemaRef& schema() const { return schema_; }
  // Clears the batch and makes it hold records of `schema`.
  void set_schema(SchemaRef schema) {
    clear();
    schema_ = std::move(schema);
    fields_ = schema_->size();
    stride_ = fields_ + 1;
    all_null_ = fields_ == 64 ? ~uint64_t{0} : (uint64_t{1} << fields_) - 1;
    hash_fields_.clear();
    types_.clear();
    var_fields_.clear();
    for (size_t f = 0; f < fields_; ++f) {
      types_.push_back(schema_->field(f).type);
      if (IsVariableLength(types_.back())) var_fields_.push_back(static_cast<uint32_t>(f));
    }
    one_var_field_ = fields_ == 1 && var_fields_.size() == 1;
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
  size_t bytes() const { return arena_.size() + size_ * sizeof(uint64_t); }

  void clear() {
    size_ = 0;
    rows_ = 0;
    hashed_rows_ = 0;
    arena_.clear();
  }
  void reserve(size_t rows, size_t arena) {
    Reserve(rows * stride_);
    arena_.reserve(arena);
  }

  // Appends a row with every field null and returns its index.
  size_t AddRow() {
    NewRow();
    return rows_ - 1;
  }
  // Sets the fields of one new row (AppendRow), keeping the row's place at hand instead of
  // finding it again per field. Fields not set stay null; the batch's own setters may be mixed
  // with it. Valid until the batch's next row is added.
  class RowWriter {
   public:
    void SetInt64(size_t f, int64_t v) {
      assert(IsInt64Like(b_->type(f)));
      Set(f, static_cast<uint64_t>(v));
    }
    // For string and bytes fields: copies `v` into the arena.
    void SetString(size_t f, std::string_view v) {
      assert(IsVariableLength(b_->type(f)));
      uint64_t offset = b_->arena_.Append(v.data(), v.size());
      Set(f, offset << 32 | static_cast<uint32_t>(v.size()));
    }
    size_t row() const { return b_->rows_ - 1; }

   private:
    friend class RecordBatch;
    RowWriter(RecordBatch* b, uint64_t* cells) : b_(b), cells_(cells) {}
    void Set(size_t f, uint64_t v) {
      cells_[f + 1] = v;
      cells_[0] &= ~(uint64_t{1} << f);
    }
    RecordBatch* b_;
    uint64_t* cells_;  // of the row (the arena is elsewhere: appending strings does not move them)
  };
  // Appends a row with every field null; set its fields through the writer.
  RowWriter AppendRow() { return RowWriter(this, NewRow()); }
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
    uint64_t offset = arena_.Append(v.data(), v.size());
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
  FieldType type(size_t f) const { return types_[f]; }

  // Appends rows [begin, end) of `other`, which has the same schema; with their key hashes when
  // `other`'s are valid and this batch is empty or carries valid hashes of the same key fields.
  void AppendRange(const RecordBatch& other, size_t begin, size_t end) {
    if (other.hashes_valid() && (rows_ == 0 || (hashes_valid() && hash_fields_ == other.hash_fields_))) {
      if (rows_ == 0) hash_fields_ = other.hash_fields_;
      for (size_t i = begin; i < end; ++i) AddFromWithHash(other, i, other.hashes_[i]);
      return;
    }
    for (size_t i = begin; i < end; ++i) AddFrom(other, i);
  }
  // Appends row `i` of `other`, which has the same schema.
  __attribute__((always_inline)) void AddFrom(const RecordBatch& other, size_t i) {
    if (size_ + stride_ > capacity_) Grow(size_ + stride_);
    const uint64_t* src = other.cells_.get() + i * stride_;
    uint64_t* dst = cells_.get() + size_;
    size_ += stride_;
    ++rows_;
    if (one_var_field_) {  // one string or bytes field (the word count's words)
      CopyVar(other, src[1], dst + 1);
      dst[0] = src[0];
      return;
    }
    for (size_t c = 0; c < stride_; ++c) dst[c] = src[c];
    for (uint32_t f : var_fields_) CopyVar(other, src[f + 1], dst + f + 1);
  }

  // True when the schema's only field is a string or bytes (the word count's words).
  bool one_var_field() const { return one_var_field_; }
  // AddFromWithHash(other, rows[k], hashes[rows[k]]) for k < n, in one pass; for batches whose
  // schema (the same as other's) is one string or bytes field (one_var_field()).
  void AppendOneVarRowsWithHashes(const RecordBatch& other, const uint32_t* rows, size_t n, const uint64_t* hashes) {
    assert(one_var_field_ && other.one_var_field_);
    const uint64_t* src = other.cells_.get();
    size_t bytes = 0;
    for (size_t k = 0; k < n; ++k) bytes += static_cast<uint32_t>(src[2 * size_t{rows[k]} + 1]);
    Reserve(size_ + 2 * n);
    ReserveHashes(rows_ + n);
    arena_.reserve(arena_.size() + bytes);
    uint64_t* dst = cells_.get() + size_;
    uint64_t* h = hashes_.get() + rows_;
    char* out = arena_.end();
    uint64_t offset = arena_.size();
    const char* from = other.arena_.data();
    for (size_t k = 0; k < n; ++k) {
      const size_t r = rows[k];
      const uint64_t c = src[2 * r + 1];
      const uint32_t len = static_cast<uint32_t>(c);
      CopyShortBytes(out, from + (c >> 32), len);
      out += len;
      dst[2 * k] = src[2 * r];
      dst[2 * k + 1] = offset << 32 | len;
      offset += len;
      h[k] = hashes[r];
    }
    arena_.Commit(bytes);
    size_ += 2 * n;
    rows_ += n;
    hashed_rows_ += n;
  }

  // Key hashes (see the top). The key fields the hashes are of; setting other fields than the
  // batch's makes its hashes invalid unless it is empty.
  const std::vector<int>& key_hash_fields() const { return hash_fields_; }
  void set_key_hash_fields(const std::vector<int>& fields) {
    if (fields == hash_fields_) return;
    hash_fields_ = fields;
    hashed_rows_ = 0;  // invalid from here to clear() if there are rows
  }
  // True when every row carries the KeyHash of its key for `fields`.
  bool HasKeyHashes(const std::vector<int>& fields) const { return hashes_valid() && fields == hash_fields_; }
  // The rows' key hashes; only when HasKeyHashes().
  const uint64_t* key_hashes() const { return hashes_.get(); }
  uint64_t key_hash(size_t row) const { return hashes_[row]; }
  // AddFrom, recording `hash` as the row's key hash (KeyHash of its key for key_hash_fields()).
  __attribute__((always_inline)) void AddFromWithHash(const RecordBatch& other, size_t i, uint64_t hash) {
    if (rows_ >= hash_capacity_) ReserveHashes(rows_ + 1);
    hashes_[rows_] = hash;
    ++hashed_rows_;
    AddFrom(other, i);
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
  uint64_t cell(size_t row, size_t c) const { return cells_[row * stride_ + c]; }
  uint64_t& null_bits(size_t row) { return cells_[row * stride_]; }
  void Set(size_t row, size_t f, uint64_t v) {
    uint64_t* r = cells_.get() + row * stride_;
    r[f + 1] = v;
    r[0] &= ~(uint64_t{1} << f);
  }
  bool hashes_valid() const { return hashed_rows_ == rows_; }
  // Copies the string or bytes value of `src_cell` (a cell of `other`) into the arena, and
  // writes its cell here.
  void CopyVar(const RecordBatch& other, uint64_t src_cell, uint64_t* dst_cell) {
    uint64_t offset = arena_.Append(other.arena_.data() + (src_cell >> 32), static_cast<uint32_t>(src_cell));
    *dst_cell = offset << 32 | static_cast<uint32_t>(src_cell);
  }
  // Appends the cells of a row with every field null.
  uint64_t* NewRow() {
    if (size_ + stride_ > capacity_) Grow(size_ + stride_);
    uint64_t* row = cells_.get() + size_;
    row[0] = all_null_;
    for (size_t c = 1; c < stride_; ++c) row[c] = 0;
    size_ += stride_;
    ++rows_;
    return row;
  }
  void ReserveHashes(size_t rows) {
    if (rows <= hash_capacity_) return;
    size_t cap = std::max<size_t>({rows, hash_capacity_ * 2, 64});
    std::unique_ptr<uint64_t[]> next(new uint64_t[cap]);
    if (hashed_rows_ > 0) std::memcpy(next.get(), hashes_.get(), std::min(hashed_rows_, rows_) * sizeof(uint64_t));
    hashes_ = std::move(next);
    hash_capacity_ = cap;
  }
  void Reserve(size_t cells) {
    if (cells > capacity_) Grow(cells);
  }
  void Grow(size_t need) {
    size_t cap = std::max<size_t>(need, capacity_ * 2);
    cap = std::max<size_t>(cap, 64);
    std::unique_ptr<uint64_t[]> next(new uint64_t[cap]);
    if (size_ > 0) std::memcpy(next.get(), cells_.get(), size_ * sizeof(uint64_t));
    cells_ = std::move(next);
    capacity_ = cap;
  }

  SchemaRef schema_;
  size_t fields_ = 0;
  size_t stride_ = 1;
  size_t rows_ = 0;
  std::unique_ptr<uint64_t[]> cells_;  // size_ used of capacity_ (no zero-filling on growth)
  size_t size_ = 0;
  size_t capacity_ = 0;
  std::vector<FieldType> types_;       // of the schema's fields, for the hot paths
  std::vector<uint32_t> var_fields_;   // the string and bytes fields
  uint64_t all_null_ = 0;              // the null bits of a row of nulls
  bool one_var_field_ = false;         // the only field is a string or bytes (AddFrom's fast path)
  BatchArena arena_;
  // Key hashes: hashes_[r] for rows r < hashed_rows_ of the rows appended with one; valid when
  // hashed_rows_ == rows_ (rows without a hash only ever widen the gap, until clear()).
  std::unique_ptr<uint64_t[]> hashes_;
  size_t hash_capacity_ = 0;
  size_t hashed_rows_ = 0;
  std::vector<int> hash_fields_;
};

}  // namespace cairn
