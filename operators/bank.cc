// The bank of the classic Chandy–Lamport example, as two operators:
// - bank_requests: a seeded source of transfer requests (from, amount, to);
// - bank_accounts: keyed by account, holds each balance as keyed state; a request debits its
//   account by at most the balance and sends a credit for the amount, keyed by the destination
//   account, over a feedback edge back into bank_accounts, which adds it to that balance.
// Money is only moved, never made or lost, so in every consistent snapshot the balances plus
// the credits in flight add up to accounts * initial_balance.
#include <algorithm>
#include <charconv>
#include <string>

#include "jobs/registry.h"
#include "operators/rate_limiter.h"
#include "operators/strided_position.h"
#include "state/keyed_state_api.h"

namespace cairn {
namespace {

std::string AccountKey(int64_t id) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, id);
  return std::string(buf, r.ptr);
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Request n depends only on the seed and n: record (from, amount, to), to != from.
class BankRequests final : public SourceOperator {
 public:
  explicit BankRequests(const OperatorConfig& c)
      : count_(c.GetInt("count")),
        seed_(static_cast<uint64_t>(c.GetInt("seed"))),
        accounts_(c.GetInt("accounts")),
        max_amount_(c.GetInt("max_amount")),
        limiter_(c.GetInt("rate")) {}

  Status Open(OperatorContext& ctx) override { return pos_.Open(ctx, "request position"); }

  PollResult Poll(RecordBatch* out, size_t max_records, Clock::time_point* resume_at) override {
    if (!pos_.Valid(count_)) return PollResult::kExhausted;
    size_t allowed = limiter_.Allowed(max_records, resume_at);
    if (allowed == 0) return PollResult::kWait;
    size_t n = 0;
    for (; n < allowed && pos_.Valid(count_); ++n, pos_.Advance()) {
      uint64_t h = Mix(seed_ * 0x100000001b3ull ^ static_cast<uint64_t>(pos_.next()));
      int64_t from = static_cast<int64_t>(h % static_cast<uint64_t>(accounts_));
      int64_t to = accounts_ > 1 ? (from + 1 + static_cast<int64_t>(Mix(h) % static_cast<uint64_t>(accounts_ - 1))) % accounts_
                                 : from;
      int64_t amount = 1 + static_cast<int64_t>(Mix(h ^ 0x5bd1e995) % static_cast<uint64_t>(max_amount_));
      out->Add(AccountKey(from), amount, to);
    }
    limiter_.Consumed(n);
    return PollResult::kMore;
  }

  Status SnapshotState(CheckpointId, OperatorSnapshot* snap) override {
    pos_.Snapshot(snap);
    return Status::OK();
  }

 private:
  const int64_t count_;
  const uint64_t seed_;
  const int64_t accounts_;
  const int64_t max_amount_;
  RateLimiter limiter_;
  StridedPosition pos_;
};

// Input records: a request (account, amount, to) from bank_requests, or a credit (account,
// amount) from this operator, told apart by their schema.
class BankAccounts final : public Operator {
 public:
  explicit BankAccounts(const OperatorConfig& c)
      : accounts_(c.GetInt("accounts")), initial_(c.GetInt("initial_balance")) {}

  Status Open(OperatorContext& ctx) override {
    if (ctx.keyed == nullptr) return Status::Internal("bank_accounts operator " + ctx.operator_id + " has no keyed state");
    CAIRN_RETURN_IF_ERROR(ctx.keyed->GetValueState(kDefaultStateName, &state_));
    if (!ctx.restored_checkpoint) {
      // A fresh bank: every account this subtask owns starts with the initial balance.
      for (int64_t id = 0; id < accounts_; ++id) {
        std::string key = AccountKey(id);
        if (ctx.key_groups.Contains(KeyGroupOf(KeyHash(key), ctx.max_parallelism))) state_->Put(key, initial_);
      }
    }
    return Status::OK();
  }

  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    const bool credits = in.num_fields() == 2;
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view account = in.GetString(i, 0);
      int64_t amount = in.GetInt64(i, 1);
      if (credits) {
        int64_t balance = 0;
        if (!state_->Get(account, &balance)) balance = 0;
        state_->Put(account, balance + amount);
        continue;
      }
      int64_t balance = 0;
      if (!state_->Get(account, &balance)) balance = 0;
      int64_t moved = std::min(amount, balance);
      if (moved <= 0) continue;
      state_->Put(account, balance - moved);
      size_t r = out->AddRow();
      out->SetString(r, 0, AccountKey(in.GetInt64(i, 2)));
      out->SetInt64(r, 1, moved);
    }
    return Status::OK();
  }

 private:
  const int64_t accounts_;
  const int64_t initial_;
  ValueState<int64_t>* state_ = nullptr;  // the balances: the default keyed state
};

// Emits credits (account string, amount int64); reads requests and its own credits.
Status BankAccountsSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  static const SchemaRef credits = MakeSchema({{"account", FieldType::kString}, {"amount", FieldType::kInt64}});
  for (const SchemaRef& in : inputs) {
    if (in == nullptr) continue;
    bool request = in->size() == 3 && in->field(2).type == FieldType::kInt64;
    if ((*in != *credits && !request) || in->field(0) != credits->field(0) || in->field(1) != credits->field(1))
      return Status::InvalidArgument(c.location + ": operator '" + c.id + "' (type bank_accounts) reads requests " +
                                     "(account string, amount int64, to int64) and credits " + credits->ToString() +
                                     ", not " + in->ToString());
  }
  *out = credits;
  return Status::OK();
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "bank_requests",
    .role = OperatorRole::kSource,
    .output_schema = FixedSchema({{"account", FieldType::kString}, {"amount", FieldType::kInt64},
                                  {"to", FieldType::kInt64}}),
    .params = {
        {.name = "count", .type = ParamType::kInt, .default_value = "100000",
         .doc = "transfer requests to generate (over all subtasks)"},
        {.name = "seed", .type = ParamType::kInt, .default_value = "42",
         .doc = "random seed; equal seeds give equal requests"},
        {.name = "accounts", .type = ParamType::kInt, .default_value = "1000", .min_int = 1,
         .doc = "account ids are 0 .. accounts-1 (match bank_accounts)"},
        {.name = "max_amount", .type = ParamType::kInt, .default_value = "100", .min_int = 1,
         .doc = "amounts are 1 .. max_amount"},
        {.name = "rate", .type = ParamType::kInt, .default_value = "0",
         .doc = "requests per second per subtask; 0 = unlimited"},
    },
    .doc = "Generates seeded transfer requests (account, amount, to): move `amount` from `account` to "
           "`to`. Request n depends only on the seed and n.",
    .create = MakeOperator<BankRequests>,
    .state = StridedPosition::Rule(),
    .describe_state = StridedPosition::Describe,
});

CAIRN_REGISTER_OPERATOR({
    .name = "bank_accounts",
    .role = OperatorRole::kTransform,
    .keyed = true,
    .output_schema = BankAccountsSchema,
    .params = {
        {.name = "accounts", .type = ParamType::kInt, .default_value = "1000", .min_int = 1,
         .doc = "number of accounts, ids 0 .. accounts-1"},
        {.name = "initial_balance", .type = ParamType::kInt, .default_value = "1000",
         .doc = "balance of every account at a fresh start"},
    },
    .doc = "Keyed by account: keeps each balance as keyed state. A request debits its account by at most "
           "the balance and emits a credit (account = destination, amount); a credit (an input record "
           "from this operator) adds to the balance. Feed its output back into itself (a cycle).",
    .create = MakeOperator<BankAccounts>,
});

}  // namespace cairn
