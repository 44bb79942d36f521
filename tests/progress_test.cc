// Specification of the progress line `cairn run` prints while a job runs (jobs/cli/progress.h):
// its exact format, which tools parse.
#include "jobs/cli/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace cairn {
namespace {

RunProgress TwoSecondsIn() {
  RunProgress p;
  p.seconds = 2.04;
  p.source_records = 1200000;
  p.sink_records = 950000;
  p.sink_records_in_interval = 480000;
  p.interval_seconds = 1.0;
  p.checkpoints.completed = 3;
  p.checkpoints.last_duration_ms = 41;
  return p;
}

TEST(ProgressTest, LineNamesSecondsRecordsRateAndCheckpoints) {
  EXPECT_EQ(FormatProgress(TwoSecondsIn()),
            "cairn:    2.0s  source records      1200000  sink records       950000  (0.48M/s)  checkpoints 3 "
            "(last 41 ms)\n");
}

TEST(ProgressTest, RateIsPerSecondWhateverTheInterval) {
  RunProgress p = TwoSecondsIn();
  p.sink_records_in_interval = 48000;
  p.interval_seconds = 0.1;
  EXPECT_NE(FormatProgress(p).find("(0.48M/s)"), std::string::npos) << FormatProgress(p);
}

TEST(ProgressTest, LastDurationIsMinusOneBeforeTheFirstCheckpoint) {
  RunProgress p = TwoSecondsIn();
  p.checkpoints = CheckpointStats{};
  EXPECT_NE(FormatProgress(p).find("checkpoints 0 (last -1 ms)\n"), std::string::npos) << FormatProgress(p);
}

TEST(ProgressTest, LineParsesAsTheBenchmarkReadsIt) {
  double seconds = 0;
  unsigned long long in = 0, out = 0;
  ASSERT_EQ(sscanf(FormatProgress(TwoSecondsIn()).c_str(), "cairn: %lfs source records %llu sink records %llu", &seconds,
                   &in, &out),
            3);
  EXPECT_DOUBLE_EQ(seconds, 2.0);
  EXPECT_EQ(in, 1200000u);
  EXPECT_EQ(out, 950000u);
}

}  // namespace
}  // namespace cairn
