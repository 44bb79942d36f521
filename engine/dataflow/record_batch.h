// A RecordBatch is the unit in which records move: a sequence of records, each a byte-string
// key and two int64 values, with every key stored in one arena.
//
// Contract: appending amortises to no allocation per record (the arena and the row vector keep
// their capacity across clear()), so a batch is reused rather than freed. Keys returned by
// key() stay valid until the batch is cleared or appended to. Not thread-safe: a batch is owned
// by one thread at a time and handed over whole through a channel.
//
// What the key and the two values mean is the producing operator's schema (see Schema in
// engine/dataflow/operator.h): for the word count, a line is (line, -, -), a word (word, -, -) and a
// count (word, count, -).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

// Field names of the records an operator emits: the key, then the two values ("" = unused).
struct Schema {
  std::string key;
  std::string a;
  std::string b;
};

class RecordBatch {
 public:
  struct Row {
    uint32_t offset;  // of the key in the arena
    uint32_t length;  // of the key
    int64_t a;
    int64_t b;
  };

  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  size_t arena_bytes() const { return arena_.size(); }
  // Approximate bytes held by the records, for batch-size limits and statistics.
  size_t bytes() const { return arena_.size() + rows_.size() * sizeof(Row); }

  void clear() {
    rows_.clear();
    arena_.clear();
  }
  void reserve(size_t rows, size_t arena) {
    rows_.reserve(rows);
    arena_.reserve(arena);
  }

  void Add(std::string_view key, int64_t a = 0, int64_t b = 0) {
    rows_.push_back(Row{static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), a, b});
    arena_.append(key.data(), key.size());
  }
  // Appends rows [begin, end) of `other`.
  void AppendRange(const RecordBatch& other, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) AddFrom(other, i);
  }
  // Appends row `i` of `other`.
  void AddFrom(const RecordBatch& other, size_t i) {
    const Row& r = other.rows_[i];
    Add(other.key(i), r.a, r.b);
  }

  std::string_view key(size_t i) const {
    const Row& r = rows_[i];
    return std::string_view(arena_.data() + r.offset, r.length);
  }
  int64_t a(size_t i) const { return rows_[i].a; }
  int64_t b(size_t i) const { return rows_[i].b; }
  const Row& row(size_t i) const { return rows_[i]; }

 private:
  std::vector<Row> rows_;
  std::string arena_;
};

}  // namespace cairn
