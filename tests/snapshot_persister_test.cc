// Specification of SnapshotPersister's abort contract: the jobs of an aborted checkpoint that
// have not started are skipped, and a running one stops before its next write; both still
// answer (Aborted). Each test orders the abort against the persister with a latch, not a clock.
#include "engine/checkpoint/snapshot_persister.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "state/checkpoint_format.h"
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

TEST(SnapshotPersisterTest, ARunningJobOfAnAbortedCheckpointStopsBeforeItsNextWrite) {
  testing::ScratchDir dir;
  AckLog acks;
  SnapshotPersister persister(1, acks.Fn());
  // A chain of three operators: the abort arrives while the first one's async part runs, after
  // its operator state was written; neither later operator's state nor the channel state is.
  auto job = Job(dir, 7, 0);
  job->parts.push_back(Part("head", "h"));
  job->parts.push_back(Part("middle", "m"));
  job->parts.push_back(Part("tail", "t"));
  job->parts[0].async_part = [&persister] {
    persister.Abort(7);
    return Status::OK();
  };
  bool middle_async_ran = false;
  job->parts[1].async_part = [&middle_async_ran] {
    middle_async_ran = true;
    return Status::OK();
  };
  job->channel_state = std::make_unique<ChannelStateRecords>();
  job->channel_state->channel_names.push_back("up[0]->head[0]");
  job->channel_state->schemas.push_back(KeyValueSchema());
  job->channel_state->records.emplace_back();
  job->channel_state->records[0].Add("in-flight", 1, 0);
  persister.Submit(std::move(job));
  persister.Stop();

  ASSERT_EQ(acks.For(7).size(), 1u);
  EXPECT_TRUE(acks.For(7)[0].status.IsAborted()) << acks.For(7)[0].status.ToString();
  EXPECT_TRUE(fs::exists(dir / "chk-7/head-0/" + kOperatorStateFileName));
  EXPECT_FALSE(fs::exists(dir / "chk-7/head-0/" + kChannelStateFileName));
  EXPECT_FALSE(fs::exists(dir / "chk-7/middle-0"));
  EXPECT_FALSE(fs::exists(dir / "chk-7/tail-0"));
  EXPECT_FALSE(middle_async_ran);
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

}  // namespace
}  // namespace cairn
