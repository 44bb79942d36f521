// Processing-time timers in running jobs (engine/dataflow/timer_service.h), through an operator
// written against the API: `first_seen` registers a processing-time timer for a word the first
// time it sees it and emits the word when the timer fires. Timers fire from the task's loop,
// each once; they are keyed state, so across a SIGKILL, a restore at another parallelism and
// the exactly-once sink, every word comes out exactly once. A timer still pending when the input
// ends does not hold the job (as in Flink: processing time does not outlive a bounded input).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "jobs/registry.h"
#include "state/keyed_state_api.h"
#include "tests/operator_api/in_process_cli.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using ::testing::HasSubstr;

// first_seen: keyed by word; the first record of a word stores it as seen and registers a
// processing-time timer `delay` later; the timer emits the word.
class FirstSeen final : public Operator {
 public:
  explicit FirstSeen(const OperatorConfig& c) : delay_ms_(c.GetDuration("delay").count()) {}
  Status Open(OperatorContext& ctx) override {
    if (ctx.keyed == nullptr || ctx.timers == nullptr) return Status::Internal("first_seen has no keyed state or timers");
    timers_ = ctx.timers;
    return ctx.keyed->GetValueState("seen", &seen_);
  }
  Status Process(int, const RecordBatch& in, RecordBatch*) override {
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view w = in.GetString(i, 0);
      bool seen = false;
      if (seen_->Get(w, &seen)) continue;
      seen_->Put(w, true);
      timers_->RegisterProcessingTimeTimer(w, timers_->CurrentProcessingTime() + delay_ms_);
    }
    return Status::OK();
  }
  Status OnTimer(TimeDomain domain, int64_t, std::string_view key, RecordBatch* out) override {
    if (domain != TimeDomain::kProcessingTime) return Status::Internal("first_seen registers processing time only");
    out->SetString(out->AddRow(), 0, key);
    return Status::OK();
  }

 private:
  const int64_t delay_ms_;
  TimerService* timers_ = nullptr;
  ValueState<bool>* seen_ = nullptr;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "first_seen",
    .role = OperatorRole::kTransform,
    .keyed = true,
    .timers = true,
    .params = {{.name = "delay", .type = ParamType::kDuration, .default_value = "0",
                .doc = "how long after a word's first record its timer fires"}},
    .doc = "Emits each word once, from a processing-time timer (tests only).",
    .create = MakeOperator<FirstSeen>,
});

namespace {

using testing::RunAsChild;

// source -> tokenize -> first_seen (keyed by word) -> sink, at parallelism 2; 400 lines, each
// word twice, so every word's second record finds it seen.
std::vector<std::string> WriteJob(const testing::ScratchDir& dir) {
  std::string input;
  std::vector<std::string> words;
  for (int i = 0; i < 400; ++i) {
    words.push_back("w" + std::to_string(i));
    input += words.back() + " " + words.back() + "\n";
  }
  testing::WriteText(dir / "input.txt", input);
  testing::WriteText(dir / "job.yaml",
                     "job: first-seen\n"
                     "parallelism: 2\n"
                     "checkpoint:\n"
                     "  interval: 20ms\n"
                     "  dir: " + dir / "ck" + "\n"
                     "operators:\n"
                     "  - id: source\n    type: file_source\n    path: " + dir / "input.txt" + "\n"
                     "  - id: tokenize\n    type: tokenize\n    inputs: [source]\n"
                     "  - id: first\n    type: first_seen\n    key_by: word\n    inputs: [tokenize]\n"
                     "  - id: sink\n    type: file_sink\n    path: " + dir / "out" + "\n    inputs: [first]\n");
  std::sort(words.begin(), words.end());
  return words;
}

std::vector<std::string> Committed(const testing::ScratchDir& dir) {
  std::vector<std::string> lines = testing::CommittedLines(dir / "out");
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST(ProcessingTimers, FireOnceEachInARunningJobAcrossAKillAndARescale) {
  testing::ScratchDir dir;
  const std::vector<std::string> words = WriteJob(dir);
  // Paced (20 lines/s) and killed as checkpoint 3 commits, long before the end.
  testing::RunResult r = RunAsChild(dir, {"run", dir / "job.yaml", "--quiet", "--set", "operators.source.rate=20"},
                                    {"CAIRN_CRASH_AT=checkpoint.committed:3"});
  ASSERT_EQ(r.signal, SIGKILL) << r.err;
  r = RunAsChild(dir, {"run", dir / "job.yaml", "--quiet", "--restore", "latest", "--set", "parallelism=3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(restored from checkpoint "));
  EXPECT_EQ(Committed(dir), words) << "every word exactly once";
}

TEST(ProcessingTimers, APendingTimerDoesNotHoldABoundedJobAndStaysInItsState) {
  testing::ScratchDir dir;
  WriteJob(dir);
  testing::RunResult r = RunAsChild(dir, {"run", dir / "job.yaml", "--quiet", "--set", "operators.first.delay=1h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Committed(dir).empty()) << "no timer is due within the run";
  const std::set<uint64_t> ids = testing::CompletedCheckpointIds(dir / "ck");
  ASSERT_FALSE(ids.empty());
  testing::CliResult dump = testing::Cairn(
      {"state", "dump", dir / ("ck/chk-" + std::to_string(*ids.rbegin())), "--operator", "first"});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_THAT(dump.out, HasSubstr("__timers")) << "the 400 pending timers are in the final checkpoint";
  size_t timers = 0;
  for (size_t at = 0; (at = dump.out.find("__timers", at)) != std::string::npos; ++at) ++timers;
  EXPECT_EQ(timers, 400u) << dump.out.substr(0, 2000);
}

}  // namespace
}  // namespace cairn
