// The window operator in whole jobs, run as `cairn` child processes: a csv file of events with
// a timestamp field, out of order by up to 3 s, read with `watermark: {field: at,
// max_out_of_orderness: 4s}`, windowed per user (tumble, hop, session) into a jsonl file sink.
// The output equals an independent computation of the windows written here; the same after
// SIGKILLs (crash points at checkpoints) and `--restore latest`, aligned and unaligned, and
// after a restore at another parallelism. Records far behind the watermark are dropped and
// counted (run summary, `cairn checkpoints`). Within max_out_of_orderness no record is ever
// late, so the windows do not depend on when watermarks arrive: every run must agree exactly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/record_codec.h"
#include "tests/test_util.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kBase = 1796083200000;  // 2026-12-01T00:00:00Z

struct Event {
  std::string user;
  int64_t v;
  int64_t at;
};

// n events, 50 ms apart, each up to 3 s earlier than its place (out of order), for 5 users.
// With `sessions`, every user pauses for 10 s every 30 s.
std::vector<Event> Events(int n, bool sessions) {
  std::vector<Event> ev;
  for (int i = 0; i < n; ++i) {
    const int k = i % 5;
    const int64_t place = int64_t{i} * 50;
    if (sessions && (place / 10000 + k) % 3 == 0) continue;
    const int64_t jitter = (int64_t{i} * 7919 % 31) * 100;  // 0 .. 3000 ms, multiples of 100
    ev.push_back({"u" + std::to_string(k), i % 97, kBase + place - jitter});
  }
  return ev;
}

std::string Csv(const std::vector<Event>& ev) {
  std::string csv = "user,v,at\n";
  for (const Event& e : ev) csv += e.user + "," + std::to_string(e.v) + "," + std::to_string(e.at) + "\n";
  return csv;
}

struct Agg {
  int64_t n = 0, total = 0, top = INT64_MIN;
  void Add(int64_t v) {
    ++n;
    total += v;
    top = std::max(top, v);
  }
};

// (user, start, end) -> aggregates, as the jsonl lines the sink writes.
std::vector<std::string> Lines(const std::map<std::tuple<std::string, int64_t, int64_t>, Agg>& windows) {
  SchemaRef schema = MakeSchema({{"user", FieldType::kString}, {"n", FieldType::kInt64}, {"total", FieldType::kInt64},
                                 {"top", FieldType::kInt64}, {"window_start", FieldType::kTimestamp},
                                 {"window_end", FieldType::kTimestamp}});
  std::vector<std::string> lines;
  RecordBatch b(schema);
  for (const auto& [w, a] : windows) {
    b.clear();
    size_t r = b.AddRow();
    b.SetString(r, 0, std::get<0>(w));
    b.SetInt64(r, 1, a.n);
    b.SetInt64(r, 2, a.total);
    b.SetInt64(r, 3, a.top);
    b.SetInt64(r, 4, std::get<1>(w));
    b.SetInt64(r, 5, std::get<2>(w));
    std::string json;
    AppendJsonObject(b, r, &json);
    lines.push_back(json);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

int64_t FloorTo(int64_t t, int64_t m) { return (t / m - (t % m != 0 && t < 0 ? 1 : 0)) * m; }

std::vector<std::string> ExpectedSliding(const std::vector<Event>& ev, int64_t size, int64_t slide) {
  std::map<std::tuple<std::string, int64_t, int64_t>, Agg> w;
  for (const Event& e : ev)
    for (int64_t s = FloorTo(e.at, slide); s > e.at - size; s -= slide) w[{e.user, s, s + size}].Add(e.v);
  return Lines(w);
}

std::vector<std::string> ExpectedSessions(const std::vector<Event>& ev, int64_t gap) {
  std::map<std::string, std::vector<Event>> by_user;
  for (const Event& e : ev) by_user[e.user].push_back(e);
  std::map<std::tuple<std::string, int64_t, int64_t>, Agg> w;
  for (auto& [user, list] : by_user) {
    std::stable_sort(list.begin(), list.end(), [](const Event& a, const Event& b) { return a.at < b.at; });
    size_t i = 0;
    while (i < list.size()) {
      int64_t start = list[i].at, end = list[i].at + gap;
      Agg a;
      for (; i < list.size() && list[i].at <= end; ++i) {  // touching counts (Flink's intersects)
        a.Add(list[i].v);
        end = std::max(end, list[i].at + gap);
      }
      w[{user, start, end}] = a;
    }
  }
  return Lines(w);
}

std::string Job(const ScratchDir& dir, const std::string& window, const std::string& mode = "aligned") {
  return "job: windows\n"
         "parallelism: 2\n"
         "checkpoint:\n"
         "  interval: 20ms\n"
         "  mode: " + mode + "\n"
         "  dir: " + dir.path() + "/ck\n"
         "operators:\n"
         "  - id: source\n"
         "    type: file_source\n"
         "    path: " + dir.path() + "/in\n"
         "    format: csv\n"
         "    header: true\n"
         "    schema: {user: string, v: int64, at: timestamp}\n"
         "    watermark: {field: at, max_out_of_orderness: 4s}\n"
         "  - id: window\n"
         "    type: window\n"
         "    key_by: user\n"
         "    time: at\n" + window +
         "    aggregates: {n: count(*), total: sum(v), top: max(v)}\n"
         "    inputs: [source]\n"
         "  - id: sink\n"
         "    type: file_sink\n"
         "    path: " + dir.path() + "/out\n"
         "    format: jsonl\n"
         "    inputs: [window]\n";
}

std::vector<std::string> Output(const ScratchDir& dir) {
  std::vector<std::string> lines = CommittedLines(dir / "out");
  std::sort(lines.begin(), lines.end());
  return lines;
}

void RunToEnd(const std::string& job, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run", job, "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult run = RunCairn(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
}

// `kills` runs paced and killed when their third checkpoint commits (the first fresh, the
// others restored), then one restored run to the end; `last` are extra flags for that one.
void RunKilled(const std::string& job, int kills, std::vector<std::string> last = {}) {
  for (int k = 0; k < kills; ++k) {
    std::vector<std::string> args = {"run", job, "--quiet", "--set", "operators.source.rate=40"};
    if (k > 0) args.insert(args.end(), {"--restore", "latest"});
    RunResult crashed = RunCairn(args, {"CAIRN_CRASH_AT=checkpoint.committed:3"});
    ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
  }
  std::vector<std::string> args = {"run", job, "--quiet", "--restore", "latest"};
  args.insert(args.end(), last.begin(), last.end());
  RunResult run = RunCairn(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("(restored from checkpoint "));
}

TEST(WindowJobTest, TumbleWindowsEqualAnIndependentComputation) {
  ScratchDir dir;
  std::vector<Event> ev = Events(3000, false);
  WriteText(dir / "in", Csv(ev));
  WriteText(dir / "job.yaml", Job(dir, "    kind: tumble\n    size: 10s\n"));
  RunToEnd(dir / "job.yaml");
  EXPECT_EQ(Output(dir), ExpectedSliding(ev, 10000, 10000));
}

TEST(WindowJobTest, HopWindowsEqualAnIndependentComputation) {
  ScratchDir dir;
  std::vector<Event> ev = Events(3000, false);
  WriteText(dir / "in", Csv(ev));
  WriteText(dir / "job.yaml", Job(dir, "    kind: hop\n    size: 10s\n    slide: 2s\n"));
  RunToEnd(dir / "job.yaml");
  EXPECT_EQ(Output(dir), ExpectedSliding(ev, 10000, 2000));
}

TEST(WindowJobTest, SessionWindowsMergeAndEqualAnIndependentComputation) {
  ScratchDir dir;
  std::vector<Event> ev = Events(3000, true);
  WriteText(dir / "in", Csv(ev));
  // A gap that no record time minus a session's end can equal (times are multiples of 50 ms).
  WriteText(dir / "job.yaml", Job(dir, "    kind: session\n    gap: 1975ms\n"));
  RunToEnd(dir / "job.yaml");
  std::vector<std::string> want = ExpectedSessions(ev, 1975);
  EXPECT_GT(want.size(), 20u);  // 5 users, several sessions each
  EXPECT_EQ(Output(dir), want);
}

TEST(WindowJobTest, HopWindowsAreExactAcrossTwoKillsAligned) {
  ScratchDir dir;
  std::vector<Event> ev = Events(3000, false);
  WriteText(dir / "in", Csv(ev));
  WriteText(dir / "job.yaml", Job(dir, "    kind: hop\n    size: 10s\n    slide: 2s\n"));
  RunKilled(dir / "job.yaml", 2);
  EXPECT_EQ(Output(dir), ExpectedSliding(ev, 10000, 2000));
}

TEST(WindowJobTest, TumbleWindowsAreExactAcrossTwoKillsUnaligned) {
  ScratchDir dir;
  std::vector<Event> ev = Events(3000, false);
  WriteText(dir / "in", Csv(ev));
  WriteText(dir / "job.yaml", Job(dir, "    kind: tumble\n    size: 10s\n", "unaligned"));
  RunKilled(dir / "job.yaml", 2);
  EXPECT_EQ(Output(dir), ExpectedSliding(ev, 10000, 10000));
}

TEST(WindowJobTest, SessionWindowsAreExactAcrossAKillUnaligned) {
  ScratchDir dir;
  std::vector<Event> ev = Events(3000, true);
  WriteText(dir / "in", Csv(ev));
  WriteText(dir / "job.yaml", Job(dir, "    kind: session\n    gap: 1975ms\n", "unaligned"));
  RunKilled(dir / "job.yaml", 1);
  EXPECT_EQ(Output(dir), ExpectedSessions(ev, 1975));
}

TEST(WindowJobTest, HopWindowsAreExactAfterARestoreAtAnotherParallelism) {
  ScratchDir dir;
  std::vector<Event> ev = Events(3000, false);
  WriteText(dir / "in", Csv(ev));
  WriteText(dir / "job.yaml", Job(dir, "    kind: hop\n    size: 10s\n    slide: 2s\n"));
  RunKilled(dir / "job.yaml", 1, {"--set", "parallelism=3"});
  EXPECT_EQ(Output(dir), ExpectedSliding(ev, 10000, 2000));
}

TEST(WindowJobTest, HopWindowsOnRocksDbAreExactAcrossAKillAndARestoreAtAnotherParallelism) {
  ScratchDir dir;
  std::vector<Event> ev = Events(3000, false);
  WriteText(dir / "in", Csv(ev));
  WriteText(dir / "job.yaml", "state:\n  backend: rocksdb\n" + Job(dir, "    kind: hop\n    size: 10s\n    slide: 2s\n"));
  RunKilled(dir / "job.yaml", 1, {"--set", "parallelism=3"});
  EXPECT_EQ(Output(dir), ExpectedSliding(ev, 10000, 2000));
}

// allowed_lateness: one source subtask, in order, 100 ms apart; every 500th record from 25000 on
// is 2000 s late (its window fired long before: a source batch spans far less than 2000 s of
// these records, and the watermark comes after every batch; but it is well within the 4000 s of
// lateness), so it updates its window and emits it again; every 500th from 25250 on is 10000 s
// late, past the lateness: dropped and counted. The expected output: each window once as it
// fires with its on-time records, then once more per late record within the lateness, with
// every record of the window so far.
TEST(WindowJobTest, ARecordWithinTheAllowedLatenessReEmitsItsWindowUpdated) {
  ScratchDir dir;
  std::vector<Event> ev, on_time, within;  // within: late, but within the lateness, in file order
  int dropped = 0;
  for (int i = 0; i < 40000; ++i) {
    Event e{"u" + std::to_string(i % 3), i % 10, kBase + int64_t{i} * 100};
    if (i >= 25000 && i % 500 == 0) {
      e.at -= 2000000;
      within.push_back(e);
    } else if (i >= 25250 && i % 500 == 250) {
      e.at -= 10000000;
      ++dropped;
    } else {
      on_time.push_back(e);
    }
    ev.push_back(e);
  }
  WriteText(dir / "in", Csv(ev));
  std::string job = Job(dir, "    kind: tumble\n    size: 10s\n    allowed_lateness: 4000s\n");
  job.replace(job.find("parallelism: 2"), 14, "parallelism: 1");
  WriteText(dir / "job.yaml", job);
  RunResult run = RunCairn({"run", dir / "job.yaml"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // The reference: the on-time records make each window's first emission; each record within
  // the lateness adds itself to its window and emits it again.
  using Key = std::tuple<std::string, int64_t, int64_t>;
  std::map<Key, Agg> windows;
  for (const Event& e : on_time) windows[{e.user, FloorTo(e.at, 10000), FloorTo(e.at, 10000) + 10000}].Add(e.v);
  std::vector<std::string> want = Lines(windows);
  for (const Event& e : within) {
    Key k{e.user, FloorTo(e.at, 10000), FloorTo(e.at, 10000) + 10000};
    ASSERT_TRUE(windows.count(k)) << "a late record's window had on-time records";
    windows[k].Add(e.v);
    want.push_back(Lines({{k, windows[k]}})[0]);
  }
  std::sort(want.begin(), want.end());
  ASSERT_EQ(within.size(), 30u);
  ASSERT_EQ(dropped, 30);
  EXPECT_EQ(Output(dir), want);
  EXPECT_THAT(run.out, HasSubstr("records late    " + std::to_string(dropped) + " "));
}

TEST(WindowJobTest, LateRecordsAreDroppedAndCountedAlsoAfterARestore) {
  ScratchDir dir;
  // In order, one source subtask; then, more than a source batch (1024 records) after the
  // records that moved the watermark past them, records 1000 s late.
  std::vector<Event> ev, on_time;
  for (int i = 0; i < 4000; ++i) {
    Event e{"u" + std::to_string(i % 3), i % 10, kBase + int64_t{i} * 100};
    if (i >= 2500 && i % 100 == 0) e.at -= 1000000;
    ev.push_back(e);
  }
  int late = 0;
  for (int i = 0; i < 4000; ++i) (i >= 2500 && i % 100 == 0) ? ++late : (on_time.push_back(ev[i]), 0);
  WriteText(dir / "in", Csv(ev));
  std::string job = Job(dir, "    kind: tumble\n    size: 10s\n");
  job.replace(job.find("parallelism: 2"), 14, "parallelism: 1");
  WriteText(dir / "job.yaml", job);
  RunResult crashed = RunCairn({"run", dir / "job.yaml", "--set", "operators.source.rate=400"},
                               {"CAIRN_CRASH_AT=checkpoint.committed:3"});
  ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
  RunResult run = RunCairn({"run", dir / "job.yaml", "--restore", "latest"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("records late    " + std::to_string(late) + " "));
  EXPECT_EQ(Output(dir), ExpectedSliding(on_time, 10000, 10000));
  RunResult list = RunCairn({"checkpoints", dir / "ck"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr(" records_late=" + std::to_string(late) + " final\n"));
}

}  // namespace
}  // namespace cairn::testing
