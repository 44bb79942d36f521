// Stand-ins for the tasks and the job a CheckpointCoordinator talks to, for tests that drive a
// coordinator by hand: each FakeTask records the newest checkpoint it was told to trigger or
// that completed, and the test acknowledges for it.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "engine/checkpoint/checkpoint_coordinator.h"

namespace cairn::testing {

class FakeTask : public CheckpointParticipant {
 public:
  FakeTask(std::string name, bool source) : name_(std::move(name)), source_(source) {}
  const std::string& name() const override { return name_; }
  bool is_source() const override { return source_; }
  void TriggerCheckpoint(const Barrier& b) override { triggered_.store(b.id); }
  void NotifyCheckpointComplete(CheckpointId id) override { notified_.store(id); }
  void Terminate() override {}
  CheckpointId triggered() const { return triggered_.load(); }
  CheckpointId notified() const { return notified_.load(); }

 private:
  const std::string name_;
  const bool source_;
  std::atomic<CheckpointId> triggered_{0};
  std::atomic<CheckpointId> notified_{0};
};

// A listener for runs that must not fail: a failure is a test failure.
class NoFailure : public CheckpointCoordinator::Listener {
 public:
  void JobFailed(const Status& s) override { ADD_FAILURE() << s.message(); }
};

// Checkpoints every millisecond into `dir`, the rest as configured by default.
inline CheckpointConfig EveryMillisecondInto(const std::string& dir) {
  CheckpointConfig config;
  config.interval = Millis(1);
  config.dir = dir;
  return config;
}

inline TaskAck Ack(CheckpointId id, int task, std::vector<RebalanceCount> counts = {}) {
  TaskAck a;
  a.id = id;
  a.task = task;
  a.rebalance_counts = std::move(counts);
  return a;
}

}  // namespace cairn::testing
