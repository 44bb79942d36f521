// Nexmark (docs/nexmark.md): the generator's model (proportions, ids, event times, hot keys),
// its determinism (the same events at parallelism 1, 2 and 3, subtask by subtask, and what
// `cairn generate nexmark` writes), and every query of jobs/nexmark/ against a reference
// computed here from `cairn generate nexmark` output, written apart from the operators: on a
// clean run, on the jsonl file variant, and after a SIGKILL at a checkpoint and `--restore
// latest` in aligned and in unaligned mode.
//
// Adding a query is one entry in kQueries: its
// job file's name and a function computing its output rows from the events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>

#include <algorithm>
#include <cinttypes>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "operators/nexmark_generator.h"
#include "tests/test_util.h"

namespace cairn::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// ---- Events, as `cairn generate nexmark` writes them ----------------------------------------

struct Event {
  int64_t event_type = -1, date_time = 0;
  int64_t id = 0, initial_bid = 0, reserve = 0, expires = 0, seller = 0, category = 0;
  int64_t auction = 0, bidder = 0, price = 0;
  std::string name, email_address, credit_card, city, state, extra, item_name, description, channel, url;
};

std::vector<Event> ReadEvents(const std::string& path) {
  std::vector<Event> events;
  simdjson::dom::parser parser;
  const std::string text = ReadText(path);
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    simdjson::dom::object o;
    EXPECT_EQ(parser.parse(text.data() + at, nl - at).get(o), simdjson::SUCCESS) << text.substr(at, nl - at);
    Event e;
    for (auto [key, value] : o) {
      int64_t* i = nullptr;
      std::string* s = nullptr;
      const std::string k(key);
      for (auto [name, field] : std::initializer_list<std::pair<const char*, int64_t*>>{
               {"event_type", &e.event_type}, {"date_time", &e.date_time}, {"id", &e.id},
               {"initial_bid", &e.initial_bid}, {"reserve", &e.reserve}, {"expires", &e.expires},
               {"seller", &e.seller}, {"category", &e.category}, {"auction", &e.auction},
               {"bidder", &e.bidder}, {"price", &e.price}})
        if (k == name) i = field;
      for (auto [name, field] : std::initializer_list<std::pair<const char*, std::string*>>{
               {"name", &e.name}, {"email_address", &e.email_address}, {"credit_card", &e.credit_card},
               {"city", &e.city}, {"state", &e.state}, {"extra", &e.extra}, {"item_name", &e.item_name},
               {"description", &e.description}, {"channel", &e.channel}, {"url", &e.url}})
        if (k == name) s = field;
      if (i != nullptr) {
        EXPECT_EQ(value.get(*i), simdjson::SUCCESS) << k;
      } else if (s != nullptr) {
        std::string_view v;
        EXPECT_EQ(value.get(v), simdjson::SUCCESS) << k;
        *s = std::string(v);
      } else {
        ADD_FAILURE() << "unexpected key " << k;
      }
    }
    events.push_back(std::move(e));
    at = nl + 1;
  }
  return events;
}

std::string Generate(const ScratchDir& dir, int64_t events, const std::vector<std::string>& extra = {}) {
  const std::string path = dir / "events.jsonl";
  std::vector<std::string> args = {"generate", "nexmark", "--out", path, "--events", std::to_string(events)};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult gen = RunCairn(args);
  EXPECT_EQ(gen.exit_code, 0) << gen.err;
  return path;
}

// ---- Rows: what a query emits, as comparable text ---------------------------------------------

// ISO-8601 UTC with milliseconds, as the jsonl sink writes a timestamp.
std::string Iso(int64_t ms) {
  const time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

std::string DoubleText(double v) {
  char buf[40];
  snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// One output record: its fields in order, `name=value` joined by '|'.
class Row {
 public:
  Row& Int(const char* name, int64_t v) { return Add(name, std::to_string(v)); }
  Row& Double(const char* name, double v) { return Add(name, DoubleText(v)); }
  Row& Str(const char* name, const std::string& v) { return Add(name, "'" + v + "'"); }
  Row& Time(const char* name, int64_t ms) { return Str(name, Iso(ms)); }
  operator std::string() const { return text_; }

 private:
  Row& Add(const char* name, const std::string& v) {
    text_ += (text_.empty() ? "" : "|") + std::string(name) + "=" + v;
    return *this;
  }
  std::string text_;
};

// A JSON value as Row writes it.
std::string ValueText(simdjson::dom::element v) {
  switch (v.type()) {
    case simdjson::dom::element_type::INT64: return std::to_string(int64_t(v));
    case simdjson::dom::element_type::UINT64: return std::to_string(uint64_t(v));
    case simdjson::dom::element_type::DOUBLE: return DoubleText(double(v));
    case simdjson::dom::element_type::STRING: return "'" + std::string(std::string_view(v)) + "'";
    case simdjson::dom::element_type::BOOL: return bool(v) ? "true" : "false";
    case simdjson::dom::element_type::NULL_VALUE: return "null";
    default: return simdjson::minify(v);
  }
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return lines;
}

// Every committed jsonl line of a sink as a Row, sorted (the order across subtasks is free).
std::vector<std::string> OutputRows(const std::string& sink_dir) {
  std::vector<std::string> rows;
  simdjson::dom::parser parser;
  for (const std::string& line : CommittedLines(sink_dir)) {
    simdjson::dom::object o;
    EXPECT_EQ(parser.parse(line).get(o), simdjson::SUCCESS) << line;
    std::string row;
    for (auto [key, value] : o) row += (row.empty() ? "" : "|") + std::string(key) + "=" + ValueText(value);
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

// ---- The queries: nexmark-flink's SQL (queries/qN.sql), computed over the events -------------

std::vector<std::string> Q0(const std::vector<Event>& events) {  // SELECT auction, bidder, price, dateTime, extra FROM bid
  std::vector<std::string> rows;
  for (const Event& e : events)
    if (e.event_type == 2)
      rows.push_back(Row().Int("auction", e.auction).Int("bidder", e.bidder).Int("price", e.price)
                         .Time("date_time", e.date_time).Str("extra", e.extra));
  return rows;
}

std::vector<std::string> Q1(const std::vector<Event>& events) {  // ... 0.908 * price AS price ...
  std::vector<std::string> rows;
  for (const Event& e : events)
    if (e.event_type == 2)
      rows.push_back(Row().Int("auction", e.auction).Int("bidder", e.bidder)
                         .Double("price", 0.908 * static_cast<double>(e.price)).Time("date_time", e.date_time)
                         .Str("extra", e.extra));
  return rows;
}

std::vector<std::string> Q2(const std::vector<Event>& events) {  // SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0
  std::vector<std::string> rows;
  for (const Event& e : events)
    if (e.event_type == 2 && e.auction % 123 == 0) rows.push_back(Row().Int("auction", e.auction).Int("price", e.price));
  return rows;
}

// SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P ON A.seller = P.id
// WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')
std::vector<std::string> Q3(const std::vector<Event>& events) {
  std::map<int64_t, const Event*> person;
  for (const Event& e : events)
    if (e.event_type == 0 && (e.state == "OR" || e.state == "ID" || e.state == "CA")) person[e.id] = &e;
  std::vector<std::string> rows;
  for (const Event& a : events) {
    if (a.event_type != 1 || a.category != 10) continue;
    auto p = person.find(a.seller);
    if (p != person.end())
      rows.push_back(Row().Str("name", p->second->name).Str("city", p->second->city).Str("state", p->second->state)
                         .Int("id", a.id));
  }
  return rows;
}

// The people who registered and opened an auction in the same 10 s tumbling window:
// (person GROUP BY id, name, TUMBLE(10 s)) JOIN (auction GROUP BY seller, TUMBLE(10 s)) ON
// id = seller and equal windows; SELECT id, name, starttime.
std::vector<std::string> Q8(const std::vector<Event>& events) {
  auto window = [](int64_t t) { return t - ((t % 10000) + 10000) % 10000; };
  std::map<std::pair<int64_t, int64_t>, std::set<std::string>> people;  // (id, window) -> names
  std::set<std::pair<int64_t, int64_t>> sellers;                        // (seller, window)
  for (const Event& e : events) {
    if (e.event_type == 0) people[{e.id, window(e.date_time)}].insert(e.name);
    if (e.event_type == 1) sellers.insert({e.seller, window(e.date_time)});
  }
  std::vector<std::string> rows;
  for (const auto& [key, names] : people)
    if (sellers.count(key) != 0)
      for (const std::string& name : names) rows.push_back(Row().Int("id", key.first).Str("name", name).Time("starttime", key.second));
  return rows;
}

// The average winning bid per category: MAX(price) of each auction's bids while it was open
// (A.dateTime <= B.dateTime <= A.expires), then AVG of those per category.
std::vector<std::string> Q4(const std::vector<Event>& events) {
  std::map<int64_t, const Event*> auction;
  for (const Event& e : events)
    if (e.event_type == 1) auction[e.id] = &e;
  std::map<int64_t, int64_t> final_price;  // auction id -> its highest bid while open
  for (const Event& b : events) {
    if (b.event_type != 2) continue;
    auto a = auction.find(b.auction);
    if (a == auction.end() || b.date_time < a->second->date_time || b.date_time > a->second->expires) continue;
    auto [it, fresh] = final_price.try_emplace(b.auction, b.price);
    if (!fresh) it->second = std::max(it->second, b.price);
  }
  std::map<int64_t, std::pair<double, int64_t>> per_category;  // sum, count
  for (const auto& [id, price] : final_price) {
    auto& [sum, n] = per_category[auction[id]->category];
    sum += static_cast<double>(price);  // exact: integers far below 2^53
    ++n;
  }
  std::vector<std::string> rows;
  for (const auto& [category, sn] : per_category)
    rows.push_back(Row().Int("category", category).Double("avg", sn.first / static_cast<double>(sn.second)));
  return rows;
}

// Hot items: per 10 s window sliding by 2 s, the auctions with the most bids (count(*) per
// auction and HOP window, joined with the max count of the window on num >= maxn).
std::vector<std::string> Q5(const std::vector<Event>& events) {
  std::map<std::pair<int64_t, int64_t>, int64_t> num;  // (window start, auction) -> bids
  for (const Event& e : events) {
    if (e.event_type != 2) continue;
    const int64_t last = e.date_time - ((e.date_time % 2000) + 2000) % 2000;
    for (int64_t start = last; start > e.date_time - 10000; start -= 2000) ++num[{start, e.auction}];
  }
  std::map<int64_t, int64_t> maxn;  // window start -> its largest count
  for (const auto& [key, n] : num) maxn[key.first] = std::max(maxn[key.first], n);
  std::vector<std::string> rows;
  for (const auto& [key, n] : num)
    if (n >= maxn[key.first])
      rows.push_back(Row().Int("auction", key.second).Int("num", n).Time("window_start", key.first)
                         .Time("window_end", key.first + 10000));
  return rows;
}

// The bids with the highest price of their 10 s tumbling window: bids JOIN (MAX(price),
// TUMBLE_ROWTIME = window end - 1 ms per window) ON price = maxprice WHERE date_time BETWEEN
// rowtime - 10 s AND rowtime; SELECT auction, bidder, price, date_time, extra, window_end.
std::vector<std::string> Q7(const std::vector<Event>& events) {
  auto window = [](int64_t t) { return t - ((t % 10000) + 10000) % 10000; };
  std::map<int64_t, int64_t> max_price;  // window start -> max price
  for (const Event& e : events) {
    if (e.event_type != 2) continue;
    auto [it, fresh] = max_price.try_emplace(window(e.date_time), e.price);
    if (!fresh) it->second = std::max(it->second, e.price);
  }
  std::vector<std::string> rows;
  for (const Event& b : events) {
    if (b.event_type != 2) continue;
    for (const auto& [start, price] : max_price) {
      const int64_t rowtime = start + 10000 - 1;
      if (b.price == price && b.date_time >= rowtime - 10000 && b.date_time <= rowtime)
        rows.push_back(Row().Int("auction", b.auction).Int("bidder", b.bidder).Int("price", b.price)
                           .Time("date_time", b.date_time).Str("extra", b.extra).Time("window_end", start + 10000));
    }
  }
  return rows;
}

struct Query {
  const char* name;  // jobs/nexmark/<name>.yaml
  std::function<std::vector<std::string>(const std::vector<Event>&)> reference;
  int64_t events;    // the test runs it on this many generated events (default parameters otherwise)
  size_t min_rows;   // of which the reference has at least this many rows (a real check)
  int64_t event_rate = 0;  // events per second of event time; 0: the default
};

// gtest prints the query's name rather than its bytes.
void PrintTo(const Query& q, std::ostream* os) { *os << q.name; }

const Query kQueries[] = {
    {"q0", Q0, 6000, 5000},
    {"q1", Q1, 6000, 5000},
    {"q2", Q2, 20000, 40},
    {"q3", Q3, 20000, 50},
    // 50 s of event time: five windows.
    {"q4", Q4, 20000, 5},
    // 50 s of event time: some 29 windows, a hot auction or more each.
    {"q5", Q5, 20000, 20, 400},
    // 100 s of event time: ten windows, a highest bid each.
    {"q7", Q7, 20000, 8, 200},
    {"q8", Q8, 20000, 50, 400},
};

// ---- Runs -------------------------------------------------------------------------------------

// A query's job file with its `events` source replaced by a jsonl file_source of `path`
// (jobs/nexmark/README.md: the file variant).
std::string OnFile(const std::string& job, const std::string& path) {
  std::string yaml = ReadText(job);
  const size_t b = yaml.find("  - id: events\n");
  EXPECT_NE(b, std::string::npos) << job << " has no block operator entry 'events'";
  const size_t e = yaml.find("\n  - ", b + 1);
  const std::string file_source = ReadText(SourceDir() + "/jobs/nexmark/events-jsonl.yaml");
  const size_t from = file_source.find("  - id: events\n");
  EXPECT_NE(from, std::string::npos);
  std::string entry = file_source.substr(from, file_source.find("\n  - ", from + 1) - from);
  entry.replace(entry.find("path: data/nexmark.jsonl"), 24, "path: " + path);
  return yaml.replace(b, e - b, entry);
}

enum class Mode { kClean, kFile, kKilledAligned, kKilledUnaligned };
const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kClean: return "clean";
    case Mode::kFile: return "on_file";
    case Mode::kKilledAligned: return "killed_aligned";
    case Mode::kKilledUnaligned: return "killed_unaligned";
  }
  return "?";
}

class NexmarkQueryTest : public ::testing::TestWithParam<std::tuple<Query, Mode>> {};

TEST_P(NexmarkQueryTest, OutputEqualsTheReference) {
  const auto& [query, mode] = GetParam();
  ScratchDir dir;
  std::vector<std::string> gen_flags;
  if (query.event_rate > 0) gen_flags = {"--event-rate", std::to_string(query.event_rate)};
  const std::vector<Event> events = ReadEvents(Generate(dir, query.events, gen_flags));
  ASSERT_EQ(events.size(), static_cast<size_t>(query.events));
  std::vector<std::string> expected = query.reference(events);
  std::sort(expected.begin(), expected.end());
  ASSERT_GE(expected.size(), query.min_rows) << "too few rows to check " << query.name;

  std::string job = SourceDir() + "/jobs/nexmark/" + query.name + ".yaml";
  std::vector<std::string> args = {"run", job, "--quiet", "--set", "operators.sink.path=" + dir / "out",
                                   "--set", "checkpoint.dir=" + dir / "ck"};
  if (mode == Mode::kFile) {
    WriteText(dir / "job.yaml", OnFile(job, dir / "events.jsonl"));
    args[1] = dir / "job.yaml";
  } else {
    args.insert(args.end(), {"--set", "operators.events.events=" + std::to_string(query.events)});
    if (query.event_rate > 0)
      args.insert(args.end(), {"--set", "operators.events.event_rate=" + std::to_string(query.event_rate)});
  }
  if (mode == Mode::kKilledAligned || mode == Mode::kKilledUnaligned) {
    args.insert(args.end(), {"--set", "checkpoint.interval=20ms", "--set",
                             std::string("checkpoint.mode=") + (mode == Mode::kKilledAligned ? "aligned" : "unaligned")});
    // Paced to a minute of input, killed (a crash point, SIGKILL) when checkpoint 3 commits,
    // then resumed unpaced to the end.
    std::vector<std::string> paced = args;
    paced.insert(paced.end(), {"--set", "operators.events.rate=100"});
    RunResult crashed = RunCairn(paced, {"CAIRN_CRASH_AT=checkpoint.committed:3"});
    ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
    args.insert(args.end(), {"--restore", "latest"});
  }
  RunResult run = RunCairn(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  if (mode == Mode::kKilledAligned || mode == Mode::kKilledUnaligned) {
    EXPECT_THAT(run.out, HasSubstr("(restored from checkpoint "));
  }
  EXPECT_EQ(OutputRows(dir / "out"), expected);
}

INSTANTIATE_TEST_SUITE_P(Queries, NexmarkQueryTest,
                         ::testing::Combine(::testing::ValuesIn(kQueries),
                                            ::testing::Values(Mode::kClean, Mode::kFile, Mode::kKilledAligned,
                                                              Mode::kKilledUnaligned)),
                         [](const ::testing::TestParamInfo<NexmarkQueryTest::ParamType>& info) {
                           return std::string(std::get<0>(info.param).name) + "_" + ModeName(std::get<1>(info.param));
                         });

// ---- The source and `cairn generate nexmark` ---------------------------------------------------

// A JSON object as a map, nulls left out and timestamps (ISO-8601 strings in the sink's
// output) as ms, so that the sink's wide records and the generator's lines compare.
std::string Canonical(const std::string& line) {
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  EXPECT_EQ(parser.parse(line).get(o), simdjson::SUCCESS) << line;
  std::map<std::string, std::string> fields;
  for (auto [key, value] : o) {
    if (value.is_null()) continue;
    std::string k(key), v = ValueText(value);
    if ((k == "date_time" || k == "expires") && value.is_string()) {
      struct tm tm = {};
      int ms = 0;
      EXPECT_EQ(sscanf(std::string(std::string_view(value)).c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon,
                       &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms),
                7);
      tm.tm_year -= 1900;
      tm.tm_mon -= 1;
      v = std::to_string(static_cast<int64_t>(timegm(&tm)) * 1000 + ms);
    }
    fields[k] = v;
  }
  std::string s;
  for (const auto& [k, v] : fields) s += k + "=" + v + "|";
  return s;
}

// The all-events job: the nexmark source straight into a jsonl sink.
std::string AllEventsJob(const ScratchDir& dir) {
  return "job: nexmark-all\n"
         "checkpoint:\n"
         "  interval: 50ms\n"
         "  dir: " + dir / "ck" + "\n"
         "operators:\n"
         "  - {id: events, type: nexmark, events: 3000, seed: 7, event_rate: 1000}\n"
         "  - {id: sink, type: file_sink, format: jsonl, path: " + dir / "out" + ", inputs: [events]}\n";
}

TEST(NexmarkSourceTest, EmitsWhatGenerateWritesAtEveryParallelismSubtaskBySubtask) {
  ScratchDir dir;
  const std::vector<std::string> generated =
      Lines(ReadText(Generate(dir, 3000, {"--seed", "7", "--event-rate", "1000"})));
  ASSERT_EQ(generated.size(), 3000u);
  std::vector<std::string> expected;
  for (const std::string& l : generated) expected.push_back(Canonical(l));
  WriteText(dir / "job.yaml", AllEventsJob(dir));
  for (int p : {1, 2, 3}) {
    SCOPED_TRACE("parallelism " + std::to_string(p));
    fs::remove_all(dir / "out");
    fs::remove_all(dir / "ck");
    RunResult run = RunCairn({"run", dir / "job.yaml", "--quiet", "--set", "parallelism=" + std::to_string(p)});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    // Subtask i emits the events i, i+p, i+2p, ... in order, into its part files in order.
    std::vector<std::vector<std::pair<int64_t, std::string>>> files(static_cast<size_t>(p));
    for (const auto& [name, text] : PartFiles(dir / "out")) {
      unsigned long long run_id, subtask, seq;
      ASSERT_EQ(sscanf(name.c_str(), "part-%llx-%llu-%llu", &run_id, &subtask, &seq), 3) << name;
      ASSERT_LT(subtask, static_cast<unsigned long long>(p));
      files[subtask].emplace_back(static_cast<int64_t>(seq), text);
    }
    size_t total = 0;
    for (int i = 0; i < p; ++i) {
      std::sort(files[static_cast<size_t>(i)].begin(), files[static_cast<size_t>(i)].end());
      size_t n = static_cast<size_t>(i);
      for (const auto& [seq, text] : files[static_cast<size_t>(i)])
        for (const std::string& line : Lines(text)) {
          ASSERT_LT(n, expected.size());
          EXPECT_EQ(Canonical(line), expected[n]) << "event " << n << " from subtask " << i;
          n += static_cast<size_t>(p);
          ++total;
        }
    }
    EXPECT_EQ(total, expected.size());
  }
}

// The same events after kills and restores that change the parallelism (1 -> 2 -> 3).
TEST(NexmarkSourceTest, EmitsEveryEventOnceAcrossKillsAndRescaledRestores) {
  ScratchDir dir;
  std::vector<std::string> expected;
  for (const std::string& l : Lines(ReadText(Generate(dir, 3000, {"--seed", "7", "--event-rate", "1000"}))))
    expected.push_back(Canonical(l));
  std::sort(expected.begin(), expected.end());
  WriteText(dir / "job.yaml", AllEventsJob(dir));
  RunResult a = RunCairn({"run", dir / "job.yaml", "--quiet", "--set", "operators.events.rate=50"},
                         {"CAIRN_CRASH_AT=checkpoint.committed:3"});
  ASSERT_EQ(a.signal, SIGKILL) << a.err;
  RunResult b = RunCairn({"run", dir / "job.yaml", "--quiet", "--restore", "latest", "--set", "parallelism=2", "--set",
                          "operators.events.rate=50"},
                         {"CAIRN_CRASH_AT=checkpoint.committed:3"});
  ASSERT_EQ(b.signal, SIGKILL) << b.err;
  RunResult c = RunCairn({"run", dir / "job.yaml", "--quiet", "--restore", "latest", "--set", "parallelism=3"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::vector<std::string> got;
  for (const std::string& l : CommittedLines(dir / "out")) got.push_back(Canonical(l));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
}

// Every parameter that `generate nexmark` takes reaches the same events as the source's.
TEST(NexmarkSourceTest, GenerateAndTheSourceAgreeOnEveryParameter) {
  ScratchDir dir;
  std::vector<std::string> expected;
  for (const std::string& l : Lines(ReadText(Generate(dir, 2000, {"--seed", "3", "--event-rate", "77", "--person-proportion", "2",
                                                                   "--auction-proportion", "5", "--bid-proportion", "3",
                                                                   "--base-time", "1000"}))))
    expected.push_back(Canonical(l));
  std::sort(expected.begin(), expected.end());
  WriteText(dir / "job.yaml",
            "job: nexmark-params\nparallelism: 2\ncheckpoint:\n  dir: " + dir / "ck" +
                "\noperators:\n  - {id: events, type: nexmark, events: 2000, seed: 3, event_rate: 77, person_proportion: 2, "
                "auction_proportion: 5, bid_proportion: 3, base_time: 1000}\n"
                "  - {id: sink, type: file_sink, format: jsonl, path: " + dir / "out" + ", inputs: [events]}\n");
  RunResult run = RunCairn({"run", dir / "job.yaml", "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> got;
  for (const std::string& l : CommittedLines(dir / "out")) got.push_back(Canonical(l));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
  // 2 persons, 5 auctions and 3 bids in every 10 events; 77 events per second of event time.
  EXPECT_EQ(std::count_if(expected.begin(), expected.end(),
                          [](const std::string& e) { return e.find("event_type=0|") != std::string::npos; }),
            400);
  EXPECT_NE(std::find_if(expected.begin(), expected.end(),
                         [](const std::string& e) { return e.find("date_time=26961|") != std::string::npos; }),
            expected.end())
      << "event 1999 at 1000 + 1999 * 1000 / 77 ms";
}

// The file variant's schema (jobs/nexmark/events-jsonl.yaml) is the source's record, field for
// field, as `cairn validate` prints both.
TEST(NexmarkSourceTest, TheJsonlFileSchemaIsTheSourceRecord) {
  auto events_schema = [](const std::string& job) {
    RunResult v = RunCairn({"validate", SourceDir() + "/jobs/nexmark/" + job});
    EXPECT_EQ(v.exit_code, 0) << v.err;
    const size_t at = v.out.find("    events  (");
    EXPECT_NE(at, std::string::npos) << v.out;
    return v.out.substr(at, v.out.find('\n', at) - at);
  };
  EXPECT_EQ(events_schema("events-jsonl.yaml"), events_schema("q0.yaml"));
}

// ---- The generator's model ---------------------------------------------------------------------

std::string EventJson(const NexmarkGenerator& g, int64_t n) {
  NexmarkEvent e;
  g.Event(n, &e);
  std::string s;
  NexmarkGenerator::AppendJson(e, &s);
  return s;
}

TEST(NexmarkGeneratorTest, AnEventDependsOnlyOnTheParametersAndItsNumber) {
  NexmarkParams p;
  p.events = 2000;
  const NexmarkGenerator a(p), b(p);
  std::vector<std::string> forward;
  for (int64_t n = 0; n < 2000; ++n) forward.push_back(EventJson(a, n));
  NexmarkEvent reused;  // an event object reused in another order gives the same events
  for (int64_t n = 1999; n >= 0; --n) {
    b.Event(n, &reused);
    std::string s;
    NexmarkGenerator::AppendJson(reused, &s);
    ASSERT_EQ(s, forward[static_cast<size_t>(n)]) << n;
  }
  p.seed = 43;
  const NexmarkGenerator other(p);
  int same = 0;
  for (int64_t n = 0; n < 2000; ++n) same += EventJson(other, n) == forward[static_cast<size_t>(n)];
  EXPECT_EQ(same, 0) << "another seed gives other events";
}

TEST(NexmarkGeneratorTest, TypesFollowTheProportionsAndIdsTheEventNumber) {
  for (auto [pp, ap, bp] : {std::tuple{1, 3, 46}, std::tuple{2, 5, 3}}) {
    NexmarkParams p;
    p.person_proportion = pp;
    p.auction_proportion = ap;
    p.bid_proportion = bp;
    const NexmarkGenerator g(p);
    const int64_t total = pp + ap + bp, epochs = 40;
    int64_t persons = 0, auctions = 0, bids = 0;
    NexmarkEvent e;
    for (int64_t n = 0; n < epochs * total; ++n) {
      g.Event(n, &e);
      const int64_t rem = n % total;
      if (e.type == NexmarkEventType::kPerson) {
        EXPECT_LT(rem, pp) << n;
        EXPECT_EQ(e.id, NexmarkGenerator::kFirstPersonId + persons++) << "persons are numbered in order";
      } else if (e.type == NexmarkEventType::kAuction) {
        EXPECT_TRUE(rem >= pp && rem < pp + ap) << n;
        EXPECT_EQ(e.id, NexmarkGenerator::kFirstAuctionId + auctions++) << "auctions are numbered in order";
        EXPECT_GE(e.seller, NexmarkGenerator::kFirstPersonId);
        EXPECT_LT(e.seller, NexmarkGenerator::kFirstPersonId + persons + 10) << "a seller exists or is a few ahead";
        EXPECT_GT(e.expires, e.date_time);
        EXPECT_GE(e.reserve, e.initial_bid);
        EXPECT_TRUE(e.category >= 10 && e.category < 15);
      } else {
        EXPECT_GE(rem, pp + ap) << n;
        ++bids;
        EXPECT_LT(e.auction, NexmarkGenerator::kFirstAuctionId + auctions + 10);
        EXPECT_LT(e.bidder, NexmarkGenerator::kFirstPersonId + persons + 10);
        EXPECT_GE(e.price, 100) << "at least $1, in cents";
      }
    }
    EXPECT_EQ(persons, epochs * pp);
    EXPECT_EQ(auctions, epochs * ap);
    EXPECT_EQ(bids, epochs * bp);
  }
}

TEST(NexmarkGeneratorTest, EventTimeAdvancesWithTheEventNumberAtEventRate) {
  NexmarkParams p;
  const NexmarkGenerator g(p);  // event_rate 10000: 1M events span 100 s of event time
  EXPECT_EQ(g.TimestampOf(0), p.base_time);
  EXPECT_EQ(g.TimestampOf(9), p.base_time);
  EXPECT_EQ(g.TimestampOf(10), p.base_time + 1);
  EXPECT_EQ(g.TimestampOf(1000000), p.base_time + 100000);
  p.event_rate = 3;
  const NexmarkGenerator slow(p);
  EXPECT_EQ(slow.TimestampOf(1), p.base_time + 333);
  EXPECT_EQ(slow.TimestampOf(3), p.base_time + 1000);
  NexmarkEvent e;
  int64_t last = 0;
  for (int64_t n = 0; n < 5000; ++n) {
    g.Event(n, &e);
    EXPECT_GE(e.date_time, last);
    last = e.date_time;
  }
}

// Most bids go to a few hot auctions and come from a few hot bidders; most auctions are sold
// by a few hot sellers.
TEST(NexmarkGeneratorTest, HotAuctionsBiddersAndSellersAreSkewed) {
  NexmarkParams p;
  const NexmarkGenerator g(p);
  std::map<int64_t, int64_t> per_auction, per_bidder, per_seller;
  int64_t bids = 0, auctions = 0;
  NexmarkEvent e;
  for (int64_t n = 0; n < 50000; ++n) {
    g.Event(n, &e);
    if (e.type == NexmarkEventType::kBid) {
      ++bids;
      ++per_auction[e.auction];
      ++per_bidder[e.bidder];
    } else if (e.type == NexmarkEventType::kAuction) {
      ++auctions;
      ++per_seller[e.seller];
    }
  }
  // The top k keys' share of the events.
  auto top_share = [](const std::map<int64_t, int64_t>& m, size_t k, int64_t total) {
    std::vector<int64_t> counts;
    for (const auto& [key, c] : m) counts.push_back(c);
    std::sort(counts.rbegin(), counts.rend());
    int64_t sum = 0;
    for (size_t i = 0; i < k && i < counts.size(); ++i) sum += counts[i];
    return static_cast<double>(sum) / static_cast<double>(total);
  };
  // 3000 auctions, one hot per 100: 30 hot auctions get half the bids; 1000 persons, one hot
  // bidder and one hot seller per 100: 10 of each get three quarters.
  EXPECT_GT(per_auction.size(), 2000u);
  EXPECT_GT(top_share(per_auction, 30, bids), 0.45);
  EXPECT_GT(top_share(per_bidder, 10, bids), 0.70);
  EXPECT_GT(top_share(per_seller, 10, auctions), 0.70);
  EXPECT_LT(top_share(per_auction, 30, bids), 0.60) << "the cold half is spread";
}

}  // namespace
}  // namespace cairn::testing
