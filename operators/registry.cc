#include "operators/registry.h"

#include "operators/operator_factories.h"

namespace cairn {

const char* ParamTypeName(ParamType t) {
  switch (t) {
    case ParamType::kString: return "string";
    case ParamType::kInt: return "integer";
    case ParamType::kDouble: return "number";
    case ParamType::kDuration: return "duration";
    case ParamType::kBool: return "boolean";
  }
  return "?";
}

const ParamSpec* OperatorType::FindParam(std::string_view n) const {
  for (const auto& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

static std::vector<OperatorType> BuildTable() {
  std::vector<OperatorType> t;
  t.push_back(OperatorType{
      "file_source", OperatorRole::kSource, false, Schema{"line", "", ""},
      {
          {"path", ParamType::kString, "", true, 0, "text file to read, line by line"},
          {"rate", ParamType::kInt, "0", false, 0, "records (lines) per second per subtask; 0 = unlimited"},
      },
      "Reads a text file line by line. With parallelism p, subtask i reads the lines that start in the "
      "i-th of p equal byte ranges. Its read position is part of the checkpoint.",
      NewFileSource});
  t.push_back(OperatorType{
      "generator", OperatorRole::kSource, false, Schema{"line", "", ""},
      {
          {"words", ParamType::kInt, "10000000", false, 0, "total words to generate (over all subtasks)"},
          {"words_per_line", ParamType::kInt, "10", false, 1, "words in each line"},
          {"vocabulary", ParamType::kInt, "100000", false, 1, "number of distinct words"},
          {"zipf", ParamType::kDouble, "1.0", false, 0, "Zipf exponent s of the word distribution"},
          {"seed", ParamType::kInt, "42", false, 0, "random seed; equal seeds give equal text"},
          {"rate", ParamType::kInt, "0", false, 0, "lines per second per subtask; 0 = unlimited"},
      },
      "Generates deterministic, seeded lines of Zipf-distributed words. Line n depends only on the "
      "seed and n, so any parallelism and any restore produce the same text.",
      NewGeneratorSource});
  t.push_back(OperatorType{"tokenize", OperatorRole::kTransform, false, Schema{"word", "", ""}, {},
                           "Splits each line into words: maximal runs of bytes that are not ASCII "
                           "whitespace (space, \\t, \\n, \\r, \\v, \\f). Bytes pass through untouched.",
                           NewTokenize});
  t.push_back(OperatorType{"count", OperatorRole::kTransform, true, Schema{"word", "count", ""}, {},
                           "Keyed by word: for every input word emits (word, running count). The counts "
                           "are keyed state, checkpointed to RocksDB by key group.",
                           NewCount});
  {
    OperatorType throttle{"throttle", OperatorRole::kTransform, false, Schema{"", "", ""},
                          {{"rate", ParamType::kInt, "", true, 1, "records per second per subtask"}},
                          "Passes records through at most `rate` records per second per subtask, so that a "
                          "job can be put under backpressure on purpose. It always starts its own chain, "
                          "and its schema is its input's.",
                          NewThrottle};
    throttle.chain_head = true;
    t.push_back(std::move(throttle));
  }
  t.push_back(OperatorType{
      "file_sink", OperatorRole::kSink, false, Schema{},
      {{"path", ParamType::kString, "", true, 0, "output directory"}},
      "Exactly-once file sink: writes `key<TAB>value` lines into in-progress files (names start with "
      "`.`) that become visible only when the checkpoint covering them completes.",
      NewFileSink});
  t.push_back(OperatorType{
      "bank_requests", OperatorRole::kSource, false, Schema{"account", "amount", "to"},
      {
          {"count", ParamType::kInt, "100000", false, 0, "transfer requests to generate (over all subtasks)"},
          {"seed", ParamType::kInt, "42", false, 0, "random seed; equal seeds give equal requests"},
          {"accounts", ParamType::kInt, "1000", false, 1, "account ids are 0 .. accounts-1 (match bank_accounts)"},
          {"max_amount", ParamType::kInt, "100", false, 1, "amounts are 1 .. max_amount"},
          {"rate", ParamType::kInt, "0", false, 0, "requests per second per subtask; 0 = unlimited"},
      },
      "Generates seeded transfer requests (account, amount, to): move `amount` from `account` to "
      "`to`. Request n depends only on the seed and n.",
      NewBankRequests});
  t.push_back(OperatorType{
      "bank_accounts", OperatorRole::kTransform, true, Schema{"account", "amount", ""},
      {
          {"accounts", ParamType::kInt, "1000", false, 1, "number of accounts, ids 0 .. accounts-1"},
          {"initial_balance", ParamType::kInt, "1000", false, 0, "balance of every account at a fresh start"},
      },
      "Keyed by account: keeps each balance as keyed state. A request debits its account by at most "
      "the balance and emits a credit (account = destination, amount); a credit (an input record "
      "from this operator) adds to the balance. Feed its output back into itself (a cycle).",
      NewBankAccounts});
  t.push_back(OperatorType{"discard_sink", OperatorRole::kSink, false, Schema{}, {},
                           "Counts and drops its input (for benchmarks).", NewDiscardSink});
  return t;
}

const std::vector<OperatorType>& OperatorTypes() {
  static const std::vector<OperatorType> table = BuildTable();
  return table;
}

const OperatorType* FindOperatorType(std::string_view name) {
  for (const auto& t : OperatorTypes())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace cairn
