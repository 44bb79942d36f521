// The bank job (jobs/bank.yaml): a cycle through a feedback edge. In every completed checkpoint
// the balances plus the credits recorded in flight must add up to accounts * initial_balance,
// also after SIGKILLs and restores, and the job must end on its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <sstream>

#include "tests/bank_check.h"
#include "tests/test_util.h"
#include "tests/wordcount_check.h"
#include "tests/worker_processes.h"

namespace cairn::testing {
namespace {

constexpr int64_t kAccounts = 1000;
constexpr int64_t kInitial = 1000;

std::vector<std::string> BankArgs(const ScratchDir& dir, const std::string& mode, const std::string& interval) {
  return {"run", SourceDir() + "/jobs/bank.yaml", "--quiet",
          "--set", "checkpoint.dir=" + dir / "ck",
          "--set", "checkpoint.mode=" + mode,
          "--set", "checkpoint.interval=" + interval,
          "--set", "checkpoint.retain=100000",
          "--set", "operators.requests.count=60000",
          "--set", "operators.requests.rate=30000"};
}

// jobs/bank.yaml with a throttle on the feedback path (accounts -> slow -> accounts) and an
// unpaced source: credits queue up before the throttle from the start and drain at 20000/s, so
// checkpoints catch credits in flight on any machine (at the latest the first one taken after
// the requests ran out, which cannot be the final one while credits are still queued). Without
// the throttle, whether any checkpoint caught a credit in flight depended on the machine: on a
// loaded one every checkpoint could come while the feedback channels were empty.
// `env`: e.g. CAIRN_LOOPBACK_WORKERS=N, the channels between N workers over loopback TCP.
// `extra`: more flags, e.g. --local-workers N (worker processes, jobs/cli/cluster.h).
void RunToCompletion(const std::string& mode, const std::vector<std::string>& env = {},
                     const std::vector<std::string>& extra = {}) {
  ScratchDir dir;
  const std::string job = dir / "bank-throttled.yaml";
  WriteText(job,
            "job: bank\n"
            "parallelism: 2\n"
            "operators:\n"
            "  - id: requests\n"
            "    type: bank_requests\n"
            "    count: 60000\n"
            "    accounts: 1000\n"
            "  - id: accounts\n"
            "    type: bank_accounts\n"
            "    key_by: account\n"
            "    inputs: [requests, slow]\n"
            "    accounts: 1000\n"
            "    initial_balance: 1000\n"
            "  - id: slow\n"
            "    type: throttle\n"
            "    rate: 10000\n"
            "    inputs: [accounts]\n");
  std::vector<std::string> args = BankArgs(dir, mode, "10ms");
  args[1] = job;
  args.resize(args.size() - 4);  // no operators.requests.count/rate: the file sets them
  args.insert(args.end(), extra.begin(), extra.end());
  ExpectMoneyConservedToTheEnd(args, dir / "ck", kAccounts, kInitial, env);
}

TEST(Bank, AlignedCheckpointsConserveMoneyAndTheJobEndsOnItsOwn) { RunToCompletion("aligned"); }

TEST(Bank, UnalignedCheckpointsConserveMoneyAndTheJobEndsOnItsOwn) { RunToCompletion("unaligned"); }

// Four SIGKILLs, each after 1-3 new completed checkpoints of its run (plus up to one interval),
// then a run to the end. The killed runs send 500 requests/s per subtask, so that they cannot
// finish their 60000 requests (a minute at that pace) before their kill on any machine; the
// last run sends as fast as it can.
void RunWithRestores(const std::string& mode, const std::vector<std::string>& env = {},
                     const std::vector<std::string>& extra = {}) {
  ScratchDir dir;
  std::vector<std::string> args = BankArgs(dir, mode, "30ms");
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--restore");
  args.push_back("latest");
  ExpectMoneyConservedAcrossKills(args, dir.path(), kAccounts, kInitial, env);
}

TEST(Bank, MoneyIsConservedAcrossSigkillsAndRestoresAligned) { RunWithRestores("aligned"); }

TEST(Bank, MoneyIsConservedAcrossSigkillsAndRestoresUnaligned) { RunWithRestores("unaligned"); }

// The same with the tasks on 2 or 3 workers and the channels between them, the feedback edge
// included, over loopback TCP (engine/net).
TEST(Bank, OverLoopbackWorkersAlignedCheckpointsConserveMoney) { RunToCompletion("aligned", {"CAIRN_LOOPBACK_WORKERS=2"}); }

TEST(Bank, OverLoopbackWorkersUnalignedCheckpointsConserveMoney) {
  RunToCompletion("unaligned", {"CAIRN_LOOPBACK_WORKERS=3"});
}

TEST(Bank, OverLoopbackWorkersMoneyIsConservedAcrossSigkillsAndRestoresAligned) {
  RunWithRestores("aligned", {"CAIRN_LOOPBACK_WORKERS=2"});
}

TEST(Bank, OverLoopbackWorkersMoneyIsConservedAcrossSigkillsAndRestoresUnaligned) {
  RunWithRestores("unaligned", {"CAIRN_LOOPBACK_WORKERS=2"});
}

// The same with worker processes (`cairn run --local-workers N`): the tasks in 2 or 3 processes,
// the checkpoint coordinator in the supervising one; the SIGKILLs of RunWithRestores hit the
// coordinator, whose workers die with it.
TEST(Bank, OnLocalWorkerProcessesAlignedCheckpointsConserveMoney) {
  RunToCompletion("aligned", {}, {"--local-workers", "2"});
}

TEST(Bank, OnLocalWorkerProcessesUnalignedCheckpointsConserveMoney) {
  RunToCompletion("unaligned", {}, {"--local-workers", "3"});
}

TEST(Bank, OnLocalWorkerProcessesMoneyIsConservedAcrossSigkillsOfTheCoordinatorUnaligned) {
  RunWithRestores("unaligned", {}, {"--local-workers", "2"});
}

TEST(Bank, OnLocalWorkerProcessesMoneyIsConservedAcrossSigkillsOfTheCoordinatorAligned) {
  RunWithRestores("aligned", {}, {"--local-workers", "3"});
}

// A worker process SIGKILLed twice while the job restarts in process (restart: fixed_delay) from
// the latest checkpoint on a new generation, then `cairn run` SIGKILLed and the rest run with
// `--restore latest` (tests/worker_processes.h): money is conserved in every checkpoint of every
// generation. The killed runs send 500 requests/s per subtask (60000 take a minute), the last
// one as fast as it can.
void RunWithWorkerKills(const std::string& mode, int workers) {
  ScratchDir dir;
  std::vector<std::string> args = BankArgs(dir, mode, "30ms");
  args.erase(args.begin() + 2);  // not --quiet: the restarts are notes
  args.insert(args.end(), {"--set", "operators.requests.rate=500", "--local-workers", std::to_string(workers), "--set",
                           "restart.strategy=fixed_delay", "--set", "restart.delay=0ms"});
  ASSERT_NO_FATAL_FAILURE(KillWorkerProcessesThenFinish(args, dir.path(), static_cast<size_t>(workers), 2,
                                                        {"--set", "operators.requests.rate=0"}));
  ExpectEveryCheckpointConservesMoney(dir / "ck", kAccounts, kInitial);
}

TEST(Bank, OnLocalWorkerProcessesMoneyIsConservedAcrossSigkillsOfAWorkerAligned) { RunWithWorkerKills("aligned", 2); }

TEST(Bank, OnLocalWorkerProcessesMoneyIsConservedAcrossSigkillsOfAWorkerUnaligned) {
  RunWithWorkerKills("unaligned", 3);
}

}  // namespace
}  // namespace cairn::testing
