// The aggregate operator, run by the cairn binary on csv input whose answer the test computes on
// its own: count(*), count(x), sum, min, max and avg per key (one and two key fields), nulls
// skipped as SQL does, `emit: updates` (a changelog, one record per input record) and `emit:
// final`, on both state backends, and exactly-once through SIGKILLs and restores.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;

struct Row {
  std::string user, region;
  bool has_bytes;
  int64_t bytes;
  double kb;
};

// Seeded rows: 40 users in 3 regions; every 7th row has no bytes (an empty csv field: null).
std::vector<Row> MakeRows(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Row> rows;
  for (size_t i = 0; i < n; ++i) {
    Row r;
    r.user = "u" + std::to_string(rng() % 40);
    r.region = std::string(1, static_cast<char>('a' + rng() % 3));
    r.has_bytes = i % 7 != 3;
    r.bytes = static_cast<int64_t>(rng() % 5000) - 1000;
    r.kb = static_cast<double>(rng() % 1000) / 8.0;  // exact in binary: sums are exact
    rows.push_back(r);
  }
  return rows;
}

std::string Csv(const std::vector<Row>& rows) {
  std::string s;
  for (const Row& r : rows)
    s += r.user + "," + r.region + "," + (r.has_bytes ? std::to_string(r.bytes) : "") + "," + std::to_string(r.kb) + "\n";
  return s;
}

struct Agg {
  int64_t n = 0, n_bytes = 0, sum_bytes = 0, min_bytes = 0, max_bytes = 0;
  double sum_kb = 0;
  std::string min_region;
};

std::string Expected(const std::string& key, const Agg& a) {
  std::ostringstream o;
  o << key << "\t" << a.n << "\t" << a.n_bytes << "\t";
  if (a.n_bytes > 0) o << a.sum_bytes;
  o << "\t";
  if (a.n_bytes > 0) o << a.min_bytes;
  o << "\t";
  if (a.n_bytes > 0) o << a.max_bytes;
  char avg[32];
  auto end = std::to_chars(avg, avg + sizeof avg, a.sum_kb / static_cast<double>(a.n)).ptr;  // as the sink writes it
  o << "\t" << std::string(avg, end) << "\t" << a.min_region;
  return o.str();
}

void Add(Agg* a, const Row& r) {
  a->n++;
  a->sum_kb += r.kb;
  if (a->n == 1 || r.region < a->min_region) a->min_region = r.region;
  if (!r.has_bytes) return;
  if (a->n_bytes == 0 || r.bytes < a->min_bytes) a->min_bytes = r.bytes;
  if (a->n_bytes == 0 || r.bytes > a->max_bytes) a->max_bytes = r.bytes;
  a->n_bytes++;
  a->sum_bytes += r.bytes;
}

std::string JobYaml(const std::string& dir, const std::string& key_by, const std::string& emit) {
  return "job: agg\nparallelism: 2\ncheckpoint:\n  interval: 100ms\n  dir: " + dir + "/ck\noperators:\n"
         "  - id: source\n    type: file_source\n    path: " + dir + "/in.csv\n    format: csv\n"
         "    schema: {user: string, region: string, bytes: int64, kb: double}\n"
         "  - id: agg\n    type: aggregate\n    inputs: [source]\n    key_by: " + key_by + "\n    emit: " + emit + "\n"
         "    aggregates: {n: \"count(*)\", n_bytes: \"count(bytes)\", sum_bytes: \"sum(bytes)\", min_bytes: \"min(bytes)\",\n"
         "                 max_bytes: \"max(bytes)\", avg_kb: \"avg(kb)\", min_region: \"min(region)\"}\n"
         "  - id: sink\n    type: file_sink\n    path: " + dir + "/out\n    inputs: [agg]\n";
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

class AggregateTest : public ::testing::TestWithParam<std::string> {};  // the state backend

TEST_P(AggregateTest, FinalAggregatesPerKeyMatchAnIndependentComputation) {
  ScratchDir dir;
  std::vector<Row> rows = MakeRows(3000, 5);
  WriteText(dir / "in.csv", Csv(rows));
  WriteText(dir / "job.yaml", JobYaml(dir.path(), "user", "final"));
  RunResult r = RunCairn({"run", dir / "job.yaml", "--set", "state.backend=" + GetParam(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, Agg> per_user;
  for (const Row& row : rows) Add(&per_user[row.user], row);
  std::vector<std::string> expected;
  for (const auto& [user, a] : per_user) expected.push_back(Expected(user, a));
  EXPECT_EQ(Sorted(CommittedLines(dir / "out")), Sorted(expected));
}

TEST_P(AggregateTest, UpdatesAreAChangelogOfEveryRecordAlsoWithTwoKeyFields) {
  ScratchDir dir;
  std::vector<Row> rows = MakeRows(2000, 9);
  WriteText(dir / "in.csv", Csv(rows));
  WriteText(dir / "job.yaml", JobYaml(dir.path(), "[region, user]", "updates"));
  // One source subtask: every key's records reach the aggregate in file order.
  RunResult r = RunCairn({"run", dir / "job.yaml", "--set", "state.backend=" + GetParam(), "--set",
                          "operators.source.parallelism=1", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Per key, the updates in input order; the output interleaves keys, so compare as multisets.
  std::map<std::string, Agg> per_key;
  std::vector<std::string> expected;
  for (const Row& row : rows) {
    std::string key = row.region + "\t" + row.user;
    Add(&per_key[key], row);
    expected.push_back(Expected(key, per_key[key]));
  }
  EXPECT_EQ(Sorted(CommittedLines(dir / "out")), Sorted(expected));
}

TEST_P(AggregateTest, UpdatesAreExactlyOnceThroughKillsAndRestores) {
  ScratchDir dir;
  std::vector<Row> rows = MakeRows(60000, 3);
  WriteText(dir / "in.csv", Csv(rows));
  WriteText(dir / "job.yaml", JobYaml(dir.path(), "user", "updates"));
  KillPlan plan = PacedKillPlan(3, dir / "ck", 100, {"operators.source.rate=500"}, {"operators.source.rate=0"});
  SCOPED_TRACE("kill plan seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills({"run", dir / "job.yaml", "--restore", "latest", "--set", "state.backend=" + GetParam(),
                             "--set", "operators.source.parallelism=1", "--set", "checkpoint.dir=" + dir / "ck", "--quiet"},
                            dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 3);
  std::map<std::string, Agg> per_user;
  std::vector<std::string> expected;
  for (const Row& row : rows) {
    Add(&per_user[row.user], row);
    expected.push_back(Expected(row.user, per_user[row.user]));
  }
  EXPECT_EQ(Sorted(CommittedLines(dir / "out")), Sorted(expected));
}

INSTANTIATE_TEST_SUITE_P(Backends, AggregateTest, ::testing::Values("heap", "rocksdb"));

}  // namespace
}  // namespace cairn::testing
