// Specification of the barrier handler: the states of an exactly-once checkpoint
// (WaitingForFirstBarrier, CollectingAlignedBarriers) through a fake controller, the
// at-least-once CheckpointBarrierTracker, and the whole CheckpointedInputGate with an injected
// clock (the aligned timeout, unaligned channel recording), no wall-clock waits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/base/parker.h"
#include "engine/checkpoint/barrier_handler.h"
#include "engine/checkpoint/barrier_handler_state.h"
#include "engine/checkpoint/checkpointed_input_gate.h"
#include "engine/dataflow/channel.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Barrier BarrierOf(CheckpointId id, int64_t trigger_ms = 0, int64_t timeout_ms = 0) {
  Barrier b;
  b.id = id;
  b.trigger_time_ms = trigger_ms;
  b.aligned_timeout_ms = timeout_ms;
  return b;
}

PriorityEvent Unaligned(CheckpointId id, uint64_t position) {
  PriorityEvent e;
  e.kind = PriorityEvent::Kind::kUnalignedBarrier;
  e.barrier = BarrierOf(id);
  e.barrier.mode = CheckpointMode::kUnaligned;
  e.position = position;
  return e;
}

PriorityEvent Announcement(CheckpointId id, uint64_t position, int64_t trigger_ms = 0, int64_t timeout_ms = 0) {
  PriorityEvent e;
  e.kind = PriorityEvent::Kind::kAnnouncement;
  e.barrier = BarrierOf(id, trigger_ms, timeout_ms);
  e.position = position;
  return e;
}

const char* Name(SubtaskCheckpointMode m) { return SubtaskCheckpointModeName(m); }

// Records what the states ask for, as strings, and answers from settable fields.
class FakeController : public BarrierHandlerController {
 public:
  size_t open = 2;
  bool timed_out = false;
  std::vector<std::string> calls;

  void BlockChannel(size_t slot) override { calls.push_back("block " + std::to_string(slot)); }
  size_t OpenChannels() const override { return open; }
  bool AlignedTimeoutPassed(const Barrier& b) const override { return timed_out; }
  Clock::time_point Now() const override { return Clock::time_point(); }
  Clock::time_point TimeoutDeadline(const Barrier& b) const override { return Clock::time_point::max(); }
  void RecordAnnouncement(size_t slot, const Barrier& b, uint64_t position) override {
    calls.push_back("announced " + std::to_string(b.id) + " on " + std::to_string(slot) + " at " +
                    std::to_string(position));
  }
  void TakeAligned(const Barrier& b, int64_t alignment_ms) override {
    calls.push_back("take " + std::to_string(b.id) + " aligned");
  }
  void TakeUnaligned(const Barrier& b, SubtaskCheckpointMode mode, int64_t alignment_ms) override {
    calls.push_back("take " + std::to_string(b.id) + " " + Name(mode));
  }
  void UnalignedBarrierReceived(size_t slot, CheckpointId id, uint64_t position) override {
    calls.push_back("barrier " + std::to_string(id) + " on " + std::to_string(slot) + " at " + std::to_string(position));
  }
  void Defer(size_t slot, const PriorityEvent& e) override {
    calls.push_back("defer " + std::to_string(e.barrier.id) + " of " + std::to_string(slot));
  }
};

// Steps a state machine, as the BarrierHandler does.
class Machine {
 public:
  Machine() : state_(std::make_unique<WaitingForFirstBarrier>()) {}
  void Barrier(size_t slot, const cairn::Barrier& b) { Go(state_->OnBarrier(c, slot, b)); }
  void Priority(size_t slot, const PriorityEvent& e) { Go(state_->OnPriorityEvent(c, slot, e)); }
  void ChannelEnded() { Go(state_->OnChannelEnded(c)); }
  void Timer() { Go(state_->OnTimer(c)); }
  bool waiting() const { return dynamic_cast<WaitingForFirstBarrier*>(state_.get()) != nullptr; }
  const CollectingAlignedBarriers* collecting() const {
    return dynamic_cast<CollectingAlignedBarriers*>(state_.get());
  }
  FakeController c;

 private:
  void Go(std::unique_ptr<BarrierHandlerState> next) {
    if (next != nullptr) state_ = std::move(next);
  }
  std::unique_ptr<BarrierHandlerState> state_;
};

TEST(BarrierHandlerStateTest, AlignedFirstBarrierBlocksItsChannelAndStartsCollecting) {
  Machine m;
  m.Barrier(0, BarrierOf(1));
  EXPECT_THAT(m.c.calls, ElementsAre("block 0"));
  ASSERT_NE(m.collecting(), nullptr);
  EXPECT_EQ(m.collecting()->barrier().id, 1u);
  EXPECT_EQ(m.collecting()->barriers_received(), 1u);
}

TEST(BarrierHandlerStateTest, AlignedLastBarrierTakesTheCheckpointAndWaitsForTheNext) {
  Machine m;
  m.c.open = 3;
  m.Barrier(2, BarrierOf(4));
  m.Barrier(0, BarrierOf(4));
  EXPECT_FALSE(m.waiting());
  m.Barrier(1, BarrierOf(4));
  EXPECT_THAT(m.c.calls, ElementsAre("block 2", "block 0", "block 1", "take 4 aligned"));
  EXPECT_TRUE(m.waiting());
}

TEST(BarrierHandlerStateTest, AlignedBarrierOnTheOnlyOpenChannelTakesTheCheckpointAtOnce) {
  Machine m;
  m.c.open = 1;
  m.Barrier(0, BarrierOf(2));
  EXPECT_THAT(m.c.calls, ElementsAre("block 0", "take 2 aligned"));
  EXPECT_TRUE(m.waiting());
}

TEST(BarrierHandlerStateTest, EndOfStreamOfTheLastAwaitedChannelTakesTheAlignedCheckpoint) {
  Machine m;
  m.Barrier(0, BarrierOf(5));
  m.ChannelEnded();  // another channel ended, but OpenChannels still says 2
  EXPECT_FALSE(m.waiting());
  m.c.open = 1;
  m.ChannelEnded();
  EXPECT_THAT(m.c.calls, ElementsAre("block 0", "take 5 aligned"));
  EXPECT_TRUE(m.waiting());
}

TEST(BarrierHandlerStateTest, UnalignedFirstBarrierTakesTheSnapshotAtOnceAndEndsItsChannelAtItsPosition) {
  Machine m;
  m.Priority(1, Unaligned(3, 17));
  EXPECT_THAT(m.c.calls, ElementsAre("take 3 unaligned", "barrier 3 on 1 at 17"));
  EXPECT_TRUE(m.waiting());
}

TEST(BarrierHandlerStateTest, AnnouncementStartsCollectingWithoutBlocking) {
  Machine m;
  m.Priority(1, Announcement(6, 40));
  EXPECT_THAT(m.c.calls, ElementsAre("announced 6 on 1 at 40"));
  ASSERT_NE(m.collecting(), nullptr);
  EXPECT_EQ(m.collecting()->barriers_received(), 0u);
}

TEST(BarrierHandlerStateTest, AlignedTimeoutSwitchesToUnaligned) {
  Machine m;
  m.Barrier(0, BarrierOf(7, 1000, 50));
  m.Timer();
  EXPECT_FALSE(m.waiting()) << "not timed out yet";
  m.c.timed_out = true;
  m.Timer();
  EXPECT_THAT(m.c.calls, ElementsAre("block 0", "take 7 aligned->unaligned"));
  EXPECT_TRUE(m.waiting());
}

TEST(BarrierHandlerStateTest, UnalignedBarrierOfTheCheckpointBeingAlignedSwitchesIt) {
  Machine m;
  m.Barrier(0, BarrierOf(8));
  m.Priority(1, Unaligned(8, 12));
  EXPECT_THAT(m.c.calls, ElementsAre("block 0", "take 8 aligned->unaligned", "barrier 8 on 1 at 12"));
  EXPECT_TRUE(m.waiting());
}

TEST(BarrierHandlerStateTest, NewerCheckpointOvertakingAnAlignmentTakesTheOlderUnalignedFirst) {
  Machine m;
  m.Barrier(0, BarrierOf(9));
  m.Priority(1, Announcement(10, 3));
  EXPECT_THAT(m.c.calls, ElementsAre("block 0", "defer 10 of 1", "take 9 aligned->unaligned"));
  EXPECT_TRUE(m.waiting()) << "the deferred event is handled next, from the first state";
}

TEST(BarrierHandlerStateTest, AnnouncementOfTheCheckpointBeingAlignedIsRecorded) {
  Machine m;
  m.Barrier(0, BarrierOf(11));
  m.Priority(1, Announcement(11, 5));
  EXPECT_THAT(m.c.calls, ElementsAre("block 0", "announced 11 on 1 at 5"));
  EXPECT_NE(m.collecting(), nullptr);
}

TEST(SubtaskCheckpointModeTest, NamesAreTheMetadataModes) {
  EXPECT_STREQ(SubtaskCheckpointModeName(SubtaskCheckpointMode::kAligned), "aligned");
  EXPECT_STREQ(SubtaskCheckpointModeName(SubtaskCheckpointMode::kUnaligned), "unaligned");
  EXPECT_STREQ(SubtaskCheckpointModeName(SubtaskCheckpointMode::kAlignedThenUnaligned), "aligned->unaligned");
  EXPECT_STREQ(SubtaskCheckpointModeName(SubtaskCheckpointMode::kAtLeastOnce), "at_least_once");
  EXPECT_TRUE(IsUnaligned(SubtaskCheckpointMode::kAlignedThenUnaligned));
  EXPECT_FALSE(IsUnaligned(TakenAs(CheckpointMode::kAtLeastOnce)));
}

TEST(CheckpointBarrierTrackerTest, CompletesWhenEveryOpenChannelDeliveredTheBarrier) {
  CheckpointBarrierTracker t;
  Barrier b = BarrierOf(1);
  b.mode = CheckpointMode::kAtLeastOnce;
  t.OnBarrier(b);
  EXPECT_FALSE(t.TakeIfComplete(1, 2).has_value());
  t.OnBarrier(b);
  std::optional<Barrier> done = t.TakeIfComplete(1, 2);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->id, 1u);
  EXPECT_EQ(done->mode, CheckpointMode::kAtLeastOnce);
  EXPECT_EQ(t.pending(), 0u);
}

TEST(CheckpointBarrierTrackerTest, AChannelThatEndsCompletesTheOldestCheckpointWaitingForIt) {
  CheckpointBarrierTracker t;
  t.OnBarrier(BarrierOf(2));
  t.OnBarrier(BarrierOf(3));
  EXPECT_FALSE(t.TakeFirstComplete(2).has_value());
  std::optional<Barrier> done = t.TakeFirstComplete(1);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->id, 2u);
  EXPECT_EQ(t.TakeFirstComplete(1)->id, 3u);
  EXPECT_EQ(t.pending(), 0u);
}

TEST(CheckpointBarrierTrackerTest, NothingCompletesWithoutAnOpenChannel) {
  CheckpointBarrierTracker t;
  t.OnBarrier(BarrierOf(1));
  EXPECT_FALSE(t.TakeFirstComplete(0).has_value());
  EXPECT_EQ(t.pending(), 1u);
}

// A clock the test moves.
class FakeClock : public BarrierClock {
 public:
  int64_t wall_ms = 0;
  int64_t WallMillis() const override { return wall_ms; }
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::time_point(std::chrono::milliseconds(wall_ms));
  }
};

// A CheckpointedInputGate over two channels fed by the test, with a fake clock.
class GateFixture {
 public:
  GateFixture() : gate_(&clock) {
    for (size_t i = 0; i < 2; ++i) {
      channels_.push_back(std::make_unique<Channel>("up[" + std::to_string(i) + "]->down[0]", 64, &producer_, &consumer_));
      gate_.AddInput(GateInput{channels_.back().get(), 0});
    }
  }
  void Records(size_t ch, std::initializer_list<std::string_view> keys) {
    auto b = std::make_unique<RecordBatch>();
    for (std::string_view k : keys) b->Add(k);
    ASSERT_TRUE(channels_[ch]->Push(StreamElement::OfBatch(std::move(b))));
  }
  void Data(size_t ch, const Barrier& b) { ASSERT_TRUE(channels_[ch]->Push(StreamElement::OfBarrier(b))); }
  void Priority(size_t ch, const PriorityEvent& e) { channels_[ch]->PushPriority(e); }

  // Polls and processes, as a task does, until nothing more; checkpoints print with their mode.
  std::vector<std::string> Drain() {
    std::vector<std::string> events;
    for (;;) {
      GateEvent ev = gate_.Poll();
      switch (ev.kind) {
        case GateEvent::Kind::kNone:
          if (!gate_.HasWork()) return events;
          continue;
        case GateEvent::Kind::kBatch: {
          std::string s = "batch:";
          for (size_t i = 0; i < ev.batch->size(); ++i) s += (i > 0 ? "," : "") + std::string(ev.batch->key(i));
          events.push_back(s);
          gate_.MarkProcessed(ev.slot, *ev.batch, 0, ev.batch->size());
          ev.channel->Recycle(std::move(ev.batch));
          break;
        }
        case GateEvent::Kind::kCheckpoint:
          events.push_back("checkpoint:" + std::to_string(ev.barrier.id) + " " + Name(ev.mode) +
                           (ev.channel_state_pending ? " +channel-state" : ""));
          break;
        case GateEvent::Kind::kChannelStateDone: {
          std::string s = "channel-state:" + std::to_string(ev.channel_state->id);
          for (const RecordBatch& b : ev.channel_state->records) {
            s += " [";
            for (size_t i = 0; i < b.size(); ++i) s += (i > 0 ? "," : "") + std::string(b.key(i));
            s += "]";
          }
          events.push_back(s);
          break;
        }
        default:
          events.push_back("other");
      }
    }
  }
  CheckpointedInputGate& gate() { return gate_; }
  FakeClock clock;

 private:
  Parker producer_;
  Parker consumer_;
  std::vector<std::unique_ptr<Channel>> channels_;
  CheckpointedInputGate gate_;
};

TEST(CheckpointedInputGateTest, AlignedCheckpointPastItsTimeoutIsTakenUnalignedAndRecordsTheLateChannel) {
  GateFixture f;
  f.clock.wall_ms = 1000;
  f.Data(0, BarrierOf(1, 1000, 100));
  f.Records(0, {"a-after"});
  f.Records(1, {"b-before"});
  EXPECT_THAT(f.Drain(), ElementsAre("batch:b-before"));
  EXPECT_EQ(f.gate().NextDeadline(), std::chrono::steady_clock::time_point(std::chrono::milliseconds(1100)));

  f.clock.wall_ms = 1100;  // the timeout passed: switch; channel 1 is recorded until its barrier
  f.Records(1, {"b-in-flight"});
  f.Data(1, BarrierOf(1, 1000, 100));
  f.Records(1, {"b-after"});
  std::vector<std::string> events = f.Drain();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "checkpoint:1 aligned->unaligned +channel-state") << "before any record after the barrier";
  EXPECT_THAT(events, ::testing::Contains("channel-state:1 [] [b-in-flight]"));
  EXPECT_THAT(events, ::testing::IsSupersetOf({"batch:a-after", "batch:b-in-flight", "batch:b-after"}));
}

TEST(CheckpointedInputGateTest, UnalignedSnapshotAtTheFirstBarrierRecordsEachChannelUpToItsBarrier) {
  GateFixture f;
  f.Records(0, {"a1", "a2"});
  f.Records(0, {"a-after"});
  f.Priority(0, Unaligned(1, 2));  // after a1, a2 on channel 0
  f.Records(1, {"b1"});
  std::vector<std::string> events = f.Drain();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "checkpoint:1 unaligned +channel-state") << "before any record it overtook";
  // Channel 1's barrier comes later, after b1 was processed: b1 is in flight all the same.
  f.Priority(1, Unaligned(1, 1));
  std::vector<std::string> rest = f.Drain();
  events.insert(events.end(), rest.begin(), rest.end());
  EXPECT_THAT(events, ::testing::Contains("channel-state:1 [a1,a2] [b1]"));
  EXPECT_THAT(events, ::testing::IsSupersetOf({"batch:a1,a2", "batch:a-after", "batch:b1"}));
}

TEST(CheckpointedInputGateTest, AtLeastOnceCheckpointIsTakenWhenEveryOpenChannelDeliveredItWithoutBlocking) {
  GateFixture f;
  Barrier b = BarrierOf(2);
  b.mode = CheckpointMode::kAtLeastOnce;
  f.Data(0, b);
  f.Records(0, {"a-after"});
  EXPECT_THAT(f.Drain(), ElementsAre("batch:a-after")) << "nothing blocked";
  f.Data(1, b);
  EXPECT_THAT(f.Drain(), ElementsAre("checkpoint:2 at_least_once"));
  EXPECT_THAT(f.Drain(), IsEmpty());
}

TEST(CheckpointedInputGateTest, NewerAnnouncementDuringAnAlignmentTakesTheOlderCheckpointUnalignedThenAlignsTheNewer) {
  GateFixture f;
  f.Data(0, BarrierOf(1));
  f.Records(0, {"a-after"});
  ASSERT_THAT(f.Drain(), IsEmpty());
  f.Priority(1, Announcement(2, 0, 0, 1000000));
  f.Data(1, BarrierOf(1));
  std::vector<std::string> events = f.Drain();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "checkpoint:1 aligned->unaligned +channel-state");
  EXPECT_THAT(events, ::testing::Contains("channel-state:1 [] []"));
}

}  // namespace
}  // namespace cairn
