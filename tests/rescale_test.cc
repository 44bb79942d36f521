// Rescaling: a restore at another parallelism redistributes channel state record by record,
// operator state by each type's rule (split / union), and keyed state by key group; a keyed
// record never reaches a subtask that does not own its key group. Unit tests of the
// redistribution functions and operators, then the bank and the word count end to end, killed
// (SIGKILL on an observed completed checkpoint) and restored at other parallelisms.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <poll.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/dataflow/channel.h"
#include "engine/checkpoint/checkpointed_input_gate.h"
#include "engine/base/key_groups.h"
#include "engine/base/parker.h"
#include "engine/runtime/state_redistribution.h"
#include "engine/runtime/task.h"
#include "jobs/registry.h"
#include "state/heap_keyed_state.h"
#include "state/keyed_state.h"
#include "tests/bank_check.h"
#include "tests/test_util.h"
#include "tests/tree_snapshot.h"
#include "tests/wordcount_check.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint32_t kMaxP = 128;

uint32_t Owner(std::string_view key, uint32_t p) { return SubtaskForKeyGroup(KeyGroupOf(KeyHash(key), kMaxP), kMaxP, p); }

// Keys "k0", "k1", ... that subtask `j` of `p` owns.
std::vector<std::string> KeysOwnedBy(uint32_t j, uint32_t p, size_t n) {
  std::vector<std::string> out;
  for (int i = 0; out.size() < n; ++i) {
    std::string k = "k" + std::to_string(i);
    if (Owner(k, p) == j) out.push_back(k);
  }
  return out;
}

RecordedChannel Recorded(const std::string& name, uint32_t by, const std::vector<std::string>& keys, int64_t base = 0) {
  RecordedChannel rc;
  rc.recorded_by = by;
  rc.channel.name = name;
  rc.channel.schema = MakeSchema({{"key", FieldType::kString}, {"seq", FieldType::kInt64}});
  rc.channel.records.set_schema(rc.channel.schema);
  int64_t seq = base;
  for (const std::string& k : keys) rc.channel.records.Add(k, seq++);
  return rc;
}

ChannelEdge Edge(const std::string& from, const std::string& to, bool hash, uint32_t op, uint32_t oc, uint32_t np,
                 uint32_t nc) {
  ChannelEdge e;
  e.producer = from;
  e.consumer = to;
  e.hash = hash;
  e.key_by = {"key"};
  e.old_producers = op;
  e.old_consumers = oc;
  e.new_producers = np;
  e.new_consumers = nc;
  return e;
}

TEST(ChannelNameTest, ParsesAndMakesNames) {
  std::string p, c;
  uint32_t i = 9, j = 9;
  ASSERT_TRUE(ParseChannelName("my-op_1[2]->other-op[10]", &p, &i, &c, &j));
  EXPECT_EQ(p, "my-op_1");
  EXPECT_EQ(i, 2u);
  EXPECT_EQ(c, "other-op");
  EXPECT_EQ(j, 10u);
  EXPECT_EQ(MakeChannelName(p, i, c, j), "my-op_1[2]->other-op[10]");
  EXPECT_FALSE(ParseChannelName("a[1]-b[2]", &p, &i, &c, &j));
  EXPECT_FALSE(ParseChannelName("a[x]->b[2]", &p, &i, &c, &j));
  EXPECT_FALSE(ParseChannelName("a[1]->b[]", &p, &i, &c, &j));
}

// Every record of a hash edge goes to the subtask owning its key group at the new parallelism,
// on the channel from producer i mod p'; the records of one old channel keep their order.
void CheckHashRescale(uint32_t old_p, uint32_t new_p) {
  SCOPED_TRACE(std::to_string(old_p) + " -> " + std::to_string(new_p));
  std::vector<RecordedChannel> recorded;
  struct Sent {
    uint32_t i, j;  // the old channel
    int64_t seq;    // position on it
  };
  std::map<std::string, Sent> sent;
  for (uint32_t j = 0; j < old_p; ++j)
    for (uint32_t i = 0; i < old_p; ++i) {
      std::vector<std::string> keys = KeysOwnedBy(j, old_p, 40);
      // Distinct keys per channel so that each record can be traced back.
      for (std::string& k : keys) k += "-from" + std::to_string(i);
      std::vector<std::string> owned;
      for (const std::string& k : keys)
        if (Owner(k, old_p) == j) owned.push_back(k);
      recorded.push_back(Recorded(MakeChannelName("up", i, "down", j), j, owned, 1000 * i));
      for (size_t r = 0; r < owned.size(); ++r) sent[owned[r]] = Sent{i, j, static_cast<int64_t>(1000 * i + r)};
    }
  RestoredChannelsByTask out;
  ASSERT_TRUE(RedistributeChannelState(recorded, {Edge("up", "down", true, old_p, old_p, new_p, new_p)}, kMaxP, "chk", &out)
                  .ok());
  size_t total = 0;
  for (const auto& [task, chans] : out) {
    EXPECT_EQ(task.first, "down");
    ASSERT_LT(task.second, new_p);
    for (const RestoredChannel& c : chans) {
      std::string p, cons;
      uint32_t i = 0, j = 0;
      ASSERT_TRUE(ParseChannelName(c.name, &p, &i, &cons, &j)) << c.name;
      EXPECT_EQ(j, task.second);
      EXPECT_LT(i, new_p);
      std::map<std::pair<uint32_t, uint32_t>, int64_t> last_seq;  // per old channel: in order
      for (size_t r = 0; r < c.records.size(); ++r) {
        std::string key(c.records.key(r));
        ASSERT_TRUE(sent.count(key)) << key;
        const Sent& from = sent[key];
        EXPECT_EQ(Owner(key, new_p), task.second) << key;
        EXPECT_EQ(i, from.i % new_p) << key;
        EXPECT_EQ(c.records.a(r), from.seq);
        auto it = last_seq.find({from.i, from.j});
        if (it != last_seq.end()) {
          EXPECT_GT(c.records.a(r), it->second);
        }
        last_seq[{from.i, from.j}] = c.records.a(r);
        ++total;
      }
    }
  }
  EXPECT_EQ(total, sent.size());
}

TEST(ChannelStateRedistributionTest, HashEdgeRecordsGoToTheOwnerOfTheirKeyGroup) {
  CheckHashRescale(2, 3);
  CheckHashRescale(3, 1);
  CheckHashRescale(1, 4);
  CheckHashRescale(3, 2);
}

TEST(ChannelStateRedistributionTest, UnchangedParallelismIsTheIdentity) {
  std::vector<RecordedChannel> recorded = {Recorded("up[1]->down[0]", 0, KeysOwnedBy(0, 2, 5)),
                                           Recorded("up[0]->down[1]", 1, KeysOwnedBy(1, 2, 3))};
  RestoredChannelsByTask out;
  ASSERT_TRUE(RedistributeChannelState(recorded, {Edge("up", "down", true, 2, 2, 2, 2)}, kMaxP, "chk", &out).ok());
  ASSERT_EQ(out.size(), 2u);
  const auto& d0 = out[std::make_pair(std::string("down"), 0u)];
  const auto& d1 = out[std::make_pair(std::string("down"), 1u)];
  ASSERT_EQ(d0.size(), 1u);
  EXPECT_EQ(d0[0].name, "up[1]->down[0]");
  EXPECT_EQ(d0[0].records.size(), 5u);
  ASSERT_EQ(d1.size(), 1u);
  EXPECT_EQ(d1[0].name, "up[0]->down[1]");
  EXPECT_EQ(d1[0].records.size(), 3u);
}

TEST(ChannelStateRedistributionTest, ForwardEdgeChannelsFoldOntoSubtaskJModNewParallelism) {
  std::vector<RecordedChannel> recorded = {Recorded("a[0]->b[0]", 0, {"x", "y"}), Recorded("a[1]->b[1]", 1, {"z"}),
                                           Recorded("a[2]->b[2]", 2, {"u", "v"})};
  RestoredChannelsByTask out;
  ASSERT_TRUE(RedistributeChannelState(recorded, {Edge("a", "b", false, 3, 3, 2, 2)}, kMaxP, "chk", &out).ok());
  const auto& b0 = out[std::make_pair(std::string("b"), 0u)];
  const auto& b1 = out[std::make_pair(std::string("b"), 1u)];
  ASSERT_EQ(b0.size(), 1u);
  EXPECT_EQ(b0[0].name, "a[0]->b[0]");
  std::vector<std::string> keys;
  for (size_t r = 0; r < b0[0].records.size(); ++r) keys.emplace_back(b0[0].records.key(r));
  EXPECT_THAT(keys, ElementsAre("x", "y", "u", "v"));  // old subtask order, each channel in order
  ASSERT_EQ(b1.size(), 1u);
  EXPECT_EQ(b1[0].name, "a[1]->b[1]");
  EXPECT_EQ(b1[0].records.size(), 1u);
}

TEST(ChannelStateRedistributionTest, FeedbackEdgeOfACycleIsRedistributedLikeAnyHashEdge) {
  // accounts -> accounts (the bank): producer and consumer are the same operator.
  std::vector<RecordedChannel> recorded;
  for (uint32_t j = 0; j < 2; ++j)
    for (uint32_t i = 0; i < 2; ++i)
      recorded.push_back(Recorded(MakeChannelName("accounts", i, "accounts", j), j, KeysOwnedBy(j, 2, 10)));
  RestoredChannelsByTask out;
  ASSERT_TRUE(
      RedistributeChannelState(recorded, {Edge("accounts", "accounts", true, 2, 2, 3, 3)}, kMaxP, "chk", &out).ok());
  size_t total = 0;
  for (const auto& [task, chans] : out)
    for (const RestoredChannel& c : chans)
      for (size_t r = 0; r < c.records.size(); ++r, ++total) EXPECT_EQ(Owner(c.records.key(r), 3), task.second);
  EXPECT_EQ(total, 40u);
}

TEST(ChannelStateRedistributionTest, RejectsARecordItsRecordingSubtaskDidNotOwn) {
  std::vector<RecordedChannel> recorded = {Recorded("up[0]->down[0]", 0, KeysOwnedBy(1, 2, 1))};
  RestoredChannelsByTask out;
  Status s = RedistributeChannelState(recorded, {Edge("up", "down", true, 2, 2, 3, 3)}, kMaxP, "chk-7", &out);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("did not own"));
  EXPECT_THAT(s.message(), HasSubstr("chk-7"));
}

TEST(ChannelStateRedistributionTest, RejectsRecordsOfASchemaTheEdgeNoLongerCarries) {
  ChannelEdge edge = Edge("up", "down", true, 2, 2, 2, 2);
  edge.schema = MakeSchema({{"key", FieldType::kString}, {"seq", FieldType::kDouble}});  // was int64
  RestoredChannelsByTask out;
  Status s = RedistributeChannelState({Recorded("up[0]->down[0]", 0, KeysOwnedBy(0, 2, 1))}, {edge}, kMaxP, "chk-3", &out);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("(key string, seq int64)"));
  EXPECT_THAT(s.message(), HasSubstr("(key string, seq double)"));
  EXPECT_THAT(s.message(), HasSubstr("chk-3"));
  edge.schema = MakeSchema({{"key", FieldType::kString}, {"seq", FieldType::kInt64}});  // an equal schema
  EXPECT_TRUE(
      RedistributeChannelState({Recorded("up[0]->down[0]", 0, KeysOwnedBy(0, 2, 1))}, {edge}, kMaxP, "chk-3", &out).ok());
}

TEST(ChannelStateRedistributionTest, RejectsAChannelOfNoEdgeAndOneOutsideTheOldParallelism) {
  RestoredChannelsByTask out;
  Status s = RedistributeChannelState({Recorded("gone[0]->down[0]", 0, {})}, {Edge("up", "down", true, 1, 1, 2, 2)},
                                      kMaxP, "chk", &out);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("gone[0]->down[0]"));
  s = RedistributeChannelState({Recorded("up[3]->down[0]", 0, {})}, {Edge("up", "down", true, 2, 1, 2, 2)}, kMaxP,
                               "chk", &out);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

// ---- Operator state -------------------------------------------------------------------------

OperatorStateRule ListRule(StateRedistribution mode) {
  OperatorStateRule r;
  r.mode = mode;
  r.to_items = [](std::string_view bytes, uint32_t subtask, uint32_t, std::vector<std::string>* items) {
    for (char c : bytes) items->push_back(std::string(1, c) + std::to_string(subtask));
    return Status::OK();
  };
  r.from_items = [](const std::vector<std::string>& items) {
    std::string s;
    for (const std::string& i : items) s += i + ",";
    return s;
  };
  return r;
}

TEST(OperatorStateRedistributionTest, SplitGivesItemKToSubtaskKModP) {
  std::map<uint32_t, std::string> out;
  ASSERT_TRUE(RedistributeOperatorState("op", ListRule(StateRedistribution::kSplit), 2, {{0, "ab"}, {1, "c"}}, 3, "chk",
                                        &out)
                  .ok());
  EXPECT_EQ(out, (std::map<uint32_t, std::string>{{0, "a0,"}, {1, "b0,"}, {2, "c1,"}}));
  ASSERT_TRUE(RedistributeOperatorState("op", ListRule(StateRedistribution::kSplit), 2, {{0, "a"}, {1, ""}}, 3, "chk",
                                        &out)
                  .ok());
  // A subtask that gets no item still gets state (an empty list), so it does not start fresh.
  EXPECT_EQ(out, (std::map<uint32_t, std::string>{{0, "a0,"}, {1, ""}, {2, ""}}));
}

TEST(OperatorStateRedistributionTest, UnionGivesEveryItemToEverySubtask) {
  std::map<uint32_t, std::string> out;
  ASSERT_TRUE(RedistributeOperatorState("op", ListRule(StateRedistribution::kUnion), 2, {{0, "a"}, {1, "b"}}, 3, "chk",
                                        &out)
                  .ok());
  EXPECT_EQ(out, (std::map<uint32_t, std::string>{{0, "a0,b1,"}, {1, "a0,b1,"}, {2, "a0,b1,"}}));
}

TEST(OperatorStateRedistributionTest, UnchangedParallelismHandsBackTheBytes) {
  std::map<uint32_t, std::string> out;
  ASSERT_TRUE(RedistributeOperatorState("op", OperatorStateRule{}, 2, {{0, "x"}, {1, "y"}}, 2, "chk", &out).ok());
  EXPECT_EQ(out, (std::map<uint32_t, std::string>{{0, "x"}, {1, "y"}}));
}

TEST(OperatorStateRedistributionTest, StateWithoutARuleOrWithAMissingSubtaskIsRefused) {
  std::map<uint32_t, std::string> out;
  Status s = RedistributeOperatorState("op", OperatorStateRule{}, 2, {{0, "x"}, {1, "y"}}, 3, "chk", &out);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("'op'"));
  s = RedistributeOperatorState("op", ListRule(StateRedistribution::kSplit), 3, {{0, "x"}, {2, "y"}}, 2, "chk", &out);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("subtask 1"));
}

TEST(OperatorStateRedistributionTest, EveryStatefulOperatorTypeHasARule) {
  std::set<std::string> with_rule;
  for (const OperatorType& t : OperatorTypes())
    if (t.state.mode != StateRedistribution::kNone) with_rule.insert(t.name);
  EXPECT_EQ(with_rule, (std::set<std::string>{"file_source", "generator", "bank_requests", "file_sink", "nexmark"}));
}

// ---- Operators, driven as tasks would be, rescaled through their registry rule --------------

OperatorConfig Config(const std::string& type, const std::map<std::string, std::string>& params) {
  const OperatorType* t = FindOperatorType(type);
  OperatorConfig c;
  c.id = "op";
  c.type = type;
  for (const ParamSpec& p : t->params) c.params[p.name] = p.default_value;
  for (const auto& [k, v] : params) c.params[k] = v;
  if (t->keyed) c.key_by = {"key"};  // the key of KeyValueSchema records
  return c;
}

// (key string, value int64): what the word count's sink gets.
const SchemaRef& PairSchema() {
  static const SchemaRef schema = MakeSchema({{"key", FieldType::kString}, {"value", FieldType::kInt64}});
  return schema;
}

OperatorContext Ctx(uint32_t subtask, uint32_t p, const std::optional<std::string>& state) {
  OperatorContext ctx;
  ctx.operator_state = testing::FreshListStates();
  ctx.operator_id = "op";
  ctx.subtask = subtask;
  ctx.parallelism = p;
  ctx.max_parallelism = kMaxP;
  ctx.key_groups = KeyGroupRange::ForSubtask(subtask, kMaxP, p);
  if (state) {
    ctx.restored_checkpoint = 1;
    ctx.restored_operator_state = state;
  }
  return ctx;
}

// Runs a source of `type` through parallelism 2, then 3, then 1 (each subtask reading
// `per_phase` polls of 3 records before a snapshot, the last phase to the end) and returns
// every emitted line.
// With `busy`, also expects every subtask of every phase but the last to emit something (scaling
// up halves the remaining work).
std::multiset<std::string> RunSourceRescaled(const std::string& type, const std::map<std::string, std::string>& params,
                                             const std::vector<uint32_t>& phases = {2, 3, 1}, bool busy = false) {
  const OperatorType* t = FindOperatorType(type);
  std::multiset<std::string> emitted;
  std::map<uint32_t, std::string> states;
  uint32_t p = 0;
  for (size_t phase = 0; phase < phases.size(); ++phase) {
    const uint32_t phase_p = phases[phase];
    const bool last = phase + 1 == phases.size();
    std::map<uint32_t, std::string> next;
    if (p != 0) {
      EXPECT_TRUE(RedistributeOperatorState("op", t->state, p, states, phase_p, "chk", &next).ok());
    }
    std::map<uint32_t, std::string> snapshots;
    for (uint32_t j = 0; j < phase_p; ++j) {
      auto op = t->create(Config(type, params));
      auto* src = dynamic_cast<SourceOperator*>(op.get());
      OperatorContext ctx = Ctx(j, phase_p, p == 0 ? std::nullopt : std::optional<std::string>(next.at(j)));
      EXPECT_TRUE(op->Open(ctx).ok());
      size_t n = 0;
      for (int polls = 0; last || polls < 2; ++polls) {
        RecordBatch b;
        Operator::Clock::time_point resume;
        auto r = src->Poll(&b, 3, &resume);
        n += b.size();
        for (size_t i = 0; i < b.size(); ++i) emitted.insert(std::string(b.key(i)));
        if (r == SourceOperator::PollResult::kExhausted) break;
      }
      if (busy && !last) {
        EXPECT_GT(n, 0u) << type << " subtask " << j << " of " << phase_p;
      }
      OperatorSnapshot snap;
      EXPECT_TRUE(op->SnapshotState(1, &snap).ok());
      snapshots[j] = snap.operator_state;
    }
    states = snapshots;
    p = phase_p;
  }
  return emitted;
}

TEST(SourceRescaleTest, FileSourceReadsEveryLineExactlyOnceAcross2To3To1) {
  testing::ScratchDir dir;
  std::string text;
  std::multiset<std::string> all;
  for (int i = 0; i < 50; ++i) {
    std::string line = "line" + std::to_string(i) + std::string(i % 7, 'x');
    text += line + "\n";
    all.insert(line);
  }
  testing::WriteText(dir / "in.txt", text);
  EXPECT_EQ(RunSourceRescaled("file_source", {{"path", dir / "in.txt"}}), all);
}

TEST(SourceRescaleTest, FileSourceScaledUpGivesEverySubtaskAShareAcross1To4To2To3) {
  testing::ScratchDir dir;
  std::string text;
  std::multiset<std::string> all;
  for (int i = 0; i < 200; ++i) {
    std::string line = "l" + std::to_string(i) + std::string(i % 13, 'y');
    text += line + "\n";
    all.insert(line);
  }
  testing::WriteText(dir / "in.txt", text);
  EXPECT_EQ(RunSourceRescaled("file_source", {{"path", dir / "in.txt"}}, {1, 4, 2, 3, 1}, true), all);
}

TEST(SourceRescaleTest, GeneratorScaledUpGivesEverySubtaskAShare) {
  std::map<std::string, std::string> params{{"words", "400"}, {"words_per_line", "2"}, {"vocabulary", "1000"}};
  EXPECT_EQ(RunSourceRescaled("generator", params, {1, 4, 2, 3, 1}, true).size(), 200u);
}

TEST(OperatorStateRedistributionTest, SplitHalvesItemsWhenThereAreFewerThanSubtasks) {
  OperatorStateRule r = ListRule(StateRedistribution::kSplit);
  r.halve = [](const std::string& item, std::string* a, std::string* b) {
    if (item.size() < 2) return false;
    *a = item.substr(0, item.size() / 2);
    *b = item.substr(item.size() / 2);
    return true;
  };
  r.to_items = [](std::string_view bytes, uint32_t, uint32_t, std::vector<std::string>* items) {
    items->push_back(std::string(bytes));
    return Status::OK();
  };
  std::map<uint32_t, std::string> out;
  ASSERT_TRUE(RedistributeOperatorState("op", r, 1, {{0, "abcdefgh"}}, 4, "chk", &out).ok());
  EXPECT_EQ(out, (std::map<uint32_t, std::string>{{0, "ab,"}, {1, "cd,"}, {2, "ef,"}, {3, "gh,"}}));
  ASSERT_TRUE(RedistributeOperatorState("op", r, 2, {{0, "a"}, {1, "bc"}}, 3, "chk", &out).ok());
  EXPECT_EQ(out, (std::map<uint32_t, std::string>{{0, "a,"}, {1, "b,"}, {2, "c,"}}));
}

TEST(SourceRescaleTest, GeneratorEmitsEveryLineExactlyOnceAcross2To3To1) {
  std::map<std::string, std::string> params{{"words", "120"}, {"words_per_line", "2"}, {"vocabulary", "1000"}};
  std::multiset<std::string> all;
  {
    auto op = FindOperatorType("generator")->create(Config("generator", params));
    OperatorContext ctx = Ctx(0, 1, std::nullopt);
    ASSERT_TRUE(op->Open(ctx).ok());
    RecordBatch b;
    Operator::Clock::time_point resume;
    while (dynamic_cast<SourceOperator*>(op.get())->Poll(&b, 1000, &resume) != SourceOperator::PollResult::kExhausted) {
    }
    for (size_t i = 0; i < b.size(); ++i) all.insert(std::string(b.key(i)));
  }
  ASSERT_EQ(all.size(), 60u);
  EXPECT_EQ(RunSourceRescaled("generator", params), all);
}

TEST(SourceRescaleTest, BankRequestsEmitsEveryRequestExactlyOnceAcross2To3To1) {
  std::map<std::string, std::string> params{{"count", "40"}, {"accounts", "1000000"}};
  // With a million accounts the 40 request keys (source accounts) are distinct in practice; what
  // matters is that the multiset equals the one of an unscaled run.
  std::multiset<std::string> all;
  {
    auto op = FindOperatorType("bank_requests")->create(Config("bank_requests", params));
    OperatorContext ctx = Ctx(0, 1, std::nullopt);
    ASSERT_TRUE(op->Open(ctx).ok());
    RecordBatch b;
    Operator::Clock::time_point resume;
    while (dynamic_cast<SourceOperator*>(op.get())->Poll(&b, 1000, &resume) != SourceOperator::PollResult::kExhausted) {
    }
    for (size_t i = 0; i < b.size(); ++i) all.insert(std::string(b.key(i)) + ":" + std::to_string(b.a(i)));
  }
  ASSERT_EQ(all.size(), 40u);
  std::multiset<std::string> got = RunSourceRescaled("bank_requests", params);
  // RunSourceRescaled keeps keys only: compare keys.
  std::multiset<std::string> keys;
  for (const std::string& s : all) keys.insert(s.substr(0, s.find(':')));
  EXPECT_EQ(got, keys);
}

TEST(SinkRescaleTest, EveryPendingFileOfTheOldSubtasksIsCommittedOnceAndLaterOnesRemoved) {
  testing::ScratchDir dir;
  const std::string out = dir / "out";
  const OperatorType* t = FindOperatorType("file_sink");
  std::map<uint32_t, std::string> states;
  for (uint32_t j = 0; j < 3; ++j) {
    auto op = t->create(Config("file_sink", {{"path", out}}));
    OperatorContext ctx = Ctx(j, 3, std::nullopt);
    ASSERT_TRUE(op->Open(ctx).ok());
    RecordBatch b(PairSchema());
    b.Add("before" + std::to_string(j), 1);
    ASSERT_TRUE(op->Process(0, b, nullptr).ok());
    OperatorSnapshot snap;
    ASSERT_TRUE(op->SnapshotState(5, &snap).ok());  // pending for checkpoint 5, not committed
    ASSERT_TRUE(!snap.async_part || snap.async_part().ok());
    states[j] = snap.operator_state;
    RecordBatch after(PairSchema());
    after.Add("after" + std::to_string(j), 1);  // written after checkpoint 5: must go
    ASSERT_TRUE(op->Process(0, after, nullptr).ok());
    OperatorSnapshot later;
    ASSERT_TRUE(op->SnapshotState(6, &later).ok());
    ASSERT_TRUE(op->Close().ok());
  }
  EXPECT_TRUE(testing::CommittedLines(out).empty());
  std::map<uint32_t, std::string> next;
  ASSERT_TRUE(RedistributeOperatorState("sink", t->state, 3, states, 1, "chk", &next).ok());
  auto op = t->create(Config("file_sink", {{"path", out}}));
  OperatorContext ctx = Ctx(0, 1, next.at(0));
  ASSERT_TRUE(op->Open(ctx).ok());
  std::vector<std::string> lines = testing::CommittedLines(out);
  std::sort(lines.begin(), lines.end());
  EXPECT_THAT(lines, ElementsAre("before0\t1", "before1\t1", "before2\t1"));
  // Nothing written after checkpoint 5 is left, committed or not.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    ++files;
    EXPECT_EQ(e.path().filename().string().rfind(".part-", 0), std::string::npos) << e.path();
  }
  EXPECT_EQ(files, 3u);
  // The restored subtask writes under a new run: nothing old is overwritten when it commits.
  RecordBatch b(PairSchema());
  b.Add("new", 1);
  ASSERT_TRUE(op->Process(0, b, nullptr).ok());
  OperatorSnapshot snap;
  ASSERT_TRUE(op->SnapshotState(7, &snap).ok());
  ASSERT_TRUE(!snap.async_part || snap.async_part().ok());
  ASSERT_TRUE(op->NotifyCheckpointComplete(7).ok());
  ASSERT_TRUE(op->Close().ok());
  lines = testing::CommittedLines(out);
  std::sort(lines.begin(), lines.end());
  EXPECT_THAT(lines, ElementsAre("before0\t1", "before1\t1", "before2\t1", "new\t1"));
}

// ---- The key-group check ------------------------------------------------------------------

TEST(KeyGroupCheckTest, KeyedStateRefusesAKeyOutsideItsRangeAndSaysSo) {
  KeyedInt64State state(kMaxP, KeyGroupRange::ForSubtask(0, kMaxP, 2));
  std::string mine = KeysOwnedBy(0, 2, 1)[0], foreign = KeysOwnedBy(1, 2, 1)[0];
  EXPECT_EQ(state.Add(mine, 5), 5);
  EXPECT_TRUE(state.foreign_key_error().ok());
  state.Add(foreign, 7);
  state.Put(foreign, 7);
  int64_t v = 0;
  EXPECT_FALSE(state.Get(foreign, &v));
  EXPECT_EQ(state.size(), 1u);  // not stored
  const Status& s = state.foreign_key_error();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'" + foreign + "'"));
  EXPECT_THAT(s.message(), HasSubstr("key group " + std::to_string(KeyGroupOf(KeyHash(foreign), kMaxP))));
  EXPECT_THAT(s.message(), HasSubstr("0-63"));
  EXPECT_THAT(s.message(), HasSubstr("wrong subtask"));
  EXPECT_EQ(state.TakeDelta()->entries.size(), 1u);  // the foreign key never reaches a checkpoint
}

TEST(KeyGroupCheckTest, CountOperatorGivenARecordOfAnotherSubtaskLeavesItsStateAlone) {
  KeyedInt64State state(kMaxP, KeyGroupRange::ForSubtask(1, kMaxP, 3));
  auto op = FindOperatorType("count")->create(Config("count", {}));
  OperatorContext ctx = Ctx(1, 3, std::nullopt);
  ctx.keyed_state = &state;
  ASSERT_TRUE(op->Open(ctx).ok());
  RecordBatch in, out;
  in.Add(KeysOwnedBy(1, 3, 1)[0]);
  in.Add(KeysOwnedBy(0, 3, 1)[0]);
  ASSERT_TRUE(op->Process(0, in, &out).ok());
  EXPECT_EQ(state.size(), 1u);
  EXPECT_FALSE(state.foreign_key_error().ok());  // the task fails on this (engine/runtime/task.cc)
}

TEST(KeyGroupCheckTest, BankAccountsCreditForAnAccountItDoesNotOwnIsRefused) {
  // The bug this guards against: after 2 -> 3, credits of old accounts[0] reached new
  // accounts[0] and were added to accounts it no longer owned.
  KeyedInt64State state(kMaxP, KeyGroupRange::ForSubtask(0, kMaxP, 3));
  auto op = FindOperatorType("bank_accounts")->create(Config("bank_accounts", {{"accounts", "10"}}));
  OperatorContext ctx = Ctx(0, 3, std::nullopt);
  HeapKeyedStateBackend keyed(&state);
  ctx.keyed_state = &state;
  ctx.keyed = &keyed;
  ASSERT_TRUE(op->Open(ctx).ok());
  size_t owned = state.size();
  std::string foreign;
  for (int a = 0; a < 10 && foreign.empty(); ++a)
    if (Owner(std::to_string(a), 3) != 0) foreign = std::to_string(a);
  RecordBatch in(MakeSchema({{"account", FieldType::kString}, {"amount", FieldType::kInt64}})), out;
  in.Add(foreign, 12);  // a credit
  ASSERT_TRUE(op->Process(0, in, &out).ok());
  EXPECT_EQ(state.size(), owned);
  EXPECT_FALSE(state.foreign_key_error().ok());
}

// A task whose keyed head operator receives a record of another subtask's key group fails,
// naming the operator, the key, its key group and the subtask's range.
class RecordingListener : public TaskListener {
 public:
  void SourceFinished(int) override {}
  void TaskFailed(int, const Status& s) override { failures.push_back(s); }
  std::vector<Status> failures;
};

TEST(KeyGroupCheckTest, TaskFailsWhenItsKeyedOperatorGetsARecordOutsideItsKeyGroups) {
  ChainedOperator c;
  c.op = FindOperatorType("count")->create(Config("count", {}));
  c.ctx = Ctx(0, 2, std::nullopt);
  c.ctx.operator_id = "count";
  c.keyed_state = std::make_unique<KeyedInt64State>(kMaxP, c.ctx.key_groups);
  c.ctx.keyed_state = c.keyed_state.get();
  ASSERT_TRUE(c.op->Open(c.ctx).ok());
  KeyedInt64State* state = c.keyed_state.get();
  std::vector<ChainedOperator> chain;
  chain.push_back(std::move(c));
  RecordingListener listener;
  Task task(0, "count[0]", std::move(chain), kMaxP, "/nonexistent", nullptr, &listener);
  Parker producer;
  Channel ch("tokenize[0]->count[0]", 8, &producer, task.parker());
  task.input_gate()->AddInput(GateInput{&ch, 0});
  const std::string foreign = KeysOwnedBy(1, 2, 1)[0];
  auto batch = std::make_unique<RecordBatch>();
  batch->Add(KeysOwnedBy(0, 2, 1)[0]);
  batch->Add(foreign);
  ASSERT_TRUE(ch.Push(StreamElement::OfBatch(std::move(batch))));
  ASSERT_TRUE(ch.Push(StreamElement::EndOfStream()));
  task.Run();  // returns once it failed (or, wrongly, at the end of the stream)
  ASSERT_EQ(listener.failures.size(), 1u);
  const std::string& m = listener.failures[0].message();
  EXPECT_THAT(m, HasSubstr("count[0]"));
  EXPECT_THAT(m, HasSubstr("'" + foreign + "'"));
  EXPECT_THAT(m, HasSubstr("key groups 0-63"));
  EXPECT_EQ(state->size(), 1u);
}

// ---- The input gate: restored records of every channel come before anything new ----------

TEST(RestoredFirstTest, GateDeliversEveryChannelsRestoredRecordsBeforeNewData) {
  Parker producer, consumer;
  Channel a("up[0]->down[0]", 64, &producer, &consumer), b("up[1]->down[0]", 64, &producer, &consumer);
  CheckpointedInputGate gate;
  gate.AddInput(GateInput{&a, 0});
  gate.AddInput(GateInput{&b, 0});
  auto batch = [](std::string_view k) {
    auto r = std::make_unique<RecordBatch>();
    r->Add(k);
    return r;
  };
  ASSERT_TRUE(a.Push(StreamElement::OfBatch(batch("new-a"))));
  ASSERT_TRUE(b.Push(StreamElement::OfBatch(batch("new-b"))));
  RecordBatch restored;
  restored.Add("restored-b");
  gate.AddRestored(1, std::move(restored));
  std::vector<std::string> order;
  for (int i = 0; i < 10 && order.size() < 3; ++i) {
    GateEvent ev = gate.Poll();
    if (ev.kind != GateEvent::Kind::kBatch) continue;
    order.emplace_back(ev.batch->key(0));
    gate.MarkProcessed(ev.slot, *ev.batch, 0, ev.batch->size());
    ev.channel->Recycle(std::move(ev.batch));
  }
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], "restored-b");  // although the round robin starts at channel 0
}

}  // namespace
}  // namespace cairn

// ---- End to end -----------------------------------------------------------------------------

namespace cairn::testing {
namespace {

// The completed checkpoints of `ckdir`: id -> the `_metadata` text.
std::map<uint64_t, std::string> Completed(const std::string& ckdir) {
  std::map<uint64_t, std::string> out;
  for (uint64_t id : CompletedCheckpointIds(ckdir))
    out[id] = ReadText(ckdir + "/chk-" + std::to_string(id) + "/_metadata");
  return out;
}

uint64_t LatestId(const std::string& ckdir) {
  std::map<uint64_t, std::string> all = Completed(ckdir);
  return all.empty() ? 0 : all.rbegin()->first;
}

int64_t Field(const std::string& metadata, const std::string& key) {
  size_t at = metadata.find("\n" + key + " ");
  return at == std::string::npos ? -1 : std::stoll(metadata.substr(at + key.size() + 2));
}

// Starts `args` and SIGKILLs it as soon as a checkpoint with an id above `after` completed for
// which `want(metadata)` holds (polling the directory, no time limit: the job's progress drives
// it). Returns that checkpoint's id; 0 when the job ended first (its exit code in *ended).
uint64_t KillAfterCheckpoint(const std::vector<std::string>& args, const std::string& ckdir, const std::string& logs,
                             uint64_t after, const std::function<bool(const std::string&)>& want, RunResult* ended) {
  CairnProcess p(args, logs + "/out.log", logs + "/err.log");
  for (;;) {
    for (const auto& [id, md] : Completed(ckdir))
      if (id > after && Field(md, "sources_finished") == 0 && want(md)) {
        p.Kill();
        RunResult r;
        p.Wait(1 << 30, &r);
        return id;
      }
    if (p.Wait(2, ended)) return 0;  // a short look, then at the directory again
  }
}

std::vector<std::string> BankArgs(const ScratchDir& dir, const std::string& mode) {
  return {"run", SourceDir() + "/jobs/bank.yaml", "--quiet",
          "--set", "checkpoint.dir=" + dir / "ck",
          "--set", "checkpoint.mode=" + mode,
          "--set", "checkpoint.interval=20ms",
          "--set", "checkpoint.retain=100000",
          "--set", "operators.requests.count=400000",
          "--set", "operators.requests.rate=20000"};
}

std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The bank at parallelism 2, killed right after a checkpoint with credits in flight; restored
// from that checkpoint at parallelism 3, killed the same way; restored from that one at 1 and
// run to its end (unpaced: the pacing only keeps the first two runs going until the kill). Every checkpoint conserves money and holds each account once.
// `key` is what is rescaled: "parallelism" (every operator) or "operators.accounts.parallelism"
// (the keyed operator only: the reported bug, where old accounts[0]'s credits went to new
// accounts[0]).
void BankRescales(const std::string& mode, const std::string& key = "parallelism") {
  ScratchDir dir;
  const std::string ck = dir / "ck";
  auto in_flight = [](const std::string& md) { return Field(md, "channel_state_bytes") > 0; };
  RunResult ended;
  uint64_t first = KillAfterCheckpoint(BankArgs(dir, mode), ck, dir.path(), LatestId(ck), in_flight, &ended);
  ASSERT_GT(first, 0u) << "the job ended (exit " << ended.exit_code << ") before a checkpoint held credits in flight";
  uint64_t second = KillAfterCheckpoint(
      With(BankArgs(dir, mode), {"--set", key + "=3", "--restore", ck + "/chk-" + std::to_string(first)}), ck,
      dir.path(), LatestId(ck), in_flight, &ended);
  ASSERT_GT(second, 0u) << "the job ended (exit " << ended.exit_code << ") before a checkpoint held credits in flight; "
                        << ReadText(dir / "err.log");
  EXPECT_THAT(Completed(ck)[second], ::testing::HasSubstr("op=accounts index=2 parallelism=3"));
  {
    SCOPED_TRACE("checkpoints up to the second kill");
    ExpectEveryCheckpointConservesMoney(ck, 1000, 1000);
  }
  RunResult last = RunCairn(
      With(BankArgs(dir, mode), {"--set", key + "=1", "--set", "operators.requests.rate=0", "--restore",
                                 ck + "/chk-" + std::to_string(second)}));
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_THAT(last.out, ::testing::HasSubstr("restored from checkpoint " + std::to_string(second)));
  EXPECT_THAT(Completed(ck).rbegin()->second, ::testing::HasSubstr("op=accounts index=0 parallelism=1"));
  ExpectEveryCheckpointConservesMoney(ck, 1000, 1000);
}

TEST(RescaleEndToEnd, BankUnaligned2To3To1ConservesMoneyAndEnds) { BankRescales("unaligned"); }

TEST(RescaleEndToEnd, BankAligned2To3To1ConservesMoneyAndEnds) { BankRescales("aligned"); }

TEST(RescaleEndToEnd, BankUnalignedAccountsOnly2To3To1ConservesMoneyAndEnds) {
  BankRescales("unaligned", "operators.accounts.parallelism");
}

// What cannot be redistributed is refused before anything on disk changes: in-flight records of
// the feedback edge, restored into a job where accounts no longer reads its own output. (In
// aligned mode a checkpoint's channel state is only ever the feedback edge's.)
TEST(RescaleEndToEnd, InFlightRecordsOfAnEdgeTheJobNoLongerHasAreRefusedAndNothingChanges) {
  ScratchDir dir;
  const std::string ck = dir / "ck";
  RunResult ended;
  uint64_t first = KillAfterCheckpoint(
      BankArgs(dir, "aligned"), ck, dir.path(), 0,
      [](const std::string& md) { return Field(md, "channel_state_bytes") > 0; }, &ended);
  ASSERT_GT(first, 0u) << "the job ended (exit " << ended.exit_code << ") first";
  const Tree before = TreeSnapshot(dir.path());
  RunResult r = RunCairn(With(BankArgs(dir, "aligned"), {"--set", "operators.accounts.inputs=requests", "--set",
                                                        "parallelism=3", "--restore",
                                                        ck + "/chk-" + std::to_string(first)}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, ::testing::HasSubstr("no edge from 'accounts' to 'accounts'"));
  EXPECT_TRUE(SameTree(before, TreeSnapshot(dir.path())));
}

// jobs/wordcount.yaml on a small generated input, paced: parallelism 2, killed after its first
// checkpoint; restored (latest) at 3, killed after a further checkpoint; restored (latest) at 1
// and run to its end. The committed output is exactly once.
// With `backpressure`, jobs/wordcount-backpressure.yaml instead (a throttle on a forward edge
// after count), killed only after checkpoints that hold in-flight records: the forward edge's
// and the hash edge's channel state are redistributed.
void WordCountRescales(const std::string& mode, bool backpressure = false, const std::vector<std::string>& sets = {}) {
  ScratchDir dir;
  const std::string input = dir / "in.txt";
  RunResult g = RunCairn({"generate", "--out", input, "--words", "60000", "--words-per-line", "6", "--vocabulary", "500"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const std::string ck = dir / "ck";
  std::vector<std::string> args = {"run", SourceDir() + (backpressure ? "/jobs/wordcount-backpressure.yaml" : "/jobs/wordcount.yaml"), "--quiet",
                                   "--set", "checkpoint.dir=" + ck,
                                   "--set", "checkpoint.mode=" + mode,
                                   "--set", "checkpoint.interval=50ms",
                                   "--set", "operators.source.path=" + input,
                                   "--set", "operators.source.rate=300",  // 3600 words/s: 16 s for the input
                                   "--set", "operators.sink.path=" + dir / "out"};
  // Each throttle subtask passes 1000 records/s while count sends the throttles ~1800 each (a
  // record per word), so their input never drains and every checkpoint holds records its barrier
  // overtook, however fast or loaded the machine (a throttle faster than its input left that to
  // chance). The backlog grows by ~800 records/s, so a restored run drains it quickly.
  if (backpressure) args = With(args, {"--set", "operators.throttle.rate=1000"});
  for (const std::string& set : sets) args = With(args, {"--set", set});
  // The first run starts fresh (a restore without a checkpoint is exit 2); the others resume.
  const std::vector<std::string> fresh = args;
  args = With(args, {"--restore", "latest"});
  // Backpressure: a checkpoint whose throttle subtasks hold records of the forward edge from count.
  auto any = [backpressure](const std::string& md) {
    if (!backpressure) return true;
    std::istringstream in(md);
    for (std::string line; std::getline(in, line);) {
      size_t at = line.find(" channel_state_bytes=");
      if (line.rfind("subtask op=throttle ", 0) == 0 && at != std::string::npos && line[at + 21] != '0') return true;
    }
    return false;
  };
  RunResult ended;
  uint64_t first = KillAfterCheckpoint(fresh, ck, dir.path(), LatestId(ck), any, &ended);
  ASSERT_GT(first, 0u) << "the job ended (exit " << ended.exit_code << ") before its first checkpoint";
  uint64_t second =
      KillAfterCheckpoint(With(args, {"--set", "parallelism=3"}), ck, dir.path(), LatestId(ck), any, &ended);
  ASSERT_GT(second, 0u) << "the job ended (exit " << ended.exit_code << ") before a checkpoint; "
                        << ReadText(dir / "err.log");
  EXPECT_THAT(Completed(ck)[second], ::testing::HasSubstr("op=source index=2 parallelism=3"));
  std::vector<std::string> unpaced = {"--set", "parallelism=1", "--set", "operators.source.rate=0"};
  if (backpressure) unpaced = With(unpaced, {"--set", "operators.throttle.rate=1000000000"});
  RunResult last = RunCairn(With(args, unpaced));
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_THAT(last.out, ::testing::HasSubstr("restored from checkpoint"));
  EXPECT_THAT(Completed(ck).rbegin()->second, ::testing::HasSubstr("op=sink index=0 parallelism=1"));
  ExpectExactlyOnce(dir / "out", ExpectedCounts(input));
}

TEST(RescaleEndToEnd, WordCountUnaligned2To3To1IsExactlyOnce) { WordCountRescales("unaligned"); }

TEST(RescaleEndToEnd, WordCountAligned2To3To1IsExactlyOnce) { WordCountRescales("aligned"); }

TEST(RescaleEndToEnd, WordCountChangelogCheckpoints2To3To1IsExactlyOnce) {
  WordCountRescales("aligned", false, {"state.changelog=true", "state.materialize_interval=100ms"});
}

TEST(RescaleEndToEnd, WordCountBackpressureUnaligned2To3To1WithInFlightRecordsIsExactlyOnce) {
  WordCountRescales("unaligned", true);
}

}  // namespace
}  // namespace cairn::testing
