// cairn-format-bench: Google Benchmark benchmarks of the record formats (engine/format): parsing
// jsonl and csv records of a 6-field schema (user string, url string, bytes int64, ts timestamp,
// latency double, cached bool) into batches, writing them back, and file_source reading a file
// whole in each format (lines, csv, jsonl), as the engine runs it (Poll into 2048-record
// batches). Records are the clicks generator's events plus two fields; items/s is records/s.
// Files go to a temporary directory, removed at exit. Run: build/cairn-format-bench
// [--benchmark_filter=REGEX] (docs/benchmarks.md, "Formats").
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/dataflow/record_codec.h"
#include "engine/format/csv.h"
#include "engine/format/record_parser.h"
#include "engine/format/record_writer.h"
#include "jobs/registry.h"
#include "operators/click_generator.h"

namespace cairn {
namespace {

constexpr int kRecords = 200000;
constexpr size_t kBatch = 2048;

SchemaRef Schema6() {
  static const SchemaRef s = MakeSchema({{"user", FieldType::kString}, {"url", FieldType::kString},
                                         {"bytes", FieldType::kInt64}, {"ts", FieldType::kTimestamp},
                                         {"latency", FieldType::kDouble}, {"cached", FieldType::kBool}});
  return s;
}

// The records as jsonl lines (without '\n').
const std::vector<std::string>& JsonLines() {
  static const std::vector<std::string> lines = [] {
    ClickParams p;
    p.events = kRecords;
    ClickGenerator gen(p);
    std::vector<std::string> out(kRecords);
    for (int n = 0; n < kRecords; ++n) {
      std::string& l = out[static_cast<size_t>(n)];
      gen.Event(n, &l);
      l.pop_back();  // '}'
      l += ",\"latency\":" + std::to_string((n * 7919) % 100000 / 1000.0) + ",\"cached\":" + (n % 3 ? "false" : "true") + "}";
    }
    return out;
  }();
  return lines;
}

// The same records parsed once, as one batch.
const RecordBatch& Rows() {
  static const RecordBatch rows = [] {
    RecordBatch b(Schema6());
    auto p = NewRecordParser(TextFormat::kJsonl, Schema6());
    RecordError err;
    for (const std::string& l : JsonLines())
      if (!p->Parse(l, &b, &err)) std::abort();
    return b;
  }();
  return rows;
}

// The records in `format`, each record followed by '\n'.
std::string Text(TextFormat format) {
  std::string text, scratch;
  RecordWriterOptions o{format, ','};
  for (size_t i = 0; i < Rows().size(); ++i) AppendRecord(o, Rows(), i, &scratch, &text);
  return text;
}

// The records' lines of one format, split (csv records hold no newline here).
std::vector<std::string> Lines(TextFormat format) {
  std::vector<std::string> out;
  const std::string text = Text(format);
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    out.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

void ParseBench(benchmark::State& state, TextFormat format) {
  const std::vector<std::string> lines = Lines(format);
  auto parser = NewRecordParser(format, Schema6());
  RecordBatch b(Schema6());
  RecordError err;
  size_t bytes = 0;
  for (const std::string& l : lines) bytes += l.size() + 1;
  for (auto _ : state) {
    for (const std::string& l : lines) {
      if (b.size() == kBatch) b.clear();
      if (!parser->Parse(l, &b, &err)) state.SkipWithError(err.why.c_str());
    }
    benchmark::DoNotOptimize(b.size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(lines.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

void BM_ParseJsonl(benchmark::State& state) { ParseBench(state, TextFormat::kJsonl); }
void BM_ParseCsv(benchmark::State& state) { ParseBench(state, TextFormat::kCsv); }
BENCHMARK(BM_ParseJsonl)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseCsv)->Unit(benchmark::kMillisecond);

void WriteBench(benchmark::State& state, TextFormat format) {
  std::string out, scratch;
  RecordWriterOptions o{format, ','};
  const RecordBatch& rows = Rows();
  for (auto _ : state) {
    out.clear();
    for (size_t i = 0; i < rows.size(); ++i) AppendRecord(o, rows, i, &scratch, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(rows.size()));
}

void BM_WriteLines(benchmark::State& state) { WriteBench(state, TextFormat::kLines); }
void BM_WriteCsv(benchmark::State& state) { WriteBench(state, TextFormat::kCsv); }
void BM_WriteJsonl(benchmark::State& state) { WriteBench(state, TextFormat::kJsonl); }
BENCHMARK(BM_WriteLines)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteCsv)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WriteJsonl)->Unit(benchmark::kMillisecond);

std::string TempDir() {
  static const std::string dir = [] {
    std::string t = (std::filesystem::temp_directory_path() / "cairn-format-bench-XXXXXX").string();
    if (mkdtemp(t.data()) == nullptr) std::abort();
    std::atexit([] { std::filesystem::remove_all(TempDir()); });
    return t;
  }();
  return dir;
}

// file_source reading the whole file (one subtask), in `format`; the file is the records in
// that format (lines: the jsonl text, read as lines).
void SourceBench(benchmark::State& state, TextFormat format) {
  const std::string path = TempDir() + "/in." + TextFormatName(format);
  {
    const std::string text = Text(format == TextFormat::kLines ? TextFormat::kJsonl : format);
    FILE* f = fopen(path.c_str(), "wb");
    fwrite(text.data(), 1, text.size(), f);
    fclose(f);
  }
  const OperatorType* t = FindOperatorType("file_source");
  OperatorConfig c;
  c.id = "source";
  c.type = "file_source";
  for (const ParamSpec& p : t->params) c.params[p.name] = p.default_value;
  c.params["path"] = path;
  c.params["format"] = TextFormatName(format);
  if (format != TextFormat::kLines)
    for (const Field& f : Schema6()->fields()) c.entries["schema"].push_back({f.name, FieldTypeName(f.type), ""});
  SchemaRef schema;
  if (!t->output_schema(c, {}, &schema).ok()) std::abort();
  int64_t records = 0;
  for (auto _ : state) {
    std::unique_ptr<Operator> op = t->create(c);
    auto* source = dynamic_cast<SourceOperator*>(op.get());
    OperatorContext ctx;
    ctx.operator_id = "source";
    ctx.output_schema = schema;
    if (!op->Open(ctx).ok()) std::abort();
    RecordBatch b(schema);
    for (;;) {
      b.clear();
      Operator::Clock::time_point resume;
      auto r = source->Poll(&b, kBatch, &resume);
      records += static_cast<int64_t>(b.size());
      if (r == SourceOperator::PollResult::kFailed) std::abort();
      if (r == SourceOperator::PollResult::kExhausted) break;
    }
    if (!op->Close().ok()) std::abort();
  }
  state.SetItemsProcessed(records);
}

void BM_FileSourceLines(benchmark::State& state) { SourceBench(state, TextFormat::kLines); }
void BM_FileSourceCsv(benchmark::State& state) { SourceBench(state, TextFormat::kCsv); }
void BM_FileSourceJsonl(benchmark::State& state) { SourceBench(state, TextFormat::kJsonl); }
BENCHMARK(BM_FileSourceLines)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FileSourceCsv)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FileSourceJsonl)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cairn

BENCHMARK_MAIN();
