// Mattern's termination at the coordinator: a checkpoint completes only when, per load-balanced
// edge, the batches the producers sent before their snapshots equal the batches of an older
// colour the consumers received, before or after theirs (TaskAck::rebalance_counts).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "engine/checkpoint/checkpoint_coordinator.h"
#include "state/checkpoint_store.h"
#include "tests/fake_participants.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using testing::Ack;
using testing::FakeTask;
using testing::NoFailure;

TEST(RebalanceCoordinator, CompletesOnlyWhenSentEqualsReceivedOverTheEdge) {
  testing::ScratchDir dir;
  CheckpointConfig config = testing::EveryMillisecondInto(dir / "ck");
  config.tolerable_failures = 100;
  CheckpointStore store(config.dir);
  FakeTask producer("producer", true), consumer_a("consumer_a", false), consumer_b("consumer_b", false);
  NoFailure listener;
  CheckpointCoordinator c("job", 128, config, &store, {&producer, &consumer_a, &consumer_b}, 1, &listener);
  c.Start();

  // Checkpoint 1: 5 sent, 2 + 2 received: a batch is missing from the records, so it fails.
  ASSERT_TRUE(testing::PollUntil([&] { return producer.triggered() >= 1; }));
  c.Acknowledge(Ack(1, 0, {{"p[*]->c[*]", 5, 0, 0}}));
  c.Acknowledge(Ack(1, 1, {{"p[*]->c[*]", 0, 1, 1}}));
  c.Acknowledge(Ack(1, 2, {{"p[*]->c[*]", 0, 2, 0}}));
  ASSERT_TRUE(testing::PollUntil([&] { return c.stats().failed >= 1; }));
  EXPECT_EQ(c.stats().completed, 0u);
  const std::vector<CheckpointRecord> h = c.History();
  ASSERT_FALSE(h.empty());
  EXPECT_NE(h.front().failure.find("load-balanced edge p[*]->c[*]: 5 batches sent before the producers' snapshots, 4 "
                                   "received by the consumers"),
            std::string::npos)
      << h.front().failure;
  EXPECT_FALSE(std::filesystem::exists(dir / "ck/chk-1/_metadata"));

  // The next checkpoint: 5 sent, 2 before + 1 after and 2 before received: complete.
  ASSERT_TRUE(testing::PollUntil([&] { return producer.triggered() >= 2; }));
  const CheckpointId id = producer.triggered();
  c.Acknowledge(Ack(id, 0, {{"p[*]->c[*]", 5, 0, 0}}));
  c.Acknowledge(Ack(id, 1, {{"p[*]->c[*]", 0, 2, 1}}));
  c.Acknowledge(Ack(id, 2, {{"p[*]->c[*]", 0, 2, 0}}));
  ASSERT_TRUE(testing::PollUntil([&] { return c.stats().completed >= 1; }));
  EXPECT_EQ(c.stats().last_completed_id, id);
  EXPECT_TRUE(std::filesystem::exists(dir / ("ck/chk-" + std::to_string(id) + "/_metadata")));
  c.Stop();
}

}  // namespace
}  // namespace cairn
