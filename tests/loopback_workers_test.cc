// End to end over the network data plane: jobs run with CAIRN_LOOPBACK_WORKERS=N (their tasks
// assigned to N workers, every channel between workers over loopback TCP through engine/net),
// SIGKILLed after 1-3 new checkpoints and restored with `--restore latest` until done: the word
// count's output is exactly once, aligned and unaligned on 2 and 3 workers, aligned with a
// timeout on 2; at least once (every count reached) in at_least_once mode. The bank's
// conservation over the network is in bank_test.cc.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/base/file_util.h"
#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

struct Case {
  std::string name;
  std::vector<std::string> sets;  // the checkpoint mode
  int workers;
  bool at_least_once = false;     // the output check: every count reached, duplicates allowed
};

class LoopbackWordCount : public ::testing::TestWithParam<Case> {};

TEST_P(LoopbackWordCount, IsExactlyOnceThroughSigkillsAndRestores) {
  const Case c = GetParam();
  ScratchDir dir;
  ASSERT_EQ(RunCairn({"generate", "--out", dir / "input.txt", "--words", "300000", "--vocabulary", "2000", "--seed", "17"})
                .exit_code,
            0);
  std::vector<std::string> args = {"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet", "--restore", "latest",
                                   "--set", "checkpoint.dir=" + dir / "ck",
                                   "--set", "checkpoint.interval=50ms",
                                   "--set", "checkpoint.retain=1000",
                                   "--set", "operators.source.path=" + dir / "input.txt",
                                   "--set", "operators.sink.path=" + dir / "out"};
  for (const std::string& set : c.sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  // The killed runs read 300 lines/s per subtask (the 30000 lines last 50 s at that pace: no
  // run reaches its end before its kill), the last one as fast as it can.
  KillPlan plan = PacedKillPlan(3, dir / "ck", 50, {"operators.source.rate=300"}, {"operators.source.rate=0"});
  plan.env = {"CAIRN_LOOPBACK_WORKERS=" + std::to_string(c.workers)};
  SCOPED_TRACE(c.name + " on " + std::to_string(c.workers) + " workers, kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 3);
  ExpectExactlyOnce(dir / "out", ExpectedCounts(dir / "input.txt"), c.at_least_once);
}

const std::vector<std::string> kAligned{"checkpoint.mode=aligned"};
const std::vector<std::string> kUnaligned{"checkpoint.mode=unaligned"};
// The announcements travel on the priority lane across the network; a 1 ms timeout lets a
// checkpoint whose alignment takes longer switch to unaligned midway.
const std::vector<std::string> kAlignedTimeout{"checkpoint.mode=aligned", "checkpoint.aligned_timeout=1ms"};
const std::vector<std::string> kAtLeastOnce{"checkpoint.mode=at_least_once"};

INSTANTIATE_TEST_SUITE_P(Modes, LoopbackWordCount,
                         ::testing::Values(Case{"aligned", kAligned, 2}, Case{"unaligned", kUnaligned, 2},
                                           Case{"aligned", kAligned, 3}, Case{"unaligned", kUnaligned, 3},
                                           Case{"alignedTimeout", kAlignedTimeout, 2},
                                           Case{"atLeastOnce", kAtLeastOnce, 2, true}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return i.param.name + std::to_string(i.param.workers) + "Workers";
                         });

TEST(LoopbackWorkers, AMalformedWorkerCountIsRejectedWithExitTwoAndNothingWritten) {
  ScratchDir dir;
  WriteText(dir / "input.txt", "a b c\n");
  RunResult r = RunCairn({"run", SourceDir() + "/jobs/wordcount.yaml", "--set", "checkpoint.dir=" + dir / "ck",
                          "--set", "operators.source.path=" + dir / "input.txt", "--set", "operators.sink.path=" + dir / "out"},
                         {"CAIRN_LOOPBACK_WORKERS=two"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("CAIRN_LOOPBACK_WORKERS=two: expected a number of workers"), std::string::npos) << r.err;
  EXPECT_FALSE(PathExists(dir / "out"));
}

}  // namespace
}  // namespace cairn::testing
