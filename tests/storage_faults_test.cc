// Storage faults (engine/base/storage_faults.h, CAIRN_STORAGE_FAULT): checkpoint writes that fail
// with ENOSPC or EIO, or stall past checkpoint.timeout. A failed checkpoint is declined (or
// expires) and its directory is removed; the job goes on while consecutive failures stay within
// checkpoint.tolerable_failures and fails with the reason named after that; the output is
// exactly-once, also after a restore of a job that failed that way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;

// Every chk-<id> directory left in `ck` must be a completed checkpoint, and no .tmp file may
// be left anywhere below it.
void ExpectOnlyCompletedCheckpoints(const std::string& ck) {
  namespace fs = std::filesystem;
  for (const auto& e : fs::recursive_directory_iterator(ck)) {
    std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind("chk-", 0) == 0 && e.path().parent_path() == fs::path(ck)) {
      EXPECT_TRUE(fs::exists(e.path() / "_metadata")) << "failed checkpoint left behind: " << e.path();
    }
    if (name.size() > 4 && name.substr(name.size() - 4) == ".tmp") ADD_FAILURE() << "temporary file left: " << e.path();
  }
}

// Ids named in "checkpoint N failed: <reason>" lines of stderr.
std::set<uint64_t> FailedIds(const std::string& err, const std::string& reason) {
  std::set<uint64_t> ids;
  std::regex re("checkpoint (\\d+) failed: " + reason);
  for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator(); ++it)
    ids.insert(std::stoull((*it)[1]));
  return ids;
}

class StorageFaultRun {
 public:
  explicit StorageFaultRun(bool backpressure, const std::string& words = "200000", int pace = 10000) {
    input_ = dir_ / "input.txt";
    RunResult gen = RunCairn({"generate", "--out", input_, "--words", words, "--vocabulary", "2000", "--seed", "23"});
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    args_ = {"run", SourceDir() + (backpressure ? "/jobs/wordcount-backpressure.yaml" : "/jobs/wordcount.yaml"),
             "--quiet",
             "--set", "operators.source.path=" + input_,
             "--set", "operators.sink.path=" + out(),
             "--set", "checkpoint.dir=" + ck(),
             "--set", "checkpoint.interval=20ms",
             // Every state in a file of its own, for the faults to hit: the default keeps
             // operator state of a few bytes in _metadata, with no write of its own.
             "--set", "checkpoint.inline_state_threshold=0"};
    if (backpressure) {
      Set("checkpoint.mode=unaligned");
      // The sink side at 10000 records/s per subtask, the source paced at twice that (2000 lines
      // of 10 words a second per subtask): backpressure from the first batches on, and periodic
      // unaligned checkpoints with records in flight for the 5 s the source runs, so that they
      // come (and fail) even when fsyncs stall for seconds. Unpaced, the source put the whole
      // input into the channels at once and ended, the final checkpoint (aligned) took the rest
      // of the run, and only a checkpoint in the first milliseconds could hold channel state:
      // under heavy disk load it held none.
      Set("operators.throttle.rate=10000");
      Set("operators.source.rate=2000");
    } else {
      Set("operators.source.rate=" + std::to_string(pace));
    }
  }
  void Set(const std::string& kv) { args_.insert(args_.end(), {"--set", kv}); }
  // A restore lifts the source's pace: it only has to finish the job.
  RunResult Run(const std::vector<std::string>& env, bool restore = false) {
    std::vector<std::string> a = args_;
    if (restore) a.insert(a.end(), {"--restore", "latest", "--set", "operators.source.rate=0"});
    return RunCairn(a, env);
  }
  std::string ck() const { return dir_ / "ck"; }
  std::string out() const { return dir_ / "out"; }
  const std::string& input() const { return input_; }

 private:
  ScratchDir dir_;
  std::string input_;
  std::vector<std::string> args_;
};

struct TolerableCase {
  const char* name;
  std::string fault;
  int tolerable;
  bool backpressure = false;
};

void PrintTo(const TolerableCase& c, std::ostream* os) { *os << c.fault; }

class TolerableStorageFaultTest : public ::testing::TestWithParam<TolerableCase> {};

TEST_P(TolerableStorageFaultTest, FailedCheckpointsAreDeclinedAndRemovedAndTheJobCompletesExactlyOnce) {
  const TolerableCase& c = GetParam();
  StorageFaultRun run(c.backpressure, "200000");
  run.Set("checkpoint.tolerable_failures=" + std::to_string(c.tolerable));
  RunResult r = run.Run({"CAIRN_STORAGE_FAULT=" + c.fault});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(injected by CAIRN_STORAGE_FAULT)"));
  EXPECT_THAT(r.err, HasSubstr("(tolerated: 1 of " + std::to_string(c.tolerable) + " consecutive failures)"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("(\\d+) completed, (\\d+) failed"))) << r.out;
  EXPECT_GE(std::stoi(m[2]), 1) << r.out;
  std::set<uint64_t> failed = FailedIds(r.err, "a task declined the checkpoint");
  std::set<uint64_t> metadata_failed = FailedIds(r.err, "the checkpoint metadata could not be written");
  failed.insert(metadata_failed.begin(), metadata_failed.end());
  EXPECT_FALSE(failed.empty()) << r.err;
  for (uint64_t id : failed)
    EXPECT_FALSE(std::filesystem::exists(run.ck() + "/chk-" + std::to_string(id))) << "failed checkpoint " << id;
  ExpectOnlyCompletedCheckpoints(run.ck());
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
  // `cairn checkpoints` lists the failed ones with their reasons; its --json only with --all.
  RunResult list = RunCairn({"checkpoints", run.ck()});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (uint64_t id : failed)
    EXPECT_THAT(list.out, ::testing::ContainsRegex("id=" + std::to_string(id) +
                                                   " status=failed kind=checkpoint trigger_time=[^ ]+ duration_ms=[0-9]+ "
                                                   "reason=.*injected by CAIRN_STORAGE_FAULT"))
        << list.out;
  RunResult json = RunCairn({"checkpoints", run.ck(), "--json"});
  EXPECT_THAT(json.out, ::testing::Not(HasSubstr("\"failed\""))) << json.out;
  RunResult json_all = RunCairn({"checkpoints", run.ck(), "--json", "--all"});
  for (uint64_t id : failed)
    EXPECT_THAT(json_all.out, HasSubstr("{\"id\":" + std::to_string(id) + ",\"status\":\"failed\",\"kind\":\"checkpoint\""))
        << json_all.out;
  EXPECT_THAT(json_all.out, HasSubstr("\"status\":\"completed\""));
}

INSTANTIATE_TEST_SUITE_P(
    Faults, TolerableStorageFaultTest,
    // The faults start at the first checkpoints, so that they come even when slow fsyncs leave
    // time for few checkpoints (a failed final checkpoint is retried).
    ::testing::Values(TolerableCase{"OperatorStateNoSpace", "enospc:operator.state:2:3", 3},
                      TolerableCase{"KeyedStateIoError", "eio:keyed:1:2", 2},
                      TolerableCase{"MetadataIoError", "eio:_metadata:1:2", 2},
                      TolerableCase{"ChannelStateNoSpace", "enospc:channel.state:0:2", 2, true},
                      // The persister's one deferred fsync of a subtask directory (DeferredSyncs).
                      TolerableCase{"SubtaskDirectoryFsyncIoError", "eio:sink-0/.:1:2", 2}),
    [](const ::testing::TestParamInfo<TolerableCase>& info) { return std::string(info.param.name); });

TEST(StorageFaultTest, FailuresBeyondTolerableFailTheJobNamingTheReasonAndARestoreIsExactlyOnce) {
  StorageFaultRun run(false, "600000", 500);  // a minute at this pace: the failures come long before
  run.Set("checkpoint.tolerable_failures=2");
  RunResult r = run.Run({"CAIRN_STORAGE_FAULT=eio:_metadata:3:all"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the checkpoint metadata could not be written"));
  EXPECT_THAT(r.err, HasSubstr("3 consecutive failures exceed checkpoint.tolerable_failures = 2"));
  EXPECT_THAT(r.err, HasSubstr("Input/output error (injected by CAIRN_STORAGE_FAULT)"));

  RunResult restored = run.Run({}, /*restore=*/true);
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_THAT(restored.out, HasSubstr("(restored from checkpoint 3)"));
  ExpectOnlyCompletedCheckpoints(run.ck());
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

TEST(StorageFaultTest, ZeroTolerableFailuresFailTheJobAtTheFirstFailure) {
  StorageFaultRun run(false);
  run.Set("checkpoint.tolerable_failures=0");
  RunResult r = run.Run({"CAIRN_STORAGE_FAULT=enospc:operator.state:4"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("a task declined the checkpoint"));
  EXPECT_THAT(r.err, HasSubstr("No space left on device (injected by CAIRN_STORAGE_FAULT)"));
  EXPECT_THAT(r.err, HasSubstr("1 consecutive failures exceed checkpoint.tolerable_failures = 0"));
  RunResult restored = run.Run({}, /*restore=*/true);
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

TEST(StorageFaultTest, SlowStoragePastTheTimeoutExpiresTheCheckpointAndRemovesItsDirectory) {
  StorageFaultRun run(false, "300000");
  // Generous margins: on a loaded machine an ordinary checkpoint's fsyncs can take a second.
  run.Set("checkpoint.timeout=1500ms");
  run.Set("checkpoint.tolerable_failures=50");
  RunResult r = run.Run({"CAIRN_STORAGE_FAULT=slow=3000:operator.state:2:1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<uint64_t> expired = FailedIds(r.err, "the checkpoint expired before completing \\(checkpoint.timeout\\)");
  ASSERT_FALSE(expired.empty()) << r.err;
  for (uint64_t id : expired)
    EXPECT_FALSE(std::filesystem::exists(run.ck() + "/chk-" + std::to_string(id))) << "expired checkpoint " << id;
  ExpectOnlyCompletedCheckpoints(run.ck());
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

}  // namespace
}  // namespace cairn::testing
