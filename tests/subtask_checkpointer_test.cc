// Specification of SubtaskCheckpointer: the steps of one subtask's checkpoint in order (forward
// the barrier, snapshot the chain, hand the job to the persister), the lane the barrier is
// forwarded on, and jobs that reach the persister in checkpoint order, those with channel state
// only once it is complete.
#include "engine/checkpoint/subtask_checkpointer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/base/parker.h"
#include "engine/checkpoint/snapshot_persister.h"
#include "engine/dataflow/channel.h"
#include "engine/dataflow/output_gate.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A subtask with one output channel, a snapshot step that notes what the channel held when it
// ran, and a persister whose answers the test collects (after Stop, which drains the queue).
class CheckpointerFixture {
 public:
  CheckpointerFixture()
      : channel_("me[0]->down[0]", 8, &producer_, &consumer_),
        out_(128),
        persister_(1, [this](TaskAck ack) { acks.push_back(std::to_string(ack.id) + " " + SubtaskCheckpointModeName(ack.mode)); }),
        checkpointer_(3, "/nonexistent/checkpoints", &out_, &persister_, [this](const Barrier& b, PersistJob* job) {
          steps.push_back("snapshot " + std::to_string(b.id) + (channel_.HasData() ? " after the data barrier" : "") +
                          (channel_.HasPriority() ? " after the priority barrier" : ""));
          EXPECT_EQ(job->task, 3);
          EXPECT_EQ(job->id, b.id);
        }) {
    out_.AddForwardEdge(&channel_);
  }
  static Barrier BarrierOf(CheckpointId id) {
    Barrier b;
    b.id = id;
    return b;
  }
  static std::unique_ptr<ChannelStateRecords> ChannelStateOf(CheckpointId id) {
    auto cs = std::make_unique<ChannelStateRecords>();
    cs->id = id;
    return cs;
  }
  // Every answer the persister gives, once all submitted jobs ran.
  std::vector<std::string> Answers() {
    persister_.Stop();
    return acks;
  }

  std::vector<std::string> steps;
  std::vector<std::string> acks;
  Channel& channel() { return channel_; }
  SubtaskCheckpointer& checkpointer() { return checkpointer_; }

 private:
  Parker producer_;
  Parker consumer_;
  Channel channel_;
  OutputGate out_;
  SnapshotPersister persister_;
  SubtaskCheckpointer checkpointer_;
};

TEST(SubtaskCheckpointerTest, AlignedCheckpointForwardsTheBarrierOnTheDataLaneThenSnapshotsThenPersists) {
  CheckpointerFixture f;
  ASSERT_TRUE(f.checkpointer().Checkpoint(CheckpointerFixture::BarrierOf(1), SubtaskCheckpointMode::kAligned, 0, false));
  EXPECT_THAT(f.steps, ElementsAre("snapshot 1 after the data barrier"));
  EXPECT_FALSE(f.channel().HasPriority()) << "no aligned timeout: nothing announced";
  EXPECT_THAT(f.Answers(), ElementsAre("1 aligned"));
}

TEST(SubtaskCheckpointerTest, UnalignedCheckpointForwardsTheBarrierOnThePriorityLane) {
  CheckpointerFixture f;
  ASSERT_TRUE(f.checkpointer().Checkpoint(CheckpointerFixture::BarrierOf(1), SubtaskCheckpointMode::kAlignedThenUnaligned,
                                          0, true));
  EXPECT_THAT(f.steps, ElementsAre("snapshot 1 after the priority barrier"));
  PriorityEvent e;
  ASSERT_TRUE(f.channel().TryPopPriority(&e));
  EXPECT_EQ(e.kind, PriorityEvent::Kind::kUnalignedBarrier);
  EXPECT_EQ(e.barrier.mode, CheckpointMode::kUnaligned);
  f.checkpointer().OnChannelStateDone(CheckpointerFixture::ChannelStateOf(1));
  EXPECT_THAT(f.Answers(), ElementsAre("1 aligned->unaligned"));
}

TEST(SubtaskCheckpointerTest, JobWithChannelStateIsNotPersistedUntilItsChannelStateIsComplete) {
  CheckpointerFixture f;
  ASSERT_TRUE(f.checkpointer().Checkpoint(CheckpointerFixture::BarrierOf(1), SubtaskCheckpointMode::kUnaligned, 0, true));
  EXPECT_THAT(f.Answers(), IsEmpty());
}

TEST(SubtaskCheckpointerTest, JobsReachThePersisterInCheckpointOrder) {
  CheckpointerFixture f;
  ASSERT_TRUE(f.checkpointer().Checkpoint(CheckpointerFixture::BarrierOf(1), SubtaskCheckpointMode::kUnaligned, 0, true));
  ASSERT_TRUE(f.checkpointer().Checkpoint(CheckpointerFixture::BarrierOf(2), SubtaskCheckpointMode::kAligned, 0, false));
  EXPECT_THAT(f.checkpointer().Describe(), ::testing::HasSubstr("waiting_job=2(ready)")) << "behind checkpoint 1";
  f.checkpointer().OnChannelStateDone(CheckpointerFixture::ChannelStateOf(1));
  EXPECT_THAT(f.Answers(), ElementsAre("1 unaligned", "2 aligned"));
}

}  // namespace
}  // namespace cairn
