// Specification of the `join` operator (operators/join.cc): a regular inner equi-join of two
// inputs keyed by different fields. Its output equals a nested-loop join computed here from the
// input files, at any parallelism, and stays exactly that across a SIGKILL and a restore (also at
// another parallelism) in aligned and unaligned checkpoints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <algorithm>
#include <random>
#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "jobs/job_loader.h"
#include "jobs/registry.h"
#include "state/keyed_state_api.h"
#include "state/state_backend.h"
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
  EXPECT_THAT(r.out, HasSubstr("(restored from checkpoint 3)"));
  EXPECT_EQ(job.Committed(), Expected(in));
}

INSTANTIATE_TEST_SUITE_P(Modes, JoinKill,
                         ::testing::Values(KillCase{"aligned", 2}, KillCase{"unaligned", 2}, KillCase{"aligned", 3},
                                           KillCase{"unaligned", 1}),
                         [](const auto& info) {
                           return std::string(info.param.mode) + "_p" + std::to_string(info.param.restore_parallelism);
                         });

// state_ttl, on the operator itself: a kept record older than the ttl (by processing time) no
// longer joins and leaves the state when its key is read; within the ttl it joins. The sleep is
// a lower bound only: after it the records are older than 1 ms, and younger than 1 hour.
TEST(Join, StateTtlForgetsKeptRecordsOlderThanItAndDropsThemFromState) {
  for (const char* ttl : {"1ms", "1h"}) {
    SCOPED_TRACE(ttl);
    JobSpec spec;
    Status st = LoadJobFromString(
        std::string("job: ttl\noperators:\n"
                    "  - {id: bids, type: file_source, path: l, format: jsonl, schema: {a: int64, b: string, lv: int64}}\n"
                    "  - {id: people, type: file_source, path: r, format: jsonl, schema: {c: int64, d: string, rv: int64}}\n"
                    "  - {id: joined, type: join, inputs: [bids, people], on: {bids: [a, b], people: [c, d]},\n"
                    "     select: {lv: lv, rv: rv}, state_ttl: ") + ttl + "}\n"
                    "  - {id: sink, type: discard_sink, inputs: [joined]}\n",
        "ttl.yaml", {}, &spec);
    ASSERT_TRUE(st.ok()) << st.ToString();
    const OperatorConfig& c = *spec.Find("joined");
    SchemaRef left = MakeSchema({{"a", FieldType::kInt64}, {"b", FieldType::kString}, {"lv", FieldType::kInt64}});
    SchemaRef right = MakeSchema({{"c", FieldType::kInt64}, {"d", FieldType::kString}, {"rv", FieldType::kInt64}});
    SchemaRef out_schema;
    ASSERT_TRUE(FindOperatorType("join")->output_schema(c, {left, right}, &out_schema).ok());
    ScratchDir dir;
    KeyedSubtaskState state;
    ASSERT_TRUE(NewStateBackend(StateBackendOptions{})->CreateKeyed(dir / "w", 128, KeyGroupRange{0, 127}, &state).ok());
    OperatorContext ctx;
    ctx.operator_id = "joined";
    ctx.max_parallelism = 128;
    ctx.key_groups = KeyGroupRange{0, 127};
    ctx.input_schemas = {left, right};
    ctx.output_schema = out_schema;
    ctx.keyed = state.keyed.get();
    ctx.operator_state = FreshListStates();
    std::unique_ptr<Operator> op = FindOperatorType("join")->create(c);
    ASSERT_TRUE(op->Open(ctx).ok());
    RecordBatch bids(left), people(right), out(out_schema);
    for (int64_t k : {1, 2}) {
      size_t r = bids.AddRow();
      bids.SetInt64(r, 0, k);
      bids.SetString(r, 1, "x");
      bids.SetInt64(r, 2, 100 + k);
    }
    ASSERT_TRUE(op->Process(0, bids, &out).ok());
    EXPECT_EQ(out.size(), 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    size_t r = people.AddRow();
    people.SetInt64(r, 0, 1);
    people.SetString(r, 1, "x");
    people.SetInt64(r, 2, 7);
    ASSERT_TRUE(op->Process(1, people, &out).ok());
    // What the "left" list state holds now: key (1, x) was read, key (2, x) was not.
    StateId left_state = 0;
    ASSERT_TRUE(state.keyed->Declare(StateDescriptor{StateKind::kList, "cairn.join.rows", "left"}, &left_state).ok());
    size_t kept = 0;
    state.keyed->ForEachEntry(left_state, [&](std::string_view, std::string_view, std::string_view) { ++kept; });
    if (std::string(ttl) == "1h") {
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out.GetInt64(0, 0), 101);
      EXPECT_EQ(out.GetInt64(0, 1), 7);
      EXPECT_EQ(kept, 2u);
    } else {
      EXPECT_EQ(out.size(), 0u) << "the bid is older than state_ttl: it no longer joins";
      EXPECT_EQ(kept, 1u) << "the expired bid of the key that was read left the state; the other waits for a read";
    }
  }
}

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
