// Specification of InputGate: how channel elements become task events, and the aligned barrier
// protocol (a channel that delivered barrier n is not read until barrier n arrived on every
// open channel).
#include "engine/checkpoint/checkpointed_input_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/dataflow/channel.h"
#include "engine/base/parker.h"

namespace cairn {
namespace {

// One event of the gate, in a form that compares and prints well: "batch:<keys>",
// "checkpoint:<id>", "end-of-input", "end-of-stream".
std::string Describe(const GateEvent& ev) {
  switch (ev.kind) {
    case GateEvent::Kind::kNone: return "none";
    case GateEvent::Kind::kBatch: {
      std::string s = "batch:";
      for (size_t i = 0; i < ev.batch->size(); ++i) {
        if (i > 0) s += ',';
        s += ev.batch->key(i);
      }
      return s;
    }
    case GateEvent::Kind::kCheckpoint: return "checkpoint:" + std::to_string(ev.barrier.id);
    case GateEvent::Kind::kWatermark: return "watermark";
    case GateEvent::Kind::kEndOfInput: return "end-of-input";
    case GateEvent::Kind::kEndOfStream: return "end-of-stream";
    case GateEvent::Kind::kChannelStateDone: return "channel-state:" + std::to_string(ev.channel_state->id);
  }
  return "?";
}

// A gate over `n` channels that the test feeds directly, as upstream subtasks would.
class GateFixture {
 public:
  explicit GateFixture(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      channels_.push_back(std::make_unique<Channel>("up[" + std::to_string(i) + "]->down[0]", 64, &producer_, &consumer_));
      gate_.AddInput(GateInput{channels_.back().get(), static_cast<int>(i)});
    }
  }

  void Records(size_t ch, std::initializer_list<std::string_view> keys) {
    auto b = std::make_unique<RecordBatch>();
    for (std::string_view k : keys) b->Add(k);
    ASSERT_TRUE(channels_[ch]->Push(StreamElement::OfBatch(std::move(b))));
  }
  void BarrierOn(size_t ch, CheckpointId id) {
    Barrier b;
    b.id = id;
    ASSERT_TRUE(channels_[ch]->Push(StreamElement::OfBarrier(b)));
  }
  void EndOfInputOn(size_t ch) { ASSERT_TRUE(channels_[ch]->Push(StreamElement::EndOfInput())); }
  void EndOfStreamOn(size_t ch) { ASSERT_TRUE(channels_[ch]->Push(StreamElement::EndOfStream())); }

  // Polls as a task does until the gate has nothing more to report (Poll reports nothing and
  // no readable channel has data), returning every event in order.
  std::vector<std::string> Drain() {
    std::vector<std::string> events;
    for (;;) {
      GateEvent ev = gate_.Poll();
      if (ev.kind == GateEvent::Kind::kNone) {
        if (!gate_.HasWork()) return events;
        continue;
      }
      events.push_back(Describe(ev));
      if (ev.kind == GateEvent::Kind::kBatch) {
        gate_.MarkProcessed(ev.slot, *ev.batch, 0, ev.batch->size());
        ev.channel->Recycle(std::move(ev.batch));
      }
    }
  }

  CheckpointedInputGate& gate() { return gate_; }
  Channel& channel(size_t i) { return *channels_[i]; }

 private:
  Parker producer_;
  Parker consumer_;
  std::vector<std::unique_ptr<Channel>> channels_;
  CheckpointedInputGate gate_;
};

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

TEST(InputGateTest, DeliversRecordsOfEveryChannel) {
  GateFixture f(3);
  f.Records(0, {"a1"});
  f.Records(1, {"b1"});
  f.Records(2, {"c1", "c2"});
  f.Records(0, {"a2"});
  EXPECT_THAT(f.Drain(), UnorderedElementsAre("batch:a1", "batch:a2", "batch:b1", "batch:c1,c2"));
}

TEST(InputGateTest, KeepsTheOrderOfOneChannel) {
  GateFixture f(2);
  f.Records(0, {"a1"});
  f.Records(0, {"a2"});
  f.Records(0, {"a3"});
  EXPECT_THAT(f.Drain(), ElementsAre("batch:a1", "batch:a2", "batch:a3"));
}

TEST(InputGateTest, BatchEventNamesTheInputIndexAndChannelItCameFrom) {
  GateFixture f(2);
  f.Records(1, {"b1"});
  GateEvent ev = f.gate().Poll();
  ASSERT_EQ(ev.kind, GateEvent::Kind::kBatch);
  EXPECT_EQ(ev.input_index, 1);
  EXPECT_EQ(ev.channel, &f.channel(1));
}

TEST(InputGateTest, DeliversRecordsThatPrecedeTheBarrier) {
  GateFixture f(2);
  f.Records(0, {"a1"});
  f.Records(0, {"a2"});
  f.BarrierOn(0, 1);
  f.Records(1, {"b1"});
  EXPECT_THAT(f.Drain(), UnorderedElementsAre("batch:a1", "batch:a2", "batch:b1"));
}

TEST(InputGateTest, HoldsBackRecordsBehindABarrierUntilEveryChannelSentIt) {
  GateFixture f(2);
  f.BarrierOn(0, 1);
  f.Records(0, {"a-after"});
  f.Records(1, {"b-before"});
  EXPECT_THAT(f.Drain(), ElementsAre("batch:b-before"));
  EXPECT_FALSE(f.gate().HasWork()) << "the blocked channel counts as not readable";
  EXPECT_TRUE(f.channel(0).HasData());
}

TEST(InputGateTest, ReportsTheCheckpointBeforeAnyRecordThatFollowsItsBarriers) {
  GateFixture f(2);
  f.BarrierOn(0, 7);
  f.Records(0, {"a-after"});
  f.Records(1, {"b-before"});
  ASSERT_THAT(f.Drain(), ElementsAre("batch:b-before"));

  f.BarrierOn(1, 7);
  f.Records(1, {"b-after"});
  std::vector<std::string> events = f.Drain();
  ASSERT_THAT(events, UnorderedElementsAre("checkpoint:7", "batch:a-after", "batch:b-after"));
  EXPECT_EQ(events.front(), "checkpoint:7");
}

TEST(InputGateTest, AlignsAcrossThreeChannels) {
  GateFixture f(3);
  f.BarrierOn(0, 2);
  f.Records(0, {"a-after"});
  f.BarrierOn(1, 2);
  f.Records(1, {"b-after"});
  f.Records(2, {"c-before"});
  EXPECT_THAT(f.Drain(), ElementsAre("batch:c-before"));

  f.BarrierOn(2, 2);
  std::vector<std::string> events = f.Drain();
  ASSERT_THAT(events, UnorderedElementsAre("checkpoint:2", "batch:a-after", "batch:b-after"));
  EXPECT_EQ(events.front(), "checkpoint:2");
}

TEST(InputGateTest, PollThatConsumesAnUnalignedBarrierGoesOnToReadTheOtherChannels) {
  // Poll reports nothing only when no readable channel has data: a barrier or end marker that
  // yields no event does not end the scan of the other channels.
  GateFixture f(2);
  f.BarrierOn(0, 1);
  f.Records(1, {"b1"});
  GateEvent ev = f.gate().Poll();
  ASSERT_EQ(ev.kind, GateEvent::Kind::kBatch);
  EXPECT_EQ(Describe(ev), "batch:b1");
  EXPECT_EQ(f.gate().Poll().kind, GateEvent::Kind::kNone);
}

TEST(InputGateTest, PollThatConsumesAnEndOfInputGoesOnToReadTheOtherChannels) {
  GateFixture f(2);
  f.EndOfInputOn(0);
  f.Records(1, {"b1"});
  GateEvent ev = f.gate().Poll();
  ASSERT_EQ(ev.kind, GateEvent::Kind::kBatch);
  EXPECT_EQ(Describe(ev), "batch:b1");
}

TEST(InputGateTest, CheckpointEventCarriesTheBarrier) {
  GateFixture f(1);
  Barrier b;
  b.id = 12;
  b.trigger_time_ms = 1234567;
  b.mode = CheckpointMode::kAligned;
  ASSERT_TRUE(f.channel(0).Push(StreamElement::OfBarrier(b)));
  GateEvent ev = f.gate().Poll();
  ASSERT_EQ(ev.kind, GateEvent::Kind::kCheckpoint);
  EXPECT_EQ(ev.barrier.id, 12u);
  EXPECT_EQ(ev.barrier.trigger_time_ms, 1234567);
  EXPECT_EQ(ev.barrier.mode, CheckpointMode::kAligned);
  EXPECT_GE(ev.alignment_ms, 0);
}

TEST(InputGateTest, SingleChannelBarrierIsAnImmediateCheckpoint) {
  GateFixture f(1);
  f.Records(0, {"before"});
  f.BarrierOn(0, 3);
  f.Records(0, {"after"});
  EXPECT_THAT(f.Drain(), ElementsAre("batch:before", "checkpoint:3", "batch:after"));
}

TEST(InputGateTest, ConsecutiveCheckpointsAlignOneAfterTheOther) {
  GateFixture f(2);
  f.BarrierOn(0, 1);
  f.Records(0, {"a2"});
  f.BarrierOn(0, 2);
  f.Records(0, {"a3"});
  f.BarrierOn(1, 1);
  f.Records(1, {"b2"});
  f.BarrierOn(1, 2);
  f.Records(1, {"b3"});
  std::vector<std::string> events = f.Drain();
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0], "checkpoint:1");
  EXPECT_THAT(std::vector<std::string>(events.begin() + 1, events.begin() + 3),
              UnorderedElementsAre("batch:a2", "batch:b2"));
  EXPECT_EQ(events[3], "checkpoint:2");
  EXPECT_THAT(std::vector<std::string>(events.begin() + 4, events.end()), UnorderedElementsAre("batch:a3", "batch:b3"));
}

TEST(InputGateTest, ReportsEndOfInputOnceAfterAllChannelsSentIt) {
  GateFixture f(3);
  f.Records(0, {"a1"});
  f.EndOfInputOn(0);
  f.EndOfInputOn(1);
  EXPECT_THAT(f.Drain(), ElementsAre("batch:a1"));

  f.EndOfInputOn(2);
  EXPECT_THAT(f.Drain(), ElementsAre("end-of-input"));
  EXPECT_THAT(f.Drain(), IsEmpty());
}

TEST(InputGateTest, CheckpointsStillAlignAfterEndOfInput) {
  GateFixture f(2);
  f.EndOfInputOn(0);
  f.EndOfInputOn(1);
  ASSERT_THAT(f.Drain(), ElementsAre("end-of-input"));
  f.BarrierOn(0, 4);
  EXPECT_THAT(f.Drain(), IsEmpty());
  f.BarrierOn(1, 4);
  EXPECT_THAT(f.Drain(), ElementsAre("checkpoint:4"));
}

TEST(InputGateTest, ReportsEndOfStreamOnceAfterAllChannelsSentIt) {
  GateFixture f(2);
  f.EndOfStreamOn(0);
  EXPECT_THAT(f.Drain(), IsEmpty());
  f.EndOfStreamOn(1);
  EXPECT_THAT(f.Drain(), ElementsAre("end-of-stream"));
  EXPECT_THAT(f.Drain(), IsEmpty());
}

TEST(InputGateTest, ReadsNothingFromAChannelAfterItsEndOfStream) {
  GateFixture f(2);
  f.EndOfStreamOn(0);
  ASSERT_THAT(f.Drain(), IsEmpty());
  // A broken producer that pushes past its end of stream: the gate no longer reads the channel.
  f.Records(0, {"stray"});
  f.Records(1, {"b1"});
  EXPECT_THAT(f.Drain(), ElementsAre("batch:b1"));
  EXPECT_TRUE(f.channel(0).HasData());
}

TEST(InputGateTest, EndOfStreamOnTheLastAwaitedChannelCompletesTheAlignment) {
  GateFixture f(2);
  f.BarrierOn(0, 5);
  f.Records(0, {"a-after"});
  ASSERT_THAT(f.Drain(), IsEmpty());

  f.EndOfStreamOn(1);
  std::vector<std::string> events = f.Drain();
  EXPECT_THAT(events, ElementsAre("checkpoint:5", "batch:a-after"));
}

TEST(InputGateTest, EndOfStreamOnOneOfSeveralAwaitedChannelsStillWaitsForTheOthers) {
  GateFixture f(3);
  f.BarrierOn(0, 5);
  f.Records(0, {"a-after"});
  f.EndOfStreamOn(1);
  EXPECT_THAT(f.Drain(), IsEmpty());

  f.BarrierOn(2, 5);
  EXPECT_THAT(f.Drain(), ElementsAre("checkpoint:5", "batch:a-after"));
}

TEST(InputGateTest, BarrierAfterAnotherChannelEndedAlignsOverTheOpenChannelsOnly) {
  GateFixture f(2);
  f.EndOfStreamOn(1);
  ASSERT_THAT(f.Drain(), IsEmpty());
  f.BarrierOn(0, 6);
  EXPECT_THAT(f.Drain(), ElementsAre("checkpoint:6"));
}

// A gate whose input 0 is a regular channel and input 1 a feedback channel (a cycle) with a
// backlog limit of `limit` records, as the runner sets it from checkpoint.max_feedback_backlog.
class FeedbackGate : public BacklogListener {
 public:
  explicit FeedbackGate(uint64_t limit)
      : regular_("src[0]->op[0]", 64, &producer_, &consumer_),
        feedback_("op[0]->op[0]", 64, &producer_, &consumer_, /*unbounded=*/true, limit, this) {
    gate_.AddInput(GateInput{&regular_, 0, false});
    gate_.AddInput(GateInput{&feedback_, 1, true});
  }
  void BacklogExceeded(const Status& s) override { reports.push_back(s); }

  void Push(Channel& ch, StreamElement e) { ASSERT_TRUE(ch.Push(std::move(e))); }
  void Records(Channel& ch, size_t n) {
    auto b = std::make_unique<RecordBatch>();
    for (size_t i = 0; i < n; ++i) b->Add("r" + std::to_string(i));
    Push(ch, StreamElement::OfBatch(std::move(b)));
  }
  static StreamElement BarrierOf(CheckpointId id) {
    Barrier b;
    b.id = id;
    return StreamElement::OfBarrier(b);
  }
  // Polls and processes every batch, as a task does, until the gate has nothing more.
  std::vector<std::string> Drain() {
    std::vector<std::string> events;
    for (;;) {
      GateEvent ev = gate_.Poll();
      if (ev.kind == GateEvent::Kind::kNone) {
        if (!gate_.HasWork()) return events;
        continue;
      }
      events.push_back(Describe(ev));
      if (ev.kind == GateEvent::Kind::kBatch) gate_.MarkProcessed(ev.slot, *ev.batch, 0, ev.batch->size());
    }
  }

  Channel& regular() { return regular_; }
  Channel& feedback() { return feedback_; }
  std::vector<Status> reports;

 private:
  Parker producer_;
  Parker consumer_;
  Channel regular_;
  Channel feedback_;
  CheckpointedInputGate gate_;
};

TEST(InputGateTest, FeedbackRecordingWithinTheBacklogLimitCompletesTheChannelState) {
  FeedbackGate f(4);
  f.Push(f.regular(), FeedbackGate::BarrierOf(1));
  ASSERT_THAT(f.Drain(), ElementsAre("checkpoint:1"));  // the feedback channel is not waited for
  f.Records(f.feedback(), 2);
  f.Records(f.feedback(), 2);  // 4 records recorded: at the limit
  f.Push(f.feedback(), FeedbackGate::BarrierOf(1));
  EXPECT_THAT(f.Drain(), ElementsAre("batch:r0,r1", "batch:r0,r1", "channel-state:1"));
  EXPECT_TRUE(f.reports.empty());
}

TEST(InputGateTest, FeedbackRecordingPastTheBacklogLimitIsReportedOnceNamingTheEdgeAndTheKey) {
  FeedbackGate f(4);
  f.Push(f.regular(), FeedbackGate::BarrierOf(1));
  ASSERT_THAT(f.Drain(), ElementsAre("checkpoint:1"));
  // The consumer keeps up, so the channel's queue stays small, but every record processed
  // before the barrier comes around is recorded: 3 batches of 2 pass 4.
  for (int i = 0; i < 3; ++i) {
    f.Records(f.feedback(), 2);
    f.Drain();
  }
  ASSERT_EQ(f.reports.size(), 1u);
  const std::string msg = f.reports[0].message();
  EXPECT_THAT(msg, ::testing::HasSubstr("feedback edge op[0]->op[0]"));
  EXPECT_THAT(msg, ::testing::HasSubstr("for checkpoint 1 exceed checkpoint.max_feedback_backlog = 4 records"));
  f.Records(f.feedback(), 2);
  f.Drain();
  EXPECT_EQ(f.reports.size(), 1u) << "reported once";
}

// ---- InputGate alone: reading, and the narrow interface the barrier handler uses ----------

// Reads one scan of `gate`, naming each element read: "batch@<slot>", "barrier:<id>@<slot>",
// "end-of-input", "channel-end-of-input@<slot>", "end-of-stream@<slot>". A batch is handed on.
std::vector<std::string> ReadScan(InputGate& gate) {
  std::vector<std::string> out;
  InputGate::Scan scan = gate.BeginScan();
  size_t slot = 0;
  Barrier b;
  for (;;) {
    InputGate::Read r = gate.ReadNext(&scan, &slot, &b);
    const std::string at = "@" + std::to_string(slot);
    switch (r) {
      case InputGate::Read::kDone: return out;
      case InputGate::Read::kBatch: {
        std::unique_ptr<RecordBatch> batch = gate.TakeStash();
        gate.MarkProcessed(slot, *batch, 0, batch->size());
        out.push_back("batch" + at);
        break;
      }
      case InputGate::Read::kBarrier: out.push_back("barrier:" + std::to_string(b.id) + at); break;
      case InputGate::Read::kWatermark: break;  // these channels carry no watermarks
      case InputGate::Read::kEndOfInput: out.push_back("end-of-input"); break;
      case InputGate::Read::kChannelEndOfInput: out.push_back("channel-end-of-input" + at); break;
      case InputGate::Read::kChannelEndOfStream: out.push_back("end-of-stream" + at); break;
    }
  }
}

TEST(InputGateReadingTest, ABlockedChannelIsNotReadUntilUnblocked) {
  Parker producer, consumer;
  Channel a("up[0]->down[0]", 64, &producer, &consumer), b("up[1]->down[0]", 64, &producer, &consumer);
  InputGate gate;
  gate.AddInput(GateInput{&a, 0});
  gate.AddInput(GateInput{&b, 0});
  ASSERT_TRUE(a.Push(StreamElement::OfBarrier(Barrier{})));
  ASSERT_TRUE(b.Push(StreamElement::EndOfInput()));
  gate.Block(0);
  EXPECT_THAT(ReadScan(gate), ElementsAre("channel-end-of-input@1"));
  gate.UnblockAll();
  EXPECT_THAT(ReadScan(gate), ElementsAre("barrier:0@0"));
}

TEST(InputGateReadingTest, ReadAheadVisitsWhatIsNotProcessedThenReadsTheQueueUpToThePosition) {
  Parker producer, consumer;
  Channel a("up[0]->down[0]", 64, &producer, &consumer);
  InputGate gate;
  gate.AddInput(GateInput{&a, 0});
  for (const char* k : {"r0", "r1", "r2"}) {
    auto batch = std::make_unique<RecordBatch>();
    batch->Add(k);
    ASSERT_TRUE(a.Push(StreamElement::OfBatch(std::move(batch))));
  }
  std::vector<std::string> seen;
  auto visit = [&](const RecordBatch& b, uint64_t pos, size_t first, size_t rows) {
    seen.push_back(std::string(b.key(first)) + "@" + std::to_string(pos));
  };
  gate.ReadAhead(0, 2, visit);
  EXPECT_THAT(seen, ElementsAre("r0@0", "r1@1"));
  EXPECT_EQ(gate.received(0), 2u);
  EXPECT_EQ(gate.consumed(0), 0u);
  seen.clear();
  gate.ReadAhead(0, 2, visit);  // what was read ahead is visited again, nothing more is read
  EXPECT_THAT(seen, ElementsAre("r0@0", "r1@1"));
  EXPECT_THAT(ReadScan(gate), ElementsAre("batch@0"));
  EXPECT_EQ(gate.consumed(0), 1u);
}

TEST(InputGateReadingTest, PriorityPositionsCountTheRestoredRecordsFirst) {
  Parker producer, consumer;
  Channel a("up[0]->down[0]", 64, &producer, &consumer);
  InputGate gate;
  gate.AddInput(GateInput{&a, 0});
  RecordBatch restored;
  restored.Add("x");
  restored.Add("y");
  gate.AddRestored(0, std::move(restored));
  PriorityEvent e;
  e.position = 5;
  a.PushPriority(e);
  PriorityEvent got;
  ASSERT_TRUE(gate.PopPriority(0, &got));
  EXPECT_EQ(got.position, 7u);
}

TEST(InputGateReadingTest, FeedbackChannelsAreNotOpenAndDoNotEndTheInput) {
  Parker producer, consumer;
  Channel a("up[0]->down[0]", 64, &producer, &consumer), f("down[0]->down[0]", 64, &producer, &consumer, true);
  InputGate gate;
  gate.AddInput(GateInput{&a, 0});
  gate.AddInput(GateInput{&f, 1, true});
  EXPECT_EQ(gate.OpenChannels(), 1u);
  ASSERT_TRUE(f.Push(StreamElement::EndOfInput()));
  ASSERT_TRUE(f.Push(StreamElement::EndOfStream()));
  ASSERT_TRUE(a.Push(StreamElement::EndOfInput()));
  ASSERT_TRUE(a.Push(StreamElement::EndOfStream()));
  std::vector<std::string> read = ReadScan(gate);
  std::vector<std::string> more = ReadScan(gate);
  read.insert(read.end(), more.begin(), more.end());
  EXPECT_THAT(read, UnorderedElementsAre("channel-end-of-input@1", "end-of-stream@1", "end-of-input", "end-of-stream@0"));
  EXPECT_EQ(gate.OpenChannels(), 0u);
  EXPECT_TRUE(gate.TakeEndOfStream());
  EXPECT_FALSE(gate.TakeEndOfStream()) << "once";
}

}  // namespace
}  // namespace cairn
