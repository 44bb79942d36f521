#include "tests/bank_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

int64_t NumberAfter(const std::string& line, const std::string& key) {
  size_t at = line.find("\"" + key + "\":");
  return at == std::string::npos ? 0 : std::stoll(line.substr(at + key.size() + 3));
}

std::string StringAfter(const std::string& line, const std::string& key) {
  size_t at = line.find("\"" + key + "\":\"");
  if (at == std::string::npos) return "";
  size_t from = at + key.size() + 4;
  return line.substr(from, line.find('"', from) - from);
}

}  // namespace

BankMoney CountBankMoney(const std::string& checkpoint) {
  RunResult r = RunCairn({"state", "dump", checkpoint, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  BankMoney m;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"value\":") != std::string::npos) {
      m.balances += NumberAfter(line, "value");
      ++m.accounts[StringAfter(line, "key")];
    } else if (line.find("\"channel\":") != std::string::npos &&
               line.find("\"channel\":\"requests[") == std::string::npos) {
      m.in_flight += NumberAfter(line, "amount");
    }
  }
  return m;
}

int ExpectEveryCheckpointConservesMoney(const std::string& ckdir, int64_t accounts, int64_t initial_balance) {
  int with_in_flight = 0;
  int checked = 0;
  for (uint64_t id : CompletedCheckpointIds(ckdir)) {
    const std::string name = "chk-" + std::to_string(id);
    ++checked;
    BankMoney m = CountBankMoney(ckdir + "/" + name);
    EXPECT_EQ(static_cast<int64_t>(m.accounts.size()), accounts) << name;
    for (const auto& [account, n] : m.accounts) EXPECT_EQ(n, 1) << name << ": account " << account;
    EXPECT_EQ(m.balances + m.in_flight, accounts * initial_balance)
        << name << ": balances " << m.balances << " + in flight " << m.in_flight;
    if (m.in_flight > 0) ++with_in_flight;
  }
  EXPECT_GT(checked, 0) << "no completed checkpoint in " << ckdir;
  return with_in_flight;
}

void ExpectMoneyConservedToTheEnd(const std::vector<std::string>& args, const std::string& ckdir, int64_t accounts,
                                  int64_t initial_balance, const std::vector<std::string>& env) {
  RunResult r = RunCairn(args, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(ExpectEveryCheckpointConservesMoney(ckdir, accounts, initial_balance), 0)
      << "no checkpoint caught a credit in flight";
  RunResult ck = RunCairn({"checkpoints", ckdir, "--json"});
  EXPECT_NE(ck.out.find("\"channel_state_bytes\":0,\"final\":true"), std::string::npos) << ck.out;
}

void ExpectMoneyConservedAcrossKills(const std::vector<std::string>& args, const std::string& dir, int64_t accounts,
                                     int64_t initial_balance, const std::vector<std::string>& env) {
  KillPlan plan = PacedKillPlan(4, dir + "/ck", 30, {"operators.requests.rate=500"}, {"operators.requests.rate=0"});
  plan.env = env;
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir, plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 4);
  ExpectEveryCheckpointConservesMoney(dir + "/ck", accounts, initial_balance);
}

}  // namespace cairn::testing
