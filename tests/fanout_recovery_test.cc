// End to end: fan-out and fan-in topologies survive SIGKILLs and `--restore latest` with
// exactly-once output in every checkpoint mode, under backpressure.
//
// The regression: a producer with two outgoing edges pushed a batch edge by edge; when its push
// on one edge blocked and it took an unaligned snapshot (or switched an aligned one after the
// aligned timeout), the other edge's barrier was stamped without that batch while the
// producer's snapshot covered it, and after a restore the records were lost on that edge
// (`sink_b` below missed thousands of counts in most runs).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

struct Mode {
  std::string name;
  std::vector<std::string> sets;
};

const Mode kUnaligned{"unaligned", {"checkpoint.mode=unaligned"}};
const Mode kAligned{"aligned", {"checkpoint.mode=aligned"}};
const Mode kAlignedTimeout{"aligned_timeout", {"checkpoint.mode=aligned", "checkpoint.aligned_timeout=5ms"}};

std::string Header(const std::string& job, const std::string& ck) {
  return "job: " + job + "\nparallelism: 2\nmax_parallelism: 128\ncheckpoint:\n  interval: 200ms\n  dir: " + ck +
         "\n  retain: 1000\noperators:\n";
}

// Runs `job` (written to the scratch dir) under `mode`: SIGKILLed 4 times, each after 1-3 new
// completed checkpoints (observed, not guessed), restored with `--restore latest`, then run to
// its end. `paced` slows the killed runs (the sources read 1000 lines/s per subtask, the
// throttles pass 8000 records/s per subtask: the throttled branch backpressures, and the input
// lasts 100 s at that pace, so no run can reach its end before its kill, however slow the
// machine makes the checkpoints); `unpaced` lifts it.
void RunUnderKills(const ScratchDir& dir, const std::string& yaml, const Mode& mode,
                   const std::vector<std::string>& paced, const std::vector<std::string>& unpaced) {
  std::string job = dir / "job.yaml";
  WriteText(job, yaml);
  std::vector<std::string> args = {"run", job, "--quiet", "--restore", "latest", "--set", "checkpoint.dir=" + dir / "ck"};
  for (const std::string& s : mode.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  KillPlan plan = PacedKillPlan(4, dir / "ck", 200, paced, unpaced);
  SCOPED_TRACE("mode " + mode.name + ", kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 4);
}

std::map<std::string, int64_t> Generate(const std::string& path, int words, int seed) {
  EXPECT_EQ(RunCairn({"generate", "--out", path, "--words", std::to_string(words), "--vocabulary", "2000",
                      "--seed", std::to_string(seed)})
                .exit_code,
            0);
  return ExpectedCounts(path);
}

// source -> tokenize -> { count_a -> throttle -> sink_a, count_b -> sink_b }: the branch with
// the throttle backpressures tokenize, which blocks on one edge while the other has room.
void FanOut(const Mode& mode) {
  ScratchDir dir;
  std::map<std::string, int64_t> expected = Generate(dir / "input.txt", 2000000, 21);
  std::string yaml = Header("fanout", dir / "ck") +
                     "  - {id: source, type: file_source, path: " + dir / "input.txt" + "}\n"
                     "  - {id: tokenize, type: tokenize, inputs: [source]}\n"
                     "  - {id: count_a, type: count, key_by: word, inputs: [tokenize]}\n"
                     "  - {id: throttle, type: throttle, rate: 100000000, inputs: [count_a]}\n"
                     "  - {id: sink_a, type: file_sink, path: " + dir / "out_a" + ", inputs: [throttle]}\n"
                     "  - {id: count_b, type: count, key_by: word, inputs: [tokenize]}\n"
                     "  - {id: sink_b, type: file_sink, path: " + dir / "out_b" + ", inputs: [count_b]}\n";
  RunUnderKills(dir, yaml, mode, {"operators.source.rate=1000", "operators.throttle.rate=8000"},
                {"operators.source.rate=0", "operators.throttle.rate=100000000"});
  ExpectExactlyOnce(dir / "out_a", expected);
  ExpectExactlyOnce(dir / "out_b", expected);
}

// { source_a, source_b } -> tokenize -> count -> throttle -> sink: one operator reads two
// producers' channels (a union), under backpressure.
void FanIn(const Mode& mode) {
  ScratchDir dir;
  std::map<std::string, int64_t> expected = Generate(dir / "a.txt", 1000000, 22);
  for (const auto& [word, n] : Generate(dir / "b.txt", 1000000, 23)) expected[word] += n;
  std::string yaml = Header("fanin", dir / "ck") +
                     "  - {id: source_a, type: file_source, path: " + dir / "a.txt" + "}\n"
                     "  - {id: source_b, type: file_source, path: " + dir / "b.txt" + "}\n"
                     "  - {id: tokenize, type: tokenize, inputs: [source_a, source_b]}\n"
                     "  - {id: count, type: count, key_by: word, inputs: [tokenize]}\n"
                     "  - {id: throttle, type: throttle, rate: 100000000, inputs: [count]}\n"
                     "  - {id: sink, type: file_sink, path: " + dir / "out" + ", inputs: [throttle]}\n";
  RunUnderKills(dir, yaml, mode,
                {"operators.source_a.rate=1000", "operators.source_b.rate=1000", "operators.throttle.rate=8000"},
                {"operators.source_a.rate=0", "operators.source_b.rate=0", "operators.throttle.rate=100000000"});
  ExpectExactlyOnce(dir / "out", expected);
}

// source -> tokenize -> { slow, fast } -> count -> sink: a diamond (fan-out, then fan-in of the
// two branches), every word counted twice; the slow branch is throttled.
void Diamond(const Mode& mode) {
  ScratchDir dir;
  std::map<std::string, int64_t> expected = Generate(dir / "input.txt", 2000000, 24);
  for (auto& [word, n] : expected) n *= 2;
  std::string yaml = Header("diamond", dir / "ck") +
                     "  - {id: source, type: file_source, path: " + dir / "input.txt" + "}\n"
                     "  - {id: tokenize, type: tokenize, inputs: [source]}\n"
                     "  - {id: slow, type: throttle, rate: 100000000, inputs: [tokenize]}\n"
                     "  - {id: fast, type: throttle, rate: 100000000, inputs: [tokenize]}\n"
                     "  - {id: count, type: count, key_by: word, inputs: [slow, fast]}\n"
                     "  - {id: sink, type: file_sink, path: " + dir / "out" + ", inputs: [count]}\n";
  RunUnderKills(dir, yaml, mode, {"operators.source.rate=1000", "operators.slow.rate=8000"},
                {"operators.source.rate=0", "operators.slow.rate=100000000"});
  ExpectExactlyOnce(dir / "out", expected);
}

TEST(FanOutRecovery, UnalignedIsExactlyOnceOnEveryBranch) { FanOut(kUnaligned); }
TEST(FanOutRecovery, AlignedIsExactlyOnceOnEveryBranch) { FanOut(kAligned); }
TEST(FanOutRecovery, AlignedTimeoutIsExactlyOnceOnEveryBranch) { FanOut(kAlignedTimeout); }
TEST(FanInRecovery, UnalignedIsExactlyOnce) { FanIn(kUnaligned); }
TEST(FanInRecovery, AlignedTimeoutIsExactlyOnce) { FanIn(kAlignedTimeout); }
TEST(DiamondRecovery, UnalignedIsExactlyOnce) { Diamond(kUnaligned); }
TEST(DiamondRecovery, AlignedIsExactlyOnce) { Diamond(kAligned); }

}  // namespace
}  // namespace cairn::testing
