// Savepoints and the REST API of a running job (`cairn run --http`), end to end: the job runs
// as a child process with a paced source (so that it is still running when each request
// arrives) on a port it picks itself and prints; every wait polls the API for a condition,
// bounded only by a generous hang guard.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "state/checkpoint_metadata.h"
#include "tests/rest_job.h"
#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace fs = std::filesystem;


class SavepointRestTest : public RestJobTest {
 protected:
  void SetUp() override {
    RunResult gen = RunCairn({"generate", "--out", input(), "--words", "200000", "--vocabulary", "1000"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
  }
  std::string input() const { return dir_ / "input.txt"; }
  std::string ck() const { return dir_ / "ck"; }
  std::string out() const { return dir_ / "out"; }

  std::vector<std::string> JobArgs(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"run", job_yaml_, "--quiet",
                                     "--set", "operators.source.path=" + input(),
                                     "--set", "operators.sink.path=" + out(),
                                     "--set", "checkpoint.dir=" + ck(),
                                     "--set", "checkpoint.interval=50ms",
                                     "--set", "state.backend=rocksdb"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Starts the paced job with --http 127.0.0.1:0.
  void StartJob(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = JobArgs({"--set", "operators.source.rate=200", "--http", "127.0.0.1:0"});
    args.insert(args.end(), extra.begin(), extra.end());
    StartWith(args);
  }

  static void ExpectSelfContainedSavepoint(const std::string& path) {
    CheckpointMetadata m;
    ASSERT_TRUE(ReadMetadata(path, &m).ok()) << path;
    EXPECT_EQ(m.kind, "savepoint");
    EXPECT_THAT(fs::path(path).filename().string(), ::testing::MatchesRegex("savepoint-[0-9]+-[0-9]{8}T[0-9]{6}Z"));
    bool any_keyed_file = false;
    for (const auto& e : fs::recursive_directory_iterator(path)) {
      EXPECT_NE(e.path().filename(), "SHARED") << "a savepoint references shared files: " << e.path();
      any_keyed_file |= e.path().extension() == ".sst";
    }
    EXPECT_TRUE(any_keyed_file) << "no RocksDB file copied into " << path;
  }

  std::string job_yaml_ = SourceDir() + "/jobs/wordcount.yaml";
};

TEST_F(SavepointRestTest, SavepointStopAndRestoreAtAnotherParallelismIsExactlyOnce) {
  StartJob();
  json job = Get("/api/job");
  EXPECT_EQ(job["name"], "wordcount");
  EXPECT_EQ(job["state"], "running");
  EXPECT_TRUE(job["restored_from"].is_null());
  ASSERT_TRUE(job["operators"].is_array());
  ASSERT_EQ(job["operators"].size(), 2u);
  EXPECT_EQ(job["operators"][0]["parallelism"], 2);
  EXPECT_EQ(job["operators"][0]["subtasks"].size(), 2u);
  EXPECT_TRUE(job["operators"][0]["subtasks"][0]["backpressured_time_ms_per_second"].is_number());
  EXPECT_TRUE(job["operators"][0]["subtasks"][0]["watermark"].is_null());  // no watermark: in this job
  EXPECT_EQ(job["restarts"], 0);
  WaitForCompletedCheckpoint();

  // A savepoint on the running job: self-contained, listed with its kind.
  json sp = Post("/api/savepoints", json{{"dir", dir_ / "sp"}}.dump());
  ASSERT_TRUE(sp.contains("path")) << sp.dump();
  const std::string first = sp["path"];
  ExpectSelfContainedSavepoint(first);
  json detail = Get("/api/checkpoints/" + std::to_string(sp["id"].get<uint64_t>()));
  EXPECT_EQ(detail["kind"], "savepoint");
  EXPECT_EQ(detail["status"], "completed");
  EXPECT_EQ(detail["path"], first);
  EXPECT_EQ(detail["subtasks"].size(), 8u);  // 4 operators x parallelism 2
  json cps = Get("/api/checkpoints");
  EXPECT_EQ(cps["counts"]["failed"], 0);
  EXPECT_TRUE(cps["latest_completed"].is_object());
  // Once checkpoint.history (10) newer checkpoints pushed it out of the history, the savepoint
  // is still the latest one, with its detail.
  const uint64_t sp_id = sp["id"].get<uint64_t>();
  ASSERT_TRUE(PollUntil([&] {
    cps = Get("/api/checkpoints");
    if (!cps["history"].is_array() || cps["history"].empty()) return false;
    for (const json& r : cps["history"])
      if (r["id"].get<uint64_t>() <= sp_id) return false;
    return true;
  })) << cps.dump();
  EXPECT_EQ(cps["latest_savepoint"]["id"], sp_id);
  EXPECT_EQ(cps["latest_savepoint"]["path"], first);
  detail = Get("/api/checkpoints/" + std::to_string(sp_id));
  EXPECT_EQ(detail["kind"], "savepoint");
  EXPECT_EQ(detail["subtasks"].size(), 8u);

  // Prometheus text: counters per operator and subtask, the duration histogram.
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("# TYPE cairn_records_in_total counter\ncairn_records_in_total{operator=\"source+tokenize\",subtask=\"0\"} "));
  EXPECT_THAT(metrics->body, HasSubstr("# TYPE cairn_checkpoint_duration_seconds histogram"));
  EXPECT_THAT(metrics->body, HasSubstr("cairn_checkpoint_duration_seconds_bucket{le=\"+Inf\"} "));
  EXPECT_THAT(metrics->body, HasSubstr("cairn_checkpoints_failed_total 0\n"));

  // cairn stop: a final savepoint, then the job ends with exit 0.
  RunResult stop = RunCairn({"stop", url_, "--savepoint", dir_ / "sp-stop"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  const std::string last = stop.out.substr(0, stop.out.find('\n'));
  ExpectSelfContainedSavepoint(last);
  RunResult run = WaitJob();
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("stopped with savepoint " + last));
  EXPECT_TRUE(fs::exists(first)) << "retention removed a savepoint";

  // Self-contained: moved elsewhere, checkpoint.dir gone, restored at parallelism 3 and by the
  // other state backend.
  const std::string moved = dir_ / "moved-savepoint";
  fs::rename(last, moved);
  fs::remove_all(ck());
  RunResult resumed = RunCairn(JobArgs({"--restore", moved, "--set", "parallelism=3", "--set", "state.backend=heap"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("restored from checkpoint"));
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
}

// The backpressure job: its throttle (a FlowControlled operator, its own task) passes 5000
// records/s, far below what the count chain produces from the unpaced source, so the channels
// into it fill and the count chain waits on them: the API and the metrics show the time it is
// blocked. (200000 words: more than the channels between them hold, 2 x 16 batches.)
TEST_F(SavepointRestTest, BackpressureShowsOnTheTaskBlockedByASlowOperator) {
  job_yaml_ = SourceDir() + "/jobs/wordcount-backpressure.yaml";
  StartJob({"--set", "operators.source.rate=0", "--set", "operators.throttle.rate=5000"});
  // Upstream of it the source chain may wait on the count in turn; the count must.
  std::set<std::string> blocked;
  ASSERT_TRUE(PollUntil([&] {
    json job = Get("/api/job");
    if (!job.is_object()) return false;
    for (const json& op : job["operators"])
      for (const json& st : op["subtasks"])
        if (st["backpressured_time_ms_per_second"].get<double>() > 0) blocked.insert(op["id"].get<std::string>());
    return blocked.count("count") > 0;
  })) << "the count never backpressured";
  for (const std::string& op : blocked) EXPECT_NE(op.rfind("throttle", 0), 0u) << "the throttle's own task has room";
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  const std::string body = metrics->body;
  const std::regex count_bp("cairn_backpressured_seconds_total\\{operator=\"count\",subtask=\"[01]\"\\} ([0-9.e+-]+)");
  double total = 0;
  int lines = 0;
  for (std::sregex_iterator it(body.begin(), body.end(), count_bp); it != std::sregex_iterator(); ++it, ++lines)
    total += std::stod((*it)[1].str());
  EXPECT_EQ(lines, 2) << body;
  EXPECT_GT(total, 0) << body;
  job_->Kill();
}

TEST_F(SavepointRestTest, BadRequestsGetJsonErrorsAndDrainStopsWithAFinalSavepoint) {
  StartJob();
  EXPECT_TRUE(Get("/api/checkpoints")["latest_savepoint"].is_null());  // none taken yet
  json e = Get("/api/nothing-here", 404);
  EXPECT_TRUE(e.contains("error")) << e.dump();
  e = Get("/api/checkpoints/999999", 404);
  EXPECT_THAT(e["error"].get<std::string>(), HasSubstr("999999"));
  e = Post("/api/savepoints", "not json", 400);
  EXPECT_THAT(e["error"].get<std::string>(), HasSubstr("JSON object"));
  e = Post("/api/savepoints", R"({"directory": "x"})", 400);
  EXPECT_THAT(e["error"].get<std::string>(), HasSubstr("unknown field \"directory\""));
  e = Post("/api/stop", R"({"drain": "yes"})", 400);
  EXPECT_THAT(e["error"].get<std::string>(), HasSubstr("drain"));
  RunResult bad = RunCairn({"savepoint", "http://127.0.0.1:1"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  RunResult usage = RunCairn({"stop"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.err, HasSubstr("missing JOB_URL"));

  // --drain: the sources end their input, the final checkpoint is the savepoint.
  RunResult stop = RunCairn({"stop", url_, "--drain"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  const std::string path = stop.out.substr(0, stop.out.find('\n'));
  EXPECT_EQ(fs::path(path).parent_path(), fs::path(ck()) / "savepoints");  // the default target
  CheckpointMetadata m;
  ASSERT_TRUE(ReadMetadata(path, &m).ok());
  EXPECT_EQ(m.kind, "savepoint");
  EXPECT_TRUE(m.sources_finished);
  RunResult run = WaitJob();
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

// Runs `binary args...` to its end, stdout and stderr through files in `dir`.
RunResult RunProgram(const std::string& binary, const std::vector<std::string>& args, const std::string& dir) {
  fs::remove(dir + "/prog.out");
  fs::remove(dir + "/prog.err");
  CairnProcess p(args, dir + "/prog.out", dir + "/prog.err", {}, binary);
  RunResult r;
  if (!p.Wait(120000, &r)) p.Kill();
  r.out = ReadText(dir + "/prog.out");
  r.err = ReadText(dir + "/prog.err");
  return r;
}

// The web page at GET /, rendered by headless Chromium against the running job: the checkpoint
// table fills from the API, and a screenshot is taken. Skipped (with a message) only where no
// Chromium is installed (scripts/install-deps installs Debian's `chromium`).
TEST_F(SavepointRestTest, WebPageRendersTheJobAndItsCheckpointsInHeadlessChromium) {
  std::string chromium;
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (fs::exists(c)) chromium = c;
  if (chromium.empty()) GTEST_SKIP() << "no Chromium installed (apt-get install chromium): the page is not rendered";
  StartJob();
  WaitForCompletedCheckpoint();
  auto page = client_->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_THAT(page->get_header_value("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(page->body, ::testing::Not(HasSubstr("http")));  // nothing loaded from elsewhere

  const std::vector<std::string> base = {"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                         "--user-data-dir=" + (dir_ / "chromium-profile"),
                                         "--virtual-time-budget=3000", "--window-size=1000,900"};
  // The page fetches the API once a second; render until its table shows a completed checkpoint.
  std::string dom;
  ASSERT_TRUE(PollUntil([&] {
    std::vector<std::string> args = base;
    args.push_back("--dump-dom");
    args.push_back(url_ + "/");
    RunResult r = RunProgram(chromium, args, dir_.path());
    dom = r.out;
    return r.exit_code == 0 && dom.find("<tr class=\"completed\"><td>") != std::string::npos;
  })) << dom;
  EXPECT_THAT(dom, HasSubstr("Cairn job <span id=\"name\">wordcount</span>"));
  EXPECT_THAT(dom, HasSubstr("<div class=\"op\"><b>source+tokenize</b><br>parallelism 2"));
  EXPECT_THAT(dom, HasSubstr("<div class=\"op\"><b>count+sink</b><br>parallelism 2"));
  EXPECT_THAT(dom, ::testing::ContainsRegex("<td>checkpoint</td><td>completed</td>"));
  EXPECT_THAT(dom, HasSubstr("<polyline"));  // the throughput chart

  std::vector<std::string> args = base;
  args.push_back("--screenshot=" + (dir_ / "page.png"));
  args.push_back(url_ + "/");
  RunResult shot = RunProgram(chromium, args, dir_.path());
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(fs::exists(dir_ / "page.png"));
  EXPECT_GT(fs::file_size(dir_ / "page.png"), 20000u) << "a blank page?";  // a rendered 1000x900 page with tables

  RunResult stop = RunCairn({"stop", url_});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(WaitJob().exit_code, 0);
}

}  // namespace
}  // namespace cairn::testing
