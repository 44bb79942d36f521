// Liveness and bounded resources (docs/faults.md, "Liveness and bounded resources"): a final
// checkpoint that keeps failing is retried at the pace of checkpoint.min_pause and at most
// checkpoint.tolerable_failures times, then the job fails; a cycle whose records multiply fails
// once a feedback channel holds more than checkpoint.max_feedback_backlog records, naming the
// edge and the key, long before it fills the disk; `cairn validate` warns about cycles.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Ids named in "checkpoint N failed: " lines of stderr, in order.
std::vector<uint64_t> FailedIds(const std::string& err) {
  std::vector<uint64_t> ids;
  std::regex re("checkpoint (\\d+) failed: ");
  for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator(); ++it)
    ids.push_back(std::stoull((*it)[1]));
  return ids;
}

uint64_t TreeBytes(const std::string& dir) {
  uint64_t n = 0;
  if (!std::filesystem::exists(dir)) return 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

// A word count whose only checkpoints are final ones (checkpoint.interval = 0).
class FinalCheckpointRun {
 public:
  FinalCheckpointRun() {
    RunResult gen = RunCairn({"generate", "--out", dir_ / "input.txt", "--words", "20000", "--seed", "5"});
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    args_ = {"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet",
             "--set", "operators.source.path=" + dir_ / "input.txt",
             "--set", "operators.sink.path=" + dir_ / "out",
             "--set", "checkpoint.dir=" + dir_ / "ck",
             "--set", "checkpoint.interval=0"};
  }
  std::vector<std::string> Args(const std::vector<std::string>& sets) const {
    std::vector<std::string> a = args_;
    for (const auto& s : sets) a.insert(a.end(), {"--set", s});
    return a;
  }
  std::string path(const std::string& name) const { return dir_ / name; }

 private:
  ScratchDir dir_;
  std::vector<std::string> args_;
};

TEST(LivenessTest, AFailingFinalCheckpointIsRetriedTolerableFailuresTimesThenTheJobFails) {
  FinalCheckpointRun run;
  RunResult r = RunCairn(run.Args({"checkpoint.tolerable_failures=3", "checkpoint.min_pause=20ms"}),
                         {"CAIRN_STORAGE_FAULT=eio:_metadata:0:all"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  // Exactly 1 + tolerable_failures attempts, one after the other, each a new checkpoint.
  EXPECT_EQ(FailedIds(r.err), (std::vector<uint64_t>{1, 2, 3, 4})) << r.err;
  for (int k = 1; k <= 3; ++k)
    EXPECT_THAT(r.err, HasSubstr("(tolerated: " + std::to_string(k) + " of 3 consecutive failures); the final "
                                 "checkpoint is retried after checkpoint.min_pause = 20 ms"));
  EXPECT_THAT(r.err, HasSubstr("checkpoint 4 failed: the checkpoint metadata could not be written"));
  EXPECT_THAT(r.err, HasSubstr("4 consecutive failures exceed checkpoint.tolerable_failures = 3"));
  EXPECT_FALSE(std::filesystem::exists(run.path("ck/chk-5")));
}

// Waits until `proc`'s stderr file contains `text`, sending it `signal` (0: none) while waiting.
// False when the process exits first or after `deadline_s`, a bound far beyond any slowness.
bool WaitForText(CairnProcess* proc, const std::string& err_file, const std::string& text, int signal,
                 std::string* err, RunResult* exited, int deadline_s = 120) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  while (std::chrono::steady_clock::now() < deadline) {
    *err = std::filesystem::exists(err_file) ? ReadText(err_file) : "";
    if (err->find(text) != std::string::npos) return true;
    if (signal != 0) kill(proc->pid(), signal);
    if (proc->Wait(50, exited)) {  // returns at the exit, or after 50 ms
      *err = ReadText(err_file);
      return err->find(text) != std::string::npos;
    }
  }
  return false;
}

TEST(LivenessTest, AFailedFinalCheckpointIsNotRetriedBeforeMinPause) {
  FinalCheckpointRun run;
  // An hour of pause: the retry cannot come during the test, however slow the machine is. The
  // coordinator's state (kill -USR1) shows it waiting for the pause, not a pending retry.
  CairnProcess proc(run.Args({"checkpoint.tolerable_failures=1", "checkpoint.min_pause=1h"}), run.path("stdout"),
                    run.path("stderr"), {"CAIRN_STORAGE_FAULT=eio:_metadata:0:all"});
  std::string err;
  RunResult exited;
  ASSERT_TRUE(WaitForText(&proc, run.path("stderr"), "(tolerated: 1 of 1 consecutive failures)", 0, &err, &exited))
      << "exit " << exited.exit_code << "\n" << err;
  ASSERT_TRUE(WaitForText(&proc, run.path("stderr"), "final checkpoint waits for checkpoint.min_pause", SIGUSR1, &err,
                          &exited))
      << "exit " << exited.exit_code << "\n" << err;
  EXPECT_EQ(FailedIds(err), (std::vector<uint64_t>{1})) << err;
  EXPECT_THAT(err, Not(HasSubstr("pending checkpoint 2")));
  proc.Kill();
}

// source -> tokenize -> count -> sink, where count's output also goes back into tokenize and
// into count itself: every count record becomes two, so the records multiply without end.
constexpr char kMultiplyingCycle[] = R"(job: multiplying
parallelism: 1
checkpoint:
  interval: 100ms
operators:
  - id: source
    type: generator
    words: 1000
  - id: tokenize
    type: tokenize
    inputs: [source, count]
  - id: count
    type: count
    key_by: word
    inputs: [tokenize, count]
  - id: sink
    type: file_sink
    inputs: [count]
    path: out
)";

TEST(LivenessTest, AMultiplyingCycleFailsNamingTheFeedbackEdgeAndTheKeyBeforeFillingTheDisk) {
  ScratchDir dir;
  WriteText(dir / "job.yaml", kMultiplyingCycle);
  // Only the backlog may stop it here, not the drain limit (ACycleThatNeverDrains... below).
  RunResult r = RunCairn({"run", dir / "job.yaml", "--quiet", "--set", "checkpoint.dir=" + dir / "ck", "--set",
                          "operators.sink.path=" + dir / "out", "--set", "checkpoint.max_drain_checkpoints=1000000"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m,
                                std::regex("feedback edge (count\\[0\\]->(tokenize|count)\\[0\\])[: ].*"
                                           "checkpoint.max_feedback_backlog = 1000000 records")))
      << r.err;
  EXPECT_THAT(r.err, HasSubstr("raise checkpoint.max_feedback_backlog"));
  // About a million records went round; the unbounded run wrote 531 MB in 4 s.
  EXPECT_LT(TreeBytes(dir / "out") + TreeBytes(dir / "ck"), uint64_t{256} << 20);
}

TEST(LivenessTest, TheFeedbackBacklogLimitIsTheKeyGiven) {
  ScratchDir dir;
  WriteText(dir / "job.yaml", kMultiplyingCycle);
  RunResult r = RunCairn({"run", dir / "job.yaml", "--quiet", "--set", "checkpoint.dir=" + dir / "ck", "--set",
                          "operators.sink.path=" + dir / "out", "--set", "checkpoint.max_feedback_backlog=5000",
                          "--set", "checkpoint.max_drain_checkpoints=1000000"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("checkpoint.max_feedback_backlog = 5000 records"));
}

// The same without count feeding itself: every record goes round tokenize -> count ->
// tokenize for ever, one for one. Nothing piles up, but the job never drains, and its sink
// would write without end (62 MB in 1.4 s before the default drain limit of 20 stopped it).
std::string CirculatingCycle() {
  std::string yaml = kMultiplyingCycle;
  const std::string from = "inputs: [tokenize, count]";
  yaml.replace(yaml.find(from), from.size(), "inputs: [tokenize]");
  return yaml;
}

TEST(LivenessTest, ACycleThatNeverDrainsFailsAfterMaxDrainCheckpointsNamingTheKey) {
  ScratchDir dir;
  WriteText(dir / "job.yaml", CirculatingCycle());
  RunResult r = RunCairn({"run", dir / "job.yaml", "--quiet", "--set", "checkpoint.dir=" + dir / "ck", "--set",
                          "operators.sink.path=" + dir / "out", "--set", "checkpoint.max_drain_checkpoints=5"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the job's cycle does not drain: 5 final checkpoints after every source finished"));
  EXPECT_THAT(r.err, HasSubstr("still found records in flight on the feedback edges into tokenize[0]"));
  EXPECT_THAT(r.err, HasSubstr("checkpoint.max_drain_checkpoints = 5 (raise it if the cycle drains slowly)"));
}

TEST(LivenessTest, ACycleThatDrainsEndsWithinMaxDrainCheckpoints) {
  // The bank's credits drain: its final checkpoints find them in flight at most once or twice.
  ScratchDir dir;
  RunResult r = RunCairn({"run", SourceDir() + "/jobs/bank.yaml", "--quiet", "--set", "checkpoint.dir=" + dir / "ck",
                          "--set", "operators.requests.count=20000", "--set", "checkpoint.max_drain_checkpoints=5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

TEST(LivenessTest, ValidateWarnsAboutACycleAndStillSucceeds) {
  ScratchDir dir;
  WriteText(dir / "job.yaml", kMultiplyingCycle);
  RunResult r = RunCairn({"validate", dir / "job.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("valid job 'multiplying'"));
  EXPECT_THAT(r.err, HasSubstr("cairn: warning: the job has a cycle ("));
  EXPECT_THAT(r.err, HasSubstr("feedback edges: "));
  EXPECT_THAT(r.err, HasSubstr("checkpoint.max_feedback_backlog = 1000000 records"));
  EXPECT_THAT(r.err, HasSubstr("checkpoint.max_drain_checkpoints = 20 final checkpoints"));

  RunResult bank = RunCairn({"validate", SourceDir() + "/jobs/bank.yaml"});
  ASSERT_EQ(bank.exit_code, 0) << bank.err;
  EXPECT_THAT(bank.err, HasSubstr("cairn: warning: the job has a cycle (accounts -> accounts; feedback edges: "
                                  "accounts -> accounts)"));

  RunResult acyclic = RunCairn({"validate", SourceDir() + "/jobs/wordcount.yaml"});
  ASSERT_EQ(acyclic.exit_code, 0) << acyclic.err;
  EXPECT_THAT(acyclic.err, Not(HasSubstr("warning")));
}

}  // namespace
}  // namespace cairn::testing
