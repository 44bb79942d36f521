// Worker processes (jobs/cli/cluster.h): the word count on `cairn run --local-workers N`, exactly
// once through SIGKILLs of the coordinator (its workers die with it) and `--restore latest`, and
// through SIGKILLs of a worker process with an in-process restart (restart:); the coordinator and
// the workers started separately (`cairn coordinator`, `cairn worker`); bad input (exit 2,
// nothing written). The bank over worker processes is in bank_test.cc.
#include <signal.h>

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/base/file_util.h"
#include "tests/test_util.h"
#include "tests/wordcount_check.h"
#include "tests/worker_processes.h"

namespace cairn::testing {
namespace {

std::vector<std::string> WordCountArgs(const ScratchDir& dir, const std::vector<std::string>& more) {
  std::vector<std::string> args = {"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet",
                                   "--set", "checkpoint.dir=" + dir / "ck",
                                   "--set", "checkpoint.interval=50ms",
                                   "--set", "checkpoint.retain=1000",
                                   "--set", "operators.source.path=" + dir / "input.txt",
                                   "--set", "operators.sink.path=" + dir / "out"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

void Generate(const ScratchDir& dir, const std::string& words) {
  ASSERT_EQ(RunCairn({"generate", "--out", dir / "input.txt", "--words", words, "--vocabulary", "2000", "--seed", "17"})
                .exit_code,
            0);
}

struct Case {
  std::string mode;
  int workers;
};

// Both modes on 2 and 3 worker processes.
const Case kCases[] = {{"aligned", 2}, {"unaligned", 2}, {"aligned", 3}, {"unaligned", 3}};

// e.g. "unaligned3Workers".
std::string CaseName(const ::testing::TestParamInfo<Case>& i) {
  return i.param.mode + std::to_string(i.param.workers) + "Workers";
}

class LocalWorkersWordCount : public ::testing::TestWithParam<Case> {};

// SIGKILLs of `cairn run --local-workers N` (the coordinator) after 1-3 new checkpoints, each
// run restoring the previous one's latest checkpoint, then a run to the end.
TEST_P(LocalWorkersWordCount, IsExactlyOnceThroughSigkillsOfTheCoordinatorAndRestores) {
  const Case c = GetParam();
  ScratchDir dir;
  Generate(dir, "300000");
  std::vector<std::string> args = WordCountArgs(
      dir, {"--restore", "latest", "--local-workers", std::to_string(c.workers), "--set", "checkpoint.mode=" + c.mode});
  // The killed runs read 300 lines/s per subtask (30000 lines: no run reaches its end before
  // its kill), the last one as fast as it can.
  KillPlan plan = PacedKillPlan(3, dir / "ck", 50, {"operators.source.rate=300"}, {"operators.source.rate=0"});
  SCOPED_TRACE(c.mode + " on " + std::to_string(c.workers) + " worker processes, kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 3);
  ExpectExactlyOnce(dir / "out", ExpectedCounts(dir / "input.txt"), false);
}

INSTANTIATE_TEST_SUITE_P(Modes, LocalWorkersWordCount,
                         ::testing::ValuesIn(kCases), CaseName);

// A worker process SIGKILLed twice, each time once a new checkpoint completed: the coordinator
// fails the generation, the supervisor starts another worker process, and the job restarts in
// process (restart: fixed_delay) from the latest checkpoint, with a new generation. The log
// names both restarts. The source is paced (30000 lines at 300 lines/s per subtask: no
// generation can reach the end of the input before the kills, however slow the machine), so
// once the third generation has a checkpoint `cairn run` itself is SIGKILLed (its workers die
// with it) and a run with `--restore latest` reads the rest at full speed; the output of all of
// them is exactly once.
class LocalWorkersWorkerKills : public ::testing::TestWithParam<Case> {};

TEST_P(LocalWorkersWorkerKills, AKilledWorkerProcessIsReplacedAndTheJobRestartsFromTheLatestCheckpoint) {
  const Case c = GetParam();
  ScratchDir dir;
  Generate(dir, "300000");
  std::vector<std::string> args =
      WordCountArgs(dir, {"--local-workers", std::to_string(c.workers), "--set", "checkpoint.mode=" + c.mode, "--set",
                          "restart.strategy=fixed_delay", "--set", "restart.delay=0ms", "--set",
                          "operators.source.rate=300"});
  args.erase(args.begin() + 2);  // not --quiet: the restarts are notes
  ASSERT_NO_FATAL_FAILURE(KillWorkerProcessesThenFinish(args, dir.path(), static_cast<size_t>(c.workers), 2,
                                                        {"--set", "operators.source.rate=0"}));
  ExpectExactlyOnce(dir / "out", ExpectedCounts(dir / "input.txt"), false);
}

INSTANTIATE_TEST_SUITE_P(Modes, LocalWorkersWorkerKills,
                         ::testing::ValuesIn(kCases), CaseName);

// Without restart: (the default, `none`) a killed worker process fails the job: the coordinator
// cancels the other worker's tasks and exits 1 naming the lost worker, and deploys nothing more.
// The source is paced (30000 lines at 300 lines/s per subtask) so that the job cannot end
// before the kill.
TEST(LocalWorkers, WithoutARestartStrategyAKilledWorkerFailsTheJobWithExitOne) {
  ScratchDir dir;
  Generate(dir, "300000");
  std::vector<std::string> args = WordCountArgs(dir, {"--local-workers", "2", "--set", "operators.source.rate=300"});
  args.erase(args.begin() + 2);  // not --quiet: the generations are notes
  CairnProcess p(args, dir / "run.out", dir / "run.err");
  ASSERT_TRUE(PollUntil([&] { return NewestCompletedCheckpoint(dir / "ck") > 0; }));
  std::set<int> workers;
  ASSERT_TRUE(HasWorkerProcesses(p.pid(), 2, dir / "run.err", &workers));
  ASSERT_EQ(kill(*workers.rbegin(), SIGKILL), 0);
  RunResult r;
  ASSERT_TRUE(p.Wait(120000, &r));
  const std::string err = ReadText(dir / "run.err");
  EXPECT_EQ(r.exit_code, 1) << err;
  // Named by whichever saw it first: the coordinator (its control connection) or the other
  // worker (its data-plane connection to the dead one).
  const size_t at = err.find("cairn: error: ");
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_NE(err.find("connection", at), std::string::npos) << err;
  EXPECT_EQ(err.find("generation 2"), std::string::npos) << err;
}

// A worker process stopped (SIGSTOP) past the heartbeat timeout: the coordinator declares it
// lost, fails the generation and deploys the next one on the worker it has; resumed (SIGCONT)
// after that, the zombie finds no heartbeat reply within the timeout, stops its tasks by itself
// and exits without committing anything: the output is exactly once.
TEST(LocalWorkers, AWorkerStoppedPastTheHeartbeatTimeoutFencesItselfAndNeverCommits) {
  ScratchDir dir;
  Generate(dir, "60000");  // 6000 lines: 3 s at 1000 lines/s per subtask
  std::vector<std::string> args = WordCountArgs(
      dir, {"--local-workers", "2", "--heartbeat-interval", "100ms", "--heartbeat-timeout", "1s", "--set",
            "restart.strategy=fixed_delay", "--set", "restart.delay=0ms", "--set", "restart.attempts=20", "--set",
            "operators.source.rate=1000"});
  args.erase(args.begin() + 2);  // not --quiet: the restarts are notes
  CairnProcess p(args, dir / "run.out", dir / "run.err");
  ASSERT_TRUE(PollUntil([&] { return NewestCompletedCheckpoint(dir / "ck") > 0; }));
  std::set<int> workers;
  ASSERT_TRUE(HasWorkerProcesses(p.pid(), 2, dir / "run.err", &workers));
  const int zombie = *workers.begin();
  ASSERT_EQ(kill(zombie, SIGSTOP), 0);
  // The next generation runs without it (on the other worker).
  ASSERT_TRUE(PollUntil([&] {
    const std::string err = ReadText(dir / "run.err");
    return err.find("sent no heartbeat for 1000 ms") != std::string::npos &&
           err.find("generation 2: deployed") != std::string::npos;
  })) << ReadText(dir / "run.err");
  ASSERT_EQ(kill(zombie, SIGCONT), 0);
  RunResult r;
  ASSERT_TRUE(p.Wait(120000, &r));
  ASSERT_EQ(r.exit_code, 0) << ReadText(dir / "run.err");
  const std::string err = ReadText(dir / "run.err");
  // It stopped by itself (no heartbeat reply, or the connection the coordinator closed) and
  // exited 1; the supervisor started another.
  EXPECT_NE(err.find("cairn worker " + std::to_string(zombie) + ": "), std::string::npos) << err;
  EXPECT_NE(err.find("worker process " + std::to_string(zombie) + " exited with 1"), std::string::npos) << err;
  ExpectExactlyOnce(dir / "out", ExpectedCounts(dir / "input.txt"), false);
}

// `cairn coordinator` and two `cairn worker`s started on their own: the coordinator waits for
// both, runs the job and exits 0; the workers exit 0 once told to shut down.
TEST(LocalWorkers, TheCoordinatorAndWorkersStartedSeparatelyRunTheJobExactlyOnce) {
  ScratchDir dir;
  Generate(dir, "100000");
  std::vector<std::string> args = WordCountArgs(dir, {"--listen", "127.0.0.1:0", "--workers", "2"});
  args[0] = "coordinator";
  args.erase(args.begin() + 2);  // not --quiet: the listening address is a note
  CairnProcess coordinator(args, dir / "c.out", dir / "c.err");
  std::string address;
  ASSERT_TRUE(PollUntil([&] {
    const std::string err = ReadText(dir / "c.err");
    const size_t at = err.find("coordinator listening on ");
    if (at == std::string::npos) return false;
    address = err.substr(at + 25, err.find(',', at) - at - 25);
    return true;
  }));
  CairnProcess w1({"worker", "--coordinator", address}, dir / "w1.out", dir / "w1.err");
  CairnProcess w2({"worker", "--coordinator", address, "--listen", "127.0.0.1:0"}, dir / "w2.out", dir / "w2.err");
  RunResult r;
  ASSERT_TRUE(coordinator.Wait(120000, &r));
  EXPECT_EQ(r.exit_code, 0) << ReadText(dir / "c.err");
  ASSERT_TRUE(w1.Wait(120000, &r));
  EXPECT_EQ(r.exit_code, 0) << ReadText(dir / "w1.err");
  ASSERT_TRUE(w2.Wait(120000, &r));
  EXPECT_EQ(r.exit_code, 0) << ReadText(dir / "w2.err");
  ExpectExactlyOnce(dir / "out", ExpectedCounts(dir / "input.txt"), false);
  EXPECT_FALSE(CompletedCheckpointIds(dir / "ck").empty());
}

// Bad flags and a bad job: exit 2 with the error named, before any worker is waited for, and
// nothing written.
TEST(LocalWorkers, BadInputIsRejectedWithExitTwoAndNothingWritten) {
  ScratchDir dir;
  WriteText(dir / "input.txt", "a b c\n");
  const std::string job = SourceDir() + "/jobs/wordcount.yaml";
  const std::vector<std::string> sets = {"--set", "checkpoint.dir=" + dir / "ck", "--set",
                                         "operators.source.path=" + dir / "input.txt", "--set",
                                         "operators.sink.path=" + dir / "out"};
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  auto with_sets = [&](std::vector<std::string> a) {
    a.insert(a.end(), sets.begin(), sets.end());
    return a;
  };
  const std::vector<Bad> bad = {
      {with_sets({"run", job, "--local-workers", "0"}), "--local-workers needs a number of worker processes in 1..64"},
      {with_sets({"run", job, "--local-workers", "two"}), "--local-workers needs a number"},
      {with_sets({"coordinator", job, "--workers", "2"}), "coordinator: missing --listen HOST:PORT"},
      {with_sets({"coordinator", job, "--listen", "127.0.0.1:0"}), "coordinator: missing --workers N"},
      {with_sets({"coordinator", job, "--listen", "127.0.0.1:0", "--workers", "2", "--heartbeat-timeout", "100ms",
                  "--heartbeat-interval", "1s"}),
       "--heartbeat-timeout must be longer than --heartbeat-interval"},
      {with_sets({"coordinator", job, "--listen", "nowhere", "--workers", "2"}), "--listen"},
      {with_sets({"coordinator", job, "--listen", "127.0.0.1:0", "--workers", "2", "--set", "operators.nope.x=1"}),
       "nope"},
      {with_sets({"run", SourceDir() + "/jobs/wordcount-rebalance.yaml", "--local-workers", "2"}),
       "a load-balanced edge cannot cross processes"},
      {{"worker"}, "worker: missing --coordinator HOST:PORT"},
      {{"worker", "--coordinator", "127.0.0.1"}, "--coordinator"},
  };
  for (const Bad& b : bad) {
    RunResult r = RunCairn(b.args);
    EXPECT_EQ(r.exit_code, 2) << b.args[0] << " " << b.args[2] << ": " << r.err;
    EXPECT_NE(r.err.find(b.message), std::string::npos) << r.err;
    EXPECT_FALSE(PathExists(dir / "out"));
    EXPECT_FALSE(PathExists(dir / "ck"));
  }
}

}  // namespace
}  // namespace cairn::testing
