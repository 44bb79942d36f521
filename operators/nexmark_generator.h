// The Nexmark event generator behind the `nexmark` source and `cairn generate nexmark`: the
// person, auction and bid events of the Nexmark benchmark's online auction, modelled on the
// Beam/nexmark generator (org.apache.beam.sdk.nexmark.sources.generator; nexmark/nexmark's
// `NexmarkGenerator`, `GeneratorConfig`, `PersonGenerator`, `AuctionGenerator`,
// `BidGenerator`). docs/nexmark.md describes the model.
//
// Event n (0, 1, 2, ...) is a pure function of the parameters and n: its type from n modulo
// the proportions (person if n % 50 < 1, auction if < 1 + 3, else bid), its time from n and
// `event_rate`, its ids from n (persons from 1000, auctions from 1000, so that a bid's auction
// and bidder mostly exist already), and every random choice from a random stream seeded with
// (seed, n). So any subset of event numbers, in any order, on any thread, gives the same events.
//
// Contract: a NexmarkGenerator is immutable after construction and may be shared between
// threads; Event() writes into a caller-owned NexmarkEvent whose strings keep their capacity,
// so generating allocates nothing per event once they have grown. The string_views of an event
// point into the generator (or into static tables) and live as long as the generator.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace cairn {

struct NexmarkParams {
  int64_t events = 10000000;       // total events (over all subtasks)
  int64_t event_rate = 10000;      // events per second of event time (nexmark's first-event.rate)
  int64_t seed = 42;
  int64_t person_proportion = 1;   // of every person + auction + bid events, this many are persons
  int64_t auction_proportion = 3;
  int64_t bid_proportion = 46;
  int64_t base_time = 1436918400000;  // event 0's date_time: 2015-07-15T00:00:00Z, Beam's BASE_TIME

  // Fixed, as in nexmark's NexmarkConfiguration defaults.
  int64_t hot_auction_ratio = 2;   // a bid is for a hot auction with probability 1 - 1/2
  int64_t hot_sellers_ratio = 4;   // an auction is by a hot seller with probability 1 - 1/4
  int64_t hot_bidders_ratio = 4;   // a bid is by a hot bidder with probability 1 - 1/4
  int64_t num_in_flight_auctions = 100;
  int64_t num_active_people = 1000;
  int64_t avg_person_bytes = 200;
  int64_t avg_auction_bytes = 500;
  int64_t avg_bid_bytes = 100;
};

enum class NexmarkEventType : int64_t { kPerson = 0, kAuction = 1, kBid = 2 };

// One event; only the fields of its type are meaningful.
struct NexmarkEvent {
  NexmarkEventType type = NexmarkEventType::kPerson;
  int64_t date_time = 0;  // ms since the epoch
  // person and auction
  int64_t id = 0;
  std::string_view extra;  // person, auction and bid
  // person
  std::string name, email_address, credit_card;
  std::string_view city, state;
  // auction
  std::string item_name, description;
  int64_t initial_bid = 0, reserve = 0, expires = 0, seller = 0, category = 0;
  // bid
  int64_t auction = 0, bidder = 0, price = 0;
  std::string_view channel, url;
};

class NexmarkGenerator {
 public:
  // The first ids, as in nexmark's GeneratorConfig.
  static constexpr int64_t kFirstPersonId = 1000;
  static constexpr int64_t kFirstAuctionId = 1000;
  static constexpr int64_t kFirstCategoryId = 10;

  // REQUIRES: event_rate >= 1, each proportion >= 1.
  explicit NexmarkGenerator(const NexmarkParams& p);

  const NexmarkParams& params() const { return p_; }
  int64_t events() const { return p_.events; }

  NexmarkEventType TypeOf(int64_t n) const;
  int64_t TimestampOf(int64_t n) const;  // date_time of event n, ms
  // Fills *e with event n.
  void Event(int64_t n, NexmarkEvent* e) const;

  // Appends event n as one JSON object (without newline), as `cairn generate nexmark` writes it:
  // event_type, date_time (ms), then the fields of its entity in snake_case.
  static void AppendJson(const NexmarkEvent& e, std::string* out);
  // Writes every event, each followed by '\n', to `f` (the caller checks ferror/fclose).
  void WriteJsonl(FILE* f) const;

  // The id arithmetic of the model (base 0, before kFirst*Id is added), public for the tests:
  // the id of the last person / auction generated at or before event n (-1 when none yet).
  int64_t LastBase0PersonId(int64_t n) const;
  int64_t LastBase0AuctionId(int64_t n) const;

 private:
  class Random;
  int64_t NextBase0PersonId(int64_t n, Random* r) const;
  int64_t NextBase0AuctionId(int64_t n, Random* r) const;
  void Person(int64_t n, Random* r, NexmarkEvent* e) const;
  void Auction(int64_t n, Random* r, NexmarkEvent* e) const;
  void Bid(int64_t n, Random* r, NexmarkEvent* e) const;

  const NexmarkParams p_;
  const int64_t total_proportion_;
  const double inter_event_delay_us_;
  std::vector<std::string> hot_urls_;      // the 4 hot channels' urls
  std::vector<std::string> channel_names_;  // "channel-<i>", i < 10000
  std::vector<std::string> channel_urls_;   // the url of channel i
};

}  // namespace cairn
