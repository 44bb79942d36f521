// nexmark: the Nexmark benchmark's event source (operators/nexmark_generator.h; docs/nexmark.md).
// It emits every event as one wide record, nexmark-flink's `datagen` table flattened: the event
// type and time, then the fields of all three entities, those of the other entities null.
// Subtask i of p emits the events i, i+p, i+2p, ...; its operator state is the next event
// number (StridedPosition, rescalable), so any parallelism and any restore emit the same events.
#include <optional>

#include "jobs/registry.h"
#include "operators/nexmark_generator.h"
#include "operators/rate_limiter.h"
#include "operators/strided_position.h"

namespace cairn {
namespace {

// The fields of the record, in schema order (kNexmarkFields below).
enum NexmarkField : size_t {
  kEventType,
  kDateTime,
  kId,
  kName,
  kEmailAddress,
  kCreditCard,
  kCity,
  kState,
  kExtra,
  kItemName,
  kDescription,
  kInitialBid,
  kReserve,
  kExpires,
  kSeller,
  kCategory,
  kAuction,
  kBidder,
  kPrice,
  kChannel,
  kUrl,
};

std::vector<Field> NexmarkFields() {
  using T = FieldType;
  return {{"event_type", T::kInt64},  {"date_time", T::kTimestamp}, {"id", T::kInt64},
          {"name", T::kString},       {"email_address", T::kString}, {"credit_card", T::kString},
          {"city", T::kString},       {"state", T::kString},         {"extra", T::kString},
          {"item_name", T::kString},  {"description", T::kString},   {"initial_bid", T::kInt64},
          {"reserve", T::kInt64},     {"expires", T::kTimestamp},    {"seller", T::kInt64},
          {"category", T::kInt64},    {"auction", T::kInt64},        {"bidder", T::kInt64},
          {"price", T::kInt64},       {"channel", T::kString},       {"url", T::kString}};
}

NexmarkParams ParamsOf(const OperatorConfig& c) {
  NexmarkParams p;
  p.events = c.GetInt("events");
  p.event_rate = c.GetInt("event_rate");
  p.seed = c.GetInt("seed");
  p.person_proportion = c.GetInt("person_proportion");
  p.auction_proportion = c.GetInt("auction_proportion");
  p.bid_proportion = c.GetInt("bid_proportion");
  p.base_time = c.GetInt("base_time");
  return p;
}

class NexmarkSource final : public SourceOperator {
 public:
  explicit NexmarkSource(const OperatorConfig& c) : gen_(ParamsOf(c)), rate_(c.GetInt("rate")) {}

  Status Open(OperatorContext& ctx) override {
    // `rate` is the job's total: each subtask paces at its share (at least 1 event/s).
    int64_t share = rate_ / ctx.parallelism + (static_cast<int64_t>(ctx.subtask) < rate_ % ctx.parallelism ? 1 : 0);
    limiter_.emplace(rate_ > 0 ? std::max<int64_t>(share, 1) : 0);
    return pos_.Open(ctx, "nexmark position");
  }

  PollResult Poll(RecordBatch* out, size_t max_records, Clock::time_point* resume_at) override {
    const int64_t events = gen_.events();
    if (!pos_.Valid(events)) return PollResult::kExhausted;
    size_t allowed = limiter_->Allowed(max_records, resume_at);
    if (allowed == 0) return PollResult::kWait;
    size_t n = 0;
    for (; n < allowed && pos_.Valid(events); ++n, pos_.Advance()) {
      gen_.Event(pos_.next(), &e_);
      Emit(out);
    }
    limiter_->Consumed(n);
    return PollResult::kMore;
  }

  Status SnapshotState(CheckpointId, OperatorSnapshot* snap) override {
    pos_.Snapshot(snap);
    return Status::OK();
  }

 private:
  void Emit(RecordBatch* out) const {
    const size_t r = out->AddRow();
    out->SetInt64(r, kEventType, static_cast<int64_t>(e_.type));
    out->SetInt64(r, kDateTime, e_.date_time);
    out->SetString(r, kExtra, e_.extra);
    switch (e_.type) {
      case NexmarkEventType::kPerson:
        out->SetInt64(r, kId, e_.id);
        out->SetString(r, kName, e_.name);
        out->SetString(r, kEmailAddress, e_.email_address);
        out->SetString(r, kCreditCard, e_.credit_card);
        out->SetString(r, kCity, e_.city);
        out->SetString(r, kState, e_.state);
        break;
      case NexmarkEventType::kAuction:
        out->SetInt64(r, kId, e_.id);
        out->SetString(r, kItemName, e_.item_name);
        out->SetString(r, kDescription, e_.description);
        out->SetInt64(r, kInitialBid, e_.initial_bid);
        out->SetInt64(r, kReserve, e_.reserve);
        out->SetInt64(r, kExpires, e_.expires);
        out->SetInt64(r, kSeller, e_.seller);
        out->SetInt64(r, kCategory, e_.category);
        break;
      case NexmarkEventType::kBid:
        out->SetInt64(r, kAuction, e_.auction);
        out->SetInt64(r, kBidder, e_.bidder);
        out->SetInt64(r, kPrice, e_.price);
        out->SetString(r, kChannel, e_.channel);
        out->SetString(r, kUrl, e_.url);
        break;
    }
  }

  const NexmarkGenerator gen_;
  const int64_t rate_;
  std::optional<RateLimiter> limiter_;
  StridedPosition pos_;
  NexmarkEvent e_;  // reused: its strings keep their capacity
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "nexmark",
    .role = OperatorRole::kSource,
    .output_schema = FixedSchema(NexmarkFields()),
    .params = {
        {.name = "events", .type = ParamType::kInt, .default_value = "10000000",
         .doc = "total events to generate (over all subtasks)"},
        {.name = "rate", .type = ParamType::kInt, .default_value = "0",
         .doc = "wall-clock pacing: events per second of the whole source (each of p subtasks paces at rate/p, at "
                "least 1); 0 = unlimited"},
        {.name = "event_rate", .type = ParamType::kInt, .default_value = "10000", .min_int = 1,
         .doc = "events per second of event time (nexmark's first-event.rate): event n's date_time is base_time + "
                "n * 1000 / event_rate ms, whatever the pacing"},
        {.name = "seed", .type = ParamType::kInt, .default_value = "42",
         .doc = "random seed; equal parameters give equal events"},
        {.name = "person_proportion", .type = ParamType::kInt, .default_value = "1", .min_int = 1,
         .doc = "persons among every person_proportion + auction_proportion + bid_proportion events"},
        {.name = "auction_proportion", .type = ParamType::kInt, .default_value = "3", .min_int = 1,
         .doc = "auctions among them"},
        {.name = "bid_proportion", .type = ParamType::kInt, .default_value = "46", .min_int = 1,
         .doc = "bids among them"},
        {.name = "base_time", .type = ParamType::kInt, .default_value = "1436918400000",
         .doc = "the date_time of event 0, ms since the epoch (2015-07-15T00:00:00Z, as Beam's nexmark)"},
    },
    .doc = "Generates the Nexmark benchmark's person, auction and bid events (the Beam/nexmark generator's model, "
           "docs/nexmark.md) as one wide record: event_type (0 person, 1 auction, 2 bid), date_time, then every "
           "entity's fields, those of the other entities null; select an entity with `filter where: \"event_type = "
           "2\"`. Event n depends only on the parameters and n, so any parallelism and any restore produce the "
           "same events, and `cairn generate nexmark` writes them as jsonl.",
    .create = MakeOperator<NexmarkSource>,
    .state = StridedPosition::Rule(),
    .describe_state = StridedPosition::Describe,
});

}  // namespace cairn
