// Specification of the `join` operator (operators/join.cc): a regular inner equi-join of two
// inputs keyed by different fields. Its output equals a nested-loop join computed here from the
// input files, at any parallelism, and stays exactly that across a SIGKILL and a restore (also at
// another parallelism) in aligned and unaligned checkpoints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/test_util.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;

struct Row {
  int64_t a;
  std::string b;
  int64_t v;
};

// Two inputs whose composite keys (a, b) collide often: 500 bids, 300 persons.
struct Inputs {
  std::vector<Row> left, right;
};

Inputs MakeInputs(uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in;
  const char* names[] = {"x", "y", "z"};
  for (int i = 0; i < 500; ++i) in.left.push_back({static_cast<int64_t>(rng() % 15), names[rng() % 3], i});
  for (int j = 0; j < 300; ++j) in.right.push_back({static_cast<int64_t>(rng() % 15), names[rng() % 3], 1000 + j});
  return in;
}

std::string Jsonl(const std::vector<Row>& rows, const char* a, const char* b, const char* v) {
  std::string s;
  for (const Row& r : rows)
    s += std::string("{\"") + a + "\":" + std::to_string(r.a) + ",\"" + b + "\":\"" + r.b + "\",\"" + v +
         "\":" + std::to_string(r.v) + "}\n";
  return s;
}

// What the join must emit, from the inputs alone: one line per matching pair.
std::vector<std::string> Expected(const Inputs& in) {
  std::vector<std::string> out;
  for (const Row& l : in.left)
    for (const Row& r : in.right)
      if (l.a == r.a && l.b == r.b)
        out.push_back("{\"lv\":" + std::to_string(l.v) + ",\"rv\":" + std::to_string(r.v) + ",\"name\":\"" + l.b + "\"}");
  std::sort(out.begin(), out.end());
  return out;
}

class JoinJob {
 public:
  explicit JoinJob(const Inputs& in) {
    WriteText(dir_ / "left.jsonl", Jsonl(in.left, "a", "b", "lv"));
    WriteText(dir_ / "right.jsonl", Jsonl(in.right, "c", "d", "rv"));
    WriteText(dir_ / "job.yaml",
              "job: join\n"
              "parallelism: 2\n"
              "checkpoint:\n"
              "  interval: 20ms\n"
              "  dir: " + dir_ / "ck" + "\n"
              "operators:\n"
              "  - id: bids\n    type: file_source\n    path: " + dir_ / "left.jsonl" + "\n"
              "    format: jsonl\n    schema: {a: int64, b: string, lv: int64}\n"
              "  - id: people\n    type: file_source\n    path: " + dir_ / "right.jsonl" + "\n"
              "    format: jsonl\n    schema: {c: int64, d: string, rv: int64}\n"
              "  - id: joined\n    type: join\n    inputs: [bids, people]\n"
              "    on: {bids: [a, b], people: [c, d]}\n"
              "    select: {lv: lv, rv: \"people.rv\", name: \"bids.b\"}\n"
              "  - id: sink\n    type: file_sink\n    format: jsonl\n    path: " + dir_ / "out" + "\n    inputs: [joined]\n");
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
  std::string dir(const std::string& name) const { return dir_ / name; }

 private:
  ScratchDir dir_;
};

class JoinParallelism : public ::testing::TestWithParam<int> {};

TEST_P(JoinParallelism, EmitsEveryMatchingPairOnceAsANestedLoopJoinDoes) {
  const Inputs in = MakeInputs(7);
  JoinJob job(in);
  RunResult r = job.Run({"--set", "parallelism=" + std::to_string(GetParam())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> want = Expected(in);
  ASSERT_GT(want.size(), 1000u) << "the inputs must match often";
  EXPECT_EQ(job.Committed(), want);
}

INSTANTIATE_TEST_SUITE_P(Parallelism, JoinParallelism, ::testing::Values(1, 2, 3));

struct KillCase {
  const char* mode;
  int restore_parallelism;
};
void PrintTo(const KillCase& c, std::ostream* os) { *os << c.mode << "_p" << c.restore_parallelism; }

class JoinKill : public ::testing::TestWithParam<KillCase> {};

TEST_P(JoinKill, IsExactlyOnceAcrossASigkillAndARestore) {
  const Inputs in = MakeInputs(11);
  JoinJob job(in);
  const std::string mode = std::string("checkpoint.mode=") + GetParam().mode;
  // Paced (the inputs take seconds) and killed as checkpoint 3 commits, long before the end.
  RunResult crashed = job.Run({"--set", mode, "--set", "operators.bids.rate=100", "--set", "operators.people.rate=60"},
                              {"CAIRN_CRASH_AT=checkpoint.committed:3"});
  ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
  RunResult r = job.Run({"--set", mode, "--restore", "latest", "--set",
                         "parallelism=" + std::to_string(GetParam().restore_parallelism)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("restoring from checkpoint 3"));
  EXPECT_EQ(job.Committed(), Expected(in));
}

INSTANTIATE_TEST_SUITE_P(Modes, JoinKill,
                         ::testing::Values(KillCase{"aligned", 2}, KillCase{"unaligned", 2}, KillCase{"aligned", 3},
                                           KillCase{"unaligned", 1}),
                         [](const auto& info) {
                           return std::string(info.param.mode) + "_p" + std::to_string(info.param.restore_parallelism);
                         });

TEST(Join, ValidatePrintsEachInputsKeys) {
  JoinJob job(MakeInputs(3));
  RunResult r = RunCairn({"validate", job.dir("job.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("joined  (lv int64, rv int64, name string)  (reads bids keyed by a, b, people keyed by c, d)"));
  EXPECT_THAT(r.out, HasSubstr("bids -> joined+sink  hash"));
  EXPECT_THAT(r.out, HasSubstr("people -> joined+sink  hash"));
}

}  // namespace
}  // namespace cairn::testing
