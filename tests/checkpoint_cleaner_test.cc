#include "engine/checkpoint/checkpoint_cleaner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/base/file_util.h"
#include "engine/base/mutex.h"
#include "engine/checkpoint/checkpoint_coordinator.h"
#include "state/checkpoint_store.h"
#include "tests/fake_participants.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

// What the cleaner's passes were called with, and (optionally) a gate the first pass waits at.
class Passes {
 public:
  Status Run(CheckpointId id) EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      ids_.push_back(id);
    }
    if (id == gated_id_) {
      entered_.set_value();
      release_.get_future().wait();
    }
    auto it = failures_.find(id);
    return it == failures_.end() ? Status::OK() : it->second;
  }
  std::vector<CheckpointId> ids() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return ids_;
  }
  CheckpointId gated_id_ = 0;  // set before the cleaner starts
  std::promise<void> entered_, release_;
  std::map<CheckpointId, Status> failures_;  // set before the cleaner starts

 private:
  Mutex mu_;
  std::vector<CheckpointId> ids_ GUARDED_BY(mu_);
};

TEST(CheckpointCleaner, RequestsDoNotWaitForAPassAndThoseMadeMeanwhileCoalesce) {
  Passes passes;
  passes.gated_id_ = 1;
  std::future<void> entered = passes.entered_.get_future();
  CheckpointCleaner cleaner([&](CheckpointId id) { return passes.Run(id); }, nullptr);
  cleaner.Request(1);
  entered.wait();  // the pass for 1 runs, held at the gate: Request returned without it
  cleaner.Request(2);
  cleaner.Request(3);
  cleaner.Request(3);
  cleaner.Request(4);
  passes.release_.set_value();
  cleaner.Drain();
  EXPECT_EQ(passes.ids(), (std::vector<CheckpointId>{1, 4}));  // one more pass, for the newest
  cleaner.Request(4);  // not newer: no pass
  cleaner.Request(5);
  cleaner.Drain();
  EXPECT_EQ(passes.ids(), (std::vector<CheckpointId>{1, 4, 5}));
}

TEST(CheckpointCleaner, AFailedPassGoesToOnErrorAndLaterRequestsStillRun) {
  Passes passes;
  passes.failures_[1] = Status::IOError("cannot remove chk-1");
  std::vector<std::string> errors;  // written on the cleaner's thread, read after Drain()
  Mutex mu;
  CheckpointCleaner cleaner([&](CheckpointId id) { return passes.Run(id); },
                            [&](const Status& s) {
                              MutexLock l(&mu);
                              errors.push_back(s.message());
                            });
  cleaner.Request(1);
  cleaner.Drain();
  cleaner.Request(2);
  cleaner.Drain();
  EXPECT_EQ(passes.ids(), (std::vector<CheckpointId>{1, 2}));
  MutexLock l(&mu);
  EXPECT_EQ(errors, (std::vector<std::string>{"cannot remove chk-1"}));
}

TEST(CheckpointCleaner, StopRunsTheLastRequestedPassFirst) {
  Passes passes;
  {
    CheckpointCleaner cleaner([&](CheckpointId id) { return passes.Run(id); }, nullptr);
    cleaner.Request(7);
    cleaner.Stop();
    EXPECT_EQ(passes.ids(), (std::vector<CheckpointId>{7}));
    cleaner.Stop();  // again (as the destructor does): nothing more
  }
  EXPECT_EQ(passes.ids(), (std::vector<CheckpointId>{7}));
  CheckpointCleaner idle([&](CheckpointId id) { return passes.Run(id); }, nullptr);
  idle.Drain();  // nothing requested: returns at once
  idle.Stop();
  EXPECT_EQ(passes.ids(), (std::vector<CheckpointId>{7}));
}

// The coordinator hands retention to its cleaner: after every completion the newest completed
// checkpoint is on disk, and once Stop() returns retention has been applied to the last one.
TEST(CheckpointCoordinatorRetention, KeepsTheNewestCompletedAndStopWaitsForTheLastPass) {
  testing::ScratchDir dir;
  CheckpointConfig config = testing::EveryMillisecondInto(dir / "ck");
  config.retain = 1;
  CheckpointStore store(config.dir);
  testing::FakeTask source("source", true), sink("sink", false);
  testing::NoFailure listener;
  CheckpointCoordinator c("job", 128, config, &store, {&source, &sink}, 1, &listener);
  c.Start();
  CheckpointId last = 0;
  for (int k = 0; k < 20; ++k) {
    ASSERT_TRUE(testing::PollUntil([&] { return source.triggered() > last; }));
    const CheckpointId id = source.triggered();
    c.Acknowledge(testing::Ack(id, 0));
    c.Acknowledge(testing::Ack(id, 1));
    ASSERT_TRUE(testing::PollUntil([&] { return c.stats().last_completed_id == id; }));
    EXPECT_TRUE(std::filesystem::exists(store.CheckpointPath(id) + "/_metadata")) << id;
    last = id;
  }
  c.Stop();
  EXPECT_EQ(testing::CompletedCheckpointIds(config.dir), (std::set<uint64_t>{last}));
}

// A retention pass that fails reaches the listener (the job fails), and retention_failure()
// keeps it for a listener that only queues it: the cluster coordinator reads it after Stop(),
// since the final checkpoint's pass may fail after every task ended.
TEST(CheckpointCoordinatorRetention, AFailedPassReachesTheListenerAndRetentionFailure) {
  class Failures : public CheckpointCoordinator::Listener {
   public:
    void JobFailed(const Status& s) override EXCLUDES(mu_) {
      MutexLock l(&mu_);
      messages_.push_back(s.message());
    }
    std::vector<std::string> messages() EXCLUDES(mu_) {
      MutexLock l(&mu_);
      return messages_;
    }

   private:
    Mutex mu_;
    std::vector<std::string> messages_ GUARDED_BY(mu_);
  };
  testing::ScratchDir dir;
  CheckpointConfig config = testing::EveryMillisecondInto(dir / "ck");
  CheckpointStore store(config.dir);
  // _superseded that cannot be read as a file: every pass fails, the commits do not.
  ASSERT_TRUE(CreateDirs(config.dir + "/_superseded").ok());
  testing::FakeTask source("source", true);
  Failures listener;
  CheckpointCoordinator c("job", 128, config, &store, {&source}, 1, &listener);
  EXPECT_TRUE(c.retention_failure().ok());
  c.Start();
  ASSERT_TRUE(testing::PollUntil([&] { return source.triggered() >= 1; }));
  c.Acknowledge(testing::Ack(1, 0));
  ASSERT_TRUE(testing::PollUntil([&] { return c.stats().last_completed_id == 1; }));
  c.Stop();
  EXPECT_TRUE(std::filesystem::exists(store.CheckpointPath(1) + "/_metadata"));
  const Status failure = c.retention_failure();
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.message().rfind("checkpoint retention: ", 0), 0u) << failure.message();
  EXPECT_NE(failure.message().find("_superseded"), std::string::npos) << failure.message();
  const std::vector<std::string> heard = listener.messages();
  ASSERT_FALSE(heard.empty());
  EXPECT_EQ(heard.front(), failure.message());
}

}  // namespace
}  // namespace cairn
