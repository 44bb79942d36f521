// End to end: the word count job killed with SIGKILL at random instants and restored with
// `--restore latest` until it completes commits, for every word, the counts 1..n exactly once.
#include <gtest/gtest.h>

#include <random>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

TEST(WordCountRecovery, RandomSigkillsThenRestoreLatestGiveExactlyOnceCounts) {
  ScratchDir dir;
  std::string input = dir / "input.txt";
  RunResult gen = RunCairn({"generate", "--out", input, "--words", "2000000", "--vocabulary", "3000", "--seed", "7"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::vector<std::string> args = {"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet", "--restore", "latest",
                                   "--set", "operators.source.path=" + input,
                                   "--set", "operators.sink.path=" + dir / "out",
                                   "--set", "checkpoint.dir=" + dir / "ck",
                                   "--set", "checkpoint.interval=50ms"};
  // Six SIGKILLs after 1-3 new checkpoints each; the killed runs read 250 lines/s per subtask
  // (400 s for the input), so none can finish before its kill; the last run reads unpaced.
  KillPlan plan = PacedKillPlan(6, dir / "ck", 50, {"operators.source.rate=250"}, {"operators.source.rate=0"});
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 6);
  ExpectExactlyOnce(dir / "out", ExpectedCounts(input));
}

TEST(WordCountRecovery, UninterruptedRunCommitsExactlyOnceCounts) {
  ScratchDir dir;
  std::string input = dir / "input.txt";
  ASSERT_EQ(RunCairn({"generate", "--out", input, "--words", "300000", "--vocabulary", "2000", "--seed", "3"}).exit_code, 0);
  RunResult r = RunCairn({"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet",
                          "--set", "operators.source.path=" + input,
                          "--set", "operators.sink.path=" + dir / "out",
                          "--set", "checkpoint.dir=" + dir / "ck",
                          "--set", "checkpoint.interval=20ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("job wordcount completed"), std::string::npos) << r.out;
  ExpectExactlyOnce(dir / "out", ExpectedCounts(input));
  RunResult ck = RunCairn({"checkpoints", dir / "ck", "--json"});
  ASSERT_EQ(ck.exit_code, 0) << ck.err;
  EXPECT_NE(ck.out.find("\"final\":true"), std::string::npos) << ck.out;
}

}  // namespace
}  // namespace cairn::testing
