// Specification of SnapshotPersister's abort contract: the jobs of an aborted checkpoint that
// have not started are skipped, and a running one stops before its next write (an abort seen
// by the end of its operators' async parts, which run beside its writes, fails it too); both
// still answer (Aborted). Each test orders the abort against the persister with a latch, not a clock.
#include "engine/checkpoint/snapshot_persister.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/dataflow/schema.h"
#include "state/checkpoint_format.h"
#include "state/checkpoint_metadata.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

namespace fs = std::filesystem;

class AckLog {
 public:
  SnapshotPersister::AckFn Fn() {
    return [this](TaskAck a) {
      std::lock_guard<std::mutex> l(mu_);
      acks_[a.id].push_back(std::move(a));
    };
  }
  // Read after SnapshotPersister::Stop(), which joins the threads that write it.
  const std::vector<TaskAck>& For(CheckpointId id) { return acks_[id]; }

 private:
  std::mutex mu_;
  std::map<CheckpointId, std::vector<TaskAck>> acks_;
};

SnapshotPart Part(const std::string& op, const std::string& operator_state) {
  SnapshotPart p;
  p.handle.operator_id = op;
  p.handle.subtask = 0;
  p.operator_state = operator_state;
  return p;
}

std::unique_ptr<PersistJob> Job(const testing::ScratchDir& dir, CheckpointId id, int task) {
  auto j = std::make_unique<PersistJob>();
  j->id = id;
  j->task = task;
  j->chk_dir = dir / ("chk-" + std::to_string(id));
  return j;
}

TEST(SnapshotPersisterTest, AQueuedJobOfAnAbortedCheckpointIsSkippedAndStillAnswers) {
  testing::ScratchDir dir;
  AckLog acks;
  SnapshotPersister persister(1, acks.Fn());
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  // Checkpoint 1's job holds the only thread until released; checkpoint 2's waits behind it.
  auto first = Job(dir, 1, 0);
  first->parts.push_back(Part("a", "state-1"));
  first->parts[0].async_part = [&started, released] {
    started.set_value();
    released.wait();
    return Status::OK();
  };
  auto second = Job(dir, 2, 0);
  second->parts.push_back(Part("a", "state-2"));
  persister.Submit(std::move(first));
  persister.Submit(std::move(second));
  started.get_future().wait();
  persister.Abort(2);
  release.set_value();
  persister.Stop();

  ASSERT_EQ(acks.For(1).size(), 1u);
  EXPECT_TRUE(acks.For(1)[0].status.ok()) << acks.For(1)[0].status.ToString();
  EXPECT_TRUE(fs::exists(dir / "chk-1/a-0/" + kOperatorStateFileName));
  ASSERT_EQ(acks.For(2).size(), 1u);
  EXPECT_TRUE(acks.For(2)[0].status.IsAborted()) << acks.For(2)[0].status.ToString();
  EXPECT_TRUE(acks.For(2)[0].handles.empty());
  EXPECT_FALSE(fs::exists(dir / "chk-2"));
}

TEST(SnapshotPersisterTest, AnAbortRaisedWhileAnOperatorsAsyncPartRunsFailsTheAck) {
  testing::ScratchDir dir;
  AckLog acks;
  SnapshotPersister persister(1, acks.Fn());
  auto job = Job(dir, 7, 0);
  job->parts.push_back(Part("head", "h"));
  job->parts[0].async_part = [&persister] {
    persister.Abort(7);
    return Status::OK();
  };
  persister.Submit(std::move(job));
  persister.Stop();
  ASSERT_EQ(acks.For(7).size(), 1u);
  EXPECT_TRUE(acks.For(7)[0].status.IsAborted()) << acks.For(7)[0].status.ToString();
}

TEST(SnapshotPersisterTest, OperatorsAsyncPartsRunBesideTheStateWritesAndTheAckWaitsForThem) {
  testing::ScratchDir dir;
  AckLog acks;
  SnapshotPersister persister(1, acks.Fn());
  // head's async part (a sink's fsync) waits until the tail's operator state, written after it
  // in the chain's order, is on disk: it runs beside the writes, not before them. The ack
  // comes after it returned, with its failure.
  auto job = Job(dir, 8, 0);
  job->parts.push_back(Part("head", "h"));
  job->parts.push_back(Part("tail", "t"));
  const fs::path tail_state = dir / ("chk-8/tail-0/" + std::string(kOperatorStateFileName));
  std::atomic<bool> saw_tail{false}, returned{false};
  job->parts[0].async_part = [&] {
    saw_tail = testing::PollUntil([&] { return fs::exists(tail_state); });
    returned = true;
    return Status::IOError("fsync failed");
  };
  persister.Submit(std::move(job));
  persister.Stop();
  EXPECT_TRUE(saw_tail);
  ASSERT_EQ(acks.For(8).size(), 1u);
  EXPECT_TRUE(returned);
  const Status& st = acks.For(8)[0].status;
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("fsync failed"), std::string::npos) << st.ToString();
  EXPECT_NE(st.ToString().find("head"), std::string::npos) << st.ToString();
}

TEST(SnapshotPersisterTest, AbortingOneCheckpointLeavesTheNextOneWhole) {
  testing::ScratchDir dir;
  AckLog acks;
  SnapshotPersister persister(2, acks.Fn());
  persister.Abort(3);
  for (int task = 0; task < 4; ++task) {
    for (CheckpointId id : {3, 4}) {
      auto j = Job(dir, id, task);
      j->parts.push_back(Part("op" + std::to_string(task), "s"));
      persister.Submit(std::move(j));
    }
  }
  persister.Stop();
  ASSERT_EQ(acks.For(3).size(), 4u);
  for (const TaskAck& a : acks.For(3)) EXPECT_TRUE(a.status.IsAborted()) << a.task;
  ASSERT_EQ(acks.For(4).size(), 4u);
  for (const TaskAck& a : acks.For(4)) {
    ASSERT_TRUE(a.status.ok()) << a.status.ToString();
    ASSERT_EQ(a.handles.size(), 1u);
    EXPECT_EQ(a.handles[0].operator_state_file, a.handles[0].operator_id + "-0/" + kOperatorStateFileName);
    EXPECT_TRUE(fs::exists(dir / "chk-4/" + a.handles[0].operator_state_file));
  }
  EXPECT_FALSE(fs::exists(dir / "chk-3"));
}

// checkpoint.inline_state_threshold: operator, list and channel state smaller than it goes into
// the handle (which the coordinator writes into _metadata) and no file is written; the rest is
// written to files as before.
TEST(SnapshotPersisterTest, StateBelowTheInlineThresholdGoesIntoTheHandleTheRestIntoFiles) {
  testing::ScratchDir dir;
  AckLog acks;
  auto channel_state = [](int64_t rows) {
    auto cs = std::make_unique<ChannelStateRecords>();
    cs->id = 5;
    SchemaRef schema = MakeSchema({{"n", FieldType::kInt64}});
    cs->channel_names = {"a[0]->b[0]"};
    cs->schemas = {schema};
    cs->records.emplace_back(schema);
    for (int64_t i = 0; i < rows; ++i) cs->records.back().AppendRow().SetInt64(0, i);
    return cs;
  };
  const uint64_t kThreshold = 128;
  const std::string small(kThreshold - 1, 's'), large(kThreshold, 'l');
  ASSERT_LT(EncodeChannelState(*channel_state(1)).size(), kThreshold);
  ASSERT_GE(EncodeChannelState(*channel_state(100)).size(), kThreshold);
  {
    SnapshotPersister persister(1, acks.Fn(), kThreshold);
    auto j = Job(dir, 5, 0);
    j->parts.push_back(Part("small", small));
    j->parts.back().list_state = small;
    j->channel_state = channel_state(1);
    persister.Submit(std::move(j));
    j = Job(dir, 5, 1);
    j->parts.push_back(Part("large", large));
    j->parts.back().list_state = large;
    j->channel_state = channel_state(100);
    persister.Submit(std::move(j));
    persister.Stop();
  }
  ASSERT_EQ(acks.For(5).size(), 2u);
  for (const TaskAck& a : acks.For(5)) {
    ASSERT_TRUE(a.status.ok()) << a.status.ToString();
    ASSERT_EQ(a.handles.size(), 1u);
    const SubtaskStateHandle& h = a.handles[0];
    if (h.operator_id == "small") {
      EXPECT_EQ(h.operator_state_inline, small);
      EXPECT_EQ(h.list_state_inline, small);
      EXPECT_EQ(h.channel_state_inline, EncodeChannelState(*channel_state(1)));
      EXPECT_EQ(h.operator_state_file, "");
      EXPECT_EQ(h.list_state_file, "");
      EXPECT_EQ(h.channel_state_file, "");
      EXPECT_EQ(h.state_bytes, 2 * small.size());
      EXPECT_EQ(h.channel_state_bytes, h.channel_state_inline.size());
      EXPECT_FALSE(fs::exists(dir / "chk-5/small-0")) << "nothing written for inline state";
    } else {
      EXPECT_EQ(h.operator_state_inline, "");
      EXPECT_EQ(h.list_state_inline, "");
      EXPECT_EQ(h.channel_state_inline, "");
      std::string bytes;
      ASSERT_TRUE(ReadSubtaskState(dir / "chk-5", h.operator_state_file, h.operator_state_inline, &bytes).ok());
      EXPECT_EQ(bytes, large);
      ASSERT_TRUE(ReadSubtaskState(dir / "chk-5", h.list_state_file, h.list_state_inline, &bytes).ok());
      EXPECT_EQ(bytes, large);
      ASSERT_TRUE(ReadSubtaskState(dir / "chk-5", h.channel_state_file, h.channel_state_inline, &bytes).ok());
      EXPECT_EQ(bytes, EncodeChannelState(*channel_state(100)));
    }
  }
}

}  // namespace
}  // namespace cairn
