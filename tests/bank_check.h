// Checks of the bank job's invariant (jobs/bank.yaml): in every completed checkpoint, each
// account is held by exactly one subtask, and the balances plus the credits recorded in flight
// add up to accounts * initial balance.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cairn::testing {

// One checkpoint's money, read with `cairn state dump --json`.
struct BankMoney {
  int64_t balances = 0;
  int64_t in_flight = 0;                // credits on channels (requests in flight move no money yet)
  std::map<std::string, int> accounts;  // account -> how many subtasks hold it
};
BankMoney CountBankMoney(const std::string& checkpoint);

// Expects the invariant of every completed checkpoint in `ckdir` (there must be one);
// returns how many of them held credits in flight.
int ExpectEveryCheckpointConservesMoney(const std::string& ckdir, int64_t accounts, int64_t initial_balance);

// Runs a bank job (`args`, with the checkpoint.dir `ckdir`) to its end and expects the invariant
// of every checkpoint, at least one of them with credits in flight, and a final checkpoint with
// nothing in flight. `env` is added to the run's environment.
void ExpectMoneyConservedToTheEnd(const std::vector<std::string>& args, const std::string& ckdir, int64_t accounts,
                                  int64_t initial_balance, const std::vector<std::string>& env = {});

// Runs a bank job (`args`: `cairn run ... --restore latest --set checkpoint.dir=<dir>/ck`) under
// four SIGKILLs, each after 1-3 new completed checkpoints (plus up to one 30 ms interval), the
// killed runs sending 500 requests/s per subtask (60000 take a minute: no run ends before its
// kill), the last as fast as it can; then expects the invariant of every checkpoint in <dir>/ck.
// `env` is added to every run's environment.
void ExpectMoneyConservedAcrossKills(const std::vector<std::string>& args, const std::string& dir,
                                     int64_t accounts, int64_t initial_balance, const std::vector<std::string>& env = {});

}  // namespace cairn::testing
