// Checks of the bank job's invariant (jobs/bank.yaml): in every completed checkpoint, each
// account is held by exactly one subtask, and the balances plus the credits recorded in flight
// add up to accounts * initial balance.
#pragma once

#include <cstdint>
#include <map>
#include <string>

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

}  // namespace cairn::testing
