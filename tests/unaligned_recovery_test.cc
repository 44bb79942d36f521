// End to end under backpressure (jobs/wordcount-backpressure.yaml: a throttle before the sink):
// unaligned checkpoints, and aligned ones that switch to unaligned after
// checkpoint.aligned_timeout, survive SIGKILLs at random instants and `--restore latest` with
// exactly-once output; their checkpoints hold channel state (in-flight records).
#include <gtest/gtest.h>

#include <random>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

int64_t JsonInt(const std::string& line, const std::string& key) {
  size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::stoll(line.substr(at + key.size() + 3));
}

std::string JsonString(const std::string& line, const std::string& key) {
  size_t at = line.find("\"" + key + "\":\"");
  if (at == std::string::npos) return "";
  size_t start = at + key.size() + 4;
  return line.substr(start, line.find('"', start) - start);
}

struct Scenario {
  std::string mode;
  std::vector<std::string> extra_sets;
  std::string expected_checkpoint_mode;  // what `cairn checkpoints` must report for some checkpoint
};

void RunScenario(const Scenario& sc) {
  ScratchDir dir;
  std::string input = dir / "input.txt";
  ASSERT_EQ(RunCairn({"generate", "--out", input, "--words", "1200000", "--vocabulary", "2000", "--seed", "11"}).exit_code, 0);
  std::vector<std::string> args = {"run", SourceDir() + "/jobs/wordcount-backpressure.yaml", "--quiet",
                                   "--restore", "latest",
                                   "--set", "operators.source.path=" + input,
                                   "--set", "operators.sink.path=" + dir / "out",
                                   "--set", "checkpoint.dir=" + dir / "ck",
                                   "--set", "checkpoint.mode=" + sc.mode,
                                   "--set", "checkpoint.interval=100ms",
                                   "--set", "checkpoint.retain=1000"};
  for (const auto& s : sc.extra_sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  // Five SIGKILLs after 1-3 new checkpoints each. In the killed runs the source reads 1000
  // lines (10000 words) per second per subtask, a minute for the input, so that no run can
  // finish before its kill, and the throttle passes 8000 records/s per subtask, so that records
  // queue up before it (barriers overtake them). The backlog stays small: a restored run
  // processes its channel state before it can take a checkpoint, and a full channel (about
  // 130000 records per subtask) would take the throttle long to drain. The last run is unpaced.
  KillPlan plan = PacedKillPlan(5, dir / "ck", 100, {"operators.source.rate=1000", "operators.throttle.rate=8000"},
                                {"operators.source.rate=0", "operators.throttle.rate=1000000"});
  plan.list_checkpoints = true;
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 5);
  ExpectExactlyOnce(dir / "out", ExpectedCounts(input));
  int64_t max_channel_state = 0;
  bool saw_mode = false;
  for (const std::string& line : kr.checkpoint_lines) {
    if (JsonString(line, "mode") != sc.expected_checkpoint_mode) continue;
    saw_mode = true;
    max_channel_state = std::max(max_channel_state, JsonInt(line, "channel_state_bytes"));
  }
  EXPECT_TRUE(saw_mode) << "no checkpoint with mode " << sc.expected_checkpoint_mode;
  EXPECT_GT(max_channel_state, 0) << "checkpoints under backpressure should hold in-flight records";
}

TEST(UnalignedRecovery, SigkillsUnderBackpressureThenRestoreGiveExactlyOnceCounts) {
  RunScenario({"unaligned", {}, "unaligned"});
}

TEST(UnalignedRecovery, AlignedTimeoutSwitchesToUnalignedAndStaysExactlyOnce) {
  RunScenario({"aligned", {"checkpoint.aligned_timeout=5ms"}, "aligned->unaligned"});
}

TEST(UnalignedRecovery, ConcurrentUnalignedCheckpointsStayExactlyOnce) {
  RunScenario({"unaligned", {"checkpoint.max_concurrent=3", "checkpoint.interval=30ms"}, "unaligned"});
}

TEST(AtLeastOnce, SigkillsThenRestoreLoseNothing) {
  ScratchDir dir;
  std::string input = dir / "input.txt";
  ASSERT_EQ(RunCairn({"generate", "--out", input, "--words", "400000", "--vocabulary", "2000", "--seed", "5"}).exit_code, 0);
  std::vector<std::string> args = {"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet", "--restore", "latest",
                                   "--set", "operators.source.path=" + input,
                                   "--set", "operators.sink.path=" + dir / "out",
                                   "--set", "checkpoint.dir=" + dir / "ck",
                                   "--set", "checkpoint.mode=at_least_once",
                                   "--set", "checkpoint.max_concurrent=2",
                                   "--set", "checkpoint.interval=50ms"};
  // Four SIGKILLs after 1-3 new checkpoints each, the killed runs paced at 250 lines/s per
  // subtask (80 s for the input), the last one unpaced.
  KillPlan plan = PacedKillPlan(4, dir / "ck", 50, {"operators.source.rate=250"}, {"operators.source.rate=0"});
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 4);
  ExpectExactlyOnce(dir / "out", ExpectedCounts(input), /*at_least_once=*/true);
}

}  // namespace
}  // namespace cairn::testing
