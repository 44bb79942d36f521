// SourceWatermarkGenerator (engine/runtime/source_watermarks.h): bounded out-of-orderness over
// the whole source or per split, idleness after idle_timeout, splits that end. Time is given
// explicitly: nothing here waits.
#include "engine/runtime/source_watermarks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "engine/dataflow/schema.h"

namespace cairn {
namespace {

using Clock = SourceWatermarkGenerator::Clock;
using std::chrono::milliseconds;

class FakeSplits : public SplitSource {
 public:
  int split_field() const override { return 0; }
  void ActiveSplits(std::vector<int64_t>* out) const override { *out = splits; }
  std::vector<int64_t> splits;
};

// Records (split, event time); a negative time is a null event time.
RecordBatch Batch(std::vector<std::pair<int64_t, int64_t>> records) {
  RecordBatch b;
  b.Reset(MakeSchema({{"split", FieldType::kInt64}, {"ts", FieldType::kInt64}}));
  for (auto [split, ts] : records) {
    size_t r = b.AddRow();
    b.SetInt64(r, 0, split);
    if (ts >= 0) b.SetInt64(r, 1, ts);
    else b.SetNull(r, 1);
  }
  return b;
}

SourceWatermarks Config(int64_t out_of_orderness_ms, int64_t idle_timeout_ms) {
  return SourceWatermarks{.enabled = true, .field = 1, .max_out_of_orderness_ms = out_of_orderness_ms,
                          .idle_timeout_ms = idle_timeout_ms};
}

TEST(SourceWatermarks, WholeSourceIsTheLargestEventTimeLessTheOutOfOrdernessAndIdleAfterTheTimeout) {
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  SourceWatermarkGenerator g;
  g.Start(Config(100, 500), nullptr, t0);
  EXPECT_EQ(g.Now(t0).watermark, kMinWatermark);
  EXPECT_FALSE(g.Now(t0).idle);
  g.OnRecords(Batch({{7, 1000}, {3, 5000}, {7, -1}, {9, 2000}}), t0 + milliseconds(10));
  EXPECT_EQ(g.Now(t0 + milliseconds(10)).watermark, 5000 - 100 - 1);  // the split field is not read
  EXPECT_EQ(g.NextIdleDeadline(t0 + milliseconds(10)), t0 + milliseconds(510));
  EXPECT_FALSE(g.Now(t0 + milliseconds(509)).idle);
  EXPECT_TRUE(g.Now(t0 + milliseconds(510)).idle);
  EXPECT_EQ(g.NextIdleDeadline(t0 + milliseconds(510)), Clock::time_point::max()) << "no deadline in the past";
  g.OnRecords(Batch({{0, 4000}}), t0 + milliseconds(600));  // older: the watermark stays
  EXPECT_FALSE(g.Now(t0 + milliseconds(600)).idle);
  EXPECT_EQ(g.Now(t0 + milliseconds(600)).watermark, 4899);
}

TEST(SourceWatermarks, WithoutIdleTimeoutTheSourceIsNeverIdle) {
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  SourceWatermarkGenerator g;
  g.Start(Config(0, 0), nullptr, t0);
  EXPECT_FALSE(g.Now(t0 + std::chrono::hours(5)).idle);
  EXPECT_EQ(g.NextIdleDeadline(t0), Clock::time_point::max());
}

TEST(SourceWatermarks, PerSplitTheSlowestActiveSplitHoldsTheWatermarkBack) {
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  FakeSplits splits;
  splits.splits = {0, 1, 2};
  SourceWatermarkGenerator g;
  g.Start(Config(0, 1000), &splits, t0);
  g.OnRecords(Batch({{0, 9000}, {0, 9500}, {1, 3000}}), t0 + milliseconds(100));
  // Split 2 has no records yet: it holds everything back.
  EXPECT_EQ(g.Now(t0 + milliseconds(100)).watermark, kMinWatermark);
  g.OnRecords(Batch({{2, 6000}}), t0 + milliseconds(200));
  EXPECT_EQ(g.Now(t0 + milliseconds(200)).watermark, 3000 - 1);  // split 1 is the slowest
  // Split 1 goes quiet: once idle (1 s after its last record at 100 ms) the others decide.
  g.OnRecords(Batch({{0, 9600}, {2, 7000}}), t0 + milliseconds(1050));
  EXPECT_EQ(g.NextIdleDeadline(t0 + milliseconds(1050)), t0 + milliseconds(1100));
  EXPECT_EQ(g.Now(t0 + milliseconds(1099)).watermark, 2999);
  EXPECT_EQ(g.Now(t0 + milliseconds(1100)).watermark, 7000 - 1);
  EXPECT_FALSE(g.Now(t0 + milliseconds(1100)).idle);
  // Split 2 read to its end: no longer listed, it no longer counts.
  splits.splits = {0, 1};
  EXPECT_EQ(g.Now(t0 + milliseconds(1200)).watermark, 9600 - 1);
  // Every split idle: the source is.
  EXPECT_TRUE(g.Now(t0 + milliseconds(3000)).idle);
  // A record of split 1 makes it active again, with what it had seen.
  g.OnRecords(Batch({{1, 3500}}), t0 + milliseconds(3100));
  const SourceWatermarkGenerator::Current c = g.Now(t0 + milliseconds(3100));
  EXPECT_FALSE(c.idle);
  EXPECT_EQ(c.watermark, 3500 - 1);  // below what was emitted: the task emits only what passes it
}

// Asked only after every split's idle deadline passed (the task woke late on a loaded
// machine): idle, with the watermark of the split that went idle last, which an on-time call
// would have seen once the others were idle; the task sends it before it goes idle.
TEST(SourceWatermarks, AskedLateAfterEverySplitWentIdleItGivesTheWatermarkOfTheLastOne) {
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  FakeSplits splits;
  splits.splits = {0, 1, 2};
  SourceWatermarkGenerator g;
  g.Start(Config(0, 200), &splits, t0);
  g.OnRecords(Batch({{0, 9000}, {1, 4000}}), t0 + milliseconds(10));  // split 2 has none
  g.OnRecords(Batch({{0, 9990}}), t0 + milliseconds(50));
  EXPECT_EQ(g.Now(t0 + milliseconds(50)).watermark, kMinWatermark) << "split 2 holds it back";
  const SourceWatermarkGenerator::Current late = g.Now(t0 + std::chrono::seconds(5));
  EXPECT_TRUE(late.idle);
  EXPECT_EQ(late.watermark, 9990 - 1);
  // Without any record at all the idle source has no watermark to give.
  SourceWatermarkGenerator empty;
  empty.Start(Config(0, 200), &splits, t0);
  EXPECT_TRUE(empty.Now(t0 + std::chrono::seconds(5)).idle);
  EXPECT_EQ(empty.Now(t0 + std::chrono::seconds(5)).watermark, kMinWatermark);
}

TEST(SourceWatermarks, ASubtaskWithoutSplitsIsIdleAtOnceAndNewSplitsHoldItBack) {
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  FakeSplits splits;
  SourceWatermarkGenerator g;
  g.Start(Config(0, 0), &splits, t0);
  EXPECT_TRUE(g.Now(t0).idle);
  splits.splits = {4};
  EXPECT_FALSE(g.Now(t0 + milliseconds(1)).idle);
  EXPECT_EQ(g.Now(t0 + milliseconds(1)).watermark, kMinWatermark);
}

TEST(SourceWatermarks, NotEnabledDoesNothing) {
  FakeSplits splits;
  splits.splits = {0};
  SourceWatermarkGenerator g;
  g.Start(SourceWatermarks{}, &splits, Clock::now());
  g.OnRecords(Batch({{0, 5}}), Clock::now());
  EXPECT_FALSE(g.enabled());
  EXPECT_EQ(g.Now(Clock::now()).watermark, kMinWatermark);
  EXPECT_FALSE(g.Now(Clock::now()).idle);
}

}  // namespace
}  // namespace cairn
