// The restart strategy (`restart:`): a task failure injected with the test-only hook
// CAIRN_INJECT_FAILURE tears the job down and restores it in the same process, and the output
// is exactly-once however many restarts it took; without a strategy (the default) the failure
// stands (exit 1), and the attempts are bounded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;

class RestartStrategyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RunResult gen = RunCairn({"generate", "--out", input(), "--words", "100000", "--vocabulary", "1000", "--seed", "7"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
  }
  std::string input() const { return dir_ / "input.txt"; }
  std::string out() const { return dir_ / "out"; }

  std::vector<std::string> Args(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet",
                                     "--set", "operators.source.path=" + input(),
                                     "--set", "operators.sink.path=" + out(),
                                     "--set", "checkpoint.dir=" + (dir_ / "ck"),
                                     "--set", "checkpoint.interval=20ms",
                                     // Paced, so that checkpoints complete between the failures.
                                     "--set", "operators.source.rate=20000"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  RunResult Run(std::vector<std::string> extra, const std::string& inject) {
    return RunCairn(Args(std::move(extra)), {"CAIRN_INJECT_FAILURE=" + inject});
  }

  ScratchDir dir_;
};

TEST_F(RestartStrategyTest, InProcessRestartsFromTheLatestCheckpointAreExactlyOnce) {
  // The count's first subtask fails after 20000 records in the first attempt and after 15000
  // in the second; the third runs to the end.
  RunResult r = Run({"--set", "restart.strategy=fixed_delay", "--set", "restart.attempts=3", "--set", "restart.delay=0ms"},
                    "count:20000,15000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("injected failure (CAIRN_INJECT_FAILURE) after"));
  EXPECT_THAT(r.err, HasSubstr("restarting in 0 ms (restart 1 of 3"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("restart 2 of 3: "))) << "a note, which --quiet drops";
  EXPECT_THAT(r.out, HasSubstr("restarts        2 in-process"));
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
}

TEST_F(RestartStrategyTest, ExponentialDelayGivesUpAfterItsAttempts) {
  RunResult r = Run({"--set", "restart.strategy=exponential_delay", "--set", "restart.attempts=2", "--set",
                     "restart.delay=1ms", "--set", "restart.max_delay=2ms"},
                    "count:10000,10000,10000");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("restarting in 1 ms (restart 1 of 2"));
  EXPECT_THAT(r.err, HasSubstr("restarting in 2 ms (restart 2 of 2"));
  EXPECT_THAT(r.err, HasSubstr("after 2 restarts (restart.attempts = 2)"));
  // Nothing committed twice: a restore of the latest checkpoint (if one completed) completes the
  // job exactly once.
  RunResult resumed = RunCairn(ResumeArgs(Args({"--restore", "latest", "--set", "operators.source.rate=0"})));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
}

TEST_F(RestartStrategyTest, WithoutAStrategyTheFailureStandsAndABadHookIsExitTwo) {
  RunResult r = Run({}, "count:5000");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("injected failure"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("restart")));
  RunResult bad = Run({}, "nosuch:5");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("the job has no operator 'nosuch'"));
  RunResult bad_key = Run({"--set", "restart.strategy=sometimes"}, "");
  EXPECT_EQ(bad_key.exit_code, 2);
  EXPECT_THAT(bad_key.err, HasSubstr("one of none, fixed_delay, exponential_delay"));
}

}  // namespace
}  // namespace cairn::testing
