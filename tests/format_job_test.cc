// Whole jobs with the csv and jsonl formats, run as `cairn` child processes: csv -> jsonl and
// jsonl (the clicks generator's events) -> csv are exactly once across a kill -9 (a crash
// point, at a checkpoint, deterministic) and `--restore latest`; on_error: skip counts the
// malformed records in the run summary, also after a restore; on_error: fail exits 1 naming
// file, line and field; jobs/wordcount.yaml writes `word<TAB>count` lines as it always did.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/dataflow/record_codec.h"
#include "engine/format/csv.h"
#include "engine/format/record_parser.h"
#include "engine/format/record_writer.h"
#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> Args(const std::string& job, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"run", job, "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Runs `job` paced and killed (SIGKILL, from a crash point) when checkpoint 3 commits, then
// resumes it unpaced to the end.
void RunKilledAndRestored(const std::string& job) {
  RunResult crashed = RunCairn(Args(job, {"--set", "operators.source.rate=20"}), {"CAIRN_CRASH_AT=checkpoint.committed:3"});
  ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
  RunResult run = RunCairn(Args(job, {"--restore", "latest"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("(restored from checkpoint "));
}

std::string Job(const std::string& dir, const std::string& source, const std::string& sink) {
  return "job: formats\n"
         "parallelism: 2\n"
         "checkpoint:\n"
         "  interval: 20ms\n"
         "  dir: " + dir + "/ck\n"
         "operators:\n"
         "  - id: source\n"
         "    type: file_source\n"
         "    path: " + dir + "/in\n" + source +
         "  - id: sink\n"
         "    type: file_sink\n"
         "    path: " + dir + "/out\n"
         "    inputs: [source]\n" + sink;
}

TEST(FormatJobTest, CsvToJsonlIsExactlyOnceAcrossAKillAndRestore) {
  ScratchDir dir;
  const SchemaRef schema = MakeSchema({{"id", FieldType::kInt64}, {"name", FieldType::kString}, {"score", FieldType::kDouble},
                                       {"ok", FieldType::kBool}, {"at", FieldType::kTimestamp}});
  // 4000 records (20 s at 200 records/s per subtask): names with commas, quotes and newlines,
  // empty fields (null), timestamps as ms and as ISO-8601 with an offset.
  const char* names[] = {"plain", "a, b", "say \"hi\"", "two\nlines", "", "caf\xc3\xa9"};
  std::string csv = "id,name,score,ok,at\r\n";
  std::vector<std::string> expected;
  RecordBatch b(schema);
  for (int i = 0; i < 4000; ++i) {
    std::string name = names[i % 6];
    b.clear();
    size_t r = b.AddRow();
    b.SetInt64(r, 0, i);
    b.SetString(r, 1, name);
    if (i % 7 != 0) b.SetDouble(r, 2, i * 0.25);
    b.SetBool(r, 3, i % 3 == 0);
    const int64_t ms = 1796083200000 + i * 1000;
    b.SetInt64(r, 4, ms);
    std::string quoted_name;
    AppendCsvField(name, ',', false, &quoted_name);
    csv += std::to_string(i) + "," + quoted_name + "," + (i % 7 != 0 ? std::to_string(i * 0.25) : "") + "," +
           (i % 3 == 0 ? "true" : "false") + ",";
    if (i % 2) {
      csv += std::to_string(ms);
    } else {
      std::string iso;
      AppendTimestamp(ms + 3600000, &iso);  // the same instant at +01:00
      csv += iso.substr(0, iso.size() - 1) + "+01:00";
    }
    csv += "\n";
    std::string json;
    AppendJsonObject(b, r, &json);
    expected.push_back(json);
  }
  WriteText(dir / "in", csv);
  const std::string job = dir / "job.yaml";
  WriteText(job, Job(dir.path(),
                     "    format: csv\n    header: true\n    schema: {id: int64, name: string, score: double, ok: bool, "
                     "at: timestamp}\n",
                     "    format: jsonl\n"));
  RunKilledAndRestored(job);
  EXPECT_EQ(Sorted(CommittedLines(dir / "out")), Sorted(expected));
}

TEST(FormatJobTest, ClicksJsonlToCsvIsExactlyOnceAcrossAKillAndRestoreWithAHeaderPerFile) {
  ScratchDir dir;
  RunResult gen = RunCairn({"generate", "--format", "clicks", "--out", dir / "in", "--events", "4000", "--seed", "7"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const std::string job = dir / "job.yaml";
  WriteText(job, Job(dir.path(), "    format: jsonl\n    schema: {user: string, url: string, bytes: int64, ts: timestamp}\n",
                     "    format: csv\n    header: true\n    delimiter: ';'\n"));
  RunKilledAndRestored(job);
  // Expected: every event as a csv record, read back through the jsonl parser.
  const SchemaRef schema = MakeSchema({{"user", FieldType::kString}, {"url", FieldType::kString},
                                       {"bytes", FieldType::kInt64}, {"ts", FieldType::kTimestamp}});
  auto parser = NewRecordParser(TextFormat::kJsonl, schema);
  RecordBatch rows(schema);
  const std::string text = ReadText(dir / "in");
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    RecordError err;
    ASSERT_TRUE(parser->Parse(std::string_view(text).substr(at, nl - at), &rows, &err)) << err.why;
    at = nl + 1;
  }
  ASSERT_EQ(rows.size(), 4000u);
  std::vector<std::string> expected;
  std::string scratch;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string line;
    AppendRecord(RecordWriterOptions{TextFormat::kCsv, ';'}, rows, i, &scratch, &line);
    line.pop_back();
    expected.push_back(line);
  }
  std::vector<std::string> got;
  for (const auto& [name, content] : PartFiles(dir / "out")) {
    ASSERT_EQ(content.rfind("user;url;bytes;ts\n", 0), 0u) << name << " does not start with the header";
    std::string body = content.substr(std::string("user;url;bytes;ts\n").size());
    for (size_t at = 0; at < body.size();) {
      size_t nl = body.find('\n', at);
      got.push_back(body.substr(at, nl - at));
      at = nl + 1;
    }
  }
  EXPECT_EQ(Sorted(got), Sorted(expected));
}

// 3000 jsonl lines, every 97th malformed (bad JSON or a wrong type), at lines 97, 194, ...
std::string JsonlWithBadLines(int* bad) {
  std::string text;
  *bad = 0;
  for (int i = 1; i <= 3000; ++i) {
    if (i % 97 == 0) {
      text += (*bad % 2 ? "{\"n\":\"" + std::to_string(i) + "\"}\n" : "{\"n\":" + std::to_string(i) + ",}\n");
      ++*bad;
    } else {
      text += "{\"n\":" + std::to_string(i) + "}\n";
    }
  }
  return text;
}

TEST(FormatJobTest, SkippedRecordsAreCountedInTheSummaryAlsoAfterAKillAndRestore) {
  ScratchDir dir;
  int bad = 0;
  WriteText(dir / "in", JsonlWithBadLines(&bad));
  const std::string job = dir / "job.yaml";
  WriteText(job, Job(dir.path(), "    format: jsonl\n    schema: {n: int64}\n    on_error: skip\n", ""));
  RunResult crashed = RunCairn({"run", job, "--set", "operators.source.rate=20"}, {"CAIRN_CRASH_AT=checkpoint.committed:3"});
  ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
  RunResult run = RunCairn({"run", job, "--restore", "latest"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("records skipped " + std::to_string(bad) + " (malformed input, on_error: skip)"));
  // The checkpoint statistics: the final checkpoint, taken after the sources finished, counts
  // them all; every earlier one no more.
  RunResult list = RunCairn({"checkpoints", dir / "ck"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr(" records_skipped=" + std::to_string(bad) + " final\n"));
  RunResult json = RunCairn({"checkpoints", dir / "ck", "--json"});
  EXPECT_THAT(json.out, HasSubstr("\"records_skipped\":" + std::to_string(bad) + ",\"final\":true}"));
  EXPECT_EQ(CommittedLines(dir / "out").size(), static_cast<size_t>(3000 - bad));
}

TEST(FormatJobTest, AMalformedRecordWithOnErrorFailExitsOneNamingFileLineAndField) {
  ScratchDir dir;
  int bad = 0;
  WriteText(dir / "in", JsonlWithBadLines(&bad));
  const std::string job = dir / "job.yaml";
  WriteText(job, Job(dir.path(), "    format: jsonl\n    schema: {n: int64}\n", ""));
  RunResult run = RunCairn({"run", job, "--quiet"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  // Subtask 0 meets line 97 (invalid JSON) first, subtask 1 line 1552 (its range starts there;
  // a string); either may fail the job first.
  EXPECT_THAT(run.err, ::testing::AnyOf(
                           HasSubstr("malformed jsonl record at " + dir / "in" + ":97: invalid JSON"),
                           HasSubstr("malformed jsonl record at " + dir / "in" +
                                     ":1552: field 'n': expected an integer, got a string \"1552\"")));
  // csv: the record's first line, and the field.
  WriteText(dir / "in", "1,\"a\nb\"\n2,c\nx,d\n");
  std::string one = Job(dir.path(), "    format: csv\n    schema: {n: int64, s: string}\n", "");
  one.replace(one.find("parallelism: 2"), 14, "parallelism: 1");
  WriteText(job, one);
  fs::remove_all(dir / "ck");
  fs::remove_all(dir / "out");
  run = RunCairn({"run", job, "--quiet"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_THAT(run.err, HasSubstr("malformed csv record at " + dir / "in" + ":4: field 'n': expected an int64, got 'x'"));
}

// The lines format is what the word count always wrote: `word<TAB>count`, one line per update.
TEST(FormatJobTest, WordcountOutputIsWordTabCountLinesAsBefore) {
  ScratchDir dir;
  RunResult gen = RunCairn({"generate", "--out", dir / "in.txt", "--words", "20000", "--vocabulary", "300"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  RunResult run = RunCairn({"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet", "--set",
                            "operators.source.path=" + dir / "in.txt", "--set", "operators.sink.path=" + dir / "out",
                            "--set", "checkpoint.dir=" + dir / "ck"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> expected;
  for (const auto& [word, n] : ExpectedCounts(dir / "in.txt"))
    for (int64_t k = 1; k <= n; ++k) expected.push_back(word + "\t" + std::to_string(k));
  EXPECT_EQ(Sorted(CommittedLines(dir / "out")), Sorted(expected));
}

}  // namespace
}  // namespace cairn::testing
