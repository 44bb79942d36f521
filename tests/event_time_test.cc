// Event time below the operators: the watermark tracker's minimum over channels (idle channels
// left out, end of input as the final watermark, never backwards, feedback channels ignored);
// watermarks through an input gate in band with the records (a blocked channel's watermark
// waits); the keyed timer service (timestamp order, dedup, delete, its index rebuilt from the
// keyed state on restore, and split by key group on a rescale), on both state backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/parker.h"
#include "engine/dataflow/channel.h"
#include "engine/dataflow/input_gate.h"
#include "engine/dataflow/watermark_tracker.h"
#include "engine/runtime/keyed_timer_service.h"
#include "state/operator_list_state.h"
#include "state/state_backend.h"
#include "tests/test_util.h"

namespace cairn::testing {
namespace {

TEST(WatermarkTrackerTest, IsTheMinimumOverTheChannelsAndNeverGoesBack) {
  WatermarkTracker t;
  t.AddChannel(false);
  t.AddChannel(false);
  EXPECT_FALSE(t.OnWatermark(0, {100, false}));  // channel 1 has none yet
  EXPECT_EQ(t.combined().timestamp, kMinWatermark);
  EXPECT_TRUE(t.OnWatermark(1, {50, false}));
  EXPECT_EQ(t.combined().timestamp, 50);
  EXPECT_TRUE(t.OnWatermark(1, {200, false}));
  EXPECT_EQ(t.combined().timestamp, 100);
  EXPECT_FALSE(t.OnWatermark(1, {150, false}));  // a channel's watermark does not go back
  EXPECT_EQ(t.combined().timestamp, 100);
  EXPECT_TRUE(t.OnEndOfInput(0));
  EXPECT_EQ(t.combined().timestamp, 200);
  EXPECT_TRUE(t.OnEndOfInput(1));
  EXPECT_EQ(t.combined().timestamp, kMaxWatermark);
}

TEST(WatermarkTrackerTest, IdleChannelsAreLeftOutUntilTheyAreActiveAgain) {
  WatermarkTracker t;
  t.AddChannel(false);
  t.AddChannel(false);
  t.AddChannel(true);  // feedback: never counted
  t.OnWatermark(0, {10, false});
  EXPECT_FALSE(t.OnWatermark(2, {1000, false}));
  EXPECT_TRUE(t.OnWatermark(1, {5, false}));
  EXPECT_EQ(t.combined().timestamp, 5);
  EXPECT_TRUE(t.OnWatermark(1, {5, true}));  // channel 1 idle: channel 0 alone
  EXPECT_EQ(t.combined().timestamp, 10);
  EXPECT_FALSE(t.combined().idle);
  EXPECT_TRUE(t.OnWatermark(0, {10, true}));  // every channel idle
  EXPECT_TRUE(t.combined().idle);
  EXPECT_TRUE(t.OnWatermark(1, {7, false}));  // active again, behind: no step back
  EXPECT_FALSE(t.combined().idle);
  EXPECT_EQ(t.combined().timestamp, 10);
  EXPECT_TRUE(t.OnWatermark(1, {30, false}));
  EXPECT_EQ(t.combined().timestamp, 30);
}

RecordBatch OneRecord(int64_t v) {
  RecordBatch b(MakeSchema({{"v", FieldType::kInt64}}));
  b.SetInt64(b.AddRow(), 0, v);
  return b;
}

TEST(InputGateWatermarkTest, WatermarksStayInBandAndABlockedChannelsWatermarkWaits) {
  Parker producer, consumer;
  Channel a("a", 16, &producer, &consumer), b("b", 16, &producer, &consumer);
  InputGate gate;
  gate.AddInput(GateInput{&a, 0});
  gate.AddInput(GateInput{&b, 1});
  ASSERT_TRUE(a.Push(StreamElement::OfBatch(std::make_unique<RecordBatch>(OneRecord(1)))));
  ASSERT_TRUE(a.Push(StreamElement::OfWatermark({100, false})));
  ASSERT_TRUE(b.Push(StreamElement::OfWatermark({40, false})));
  ASSERT_TRUE(b.Push(StreamElement::OfWatermark({300, false})));
  gate.Block(1);
  // Only channel a is read: its record, then its watermark (no change: b has none yet).
  std::vector<std::string> seen;
  size_t slot;
  Barrier barrier;
  for (int round = 0; round < 4; ++round) {
    InputGate::Scan scan = gate.BeginScan();
    for (InputGate::Read r; (r = gate.ReadNext(&scan, &slot, &barrier)) != InputGate::Read::kDone;) {
      if (r == InputGate::Read::kBatch) {
        seen.push_back("batch@" + std::to_string(slot));
        auto batch = gate.TakeStash();
        gate.MarkProcessed(slot, *batch, 0, batch->size());
      } else if (r == InputGate::Read::kWatermark) {
        seen.push_back("wm=" + std::to_string(gate.watermark().timestamp));
      }
    }
  }
  EXPECT_EQ(seen, std::vector<std::string>({"batch@0"}));
  EXPECT_EQ(gate.watermark().timestamp, kMinWatermark);
  gate.UnblockAll();
  for (int round = 0; round < 4; ++round) {
    InputGate::Scan scan = gate.BeginScan();
    for (InputGate::Read r; (r = gate.ReadNext(&scan, &slot, &barrier)) != InputGate::Read::kDone;)
      if (r == InputGate::Read::kWatermark) seen.push_back("wm=" + std::to_string(gate.watermark().timestamp));
  }
  EXPECT_EQ(seen, std::vector<std::string>({"batch@0", "wm=40", "wm=100"}));
}

// ---- The timer service.

constexpr uint32_t kMaxP = 128;
using Kind = StateBackendOptions::Kind;

class TimerServiceTest : public ::testing::TestWithParam<Kind> {
 protected:
  std::unique_ptr<StateBackend> Backend() {
    StateBackendOptions o;
    o.kind = GetParam();
    o.block_cache = 1 << 20;
    o.write_buffer = 1 << 20;
    return NewStateBackend(o);
  }
  ScratchDir dir_;
};

std::vector<std::pair<int64_t, std::string>> PopAll(KeyedTimerService* t, int64_t wm) {
  std::vector<std::pair<int64_t, std::string>> fired;
  t->AdvanceWatermark(wm);
  int64_t ts;
  std::string key;
  while (t->PopEventTimer(&ts, &key)) fired.emplace_back(ts, key);
  return fired;
}

TEST_P(TimerServiceTest, FiresInTimestampOrderOnceEachAndNotWhenDeleted) {
  KeyedSubtaskState s;
  ASSERT_TRUE(Backend()->CreateKeyed(dir_ / "w", kMaxP, KeyGroupRange{0, kMaxP - 1}, &s).ok());
  OperatorStateStore ops;
  std::unique_ptr<KeyedTimerService> t;
  int64_t now = 1000;
  ASSERT_TRUE(KeyedTimerService::Open(s.keyed.get(), &ops, [&] { return now; }, &t).ok());
  t->RegisterEventTimeTimer("b", 30);
  t->RegisterEventTimeTimer("a", 30);
  t->RegisterEventTimeTimer("a", 10);
  t->RegisterEventTimeTimer("a", 10);  // the same timer: once
  t->RegisterEventTimeTimer("c", 20);
  t->RegisterEventTimeTimer("c", 50);
  t->DeleteEventTimeTimer("c", 20);
  t->DeleteEventTimeTimer("x", 99);  // none: a no-op
  EXPECT_EQ(t->pending(TimeDomain::kEventTime), 4u);
  using F = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(PopAll(t.get(), 29), F({{10, "a"}}));
  EXPECT_EQ(PopAll(t.get(), 30), F({{30, "a"}, {30, "b"}}));
  EXPECT_EQ(PopAll(t.get(), 20), F{});  // the watermark does not go back
  EXPECT_EQ(t->CurrentWatermark(), 30);
  EXPECT_EQ(PopAll(t.get(), kMaxWatermark), F({{50, "c"}}));
  // Processing time: by the clock given.
  t->RegisterProcessingTimeTimer("p", 1500);
  t->RegisterProcessingTimeTimer("q", 1200);
  EXPECT_EQ(t->NextProcessingTime(), 1200);
  int64_t ts;
  std::string key;
  EXPECT_FALSE(t->PopProcessingTimer(now, &ts, &key));
  now = 1600;
  ASSERT_TRUE(t->PopProcessingTimer(now, &ts, &key));
  EXPECT_EQ(std::make_pair(ts, key), std::make_pair(int64_t{1200}, std::string("q")));
  ASSERT_TRUE(t->PopProcessingTimer(now, &ts, &key));
  EXPECT_EQ(key, "p");
  EXPECT_FALSE(t->PopProcessingTimer(now, &ts, &key));
  // Fired and deleted timers left the keyed state.
  size_t entries = 0;
  StateId id;
  ASSERT_TRUE(s.keyed->Declare(StateDescriptor{StateKind::kMap, "cairn.timer,bool", "__timers"}, &id).ok());
  s.keyed->ForEachEntry(id, [&](std::string_view, std::string_view, std::string_view) { ++entries; });
  EXPECT_EQ(entries, 0u);
}

TEST_P(TimerServiceTest, TimersAndTheWatermarkSurviveACheckpointAndARescale) {
  KeyedSubtaskState s;
  ASSERT_TRUE(Backend()->CreateKeyed(dir_ / "w", kMaxP, KeyGroupRange{0, kMaxP - 1}, &s).ok());
  OperatorStateStore ops;
  std::unique_ptr<KeyedTimerService> t;
  ASSERT_TRUE(KeyedTimerService::Open(s.keyed.get(), &ops, nullptr, &t).ok());
  std::map<std::string, std::set<int64_t>> want;
  for (int k = 0; k < 50; ++k) {
    std::string key = "key" + std::to_string(k);
    for (int64_t ts : {int64_t{-5} * k, int64_t{100} + k, int64_t{1000}}) {
      t->RegisterEventTimeTimer(key, ts);
      want[key].insert(ts);
    }
  }
  t->AdvanceWatermark(-1000);  // no timer due yet
  std::unique_ptr<StateDelta> delta;
  ASSERT_TRUE(s.keyed->Snapshot(&delta).ok());
  uint64_t bytes = 0;
  ASSERT_TRUE(s.store->PersistAndCheckpoint(*delta, dir_ / "chk", &bytes).ok());
  const std::string list_bytes = ops.Snapshot();
  // Restore into two subtasks (a rescale 1 -> 2): each gets the timers of its key groups.
  std::map<std::string, std::set<int64_t>> got;
  for (uint32_t i = 0; i < 2; ++i) {
    KeyGroupRange range = KeyGroupRange::ForSubtask(i, kMaxP, 2);
    KeyedSubtaskState r;
    Status st = Backend()->RestoreKeyed({KeyedSnapshotHandle{dir_ / "chk", KeyGroupRange{0, kMaxP - 1}}},
                                        dir_ / ("r" + std::to_string(i)), kMaxP, range, &r, nullptr);
    ASSERT_TRUE(st.ok()) << st.ToString();
    OperatorStateStore rops;
    ASSERT_TRUE(rops.Restore(list_bytes, "test").ok());
    std::unique_ptr<KeyedTimerService> rt;
    ASSERT_TRUE(KeyedTimerService::Open(r.keyed.get(), &rops, nullptr, &rt).ok());
    EXPECT_EQ(rt->CurrentWatermark(), -1000);
    int64_t last = kMinWatermark;
    for (auto& [ts, key] : PopAll(rt.get(), kMaxWatermark)) {
      EXPECT_GE(ts, last);
      last = ts;
      EXPECT_TRUE(range.Contains(KeyGroupOf(KeyHash(key), kMaxP))) << key;
      EXPECT_TRUE(got[key].insert(ts).second);
    }
  }
  EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Backends, TimerServiceTest, ::testing::Values(Kind::kHeap, Kind::kRocksDb),
                         [](const auto& info) { return info.param == Kind::kHeap ? "heap" : "rocksdb"; });

}  // namespace
}  // namespace cairn::testing
