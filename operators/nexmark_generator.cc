#include "operators/nexmark_generator.h"

#include <charconv>
#include <cmath>

#include "engine/dataflow/record_codec.h"
#include "operators/jsonl_lines.h"

namespace cairn {
namespace {

// Fixed by the model (nexmark's generator constants).
constexpr int64_t kPersonIdLead = 10;     // persons ahead of the last one a bid or auction may name
constexpr int64_t kAuctionIdLead = 10;    // auctions ahead of the last one a bid may name
constexpr int64_t kHotSellerBatch = 100;  // the hot seller is the first of each 100 persons
constexpr int64_t kHotBidderBatch = 100;  // the hot bidder is the second of each 100 persons
constexpr int64_t kHotAuctionBatch = 100; // the hot auction is the first of each 100 auctions
constexpr int64_t kNumCategories = 5;
constexpr int64_t kMinStringLength = 3;
constexpr int64_t kHotChannelsRatio = 2;  // a bid comes through a hot channel with probability 1/2
constexpr int64_t kChannels = 10000;
constexpr size_t kExtraSourceBytes = 1 << 20;

constexpr std::string_view kStates[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
constexpr std::string_view kCities[] = {"Phoenix", "Los Angeles", "San Francisco", "Boise",   "Portland",
                                        "Bend",    "Redmond",     "Seattle",       "Kent",    "Cheyenne"};
constexpr std::string_view kFirstNames[] = {"Peter", "Paul",  "Luke",  "John",   "Saul",  "Vicky",
                                            "Kate",  "Julie", "Sarah", "Deiter", "Walter"};
constexpr std::string_view kLastNames[] = {"Shultz", "Abrams", "Spencer", "White", "Bartels",
                                           "Walton", "Smith",  "Jones",   "Noris"};
constexpr std::string_view kHotChannels[] = {"Google", "Facebook", "Baidu", "Apple"};

template <typename T, size_t N>
constexpr int64_t Size(const T (&)[N]) {
  return static_cast<int64_t>(N);
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

// The letters extras are cut from (nexmark cuts them from one random 1 MiB string too).
std::string_view ExtraSource() {
  static const std::string* const text = [] {
    auto* s = new std::string(kExtraSourceBytes, 'a');
    uint64_t x = 0x6e65786d61726bull;  // "nexmark"
    for (char& c : *s) c = static_cast<char>('a' + Mix(x++) % 26);
    return s;
  }();
  return *text;
}

}  // namespace

// A SplitMix64 stream: the per-event random source (nexmark seeds java.util.Random per event
// in Beam; nexmark-flink uses an unseeded SplittableRandom, which is not reproducible).
class NexmarkGenerator::Random {
 public:
  Random(int64_t seed, uint64_t stream) : state_(Mix(static_cast<uint64_t>(seed) * 0x100000001b3ull ^ Mix(stream))) {}
  uint64_t Next() { return Mix(state_ += 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, bound), bound >= 1 (multiply-shift; the bias is below 2^-32 for the bounds used).
  int64_t Below(int64_t bound) {
    return static_cast<int64_t>((static_cast<unsigned __int128>(Next()) * static_cast<uint64_t>(bound)) >> 64);
  }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // A price in cents: 10^(6u) dollars for u uniform in [0, 1), so from $1 to $1M, log-uniform.
  int64_t Price() { return std::llround(std::pow(10.0, Unit() * 6.0) * 100.0); }
  // 3 to max_length-1 characters: lower-case letters, one in 13 `special`; spaces trimmed.
  void String(int64_t max_length, char special, std::string* out) {
    const size_t start = out->size();
    for (int64_t len = kMinStringLength + Below(max_length - kMinStringLength); len > 0; --len)
      out->push_back(Below(13) == 0 ? special : static_cast<char>('a' + Below(26)));
    if (special != ' ') return;
    size_t b = start, e = out->size();
    while (b < e && (*out)[b] == ' ') ++b;
    while (e > b && (*out)[e - 1] == ' ') --e;
    out->erase(e);
    out->erase(start, b - start);
  }
  // About `average - current` letters (within 20%), so that an event's size averages `average`.
  std::string_view Extra(int64_t current, int64_t average) {
    if (current > average) return {};
    average -= current;
    const int64_t delta = std::llround(static_cast<double>(average) * 0.2);
    const int64_t size = average - delta + (delta == 0 ? 0 : Below(2 * delta));
    const std::string_view source = ExtraSource();
    const int64_t offset = Below(static_cast<int64_t>(source.size()) - size);
    return source.substr(static_cast<size_t>(offset), static_cast<size_t>(size));
  }

 private:
  uint64_t state_;
};

NexmarkGenerator::NexmarkGenerator(const NexmarkParams& p)
    : p_(p),
      total_proportion_(p.person_proportion + p.auction_proportion + p.bid_proportion),
      inter_event_delay_us_(1e6 / static_cast<double>(p.event_rate)) {
  auto base_url = [](Random* r) {
    std::string url = "https://www.nexmark.com/";
    for (int i = 0; i < 3; ++i) {
      r->String(5, '_', &url);
      url.push_back('/');
    }
    url += "item.htm?query=1";
    return url;
  };
  Random hot(p.seed, 0x686f7475726c73ull);  // "hoturls"
  for (int i = 0; i < 4; ++i) hot_urls_.push_back(base_url(&hot));
  Random channels(p.seed, 0x6368616e6e656cull);  // "channel"
  channel_names_.reserve(kChannels);
  channel_urls_.reserve(kChannels);
  for (int64_t i = 0; i < kChannels; ++i) {
    channel_names_.push_back("channel-" + std::to_string(i));
    std::string url = base_url(&channels);
    // Nine in ten channel urls name the channel, by its number's bits reversed (as nexmark).
    if (channels.Below(10) > 0) {
      uint32_t v = static_cast<uint32_t>(i), rev = 0;
      for (int b = 0; b < 32; ++b) rev |= ((v >> b) & 1u) << (31 - b);
      url += "&channel_id=" + std::to_string(std::llabs(static_cast<int64_t>(static_cast<int32_t>(rev))));
    }
    channel_urls_.push_back(std::move(url));
  }
}

NexmarkEventType NexmarkGenerator::TypeOf(int64_t n) const {
  const int64_t rem = n % total_proportion_;
  if (rem < p_.person_proportion) return NexmarkEventType::kPerson;
  if (rem < p_.person_proportion + p_.auction_proportion) return NexmarkEventType::kAuction;
  return NexmarkEventType::kBid;
}

int64_t NexmarkGenerator::TimestampOf(int64_t n) const {
  return p_.base_time + static_cast<int64_t>(static_cast<double>(n) * inter_event_delay_us_) / 1000;
}

int64_t NexmarkGenerator::LastBase0PersonId(int64_t n) const {
  const int64_t epoch = n / total_proportion_;
  int64_t offset = n % total_proportion_;
  if (offset >= p_.person_proportion) offset = p_.person_proportion - 1;  // an auction or bid: this epoch's last person
  return epoch * p_.person_proportion + offset;
}

int64_t NexmarkGenerator::LastBase0AuctionId(int64_t n) const {
  int64_t epoch = n / total_proportion_;
  int64_t offset = n % total_proportion_;
  if (offset < p_.person_proportion) {  // a person: the previous epoch's last auction
    --epoch;
    offset = p_.auction_proportion - 1;
  } else if (offset >= p_.person_proportion + p_.auction_proportion) {  // a bid: this epoch's last auction
    offset = p_.auction_proportion - 1;
  } else {
    offset -= p_.person_proportion;
  }
  return epoch * p_.auction_proportion + offset;
}

// One of the `num_active_people` latest persons, or one of a few not generated yet.
int64_t NexmarkGenerator::NextBase0PersonId(int64_t n, Random* r) const {
  const int64_t people = LastBase0PersonId(n) + 1;
  const int64_t active = std::min(people, p_.num_active_people);
  return people - active + r->Below(active + kPersonIdLead);
}

// One of the auctions likely still open (`num_in_flight_auctions`), or a few not generated yet.
int64_t NexmarkGenerator::NextBase0AuctionId(int64_t n, Random* r) const {
  const int64_t max_auction = LastBase0AuctionId(n);
  const int64_t min_auction = std::max<int64_t>(max_auction - p_.num_in_flight_auctions, 0);
  return min_auction + r->Below(max_auction - min_auction + 1 + kAuctionIdLead);
}

void NexmarkGenerator::Event(int64_t n, NexmarkEvent* e) const {
  Random r(p_.seed, static_cast<uint64_t>(n));
  e->type = TypeOf(n);
  e->date_time = TimestampOf(n);
  switch (e->type) {
    case NexmarkEventType::kPerson: Person(n, &r, e); break;
    case NexmarkEventType::kAuction: Auction(n, &r, e); break;
    case NexmarkEventType::kBid: Bid(n, &r, e); break;
  }
}

void NexmarkGenerator::Person(int64_t n, Random* r, NexmarkEvent* e) const {
  e->id = LastBase0PersonId(n) + kFirstPersonId;
  e->name.clear();
  e->name.append(kFirstNames[r->Below(Size(kFirstNames))]);
  e->name.push_back(' ');
  e->name.append(kLastNames[r->Below(Size(kLastNames))]);
  e->email_address.clear();
  r->String(7, ' ', &e->email_address);
  e->email_address.push_back('@');
  r->String(5, ' ', &e->email_address);
  e->email_address.append(".com");
  e->credit_card.clear();
  for (int i = 0; i < 4; ++i) {
    if (i > 0) e->credit_card.push_back(' ');
    const int64_t group = r->Below(10000);
    char buf[8];
    snprintf(buf, sizeof buf, "%04d", static_cast<int>(group));
    e->credit_card.append(buf, 4);
  }
  e->city = kCities[r->Below(Size(kCities))];
  e->state = kStates[r->Below(Size(kStates))];
  const int64_t size = 8 + static_cast<int64_t>(e->name.size() + e->email_address.size() + e->credit_card.size() +
                                                e->city.size() + e->state.size());
  e->extra = r->Extra(size, p_.avg_person_bytes);
}

void NexmarkGenerator::Auction(int64_t n, Random* r, NexmarkEvent* e) const {
  e->id = LastBase0AuctionId(n) + kFirstAuctionId;
  // A hot seller (the first of the latest batch of 100 persons) with probability 1 - 1/ratio.
  int64_t seller = r->Below(p_.hot_sellers_ratio) > 0 ? LastBase0PersonId(n) / kHotSellerBatch * kHotSellerBatch
                                                      : NextBase0PersonId(n, r);
  e->seller = seller + kFirstPersonId;
  e->category = kFirstCategoryId + r->Below(kNumCategories);
  e->initial_bid = r->Price();
  // Open for a random time averaging the time until num_in_flight_auctions more auctions exist.
  const int64_t events_for_auctions = p_.num_in_flight_auctions * total_proportion_ / p_.auction_proportion;
  const int64_t horizon = TimestampOf(n + events_for_auctions) - e->date_time;
  e->expires = e->date_time + 1 + r->Below(std::max<int64_t>(horizon * 2, 1));
  e->item_name.clear();
  r->String(20, ' ', &e->item_name);
  e->description.clear();
  r->String(100, ' ', &e->description);
  e->reserve = e->initial_bid + r->Price();
  const int64_t size = 8 + static_cast<int64_t>(e->item_name.size() + e->description.size()) + 40;
  e->extra = r->Extra(size, p_.avg_auction_bytes);
}

void NexmarkGenerator::Bid(int64_t n, Random* r, NexmarkEvent* e) const {
  // A hot auction (the first of the latest batch of 100 auctions) with probability 1 - 1/ratio.
  const int64_t auction = r->Below(p_.hot_auction_ratio) > 0
                              ? LastBase0AuctionId(n) / kHotAuctionBatch * kHotAuctionBatch
                              : NextBase0AuctionId(n, r);
  e->auction = auction + kFirstAuctionId;
  // A hot bidder (the second of the latest batch of 100 persons, so never the hot seller).
  const int64_t bidder = r->Below(p_.hot_bidders_ratio) > 0
                             ? LastBase0PersonId(n) / kHotBidderBatch * kHotBidderBatch + 1
                             : NextBase0PersonId(n, r);
  e->bidder = bidder + kFirstPersonId;
  e->price = r->Price();
  if (r->Below(kHotChannelsRatio) > 0) {
    const int64_t i = r->Below(Size(kHotChannels));
    e->channel = kHotChannels[i];
    e->url = hot_urls_[static_cast<size_t>(i)];
  } else {
    const size_t i = static_cast<size_t>(r->Below(kChannels));
    e->channel = channel_names_[i];
    e->url = channel_urls_[i];
  }
  e->extra = r->Extra(32, p_.avg_bid_bytes);
}

void NexmarkGenerator::AppendJson(const NexmarkEvent& e, std::string* out) {
  auto num = [out](const char* key, int64_t v) {
    out->append(key);
    AppendInt(v, out);
  };
  auto str = [out](const char* key, std::string_view v) {
    out->append(key);
    AppendJsonString(v, out);
  };
  num("{\"event_type\":", static_cast<int64_t>(e.type));
  num(",\"date_time\":", e.date_time);
  switch (e.type) {
    case NexmarkEventType::kPerson:
      num(",\"id\":", e.id);
      str(",\"name\":", e.name);
      str(",\"email_address\":", e.email_address);
      str(",\"credit_card\":", e.credit_card);
      str(",\"city\":", e.city);
      str(",\"state\":", e.state);
      break;
    case NexmarkEventType::kAuction:
      num(",\"id\":", e.id);
      str(",\"item_name\":", e.item_name);
      str(",\"description\":", e.description);
      num(",\"initial_bid\":", e.initial_bid);
      num(",\"reserve\":", e.reserve);
      num(",\"expires\":", e.expires);
      num(",\"seller\":", e.seller);
      num(",\"category\":", e.category);
      break;
    case NexmarkEventType::kBid:
      num(",\"auction\":", e.auction);
      num(",\"bidder\":", e.bidder);
      num(",\"price\":", e.price);
      str(",\"channel\":", e.channel);
      str(",\"url\":", e.url);
      break;
  }
  str(",\"extra\":", e.extra);
  out->push_back('}');
}

void NexmarkGenerator::WriteJsonl(FILE* f) const {
  NexmarkEvent e;
  WriteLines(f, p_.events, [this, &e](int64_t n, std::string* buf) {
    Event(n, &e);
    AppendJson(e, buf);
  });
}

}  // namespace cairn
