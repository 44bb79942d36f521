// Row or columnar batches? The measurement behind RecordBatch's layout (issue 11): the same
// work done on the engine's row layout (engine/dataflow/record_batch.h: per row a null word and
// one 8-byte cell per field, strings in one arena) and on a columnar prototype defined here
// (one vector per field, strings as offsets into a per-column arena, a null byte per value).
//
//  - WordCount: what tokenize -> hash edge -> count does to a batch of one string field: build
//    it a word at a time, then hash every key and copy each record into one of two outgoing
//    batches (the hash edge), then read key and count fields to emit (word, count) rows.
//  - Clicks6: a 6-field record (user, url string; bytes int64; ts timestamp; kb double; ok bool)
//    as a JSON source makes it, then `filter bytes > 1000` copying the kept rows, then a map
//    reading two fields.
// Items are records. Part of cairn-micro-bench: --benchmark_filter=Layout.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/key_groups.h"
#include "engine/dataflow/record_batch.h"
#include "operators/generator_source.h"

namespace cairn {
namespace {

// The columnar prototype: just enough for these two workloads.
class ColumnBatch {
 public:
  explicit ColumnBatch(SchemaRef s) : schema_(std::move(s)), cols_(schema_->size()) {}
  size_t size() const { return rows_; }
  void clear() {
    for (Column& c : cols_) {
      c.cells.clear();
      c.nulls.clear();
      c.arena.clear();
    }
    rows_ = 0;
  }
  size_t AddRow() {
    for (Column& c : cols_) {
      c.cells.push_back(0);
      c.nulls.push_back(1);
    }
    return rows_++;
  }
  void SetInt64(size_t r, size_t f, int64_t v) { Set(r, f, static_cast<uint64_t>(v)); }
  void SetDouble(size_t r, size_t f, double v) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    Set(r, f, b);
  }
  void SetString(size_t r, size_t f, std::string_view v) {
    Column& c = cols_[f];
    uint64_t off = c.arena.size();
    c.arena.append(v.data(), v.size());
    Set(r, f, off << 32 | v.size());
  }
  int64_t GetInt64(size_t r, size_t f) const { return static_cast<int64_t>(cols_[f].cells[r]); }
  std::string_view GetString(size_t r, size_t f) const {
    const Column& c = cols_[f];
    uint64_t v = c.cells[r];
    return std::string_view(c.arena.data() + (v >> 32), static_cast<uint32_t>(v));
  }
  void AddFrom(const ColumnBatch& o, size_t r) {
    for (size_t f = 0; f < cols_.size(); ++f) {
      Column& c = cols_[f];
      const Column& oc = o.cols_[f];
      c.nulls.push_back(oc.nulls[r]);
      if (IsVariableLength(schema_->field(f).type)) {
        std::string_view s = o.GetString(r, f);
        uint64_t off = c.arena.size();
        c.arena.append(s.data(), s.size());
        c.cells.push_back(off << 32 | s.size());
      } else {
        c.cells.push_back(oc.cells[r]);
      }
    }
    ++rows_;
  }

 private:
  struct Column {
    std::vector<uint64_t> cells;
    std::vector<uint8_t> nulls;
    std::string arena;
  };
  void Set(size_t r, size_t f, uint64_t v) {
    cols_[f].cells[r] = v;
    cols_[f].nulls[r] = 0;
  }
  SchemaRef schema_;
  std::vector<Column> cols_;
  size_t rows_ = 0;
};

const std::vector<std::string>& Words() {
  static const std::vector<std::string> words = [] {
    GeneratorParams p;
    p.words = 1 << 20;
    std::vector<std::string> w;
    WordGenerator gen(p);
    std::string line;
    for (uint64_t n = 0; w.size() < (1u << 20); ++n) {
      gen.Line(n, &line);
      size_t i = 0;
      while (i < line.size()) {
        size_t j = line.find(' ', i);
        if (j == std::string::npos) j = line.size();
        if (j > i) w.emplace_back(line.substr(i, j - i));
        i = j + 1;
      }
    }
    return w;
  }();
  return words;
}

constexpr size_t kBatch = 2048;

template <typename Batch>
void WordCount(benchmark::State& state) {
  const std::vector<std::string>& words = Words();
  SchemaRef word = MakeSchema({{"word", FieldType::kString}});
  SchemaRef counted = MakeSchema({{"word", FieldType::kString}, {"count", FieldType::kInt64}});
  Batch in(word), a(word), b(word), out(counted);
  size_t next = 0;
  int64_t n = 0;
  for (auto _ : state) {
    in.clear();
    a.clear();
    b.clear();
    out.clear();
    for (size_t i = 0; i < kBatch; ++i) {
      in.SetString(in.AddRow(), 0, words[next]);
      if (++next == words.size()) next = 0;
    }
    for (size_t i = 0; i < in.size(); ++i) (KeyHash(in.GetString(i, 0)) >> 63 ? a : b).AddFrom(in, i);
    for (Batch* part : {&a, &b}) {
      for (size_t i = 0; i < part->size(); ++i) {
        size_t r = out.AddRow();
        out.SetString(r, 0, part->GetString(i, 0));
        out.SetInt64(r, 1, static_cast<int64_t>(i));
      }
    }
    benchmark::DoNotOptimize(out.size());
    n += kBatch;
  }
  state.SetItemsProcessed(n);
}

template <typename Batch>
void Clicks6(benchmark::State& state) {
  SchemaRef clicks = MakeSchema({{"user", FieldType::kString}, {"url", FieldType::kString}, {"bytes", FieldType::kInt64},
                                 {"ts", FieldType::kTimestamp}, {"kb", FieldType::kDouble}, {"ok", FieldType::kBool}});
  SchemaRef shaped = MakeSchema({{"user", FieldType::kString}, {"bytes", FieldType::kInt64}});
  const std::vector<std::string>& words = Words();
  Batch in(clicks), kept(clicks), out(shaped);
  size_t next = 0;
  int64_t n = 0;
  for (auto _ : state) {
    in.clear();
    kept.clear();
    out.clear();
    for (size_t i = 0; i < kBatch; ++i) {
      size_t r = in.AddRow();
      const std::string& w = words[next];
      in.SetString(r, 0, w);
      in.SetString(r, 1, "/api/items");
      in.SetInt64(r, 2, static_cast<int64_t>(w.size() * 331 + next % 977));
      in.SetInt64(r, 3, 1764570000000 + static_cast<int64_t>(next));
      in.SetDouble(r, 4, static_cast<double>(w.size()) / 1024.0);
      in.SetInt64(r, 5, 1);
      if (++next == words.size()) next = 0;
    }
    for (size_t i = 0; i < in.size(); ++i)
      if (in.GetInt64(i, 2) > 1000) kept.AddFrom(in, i);
    for (size_t i = 0; i < kept.size(); ++i) {
      size_t r = out.AddRow();
      out.SetString(r, 0, kept.GetString(i, 0));
      out.SetInt64(r, 1, kept.GetInt64(i, 2));
    }
    benchmark::DoNotOptimize(out.size());
    n += kBatch;
  }
  state.SetItemsProcessed(n);
}

// The row layout's SetInt64 asserts the field type in debug builds; ts (timestamp) and ok
// (bool, written as 0/1 through SetInt64 in the prototype) need the typed setters.
class RowBatch : public RecordBatch {
 public:
  explicit RowBatch(SchemaRef s) : RecordBatch(std::move(s)) {}
  void SetInt64(size_t r, size_t f, int64_t v) {
    if (schema()->field(f).type == FieldType::kBool) {
      SetBool(r, f, v != 0);
    } else {
      RecordBatch::SetInt64(r, f, v);
    }
  }
  void AddFrom(const RowBatch& o, size_t r) { RecordBatch::AddFrom(o, r); }
};

void BM_LayoutWordCountRows(benchmark::State& s) { WordCount<RowBatch>(s); }
void BM_LayoutWordCountColumns(benchmark::State& s) { WordCount<ColumnBatch>(s); }
void BM_LayoutClicks6Rows(benchmark::State& s) { Clicks6<RowBatch>(s); }
void BM_LayoutClicks6Columns(benchmark::State& s) { Clicks6<ColumnBatch>(s); }
BENCHMARK(BM_LayoutWordCountRows);
BENCHMARK(BM_LayoutWordCountColumns);
BENCHMARK(BM_LayoutClicks6Rows);
BENCHMARK(BM_LayoutClicks6Columns);

}  // namespace
}  // namespace cairn
