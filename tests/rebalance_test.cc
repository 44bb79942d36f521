// Specification of load-balanced edges (engine/dataflow/rebalance_queue.h): Lai and Yang's
// colouring and Mattern's counters, as a consumer subtask's input gate sees them. The tests push
// into the shared queue directly, as producer subtasks would, and read one or two consumers'
// gates; they say which batch a consumer snapshots before, which batches it records as channel
// state, when its record is complete, and what it counts.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/base/parker.h"
#include "engine/checkpoint/checkpointed_input_gate.h"
#include "engine/dataflow/rebalance_queue.h"

namespace cairn {
namespace {

std::string Keys(const RecordBatch& b) {
  std::string s;
  for (size_t i = 0; i < b.size(); ++i) s += (i > 0 ? "," : "") + std::string(b.key(i));
  return s;
}

// "batch:<keys>", "checkpoint:<id>", "channel-state:<id>:<keys>", "end-of-input", "end-of-stream", "none".
std::string Describe(const GateEvent& ev) {
  switch (ev.kind) {
    case GateEvent::Kind::kNone: return "none";
    case GateEvent::Kind::kBatch: return "batch:" + Keys(*ev.batch);
    case GateEvent::Kind::kCheckpoint: return "checkpoint:" + std::to_string(ev.barrier.id);
    case GateEvent::Kind::kWatermark: return "watermark";
    case GateEvent::Kind::kEndOfInput: return "end-of-input";
    case GateEvent::Kind::kEndOfStream: return "end-of-stream";
    case GateEvent::Kind::kChannelStateDone: return "channel-state:" + std::to_string(ev.channel_state->id) + ":" +
                                                    Keys(ev.channel_state->records[0]);
  }
  return "?";
}

// One producer subtask of the edge, as an output gate drives it.
class Producer {
 public:
  Producer(RebalanceQueue* q, uint32_t index) : q_(q), index_(index), token_(q->MakeProducerToken()) {}
  void Push(std::initializer_list<std::string_view> keys) {
    auto b = std::make_unique<RecordBatch>();
    for (std::string_view k : keys) b->Add(k);
    ASSERT_TRUE(q_->Push(token_.get(), RebalanceItem{std::move(b), colour_}, &parker_, nullptr));
    ++sent_;
  }
  void Snapshot(CheckpointId id, CheckpointMode mode = CheckpointMode::kAligned) {
    Barrier b;
    b.id = id;
    b.mode = mode;
    reported_ = q_->ProducerSnapshotted(index_, b, sent_);
    colour_ = id;
  }
  void EndInput() { q_->ProducerEndedInput(colour_); }
  void EndStream() { q_->ProducerEndedStream(); }
  uint64_t reported() const { return reported_; }

 private:
  RebalanceQueue* q_;
  uint32_t index_;
  std::unique_ptr<moodycamel::ProducerToken> token_;
  Parker parker_;
  CheckpointId colour_ = 0;
  uint64_t sent_ = 0;
  uint64_t reported_ = 0;
};

// One consumer subtask: its gate, with the edge as its only input.
class Consumer {
 public:
  explicit Consumer(RebalanceQueue* q) : stand_in_("up[*]->down[0]", 1, &parker_, &parker_) {
    q->AddConsumer(&parker_);
    gate_.AddInput(GateInput{&stand_in_, 0, false, q});
  }
  // The next event; a batch is processed at once (as the task does).
  std::string Next() {
    GateEvent ev = gate_.Poll();
    if (ev.kind == GateEvent::Kind::kBatch) gate_.MarkProcessed(ev.slot, *ev.batch, 0, ev.batch->size());
    if (ev.kind == GateEvent::Kind::kChannelStateDone) counts_ = ev.channel_state->rebalance_counts;
    if (ev.kind == GateEvent::Kind::kCheckpoint) pending_ = ev.channel_state_pending;
    return Describe(ev);
  }
  bool HasWork() const { return gate_.HasWork(); }
  // What a task blocked on its output looks at (no batch is processed).
  std::string Priority() {
    GateEvent ev = gate_.PollPriority();
    if (ev.kind == GateEvent::Kind::kChannelStateDone) counts_ = ev.channel_state->rebalance_counts;
    return Describe(ev);
  }
  // The next event, a batch kept in progress until FinishTaken.
  std::string Take() {
    taken_ = gate_.Poll();
    return Describe(taken_);
  }
  void FinishTaken() { gate_.MarkProcessed(taken_.slot, *taken_.batch, 0, taken_.batch->size()); }
  const std::vector<RebalanceCount>& counts() const { return counts_; }
  bool channel_state_pending() const { return pending_; }

 private:
  Parker parker_;
  Channel stand_in_;
  CheckpointedInputGate gate_;
  std::vector<RebalanceCount> counts_;
  bool pending_ = false;
  GateEvent taken_;
};

TEST(RebalanceColours, ABatchOfANewerColourBringsItsCheckpointFirst) {
  RebalanceQueue q("up[*]->down[*]", 16, 1);
  Producer p(&q, 0);
  Consumer c(&q);
  p.Push({"a"});
  p.Snapshot(1);
  p.Push({"b"});
  EXPECT_EQ(c.Next(), "batch:a");          // white, before the snapshot: in the state
  EXPECT_EQ(c.Next(), "checkpoint:1");     // the red batch brings checkpoint 1 first
  EXPECT_TRUE(c.channel_state_pending());  // its record closes by the counts
  EXPECT_EQ(c.Next(), "channel-state:1:"); // every white batch was processed: nothing in flight
  EXPECT_EQ(c.Next(), "batch:b");
  ASSERT_EQ(c.counts().size(), 1u);
  EXPECT_EQ(c.counts()[0].edge, "up[*]->down[*]");
  EXPECT_EQ(c.counts()[0].received_before, 1u);
  EXPECT_EQ(c.counts()[0].received_after, 0u);
  EXPECT_EQ(p.reported(), 1u);
}

TEST(RebalanceColours, AnOlderColourAfterTheSnapshotIsRecordedUntilTheCountsMatch) {
  // Producer 0 snapshots and sends a red batch; producer 1 still sends white ones.
  RebalanceQueue q("up[*]->down[*]", 16, 2);
  Producer p0(&q, 0), p1(&q, 1);
  Consumer c(&q);
  p0.Snapshot(1);
  p0.Push({"red"});
  EXPECT_EQ(c.Next(), "checkpoint:1");
  EXPECT_EQ(c.Next(), "batch:red");
  p1.Push({"w1"});
  EXPECT_EQ(c.Next(), "batch:w1");  // sent before producer 1's snapshot, received after ours
  p1.Push({"w2"});
  EXPECT_EQ(c.Next(), "batch:w2");
  // Producer 1 has not snapshotted: more white batches may come; the record stays open.
  EXPECT_EQ(c.Next(), "none");
  EXPECT_FALSE(c.HasWork());
  p1.Snapshot(1);  // it sent 2 before: both were received, the record is complete
  EXPECT_TRUE(c.HasWork());
  EXPECT_EQ(c.Next(), "channel-state:1:w1,w2");
  ASSERT_EQ(c.counts().size(), 1u);
  EXPECT_EQ(c.counts()[0].received_before, 0u);
  EXPECT_EQ(c.counts()[0].received_after, 2u);
  EXPECT_EQ(p0.reported() + p1.reported(), 2u);  // Mattern: sent == received over the edge
}

TEST(RebalanceColours, ARecordWaitsForTheWhiteBatchAnotherConsumerIsStillProcessing) {
  RebalanceQueue q("up[*]->down[*]", 16, 1);
  Producer p(&q, 0);
  Consumer c1(&q), c2(&q);
  p.Push({"w"});
  EXPECT_EQ(c1.Take(), "batch:w");  // taken, not processed yet
  p.Snapshot(1);
  EXPECT_EQ(c2.Next(), "checkpoint:1");  // idle: every producer snapshotted
  EXPECT_EQ(c2.Next(), "none");          // w is not counted yet: the record stays open
  c1.FinishTaken();
  EXPECT_EQ(c2.Next(), "channel-state:1:");
  EXPECT_EQ(c1.Next(), "checkpoint:1");  // w was processed before c1's snapshot: in its state
  EXPECT_EQ(c1.Next(), "channel-state:1:");
  EXPECT_EQ(c1.counts()[0].received_before, 1u);
}

TEST(RebalanceColours, AnIdleConsumerSnapshotsOnceEveryProducerDid) {
  RebalanceQueue q("up[*]->down[*]", 16, 2);
  Producer p0(&q, 0), p1(&q, 1);
  Consumer c1(&q), c2(&q);
  p0.Snapshot(1);
  EXPECT_EQ(c1.Next(), "none");  // producer 1 may still send white batches to anyone
  EXPECT_FALSE(c1.HasWork());
  p1.Snapshot(1);
  EXPECT_TRUE(c1.HasWork());
  EXPECT_TRUE(c2.HasWork());
  EXPECT_EQ(c1.Next(), "checkpoint:1");
  EXPECT_EQ(c2.Next(), "checkpoint:1");
  EXPECT_EQ(c1.Next(), "channel-state:1:");
  EXPECT_EQ(c2.Next(), "channel-state:1:");
}

TEST(RebalanceColours, ConsumersRecordWhatTheyReceivedAfterTheirOwnSnapshot) {
  // Two consumers: one snapshots on a red batch, the other still processes white ones before
  // its snapshot (in its state) and after it (recorded); each counts its own.
  RebalanceQueue q("up[*]->down[*]", 16, 2);
  Producer p0(&q, 0), p1(&q, 1);
  Consumer c1(&q), c2(&q);
  p1.Push({"w1"});
  EXPECT_EQ(c2.Next(), "batch:w1");  // before any snapshot
  p0.Snapshot(1);
  p0.Push({"red"});
  EXPECT_EQ(c1.Next(), "checkpoint:1");
  EXPECT_EQ(c1.Next(), "batch:red");
  p1.Push({"w2"});
  EXPECT_EQ(c1.Next(), "batch:w2");  // recorded by c1
  p1.Snapshot(1);
  EXPECT_EQ(c2.Next(), "checkpoint:1");  // idle now, nudged
  EXPECT_EQ(c1.Next(), "channel-state:1:w2");
  EXPECT_EQ(c2.Next(), "channel-state:1:");
  uint64_t received = 0;
  for (const Consumer* c : {&c1, &c2})
    for (const RebalanceCount& k : c->counts()) received += k.received_before + k.received_after;
  EXPECT_EQ(received, p0.reported() + p1.reported());
  EXPECT_EQ(received, 2u);
}

TEST(RebalanceColours, AnUnalignedCheckpointIsTakenAtOnceAndReadsTheQueueAhead) {
  // As a task blocked on its output would: the barrier of an unaligned checkpoint is taken as
  // soon as a producer took it (before the batches the consumer holds), and the white batches on
  // the queue are recorded (and counted) when read ahead; the record completes, and they are
  // processed later, once.
  const CheckpointMode kU = CheckpointMode::kUnaligned;
  RebalanceQueue q("up[*]->down[*]", 16, 2);
  Producer p0(&q, 0), p1(&q, 1);
  Consumer c(&q);
  p1.Push({"w1"});
  p0.Snapshot(1, kU);
  p0.Push({"red"});
  EXPECT_EQ(c.Priority(), "checkpoint:1");  // nothing processed yet
  p1.Push({"w2"});
  p1.Snapshot(1, kU);
  EXPECT_EQ(c.Priority(), "channel-state:1:w1,w2");
  ASSERT_EQ(c.counts().size(), 1u);
  EXPECT_EQ(c.counts()[0].received_before, 0u);
  EXPECT_EQ(c.counts()[0].received_after, 2u);
  // The consumer processes all three, in the order the queue gave them (it is not FIFO across
  // producers), each once.
  std::multiset<std::string> batches;
  for (int i = 0; i < 3; ++i) batches.insert(c.Next());
  EXPECT_EQ(batches, (std::multiset<std::string>{"batch:red", "batch:w1", "batch:w2"}));
  EXPECT_EQ(c.Next(), "none");
}

TEST(RebalanceColours, AnAlignedRecordWaitsForTheBatchesToBeProcessed) {
  RebalanceQueue q("up[*]->down[*]", 16, 2);
  Producer p0(&q, 0), p1(&q, 1);
  Consumer c(&q);
  p0.Snapshot(1);
  p0.Push({"red"});
  EXPECT_EQ(c.Next(), "checkpoint:1");
  p1.Push({"w"});
  p1.Snapshot(1);
  EXPECT_EQ(c.Priority(), "none");  // nothing read ahead
  EXPECT_EQ(c.Next(), "batch:red");
  EXPECT_EQ(c.Next(), "batch:w");
  EXPECT_EQ(c.Next(), "channel-state:1:w");
}

TEST(RebalanceColours, BatchesReadAheadForOneRecordAreInTheNextOneTooUntilProcessed) {
  const CheckpointMode kU = CheckpointMode::kUnaligned;
  RebalanceQueue q("up[*]->down[*]", 16, 2);
  Producer p0(&q, 0), p1(&q, 1);
  Consumer c(&q);
  p0.Snapshot(1, kU);
  EXPECT_EQ(c.Priority(), "checkpoint:1");
  p1.Push({"w"});                       // white for 1 and 2
  EXPECT_EQ(c.Priority(), "none");      // w read ahead into record 1; producer 1 has not snapshotted
  p0.Snapshot(2, kU);
  EXPECT_EQ(c.Priority(), "checkpoint:2");  // w, read ahead but not processed: in flight for 2 too
  p1.Snapshot(1, kU);
  EXPECT_EQ(c.Priority(), "channel-state:1:w");
  p1.Snapshot(2, kU);
  EXPECT_EQ(c.Priority(), "channel-state:2:w");
  ASSERT_EQ(c.counts().size(), 1u);
  EXPECT_EQ(c.counts()[0].received_before, 0u);
  EXPECT_EQ(c.counts()[0].received_after, 1u);
  EXPECT_EQ(c.Next(), "batch:w");
  EXPECT_EQ(c.Next(), "none");
}

TEST(RebalanceColours, AnAlignedCheckpointWaitsForTheBarrierOnTheOtherFifoInputs) {
  // A consumer of a load-balanced edge and of a FIFO channel: the edge's barrier (its first red
  // batch) blocks the edge until the channel's barrier came; the red batch waits meanwhile.
  RebalanceQueue q("up[*]->down[*]", 16, 1);
  Producer p(&q, 0);
  Parker parker, producer_parker;
  Channel stand_in("up[*]->down[0]", 1, &parker, &parker);
  Channel fifo("other[0]->down[0]", 16, &producer_parker, &parker);
  q.AddConsumer(&parker);
  CheckpointedInputGate gate;
  gate.AddInput(GateInput{&stand_in, 0, false, &q});
  gate.AddInput(GateInput{&fifo, 1});
  auto next = [&] {
    GateEvent ev = gate.Poll();
    if (ev.kind == GateEvent::Kind::kBatch) gate.MarkProcessed(ev.slot, *ev.batch, 0, ev.batch->size());
    return Describe(ev);
  };
  auto fifo_batch = [&](std::string_view key) {
    auto b = std::make_unique<RecordBatch>();
    b->Add(key);
    ASSERT_TRUE(fifo.Push(StreamElement::OfBatch(std::move(b))));
  };
  p.Snapshot(1);
  p.Push({"red"});
  fifo_batch("f1");
  std::multiset<std::string> before;
  for (int i = 0; i < 2; ++i) before.insert(next());  // the edge's barrier blocks it (red waits); f1 is read
  EXPECT_EQ(before.count("batch:f1"), 1u);
  EXPECT_EQ(before.count("batch:red"), 0u);
  fifo_batch("f2");
  EXPECT_EQ(next(), "batch:f2");  // the channel is read on; the edge is blocked
  Barrier b;
  b.id = 1;
  ASSERT_TRUE(fifo.Push(StreamElement::OfBarrier(b)));
  EXPECT_EQ(next(), "checkpoint:1");
  EXPECT_EQ(next(), "channel-state:1:");
  EXPECT_EQ(next(), "batch:red");  // after the snapshot
}

TEST(RebalanceColours, SeveralCheckpointsAreTakenInOrderFromOneBatch) {
  RebalanceQueue q("up[*]->down[*]", 16, 1);
  Producer p(&q, 0);
  Consumer c(&q);
  p.Snapshot(1);
  p.Snapshot(2);
  p.Push({"x"});
  EXPECT_EQ(c.Next(), "checkpoint:1");
  EXPECT_EQ(c.Next(), "channel-state:1:");
  EXPECT_EQ(c.Next(), "checkpoint:2");
  EXPECT_EQ(c.Next(), "channel-state:2:");
  EXPECT_EQ(c.Next(), "batch:x");
}

TEST(RebalanceColours, EndOfInputFollowsTheCheckpointsTakenBeforeItAndPrecedesLaterOnes) {
  RebalanceQueue q("up[*]->down[*]", 16, 2);
  Producer p0(&q, 0), p1(&q, 1);
  Consumer c(&q);
  p0.Push({"a"});
  p0.Snapshot(1);  // before its end of input
  p0.EndInput();
  p1.EndInput();   // producer 1 has not taken checkpoint 1 yet
  EXPECT_EQ(c.Next(), "batch:a");
  EXPECT_EQ(c.Next(), "none");  // checkpoint 1 must come before the end of input: wait for it
  p1.Snapshot(1);
  EXPECT_EQ(c.Next(), "checkpoint:1");
  EXPECT_EQ(c.Next(), "channel-state:1:");
  EXPECT_EQ(c.Next(), "end-of-input");
  p0.Snapshot(2);  // after the end of input: the final checkpoint
  p1.Snapshot(2);
  EXPECT_EQ(c.Next(), "checkpoint:2");
  EXPECT_EQ(c.Next(), "channel-state:2:");
  EXPECT_EQ(c.Next(), "none");
  p0.EndStream();
  p1.EndStream();
  EXPECT_EQ(c.Next(), "end-of-stream");
}

TEST(RebalanceColours, RestoredBatchesComeFirstAndCountAsSentByProducerZero) {
  RebalanceQueue q("up[*]->down[*]", 16, 1);
  RecordBatch restored;
  restored.Add("old");
  q.AddRestored(std::move(restored));
  Producer p(&q, 0);
  Consumer c(&q);
  p.Push({"new"});
  p.Snapshot(1);
  EXPECT_EQ(c.Next(), "batch:old");
  EXPECT_EQ(c.Next(), "batch:new");
  EXPECT_EQ(c.Next(), "checkpoint:1");
  EXPECT_EQ(c.Next(), "channel-state:1:");
  EXPECT_EQ(p.reported(), 2u);  // one pushed, one restored
  EXPECT_EQ(c.counts()[0].received_before, 2u);
}

TEST(RebalanceColours, UnalignedCheckpointsRecordTheWhiteBatchesOfOtherProducers) {
  RebalanceQueue q("up[*]->down[*]", 16, 2);
  Producer p0(&q, 0), p1(&q, 1);
  Consumer c(&q);
  p0.Snapshot(1, CheckpointMode::kUnaligned);
  p0.Push({"red"});
  EXPECT_EQ(c.Next(), "checkpoint:1");
  EXPECT_EQ(c.Next(), "batch:red");
  p1.Push({"w"});
  EXPECT_EQ(c.Next(), "batch:w");
  p1.Snapshot(1, CheckpointMode::kUnaligned);
  EXPECT_EQ(c.Next(), "channel-state:1:w");
}

}  // namespace
}  // namespace cairn
