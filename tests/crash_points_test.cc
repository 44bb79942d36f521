// Every crash point (engine/base/crash_points.h), once: the word count is run with
// CAIRN_CRASH_AT=<point>:<n>, must die by SIGKILL there (a point that is never reached fails the
// test), and is then restarted with `--restore latest` until it completes. The committed output
// must hold every word's counts 1..n exactly once, the restart must resume from the newest
// completed checkpoint, and the incomplete checkpoints the crash left must be gone.
//
// The scenarios are keyed by name and the test is instantiated over kCrashPoints itself, so a
// new crash point without a scenario fails here until one is added.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "engine/base/crash_points.h"
#include "tests/test_util.h"
#include "tests/tree_snapshot.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

struct CrashScenario {
  const char* point;
  int n;                            // crash the n-th time the point is reached
  bool backpressure = false;        // jobs/wordcount-backpressure.yaml with unaligned checkpoints
  std::vector<std::string> sets = {};  // extra --set overrides
  bool during_restore = false;      // crash at checkpoint.committed:3 first, then at the point while restoring
  const char* job = nullptr;        // another job of jobs/ with the word count's operator ids
};

// Hits per checkpoint of the word count (parallelism 2, chains source+tokenize and count+sink):
// source.barrier_injected 2, task.sync_snapshot 4, persist.keyed 2, persist.shared_listed 2,
// persist.operator_state 4
// (sources and sinks), the metadata and commit points 1, sink.commit up to 2, retention.cleanup
// 1 with retain=1, retention.shared about 2 with retain=1 (the files only the removed
// checkpoint listed). An n of 2-5 crashes within the first checkpoints of a run of a second.
const CrashScenario kScenarios[] = {
    {"source.barrier_injected", 3},
    {"task.sync_snapshot", 5},
    {"persist.keyed", 3},
    {"persist.shared_listed", 3},
    {"persist.operator_state", 5},
    // jobs/wordcount-rebalance.yaml: 3 tokenize subtasks close a record per checkpoint.
    {"rebalance.recording_closed", 5, false, {}, false, "/jobs/wordcount-rebalance.yaml"},
    {"persist.channel_state", 1, true},
    {"metadata.before_commit", 3},
    {"metadata.tmp_written", 3},
    {"metadata.renamed", 3},
    {"checkpoint.committed", 3},
    {"sink.commit", 3},
    {"retention.cleanup", 2, false, {"checkpoint.retain=1"}},
    {"retention.shared", 2, false, {"checkpoint.retain=1"}},
    {"restore.midway", 1, false, {}, true},
    // Changelog checkpoints (state.changelog), materialized every 50 ms.
    {"persist.changelog_written", 3, false, {"state.changelog=true", "state.materialize_interval=50ms"}},
    {"materialize.compacted", 2, false, {"state.changelog=true", "state.materialize_interval=50ms"}},
    {"materialize.staged", 2, false, {"state.changelog=true", "state.materialize_interval=50ms"}},
};

// The points of the keyed-state protocol again with changelog checkpoints: the SHARED list of
// a materialization and segments, their collection, and a restore from them.
const CrashScenario kChangelogScenarios[] = {
    {"persist.shared_listed", 3, false, {"state.changelog=true", "state.materialize_interval=50ms"}},
    {"retention.shared", 2, false, {"checkpoint.retain=1", "state.changelog=true", "state.materialize_interval=50ms"}},
    {"restore.midway", 1, false, {"state.changelog=true", "state.materialize_interval=50ms"}, true},
};

const CrashScenario* FindScenario(const std::string& point) {
  for (const CrashScenario& s : kScenarios)
    if (point == s.point) return &s;
  return nullptr;
}

// chk-<id> directories below `ck`, split by whether _metadata exists.
void CheckpointDirs(const std::string& ck, std::set<uint64_t>* complete, std::set<std::string>* incomplete) {
  namespace fs = std::filesystem;
  complete->clear();
  incomplete->clear();
  if (!fs::exists(ck)) return;
  for (const auto& e : fs::directory_iterator(ck)) {
    std::string name = e.path().filename().string();
    if (name.rfind("chk-", 0) != 0 || !e.is_directory()) continue;
    if (fs::exists(e.path() / "_metadata")) {
      complete->insert(std::stoull(name.substr(4)));
    } else {
      incomplete->insert(name);
    }
  }
}

// Runs the scenario: crash, restart until complete, check the output and the checkpoints left.
void CrashThenRestore(const CrashScenario* sc) {
  const std::string point = sc->point;

  ScratchDir dir;
  const std::string input = dir / "input.txt";
  // Under backpressure the source reads ahead into full channels (about 260000 records) and
  // checkpoints are unaligned only until it has read everything: give it more than that.
  // Otherwise the source is paced (10000 words/s, a minute for the input) so that the crash comes
  // long before the end even on a loaded machine with slow fsyncs; the restarts lift the pace.
  const std::string words = "600000";
  RunResult gen = RunCairn({"generate", "--out", input, "--words", words, "--vocabulary", "2000", "--seed", "17"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::vector<std::string> args = {"run", SourceDir() + (sc->job != nullptr ? sc->job
                                                         : sc->backpressure ? "/jobs/wordcount-backpressure.yaml"
                                                                            : "/jobs/wordcount.yaml"),
                                   // Not --quiet: the restore's note names the checkpoint chosen.
                                   "--progress-interval", "1h",
                                   "--set", "operators.source.path=" + input,
                                   "--set", "operators.sink.path=" + dir / "out",
                                   "--set", "checkpoint.dir=" + dir / "ck",
                                   "--set", "checkpoint.interval=20ms"};
  if (sc->backpressure) {
    // 20000 records/s per throttle subtask: the source needs about 8 s for what does not fit
    // into the channels, time for many unaligned checkpoints even on a loaded machine.
    args.insert(args.end(), {"--set", "checkpoint.mode=unaligned", "--set", "operators.throttle.rate=20000"});
  } else {
    args.insert(args.end(), {"--set", "operators.source.rate=500"});
  }
  for (const std::string& s : sc->sets) args.insert(args.end(), {"--set", s});
  std::vector<std::string> restore_args = args;
  restore_args.insert(restore_args.end(), {"--restore", "latest", "--set", "operators.source.rate=0"});
  if (sc->backpressure) restore_args.insert(restore_args.end(), {"--set", "operators.throttle.rate=1000000"});

  const std::string crash = point + ":" + std::to_string(sc->n);
  RunResult r;
  if (sc->during_restore) {
    r = RunCairn(args, {"CAIRN_CRASH_AT=checkpoint.committed:3"});
    ASSERT_EQ(r.signal, SIGKILL) << "the first run was to crash at checkpoint.committed:3; exit " << r.exit_code
                                 << "\n" << r.err;
    r = RunCairn(restore_args, {"CAIRN_CRASH_AT=" + crash});
    EXPECT_NE(r.err.find("restoring from checkpoint"), std::string::npos) << r.err;
  } else {
    r = RunCairn(args, {"CAIRN_CRASH_AT=" + crash});
  }
  ASSERT_EQ(r.signal, SIGKILL) << "CAIRN_CRASH_AT=" << crash << " was never reached: exit " << r.exit_code << "\n"
                               << r.err;

  std::set<uint64_t> complete;
  std::set<std::string> incomplete;
  CheckpointDirs(dir / "ck", &complete, &incomplete);
  for (int attempt = 0; attempt < 3; ++attempt) {
    // Without a completed checkpoint --restore latest fails closed; then the job starts over.
    r = RunCairn(ResumeArgs(restore_args));
    if (attempt == 0 && !complete.empty()) {
      EXPECT_NE(r.err.find("restoring from checkpoint " + std::to_string(*complete.rbegin()) + " "), std::string::npos)
          << "the restart must resume from the newest completed checkpoint\n" << r.err;
    }
    if (r.signal == 0) break;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectExactlyOnce(dir / "out", ExpectedCounts(input));
  // Removed at start-up; a fresh start may then reuse the id for a checkpoint of its own.
  for (const std::string& name : incomplete) {
    const std::string path = dir / "ck/" + name;
    EXPECT_TRUE(!std::filesystem::exists(path) || std::filesystem::exists(path + "/_metadata"))
        << "incomplete checkpoint " << name << " left by the crash was not removed";
  }
}

class CrashPointTest : public ::testing::TestWithParam<int> {};

TEST_P(CrashPointTest, CrashThenRestoreLatestGivesExactlyOnceCounts) {
  const std::string point = kCrashPoints[GetParam()].name;
  const CrashScenario* sc = FindScenario(point);
  ASSERT_NE(sc, nullptr) << "no scenario for crash point " << point << ": add one to kScenarios";
  CrashThenRestore(sc);
}

class ChangelogCrashPointTest : public ::testing::TestWithParam<int> {};

TEST_P(ChangelogCrashPointTest, CrashThenRestoreLatestGivesExactlyOnceCounts) {
  CrashThenRestore(&kChangelogScenarios[GetParam()]);
}

INSTANTIATE_TEST_SUITE_P(Changelog, ChangelogCrashPointTest,
                         ::testing::Range(0, static_cast<int>(sizeof(kChangelogScenarios) / sizeof(kChangelogScenarios[0]))),
                         [](const ::testing::TestParamInfo<int>& info) {
                           std::string name = kChangelogScenarios[info.param].point;
                           for (char& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

std::string PointName(const ::testing::TestParamInfo<int>& info) {
  std::string name = kCrashPoints[info.param].name;
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

// A SIGTERM (or Ctrl-C) while the keyed state is restored cancels the job there, before any
// task starts: raised at restore.midway (one keyed subtask's state rebuilt, the other's still
// being read), it must end the run with exit 1 naming the signal and the checkpoint, leave the
// checkpoint it read and the committed output as they were and its working state removed; the
// next restore then completes exactly once.
TEST(CancelDuringRestore, ASignalStopsTheRestoreBeforeAnyTaskStartsAndTheNextRestoreIsExactlyOnce) {
  namespace fs = std::filesystem;
  for (const char* sig : {"TERM", "INT"}) {
    SCOPED_TRACE(std::string("SIG") + sig);
    ScratchDir dir;
    const std::string input = dir / "input.txt";
    RunResult gen = RunCairn({"generate", "--out", input, "--words", "600000", "--vocabulary", "2000", "--seed", "17"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    std::vector<std::string> args = {"run", SourceDir() + "/jobs/wordcount.yaml", "--progress-interval", "1h",
                                     "--set", "operators.source.path=" + input,
                                     "--set", "operators.sink.path=" + dir / "out",
                                     "--set", "checkpoint.dir=" + dir / "ck",
                                     "--set", "checkpoint.interval=20ms",
                                     "--set", "operators.source.rate=500"};
    RunResult r = RunCairn(args, {"CAIRN_CRASH_AT=checkpoint.committed:3"});
    ASSERT_EQ(r.signal, SIGKILL) << r.err;
    std::vector<std::string> restore_args = args;
    restore_args.insert(restore_args.end(), {"--restore", "latest", "--set", "operators.source.rate=0"});
    std::set<uint64_t> complete;
    std::set<std::string> incomplete;
    CheckpointDirs(dir / "ck", &complete, &incomplete);
    ASSERT_FALSE(complete.empty());
    const std::string latest = std::to_string(*complete.rbegin());
    const Tree checkpoint_before = TreeSnapshot(dir / "ck/chk-" + latest);
    const Tree out_before = TreeSnapshot(dir / "out");

    r = RunCairn(restore_args, {"CAIRN_CRASH_AT=restore.midway", std::string("CAIRN_CRASH_SIGNAL=") + sig});
    EXPECT_EQ(r.signal, 0) << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const std::string signo = std::to_string(std::string(sig) == "TERM" ? SIGTERM : SIGINT);
    EXPECT_NE(r.err.find("interrupted by signal " + signo + " during the restore of checkpoint " + latest + " "),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("processing starts"), std::string::npos) << "no task may start\n" << r.err;
    EXPECT_EQ(r.out.find("records"), std::string::npos) << "no summary after a cancel\n" << r.out;
    EXPECT_TRUE(SameTree(checkpoint_before, TreeSnapshot(dir / "ck/chk-" + latest)));
    EXPECT_TRUE(SameTree(out_before, TreeSnapshot(dir / "out")));
    std::error_code ec;
    for (fs::directory_iterator it(dir / "ck/_work", ec), end; !ec && it != end; it.increment(ec))
      ADD_FAILURE() << "working state left behind: " << it->path();

    r = RunCairn(restore_args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("restoring from checkpoint " + latest + " "), std::string::npos) << r.err;
    ExpectExactlyOnce(dir / "out", ExpectedCounts(input));
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCrashPoint, CrashPointTest, ::testing::Range(0, kNumCrashPoints), PointName);

}  // namespace
}  // namespace cairn::testing
