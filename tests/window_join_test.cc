// Specification of the window join (`join` with `window: {kind: tumble, size}` and `time`,
// operators/join.cc), in whole jobs run as `cairn` child processes: two csv inputs with event
// times out of order by up to 3 s, read with `watermark: {max_out_of_orderness: 4s}`, joined per
// user in 1 s tumbling windows into a jsonl file sink. The output equals a nested-loop join per
// window computed here from the inputs, at any parallelism, on either state backend, and stays
// exactly that across SIGKILLs and restores (also at another parallelism) in aligned and
// unaligned checkpoints. Within max_out_of_orderness no record is late, so the output does not
// depend on when watermarks arrive. Records behind the watermark are dropped and counted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/record_codec.h"
#include "tests/test_util.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kBase = 1796083200000;  // 2026-12-01T00:00:00Z
constexpr int64_t kWindow = 1000;

struct Event {
  std::string user;
  int64_t v;
  int64_t at;
};

// n events `step` ms apart, each up to 3 s earlier than its place, for 5 users.
std::vector<Event> Events(int n, int64_t step, int64_t first_v, int salt) {
  std::vector<Event> ev;
  for (int i = 0; i < n; ++i) {
    const int64_t jitter = (int64_t{i} * 7919 + salt) % 31 * 100;  // 0 .. 3000 ms
    ev.push_back({"u" + std::to_string((i + salt) % 5), first_v + i, kBase + int64_t{i} * step - jitter});
  }
  return ev;
}

std::string Csv(const char* header, const std::vector<Event>& ev) {
  std::string csv = std::string(header) + "\n";
  for (const Event& e : ev) csv += e.user + "," + std::to_string(e.v) + "," + std::to_string(e.at) + "\n";
  return csv;
}

int64_t WindowOf(int64_t t) { return (t / kWindow - (t % kWindow != 0 && t < 0 ? 1 : 0)) * kWindow; }

// What the job must emit: every (left, right) pair of one user in one window, as the sink's lines.
std::vector<std::string> Expected(const std::vector<Event>& left, const std::vector<Event>& right) {
  SchemaRef schema = MakeSchema({{"lv", FieldType::kInt64}, {"rv", FieldType::kInt64}, {"user", FieldType::kString},
                                 {"window_start", FieldType::kTimestamp}, {"window_end", FieldType::kTimestamp}});
  RecordBatch b(schema);
  std::vector<std::string> lines;
  for (const Event& l : left)
    for (const Event& r : right) {
      if (l.user != r.user || WindowOf(l.at) != WindowOf(r.at)) continue;
      b.clear();
      size_t row = b.AddRow();
      b.SetInt64(row, 0, l.v);
      b.SetInt64(row, 1, r.v);
      b.SetString(row, 2, l.user);
      b.SetInt64(row, 3, WindowOf(l.at));
      b.SetInt64(row, 4, WindowOf(l.at) + kWindow);
      std::string json;
      AppendJsonObject(b, row, &json);
      lines.push_back(json);
    }
  std::sort(lines.begin(), lines.end());
  return lines;
}

const char* const kJoin =
    "  - id: joined\n"
    "    type: join\n"
    "    inputs: [clicks, views]\n"
    "    on: {clicks: [user], views: [name]}\n"
    "    window: {kind: tumble, size: 1s}\n"
    "    time: {clicks: at, views: at}\n"
    "    select: {lv: lv, rv: rv, user: user, window_start: window_start, window_end: window_end}\n"
    "  - id: sink\n"
    "    type: file_sink\n"
    "    format: jsonl\n"
    "    inputs: [joined]\n";

class WindowJoinJob {
 public:
  WindowJoinJob() : left_(Events(2000, 50, 0, 0)), right_(Events(1200, 80, 100000, 3)) {
    WriteText(dir_ / "clicks.csv", Csv("user,lv,at", left_));
    WriteText(dir_ / "views.csv", Csv("name,rv,at", right_));
    WriteText(dir_ / "job.yaml",
              "job: window-join\n"
              "parallelism: 2\n"
              "checkpoint:\n"
              "  interval: 20ms\n"
              "  dir: " + dir_ / "ck" + "\n"
              "operators:\n"
              "  - id: clicks\n    type: file_source\n    path: " + dir_ / "clicks.csv" + "\n"
              "    format: csv\n    header: true\n    schema: {user: string, lv: int64, at: timestamp}\n"
              "    watermark: {field: at, max_out_of_orderness: 4s}\n"
              "  - id: views\n    type: file_source\n    path: " + dir_ / "views.csv" + "\n"
              "    format: csv\n    header: true\n    schema: {name: string, rv: int64, at: timestamp}\n"
              "    watermark: {field: at, max_out_of_orderness: 4s}\n" +
              kJoin + "    path: " + dir_ / "out" + "\n");
  }
  RunResult Run(std::vector<std::string> extra, const std::vector<std::string>& env = {}) {
    std::vector<std::string> args = {"run", dir_ / "job.yaml", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCairn(args, env);
  }
  std::vector<std::string> Committed() const {
    std::vector<std::string> lines = CommittedLines(dir_ / "out");
    std::sort(lines.begin(), lines.end());
    return lines;
  }
  std::vector<std::string> Want() const { return Expected(left_, right_); }
  std::string path(const std::string& name) const { return dir_ / name; }

 private:
  ScratchDir dir_;
  std::vector<Event> left_, right_;
};

struct Case {
  const char* mode;
  const char* backend;
  int parallelism;  // of the (last) run
};

class WindowJoinRun : public ::testing::TestWithParam<Case> {};

TEST_P(WindowJoinRun, EmitsEveryPairOfAWindowOnceAsANestedLoopJoinPerWindowDoes) {
  WindowJoinJob job;
  RunResult r = job.Run({"--set", "parallelism=" + std::to_string(GetParam().parallelism), "--set",
                         std::string("state.backend=") + GetParam().backend});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> want = job.Want();
  ASSERT_GT(want.size(), 3000u) << "the inputs must match often";
  EXPECT_EQ(job.Committed(), want);
}

INSTANTIATE_TEST_SUITE_P(Runs, WindowJoinRun,
                         ::testing::Values(Case{"aligned", "heap", 1}, Case{"aligned", "heap", 3},
                                           Case{"aligned", "rocksdb", 2}),
                         [](const auto& info) {
                           return std::string(info.param.backend) + "_p" + std::to_string(info.param.parallelism);
                         });

class WindowJoinKill : public ::testing::TestWithParam<Case> {};

TEST_P(WindowJoinKill, IsExactlyOnceAcrossTwoSigkillsAndRestores) {
  WindowJoinJob job;
  const std::vector<std::string> common = {"--set", std::string("checkpoint.mode=") + GetParam().mode, "--set",
                                           std::string("state.backend=") + GetParam().backend};
  // Paced (the inputs take seconds) and killed as the run's third checkpoint commits.
  for (int k = 0; k < 2; ++k) {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--set", "operators.clicks.rate=400", "--set", "operators.views.rate=240"});
    if (k > 0) args.insert(args.end(), {"--restore", "latest"});
    RunResult crashed = job.Run(args, {"CAIRN_CRASH_AT=checkpoint.committed:3"});
    ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
  }
  std::vector<std::string> args = common;
  args.insert(args.end(), {"--restore", "latest", "--set", "parallelism=" + std::to_string(GetParam().parallelism)});
  RunResult r = job.Run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(restored from checkpoint "));
  EXPECT_EQ(job.Committed(), job.Want());
}

INSTANTIATE_TEST_SUITE_P(Modes, WindowJoinKill,
                         ::testing::Values(Case{"aligned", "heap", 2}, Case{"unaligned", "heap", 3},
                                           Case{"aligned", "rocksdb", 1}),
                         [](const auto& info) {
                           return std::string(info.param.mode) + "_" + info.param.backend + "_p" +
                                  std::to_string(info.param.parallelism);
                         });

// One source split in two by filters, so that both join inputs carry the source's watermarks
// (sent after every source batch). In order, 100 ms apart; every 1000th record from 150000 on is
// 10000 s late, that is 100000 records (about 100 source batches) after the records whose
// watermark passed its window. A channel holds at most 16 batches, and the source sends a
// watermark on both edges after each batch, so by then the join has read that watermark on both
// inputs: the record is late in every run.
TEST(WindowJoin, RecordsBehindTheWatermarkAreDroppedAndCounted) {
  ScratchDir dir;
  std::vector<Event> left, right, ev;
  int late = 0;
  std::string csv = "side,user,v,at\n";
  for (int i = 0; i < 160000; ++i) {
    Event e{"u" + std::to_string(i % 4), i, kBase + int64_t{i} * 100};
    const bool is_late = i >= 150000 && i % 1000 == 0;
    if (is_late) {
      e.at -= 10000000;
      ++late;
    }
    const bool is_left = i % 3 != 0;
    if (!is_late) (is_left ? left : right).push_back(e);
    csv += std::string(is_left ? "L," : "R,") + e.user + "," + std::to_string(e.v) + "," + std::to_string(e.at) + "\n";
  }
  WriteText(dir / "in.csv", csv);
  std::string join = kJoin;
  auto swap = [&](const std::string& from, const std::string& to) { join.replace(join.find(from), from.size(), to); };
  swap("views: [name]", "views: [user]");
  swap("lv: lv, rv: rv, user: user", "lv: clicks.v, rv: views.v, user: clicks.user");
  WriteText(dir / "job.yaml",
            "job: late-join\n"
            "parallelism: 1\n"
            "checkpoint:\n"
            "  interval: 1s\n"
            "  dir: " + dir / "ck" + "\n"
            "operators:\n"
            "  - id: events\n    type: file_source\n    path: " + dir / "in.csv" + "\n"
            "    format: csv\n    header: true\n    schema: {side: string, user: string, v: int64, at: timestamp}\n"
            "    watermark: {field: at, max_out_of_orderness: 4s}\n"
            "  - {id: clicks, type: filter, inputs: [events], where: \"side = 'L'\"}\n"
            "  - {id: views, type: filter, inputs: [events], where: \"side = 'R'\"}\n" +
            join + "    path: " + dir / "out" + "\n");
  RunResult r = RunCairn({"run", dir / "job.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("records late    " + std::to_string(late) + " "));
  std::vector<std::string> got = CommittedLines(dir / "out");
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, Expected(left, right));
}

TEST(WindowJoin, ABadWindowOrTimeIsRefusedWithItsPlace) {
  WindowJoinJob job;
  struct Bad {
    const char* from;
    const char* to;
    const char* says;
  } cases[] = {
      {"{kind: tumble, size: 1s}", "{kind: hop, size: 1s}", "window.kind must be tumble"},
      {"{kind: tumble, size: 1s}", "{kind: tumble, size: 0s}", "window.size must be a duration > 0"},
      {"{kind: tumble, size: 1s}", "{kind: tumble, size: 1s, slide: 1s}", "window has no key 'slide'"},
      {"{clicks: at, views: at}", "{clicks: at}", "a window join needs time: {clicks: FIELD, views: FIELD}"},
      {"{clicks: at, views: at}", "{clicks: at, views: lv}", "time of 'views': no field 'lv'"},
      {"{clicks: at, views: at}", "{clicks: at, views: rv}", "field 'rv' is int64"},  // accepted type: no error
      {"{clicks: at, views: at}", "{clicks: at, views: name}", "field 'name' is string, but it must be a timestamp"},
      {"{clicks: at, views: at}", "{clicks: at, viewz: at}", "time names 'viewz', which is not one of its inputs"},
      {"    window: {kind: tumble, size: 1s}\n", "", "time is for a window join"},
  };
  const std::string yaml = ReadText(job.path("job.yaml"));
  for (const Bad& b : cases) {
    std::string bad = yaml;
    bad.replace(bad.find(b.from), std::string(b.from).size(), b.to);
    WriteText(job.path("bad.yaml"), bad);
    RunResult r = RunCairn({"validate", job.path("bad.yaml")});
    if (std::string(b.to) == "{clicks: at, views: rv}") {  // an int64 of ms is a time field
      EXPECT_EQ(r.exit_code, 0) << r.err;
      continue;
    }
    EXPECT_EQ(r.exit_code, 2) << b.to;
    EXPECT_THAT(r.err, HasSubstr(job.path("bad.yaml") + ":")) << b.to;
    EXPECT_THAT(r.err, HasSubstr(b.says)) << r.err;
  }
}

}  // namespace
}  // namespace cairn::testing
