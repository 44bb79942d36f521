// file_source and file_sink with the csv and jsonl formats, operator by operator: the records
// of any number of subtasks are the file's records exactly once (csv records with newlines
// inside quotes too, whatever byte a range starts at), a header is skipped, a malformed record
// fails naming file, line and field or is counted with on_error: skip, and a restore resumes
// after the last emitted record with its skipped count. The load-time checks of the parameters
// and the schema are in bad_input_test (exit 2); whole jobs in format_job_test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/dataflow/operator_capabilities.h"
#include "engine/dataflow/record_codec.h"
#include "engine/format/record_parser.h"
#include "jobs/registry.h"
#include "state/checkpoint_metadata.h"
#include "tests/test_util.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;

OperatorConfig SourceConfig(const std::string& path, const std::string& format,
                            const std::vector<std::pair<std::string, std::string>>& schema,
                            const std::map<std::string, std::string>& params = {}) {
  const OperatorType* t = FindOperatorType("file_source");
  OperatorConfig c;
  c.id = "source";
  c.type = "file_source";
  for (const ParamSpec& p : t->params) c.params[p.name] = p.default_value;
  c.params["path"] = path;
  c.params["format"] = format;
  for (const auto& [k, v] : params) {
    c.params[k] = v;
    c.places[k] = "job.yaml:1:1";
  }
  for (const auto& [name, type] : schema) c.entries["schema"].push_back({name, type, "job.yaml:2:3"});
  if (!schema.empty()) c.places["schema"] = "job.yaml:2:1";
  return c;
}

SchemaRef SchemaOf(const OperatorConfig& c) {
  SchemaRef s;
  Status st = FindOperatorType("file_source")->output_schema(c, {}, &s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

struct Opened {
  std::unique_ptr<Operator> op;
  SourceOperator* source = nullptr;
  Status status;
};

Opened Open(const OperatorConfig& c, uint32_t subtask, uint32_t parallelism,
            std::optional<std::string> restored = std::nullopt) {
  Opened o;
  o.op = FindOperatorType("file_source")->create(c);
  o.source = dynamic_cast<SourceOperator*>(o.op.get());
  OperatorContext ctx;
  ctx.operator_id = c.id;
  ctx.subtask = subtask;
  ctx.parallelism = parallelism;
  ctx.output_schema = SchemaOf(c);
  if (restored) {
    ctx.restored_checkpoint = 1;
    ctx.restored_operator_state = *restored;
  }
  o.status = o.op->Open(ctx);
  return o;
}

// Polls until exhausted (at most `limit` records when given), appending each record as JSON.
SourceOperator::PollResult Drain(const Opened& o, const SchemaRef& schema, std::vector<std::string>* out,
                                 size_t limit = SIZE_MAX) {
  RecordBatch b(schema);
  SourceOperator::PollResult r = SourceOperator::PollResult::kMore;
  while (limit > 0) {
    b.clear();
    Operator::Clock::time_point resume;
    r = o.source->Poll(&b, std::min<size_t>(limit, 7), &resume);
    for (size_t i = 0; i < b.size(); ++i) {
      std::string s;
      AppendJsonObject(b, i, &s);
      out->push_back(s);
    }
    limit -= std::min(limit, b.size());
    if (r == SourceOperator::PollResult::kExhausted || r == SourceOperator::PollResult::kFailed) break;
  }
  return r;
}

std::vector<std::string> ReadAll(const OperatorConfig& c, uint32_t parallelism) {
  std::vector<std::string> all;
  for (uint32_t i = 0; i < parallelism; ++i) {
    Opened o = Open(c, i, parallelism);
    EXPECT_TRUE(o.status.ok()) << o.status.ToString();
    if (!o.status.ok()) continue;
    Drain(o, SchemaOf(c), &all);
    Status s = o.op->Close();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return all;
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

const std::vector<std::pair<std::string, std::string>> kCsvSchema = {{"id", "int64"}, {"name", "string"}, {"score", "double"}};

// A csv file whose records hold delimiters, quotes and newlines (LF and CRLF) inside quotes,
// and the JSON of each record as file_source should emit it.
void CsvWithQuotedNewlines(std::string* text, std::vector<std::string>* json) {
  const char* names[] = {"plain", "with, comma", "with \"quotes\"", "two\nlines", "three\nshort\nlines",
                         "crlf\r\ninside", "", "\"\n\"", "x"};
  for (int i = 0; i < 300; ++i) {
    std::string name = names[i % 9];
    std::string field = name;
    if (name.find_first_of(",\"\r\n") != std::string::npos || name.empty()) {
      field = "\"";
      for (char ch : name) field += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      field += "\"";
    }
    *text += std::to_string(i) + "," + field + "," + std::to_string(i) + ".5" + (i % 4 == 0 ? "\r\n" : "\n");
    RecordBatch b(MakeSchema({{"id", FieldType::kInt64}, {"name", FieldType::kString}, {"score", FieldType::kDouble}}));
    size_t r = b.AddRow();
    b.SetInt64(r, 0, i);
    b.SetString(r, 1, name);
    b.SetDouble(r, 2, i + 0.5);
    std::string s;
    AppendJsonObject(b, r, &s);
    json->push_back(s);
  }
}

TEST(FileSourceFormatTest, CsvRecordsWithNewlinesInsideQuotesAreReadExactlyOnceByAnyNumberOfSubtasks) {
  ScratchDir dir;
  std::string text;
  std::vector<std::string> expected;
  CsvWithQuotedNewlines(&text, &expected);
  WriteText(dir / "in.csv", text);
  OperatorConfig c = SourceConfig(dir / "in.csv", "csv", kCsvSchema);
  EXPECT_EQ(ReadAll(c, 1), expected);  // one subtask: in file order
  for (uint32_t p = 2; p <= 40; p += (p < 10 ? 1 : 7)) {
    SCOPED_TRACE("parallelism " + std::to_string(p));
    EXPECT_EQ(Sorted(ReadAll(c, p)), Sorted(expected));
  }
}

TEST(FileSourceFormatTest, CsvHeaderIsSkippedAndOtherDelimitersWork) {
  ScratchDir dir;
  WriteText(dir / "in.csv", "id;name;score\n1;a,b;2.5\n2;\"x;y\";\n");
  OperatorConfig c = SourceConfig(dir / "in.csv", "csv", kCsvSchema, {{"header", "true"}, {"delimiter", ";"}});
  EXPECT_THAT(ReadAll(c, 1), ::testing::ElementsAre(R"({"id":1,"name":"a,b","score":2.5})",
                                                    R"({"id":2,"name":"x;y","score":null})"));
  for (uint32_t p = 2; p <= 5; ++p) EXPECT_EQ(ReadAll(c, p).size(), 2u);
}

TEST(FileSourceFormatTest, JsonlLinesAreReadExactlyOnceByAnyNumberOfSubtasksAndBlankLinesSkipped) {
  ScratchDir dir;
  std::string text;
  std::vector<std::string> expected;
  for (int i = 0; i < 500; ++i) {
    text += R"({"user":"u)" + std::to_string(i % 17) + R"(","bytes":)" + std::to_string(i * 3) +
            R"(,"ts":")" + (i % 2 ? "2026-12-01T00:00:01Z" : "2026-12-01 00:00:01.5") + "\"}\n";
    if (i % 50 == 0) text += "\n  \n";
    expected.push_back(R"({"user":"u)" + std::to_string(i % 17) + R"(","bytes":)" + std::to_string(i * 3) +
                       R"(,"ts":"2026-12-01T00:00:01.)" + (i % 2 ? "000" : "500") + "Z\"}");
  }
  WriteText(dir / "in.jsonl", text);
  OperatorConfig c =
      SourceConfig(dir / "in.jsonl", "jsonl", {{"user", "string"}, {"bytes", "int64"}, {"ts", "timestamp"}});
  EXPECT_EQ(ReadAll(c, 1), expected);
  for (uint32_t p = 2; p <= 9; ++p) EXPECT_EQ(Sorted(ReadAll(c, p)), Sorted(expected)) << p;
}

TEST(FileSourceFormatTest, AMalformedRecordFailsNamingFileLineAndField) {
  ScratchDir dir;
  // Record 3 starts on line 4 (record 2 spans two lines).
  WriteText(dir / "in.csv", "1,a,1.5\n2,\"b\nc\",2\n3,d,x\n4,e,4\n");
  OperatorConfig c = SourceConfig(dir / "in.csv", "csv", kCsvSchema);
  for (uint32_t p : {1u, 2u}) {
    Status failed;
    for (uint32_t i = 0; i < p; ++i) {
      Opened o = Open(c, i, p);
      ASSERT_TRUE(o.status.ok()) << o.status.ToString();
      std::vector<std::string> got;
      Drain(o, SchemaOf(c), &got);
      Status s = o.op->Close();
      if (!s.ok()) failed = s;
    }
    ASSERT_FALSE(failed.ok());
    EXPECT_THAT(failed.message(), HasSubstr(dir / "in.csv" + ":4: field 'score': expected a double, got 'x'"));
    EXPECT_EQ(failed.ExitCode(), 1);
  }
  WriteText(dir / "in.jsonl", "{\"a\":1}\n{\"a\":2}\n{\"a\":\"three\"}\n");
  OperatorConfig j = SourceConfig(dir / "in.jsonl", "jsonl", {{"a", "int64"}});
  Opened o = Open(j, 0, 1);
  ASSERT_TRUE(o.status.ok());
  std::vector<std::string> got;
  Drain(o, SchemaOf(j), &got);
  EXPECT_EQ(got.size(), 2u);
  Status s = o.op->Close();
  EXPECT_THAT(s.message(), HasSubstr(dir / "in.jsonl" + ":3: field 'a': expected an integer, got a string \"three\""));
}

TEST(FileSourceFormatTest, SkippedRecordsAreCountedAndTheCountSurvivesARestore) {
  ScratchDir dir;
  std::string text;
  int good = 0, bad = 0;
  for (int i = 0; i < 200; ++i) {
    if (i % 9 == 4) {
      text += "{\"a\":" + std::to_string(i) + ",\"b\":tru}\n";  // invalid JSON
      ++bad;
    } else if (i % 13 == 6) {
      text += "{\"a\":\"" + std::to_string(i) + "\"}\n";  // wrong type
      ++bad;
    } else {
      text += "{\"a\":" + std::to_string(i) + "}\n";
      ++good;
    }
  }
  WriteText(dir / "in.jsonl", text);
  OperatorConfig c = SourceConfig(dir / "in.jsonl", "jsonl", {{"a", "int64"}, {"b", "bool"}}, {{"on_error", "skip"}});
  // Read some, snapshot, then restore from the snapshot (at the same and at another
  // parallelism) and read the rest.
  for (uint32_t p : {1u, 3u}) {
    SCOPED_TRACE("parallelism " + std::to_string(p));
    std::vector<std::string> got;
    uint64_t skipped = 0;
    for (uint32_t i = 0; i < p; ++i) {
      Opened first = Open(c, i, p);
      ASSERT_TRUE(first.status.ok());
      Drain(first, SchemaOf(c), &got, 25);
      OperatorSnapshot snap;
      ASSERT_TRUE(first.op->SnapshotState(1, &snap).ok());
      Opened second = Open(c, i, p, snap.operator_state);
      ASSERT_TRUE(second.status.ok()) << second.status.ToString();
      Drain(second, SchemaOf(c), &got);
      ASSERT_TRUE(second.op->Close().ok());
      const auto* counter = dynamic_cast<const SkippedRecords*>(second.op.get());
      ASSERT_NE(counter, nullptr);
      EXPECT_TRUE(counter->counts_skipped());
      skipped += counter->records_skipped();
    }
    EXPECT_EQ(got.size(), static_cast<size_t>(good));
    EXPECT_EQ(skipped, static_cast<uint64_t>(bad));
  }
  // Rescaled: the states of 3 subtasks redistributed to 2 keep the ranges and the counts.
  const OperatorStateRule& rule = FindOperatorType("file_source")->state;
  std::vector<std::string> got;
  std::vector<std::string> items;
  for (uint32_t i = 0; i < 3; ++i) {
    Opened o = Open(c, i, 3);
    ASSERT_TRUE(o.status.ok());
    Drain(o, SchemaOf(c), &got, 20);
    OperatorSnapshot snap;
    ASSERT_TRUE(o.op->SnapshotState(1, &snap).ok());
    ASSERT_TRUE(rule.to_items(snap.operator_state, i, 3, &items).ok());
  }
  std::vector<std::string> half_a(items.begin(), items.begin() + static_cast<long>(items.size() / 2));
  std::vector<std::string> half_b(items.begin() + static_cast<long>(items.size() / 2), items.end());
  uint64_t skipped = 0;
  for (const auto& half : {half_a, half_b}) {
    Opened o = Open(c, 0, 2, rule.from_items(half));
    ASSERT_TRUE(o.status.ok()) << o.status.ToString();
    Drain(o, SchemaOf(c), &got);
    skipped += dynamic_cast<const SkippedRecords*>(o.op.get())->records_skipped();
  }
  EXPECT_EQ(got.size(), static_cast<size_t>(good));
  EXPECT_EQ(skipped, static_cast<uint64_t>(bad));
}

TEST(FileSourceFormatTest, LinesSourceStateBytesAreAsBeforeFormats) {
  ScratchDir dir;
  WriteText(dir / "in.txt", "a\nb\n");
  const OperatorType* t = FindOperatorType("file_source");
  OperatorConfig c;
  c.id = "source";
  c.type = "file_source";
  for (const ParamSpec& p : t->params) c.params[p.name] = p.default_value;
  c.params["path"] = dir / "in.txt";
  Opened o = Open(c, 0, 1);
  ASSERT_TRUE(o.status.ok());
  OperatorSnapshot snap;
  ASSERT_TRUE(o.op->SnapshotState(1, &snap).ok());
  EXPECT_EQ(snap.operator_state.size(), 16u);  // (position, size), no skipped count
  EXPECT_FALSE(dynamic_cast<const SkippedRecords*>(o.op.get())->counts_skipped());
}

// The checkpoint statistics: a subtask's records_skipped is an optional _metadata attribute,
// written only for operators that skip records, so other lines stay as they were.
TEST(FileSourceFormatTest, RecordsSkippedIsAnOptionalSubtaskAttributeOfTheMetadata) {
  CheckpointMetadata in;
  in.id = 3;
  in.job_name = "clicks";
  in.mode = "aligned";
  SubtaskStateHandle counted;
  counted.operator_id = "source";
  counted.records_skipped = 17;
  SubtaskStateHandle plain;
  plain.operator_id = "sink";
  in.subtasks = {counted, plain};
  const std::string bytes = EncodeMetadata(in);
  EXPECT_NE(bytes.find(" async_ms=0 records_skipped=17\n"), std::string::npos) << bytes;
  EXPECT_EQ(bytes.find("records_skipped", bytes.find("op=sink")), std::string::npos) << bytes;
  CheckpointMetadata out;
  Status s = DecodeMetadata("chk-3/_metadata", bytes, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(out.subtasks.size(), 2u);
  EXPECT_EQ(out.subtasks[0].records_skipped, 17);
  EXPECT_EQ(out.subtasks[1].records_skipped, -1);
}

}  // namespace
}  // namespace cairn::testing
