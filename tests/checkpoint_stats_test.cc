// Specification of CheckpointStats: totals over the whole run, durations of the latest
// checkpoint.history completed checkpoints only, so a long run's statistics stay small.
#include <gtest/gtest.h>

#include <vector>

#include "engine/checkpoint/checkpoint_coordinator.h"

namespace cairn {
namespace {

TEST(CheckpointStatsTest, KeepsTheDurationsOfTheLastHistoryCheckpointsAndTotalsOverAll) {
  CheckpointStats s;
  for (int64_t i = 1; i <= 100000; ++i) {
    s.RecordCompleted(static_cast<CheckpointId>(i), i % 1000, /*history=*/10);
    ASSERT_LE(s.durations_ms.size(), 10u) << "after checkpoint " << i;
  }
  EXPECT_EQ(s.durations_ms, (std::vector<int64_t>{991, 992, 993, 994, 995, 996, 997, 998, 999, 0}));
  EXPECT_EQ(s.completed, 100000u);
  EXPECT_EQ(s.last_completed_id, 100000u);
  EXPECT_EQ(s.last_duration_ms, 0);
  EXPECT_EQ(s.max_duration_ms, 999);
  EXPECT_EQ(s.total_duration_ms, 100 * (999 * 1000 / 2));
}

TEST(CheckpointStatsTest, FewerCheckpointsThanTheHistoryAreAllKept) {
  CheckpointStats s;
  s.RecordCompleted(1, 30, 10);
  s.RecordCompleted(2, 10, 10);
  EXPECT_EQ(s.durations_ms, (std::vector<int64_t>{30, 10}));
  EXPECT_EQ(s.completed, 2u);
}

TEST(CheckpointStatsTest, AHistoryOfOneKeepsTheLastDuration) {
  CheckpointStats s;
  for (int64_t i = 1; i <= 5; ++i) s.RecordCompleted(static_cast<CheckpointId>(i), i, 1);
  EXPECT_EQ(s.durations_ms, (std::vector<int64_t>{5}));
  EXPECT_EQ(s.max_duration_ms, 5);
}

}  // namespace
}  // namespace cairn
