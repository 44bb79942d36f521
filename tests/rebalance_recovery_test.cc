// End to end: load-balanced edges (`partition: rebalance`, docs/architecture.md "Load-balanced
// edges") survive SIGKILLs and `--restore latest` in every checkpoint mode, with one consumer
// subtask deliberately slow (CAIRN_SLOW_SUBTASK, docs/faults.md):
// - the word count file_source -> {rebalance} -> tokenize (parallelism 3) -> count -> file_sink
//   commits every word's counts 1..n exactly once (aligned, unaligned; at least once in
//   at_least_once mode, which promises no more);
// - the bank job with a load-balanced edge on its cycle (accounts -> {rebalance} -> slow ->
//   accounts) conserves money in every completed checkpoint: the balances plus the credits
//   recorded in flight, also those a Lai–Yang record caught on the load-balanced edge.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/bank_check.h"
#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

const char* kSlowTokenize = "CAIRN_SLOW_SUBTASK=tokenize:1:5000";  // 5 ms before each batch

void WordCount(const std::string& mode, bool at_least_once) {
  ScratchDir dir;
  ASSERT_EQ(RunCairn({"generate", "--out", dir / "input.txt", "--words", "1000000", "--vocabulary", "2000", "--seed", "31"})
                .exit_code,
            0);
  const std::map<std::string, int64_t> expected = ExpectedCounts(dir / "input.txt");
  const std::string job = dir / "job.yaml";
  WriteText(job, "job: rebalance\nparallelism: 2\nmax_parallelism: 128\ncheckpoint:\n  interval: 200ms\n  dir: " +
                     dir / "ck" + "\n  retain: 1000\noperators:\n"
                     "  - {id: source, type: file_source, path: " + dir / "input.txt" + "}\n"
                     "  - {id: tokenize, type: tokenize, parallelism: 3, inputs: [{from: source, partition: rebalance}]}\n"
                     "  - {id: count, type: count, key_by: word, inputs: [tokenize]}\n"
                     "  - {id: sink, type: file_sink, path: " + dir / "out" + ", inputs: [count]}\n");
  std::vector<std::string> args = {"run", job, "--quiet", "--restore", "latest", "--set", "checkpoint.dir=" + dir / "ck",
                                   "--set", "checkpoint.mode=" + mode};
  // Killed runs read 1000 lines/s per source subtask: 100000 lines last 50 s, far beyond a kill.
  KillPlan plan = PacedKillPlan(4, dir / "ck", 200, {"operators.source.rate=1000"}, {"operators.source.rate=0"});
  plan.env = {kSlowTokenize};
  SCOPED_TRACE("mode " + mode + ", kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 4);
  ExpectExactlyOnce(dir / "out", expected, at_least_once);
}

// Restores at other parallelisms on both sides of the edge: the recorded batches go back on
// the shared queue, whoever reads it now.
TEST(RebalanceRecovery, UnalignedWordCountRestoresAtOtherParallelisms) {
  ScratchDir dir;
  ASSERT_EQ(RunCairn({"generate", "--out", dir / "input.txt", "--words", "1000000", "--vocabulary", "2000", "--seed", "32"})
                .exit_code,
            0);
  const std::string job = dir / "job.yaml";
  WriteText(job, "job: rebalance\nparallelism: 2\ncheckpoint:\n  interval: 100ms\n  mode: unaligned\n  dir: " + dir / "ck" +
                     "\n  retain: 1000\noperators:\n"
                     "  - {id: source, type: file_source, path: " + dir / "input.txt" + "}\n"
                     "  - {id: tokenize, type: tokenize, parallelism: 3, inputs: [{from: source, partition: rebalance}]}\n"
                     "  - {id: count, type: count, key_by: word, inputs: [tokenize]}\n"
                     "  - {id: sink, type: file_sink, path: " + dir / "out" + ", inputs: [count]}\n");
  std::vector<std::string> args = {"run", job, "--quiet", "--restore", "latest", "--set", "checkpoint.dir=" + dir / "ck"};
  KillPlan plan = PacedKillPlan(2, dir / "ck", 100, {"operators.source.rate=1000"},
                                {"operators.source.rate=0", "operators.source.parallelism=1",
                                 "operators.tokenize.parallelism=2"});
  plan.env = {kSlowTokenize};
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 2);
  ExpectExactlyOnce(dir / "out", ExpectedCounts(dir / "input.txt"));
}

TEST(RebalanceRecovery, AlignedWordCountIsExactlyOnceAcrossSigkills) { WordCount("aligned", false); }
TEST(RebalanceRecovery, UnalignedWordCountIsExactlyOnceAcrossSigkills) { WordCount("unaligned", false); }
TEST(RebalanceRecovery, AtLeastOnceWordCountLosesNothingAcrossSigkills) { WordCount("at_least_once", true); }

constexpr int64_t kAccounts = 1000;
constexpr int64_t kInitial = 1000;

// jobs/bank.yaml with the cycle through a load-balanced edge into a throttle of parallelism 3,
// one subtask of which is slow: credits queue on the shared queue and the feedback channels.
std::string BankJob(const ScratchDir& dir) {
  const std::string job = dir / "bank.yaml";
  WriteText(job,
            "job: bank\n"
            "parallelism: 2\n"
            "checkpoint:\n"
            "  interval: 30ms\n"
            "  retain: 100000\n"
            "  dir: " + dir / "ck" + "\n"
            "operators:\n"
            "  - {id: requests, type: bank_requests, count: 60000, accounts: 1000}\n"
            "  - id: accounts\n"
            "    type: bank_accounts\n"
            "    key_by: account\n"
            "    inputs: [requests, slow]\n"
            "    accounts: 1000\n"
            "    initial_balance: 1000\n"
            "  - {id: slow, type: throttle, rate: 10000, parallelism: 3, inputs: [{from: accounts, partition: rebalance}]}\n");
  return job;
}

void BankToCompletion(const std::string& mode) {
  ScratchDir dir;
  ExpectMoneyConservedToTheEnd({"run", BankJob(dir), "--quiet", "--set", "checkpoint.mode=" + mode}, dir / "ck",
                               kAccounts, kInitial, {"CAIRN_SLOW_SUBTASK=slow:1:2000"});
}

TEST(RebalanceBank, AlignedCheckpointsConserveMoneyAndTheJobEnds) { BankToCompletion("aligned"); }
TEST(RebalanceBank, UnalignedCheckpointsConserveMoneyAndTheJobEnds) { BankToCompletion("unaligned"); }

void BankWithKills(const std::string& mode) {
  ScratchDir dir;
  ExpectMoneyConservedAcrossKills({"run", BankJob(dir), "--quiet", "--restore", "latest", "--set",
                                   "checkpoint.dir=" + dir / "ck", "--set", "checkpoint.mode=" + mode},
                                  dir.path(), kAccounts, kInitial, {"CAIRN_SLOW_SUBTASK=slow:1:2000"});
}

TEST(RebalanceBank, AlignedMoneyIsConservedAcrossSigkills) { BankWithKills("aligned"); }
TEST(RebalanceBank, UnalignedMoneyIsConservedAcrossSigkills) { BankWithKills("unaligned"); }

}  // namespace
}  // namespace cairn::testing
