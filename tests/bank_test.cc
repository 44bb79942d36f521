// The bank job (jobs/bank.yaml): a cycle through a feedback edge. In every completed checkpoint
// the balances plus the credits recorded in flight must add up to accounts * initial_balance,
// also after SIGKILLs and restores, and the job must end on its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <sstream>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

constexpr int64_t kAccounts = 1000;
constexpr int64_t kInitial = 1000;

int64_t NumberAfter(const std::string& line, const std::string& key) {
  size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return 0;
  return std::stoll(line.substr(at + key.size() + 3));
}

struct Money {
  int64_t balances = 0;
  int64_t in_flight = 0;
  int64_t accounts = 0;
};

// Sums a checkpoint's balances and the credits on channels (every channel record that is not a
// request: requests in flight on requests->accounts channels move no money yet).
Money CountMoney(const std::string& checkpoint) {
  RunResult r = RunCairn({"state", "dump", checkpoint, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Money m;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"value\":") != std::string::npos) {
      m.balances += NumberAfter(line, "value");
      ++m.accounts;
    } else if (line.find("\"channel\":") != std::string::npos && line.find("\"channel\":\"requests[") == std::string::npos) {
      m.in_flight += NumberAfter(line, "amount");
    }
  }
  return m;
}

std::vector<std::string> CheckpointDirs(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind("chk-", 0) == 0 && std::filesystem::exists(e.path() / "_metadata")) out.push_back(e.path().string());
  }
  return out;
}

// Every completed checkpoint conserves money; returns how many held credits in flight.
int ExpectMoneyConserved(const std::string& ckdir) {
  int with_in_flight = 0;
  std::vector<std::string> dirs = CheckpointDirs(ckdir);
  EXPECT_FALSE(dirs.empty());
  for (const std::string& c : dirs) {
    Money m = CountMoney(c);
    EXPECT_EQ(m.accounts, kAccounts) << c;
    EXPECT_EQ(m.balances + m.in_flight, kAccounts * kInitial) << c << ": balances " << m.balances << " + in flight "
                                                                 << m.in_flight;
    if (m.in_flight > 0) ++with_in_flight;
  }
  return with_in_flight;
}

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
void RunToCompletion(const std::string& mode) {
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
  RunResult r = RunCairn(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(ExpectMoneyConserved(dir / "ck"), 0) << "no checkpoint caught a credit in flight";
  RunResult ck = RunCairn({"checkpoints", dir / "ck", "--json"});
  EXPECT_NE(ck.out.find("\"channel_state_bytes\":0,\"final\":true"), std::string::npos) << ck.out;
}

TEST(Bank, AlignedCheckpointsConserveMoneyAndTheJobEndsOnItsOwn) { RunToCompletion("aligned"); }

TEST(Bank, UnalignedCheckpointsConserveMoneyAndTheJobEndsOnItsOwn) { RunToCompletion("unaligned"); }

// Four SIGKILLs, each after 1-3 new completed checkpoints of its run (plus up to one interval),
// then a run to the end. The killed runs send 500 requests/s per subtask, so that they cannot
// finish their 60000 requests (a minute at that pace) before their kill on any machine; the
// last run sends as fast as it can.
void RunWithRestores(const std::string& mode) {
  ScratchDir dir;
  std::vector<std::string> args = BankArgs(dir, mode, "30ms");
  args.push_back("--restore");
  args.push_back("latest");
  KillPlan plan;
  plan.kills = 4;
  plan.seed = std::random_device{}();
  plan.checkpoint_dir = dir / "ck";
  plan.max_new_checkpoints = 3;
  plan.max_extra_ms = 30;
  plan.killed_run_args = {"--set", "operators.requests.rate=500"};
  plan.last_run_args = {"--set", "operators.requests.rate=0"};
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 4);
  ExpectMoneyConserved(dir / "ck");
}

TEST(Bank, MoneyIsConservedAcrossSigkillsAndRestoresAligned) { RunWithRestores("aligned"); }

TEST(Bank, MoneyIsConservedAcrossSigkillsAndRestoresUnaligned) { RunWithRestores("unaligned"); }

}  // namespace
}  // namespace cairn::testing
