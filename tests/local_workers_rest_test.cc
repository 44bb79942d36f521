// The REST API, progress lines and test hooks with worker processes (jobs/cli/cluster.h): the
// word count on `cairn run --local-workers 2 --http 127.0.0.1:0`, its fields as in one process
// (the per-task counters from the workers' heartbeats), a savepoint and `cairn stop` through
// the coordinator, then a restore from the stop's savepoint on worker processes, exactly once;
// `stop --drain`; a slow subtask in a worker, seen as backpressure upstream; an injected task
// failure in a worker process restarting the generation, exactly once; bad hook values refused
// with exit 2 before anything is written. Every wait polls a condition, bounded only by a
// generous hang guard.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "engine/base/file_util.h"
#include "state/checkpoint_metadata.h"
#include "tests/rest_job.h"
#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class LocalWorkersRest : public RestJobTest {
 protected:
  void SetUp() override {
    RunResult gen = RunCairn({"generate", "--out", input(), "--words", "100000", "--vocabulary", "1000", "--seed", "5"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
  }
  std::string input() const { return dir_ / "input.txt"; }
  std::string ck() const { return dir_ / "ck"; }
  std::string out() const { return dir_ / "out"; }

  std::vector<std::string> Args(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"run", SourceDir() + "/jobs/wordcount.yaml", "--local-workers", "2",
                                     "--set", "operators.source.path=" + input(),
                                     "--set", "operators.sink.path=" + out(),
                                     "--set", "checkpoint.dir=" + ck(),
                                     "--set", "checkpoint.interval=50ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // The paced job (200 lines/s per source subtask: it runs until stopped) with --http on a
  // port it picks; not --quiet, with progress lines every 100 ms.
  void StartJob() {
    StartWith(Args({"--set", "operators.source.rate=200", "--http", "127.0.0.1:0", "--progress-interval", "100ms"}));
  }
};

TEST_F(LocalWorkersRest, SavepointAndStopThroughTheCoordinatorThenARestoreIsExactlyOnce) {
  StartJob();
  // The per-task counters come from the workers: every subtask of both chains reads records.
  json job;
  ASSERT_TRUE(PollUntil([&] {
    job = Get("/api/job");
    if (!job.is_object() || !job["operators"].is_array() || job["operators"].size() != 2) return false;
    for (const json& op : job["operators"])
      for (const json& st : op["subtasks"])
        if (st["records_in"].get<uint64_t>() == 0) return false;
    return true;
  })) << job.dump();
  EXPECT_EQ(job["name"], "wordcount");
  EXPECT_EQ(job["state"], "running");
  EXPECT_EQ(job["restarts"], 0);
  EXPECT_TRUE(job["restored_from"].is_null());
  EXPECT_EQ(job["operators"][0]["id"], "source+tokenize");
  EXPECT_EQ(job["operators"][0]["source"], true);
  EXPECT_EQ(job["operators"][0]["parallelism"], 2);
  for (const char* field : {"subtask", "records_in", "records_out", "records_in_per_second", "records_out_per_second",
                            "backpressured_time_ms_per_second", "watermark"})
    EXPECT_TRUE(job["operators"][1]["subtasks"][0].contains(field)) << field;
  WaitForCompletedCheckpoint();

  // A savepoint through the coordinator's CheckpointCoordinator: committed, listed with its kind.
  RunResult sp = RunCairn({"savepoint", url_, "--dir", dir_ / "sp"});
  ASSERT_EQ(sp.exit_code, 0) << sp.err;
  const std::string first = sp.out.substr(0, sp.out.find('\n'));
  CheckpointMetadata m;
  ASSERT_TRUE(ReadMetadata(first, &m).ok()) << first;
  EXPECT_EQ(m.kind, "savepoint");
  // The detail of the latest savepoint is kept even once the history (10 checkpoints, a 50 ms
  // interval) has moved past it.
  EXPECT_EQ(Get("/api/checkpoints")["latest_savepoint"]["id"], m.id);
  json detail = Get("/api/checkpoints/" + std::to_string(m.id));
  EXPECT_EQ(detail["kind"], "savepoint");
  EXPECT_EQ(detail["status"], "completed");
  EXPECT_EQ(detail["subtasks"].size(), 8u);  // 4 operators x parallelism 2, acknowledged by the workers
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body,
              HasSubstr("cairn_records_in_total{operator=\"count+sink\",subtask=\"1\"} "));
  EXPECT_THAT(metrics->body, HasSubstr("cairn_checkpoint_duration_seconds_bucket{le=\"+Inf\"} "));
  auto page = client_->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);

  // cairn stop: a final savepoint, then the job (coordinator and workers) ends with exit 0.
  RunResult stop = RunCairn({"stop", url_, "--savepoint", dir_ / "sp-stop"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  const std::string last = stop.out.substr(0, stop.out.find('\n'));
  RunResult run = WaitJob();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("stopped with savepoint " + last));
  // The progress lines of `cairn run`, from the workers' counters.
  EXPECT_TRUE(std::regex_search(run.err, std::regex("cairn: +[0-9.]+s  source records +[1-9][0-9]*  sink records")))
      << run.err;

  // Restored from the stop's savepoint on worker processes, to the end: exactly once.
  RunResult resumed = RunCairn(Args({"--quiet", "--restore", last}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
}

TEST_F(LocalWorkersRest, StopWithDrainEndsTheSourcesAndTheFinalCheckpointIsTheSavepoint) {
  StartJob();
  WaitForCompletedCheckpoint();
  RunResult stop = RunCairn({"stop", url_, "--drain"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  const std::string path = stop.out.substr(0, stop.out.find('\n'));
  EXPECT_EQ(fs::path(path).parent_path(), fs::path(ck()) / "savepoints");  // the default target
  CheckpointMetadata m;
  ASSERT_TRUE(ReadMetadata(path, &m).ok()) << path;
  EXPECT_EQ(m.kind, "savepoint");
  EXPECT_TRUE(m.sources_finished);
  RunResult run = WaitJob();
  EXPECT_EQ(run.exit_code, 0) << run.err;
  // After the job ended the API is gone with the process: `cairn stop` then says so (exit 2).
  EXPECT_EQ(RunCairn({"stop", url_}).exit_code, 2);
}

// CAIRN_INJECT_FAILURE reaches the worker processes: the count's subtask 0 fails after 3000
// records in the first generation; restart: deploys generation 2 from the latest checkpoint,
// which runs without a failure, and the output is exactly once.
TEST_F(LocalWorkersRest, AnInjectedFailureInAWorkerRestartsTheGenerationExactlyOnce) {
  RunResult r = RunCairn(Args({"--set", "restart.strategy=fixed_delay", "--set", "restart.delay=0ms", "--set",
                               "operators.source.rate=5000"}),
                         {"CAIRN_INJECT_FAILURE=count:3000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("injected failure (CAIRN_INJECT_FAILURE) after"));
  EXPECT_THAT(r.err, HasSubstr("generation 2: deployed"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("generation 3: deployed")));
  ExpectExactlyOnce(out(), ExpectedCounts(input()), false);
}

// CAIRN_SLOW_SUBTASK reaches the worker processes: the count's subtask 0 sleeps 50 ms before
// each batch (the paced source sends small batches, far more than 20 a second), so the channels into it fill and the tokenizers (on both workers) wait on them;
// the REST API shows that time, from the counters the workers send with their heartbeats.
TEST_F(LocalWorkersRest, ASlowSubtaskInAWorkerShowsAsBackpressureUpstream) {
  StartWith(Args({"--quiet", "--http", "127.0.0.1:0", "--set", "operators.source.rate=200"}),
            {"CAIRN_SLOW_SUBTASK=count:0:50000"});
  json job;
  ASSERT_TRUE(PollUntil([&] {
    job = Get("/api/job");
    if (!job.is_object() || !job["operators"].is_array() || job["operators"].empty()) return false;
    for (const json& st : job["operators"][0]["subtasks"])
      if (st["backpressured_time_ms_per_second"].get<double>() > 0) return true;
    return false;
  })) << "the tokenizers never backpressured: " << job.dump();
  EXPECT_EQ(job["operators"][0]["id"], "source+tokenize");
  job_->Kill();  // the workers die with the coordinator (PR_SET_PDEATHSIG)
}

TEST_F(LocalWorkersRest, BadHookValuesAndABadHttpAddressExitTwoBeforeAnythingIsWritten) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"CAIRN_INJECT_FAILURE=nope:10", "the job has no operator 'nope'"},
      {"CAIRN_INJECT_FAILURE=count:0", "is not a number of records > 0"},
      {"CAIRN_SLOW_SUBTASK=count:7:100", "'7' is not a subtask of 'count'"},
  };
  for (const auto& [env, message] : bad) {
    RunResult r = RunCairn(Args({}), {env});
    EXPECT_EQ(r.exit_code, 2) << env << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(message));
    EXPECT_FALSE(PathExists(ck())) << env;
    EXPECT_FALSE(PathExists(out())) << env;
  }
  RunResult r = RunCairn(Args({"--http", "127.0.0.1:notaport"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--http 127.0.0.1:notaport"));
  EXPECT_FALSE(PathExists(ck()));
}

}  // namespace
}  // namespace cairn::testing
