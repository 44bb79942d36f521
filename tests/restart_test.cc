// Restarts fail closed and never silently duplicate output:
// - `--restore latest` without a restorable checkpoint (none, all damaged, all superseded) exits
//   2 with the reasons and changes nothing;
// - a start without `--restore` onto completed checkpoints or committed output exits 2 naming
//   them and the two ways on; `--fresh` starts over on purpose (the old checkpoints are kept,
//   unrestorable, until the new run completes one; the old output is set aside);
// - checkpoint.dir is locked before the checkpoint to restore is chosen;
// - restoring a checkpoint older than the newest committed output sets aside what was committed
//   after it, never reuses a part-file name, and is exactly-once, also after a crash before the
//   restored run's first checkpoint, and also when a restore at another parallelism came between;
// - a bad file_sink.path is found before anything on disk changes.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/tree_snapshot.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A word count that completed (after a crash at checkpoint 3 and a restore), with every
// checkpoint retained: chk-1..chk-K (K >= 4) and all output committed.
class CompletedRun : public ::testing::Test {
 protected:
  void SetUp() override {
    RunResult gen = RunCairn({"generate", "--out", input(), "--words", "100000", "--vocabulary", "1000", "--seed", "31"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    // Paced (10000 words/s, 10 s of input) and killed when checkpoint 3 commits, long before the
    // end; then resumed to completion unpaced: chk-1..3 and at least the final one exist.
    RunResult crashed = RunCairn(Args({"--set", "operators.source.rate=500"}), {"CAIRN_CRASH_AT=checkpoint.committed:3"});
    ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
    RunResult run = RunCairn(Args({"--restore", "latest"}));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_GE(CompletedIds().size(), 4u);
    ExpectExactlyOnce(out(), ExpectedCounts(input()));
  }

  std::string input() const { return dir_ / "input.txt"; }
  std::string ck() const { return dir_ / "ck"; }
  std::string out() const { return dir_ / "out"; }
  std::string chk(uint64_t id) const { return ck() + "/chk-" + std::to_string(id); }

  std::vector<std::string> Args(std::vector<std::string> extra) const {
    std::vector<std::string> a = {"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet",
                                  "--set", "operators.source.path=" + input(),
                                  "--set", "operators.sink.path=" + out(),
                                  "--set", "checkpoint.dir=" + ck(),
                                  "--set", "checkpoint.interval=20ms",
                                  "--set", "checkpoint.retain=1000"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::set<uint64_t> CompletedIds() const { return CompletedCheckpointIds(ck()); }
  // Committed (or set-aside) output files: regular files not starting with '.'.
  std::set<std::string> Names(const std::string& dir) const {
    std::set<std::string> names;
    if (!fs::exists(dir)) return names;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().filename().string()[0] != '.') names.insert(e.path().filename().string());
    return names;
  }
  Tree Trees() const {
    Tree all;
    for (const auto& [p, v] : TreeSnapshot(ck())) all["ck/" + p] = v;
    for (const auto& [p, v] : TreeSnapshot(out())) all["out/" + p] = v;
    return all;
  }

  ScratchDir dir_;
};

// ---- --restore latest without a restorable checkpoint ----------------------------------------

TEST(RestartTest, RestoreLatestWithoutACheckpointDirectoryExitsTwoAndCreatesNothing) {
  ScratchDir dir;
  WriteText(dir / "in.txt", "a b c\n");
  RunResult r = RunCairn({"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet", "--restore", "latest",
                          "--set", "operators.source.path=" + dir / "in.txt",
                          "--set", "operators.sink.path=" + dir / "out",
                          "--set", "checkpoint.dir=" + dir / "ck"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--restore latest: checkpoint.dir " + dir / "ck" + " does not exist"));
  EXPECT_THAT(r.err, HasSubstr("run without --restore"));
  EXPECT_FALSE(fs::exists(dir / "ck"));
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST_F(CompletedRun, RestoreLatestWithEveryCheckpointDamagedExitsTwoListingThemAndChangesNothing) {
  std::vector<std::string> metas;
  for (uint64_t id : CompletedIds()) {
    metas.push_back(chk(id) + "/_metadata");
    std::string bytes = ReadText(metas.back());
    WriteText(metas.back(), bytes.substr(0, bytes.size() / 2));
  }
  const Tree before = Trees();
  RunResult r = RunCairn(Args({"--restore", "latest"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--restore latest: no checkpoint in " + ck() + " can be restored"));
  for (const std::string& m : metas) EXPECT_THAT(r.err, HasSubstr("damaged: " + m + ": damaged (truncated"));
  EXPECT_THAT(r.out, Not(HasSubstr("completed")));
  EXPECT_TRUE(SameTree(before, Trees()));
}

TEST_F(CompletedRun, RestoreLatestInAnEmptyCheckpointDirectoryExitsTwoAndLeavesItEmpty) {
  const std::string empty = dir_ / "empty-ck";
  fs::create_directory(empty);
  RunResult r = RunCairn(Args({"--restore", "latest", "--set", "checkpoint.dir=" + empty,
                               "--set", "operators.sink.path=" + dir_ / "out2"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(empty + " holds no completed checkpoint"));
  EXPECT_TRUE(fs::is_empty(empty)) << "not even a _lock file may be left";
  EXPECT_FALSE(fs::exists(dir_ / "out2"));
}

// ---- a start without --restore onto earlier checkpoints or output ---------------------------

TEST_F(CompletedRun, AStartWithoutRestoreOntoCompletedCheckpointsExitsTwoNamingThemAndTheWaysOn) {
  const Tree before = Trees();
  RunResult r = RunCairn(Args({}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("completed checkpoint(s) in " + ck() + " (newest " + chk(*CompletedIds().rbegin()) + ")"));
  EXPECT_THAT(r.err, HasSubstr("committed output file(s) of operator 'sink' in " + out()));
  EXPECT_THAT(r.err, HasSubstr("--restore latest"));
  EXPECT_THAT(r.err, HasSubstr("--fresh"));
  EXPECT_TRUE(SameTree(before, Trees()));
}

TEST_F(CompletedRun, AStartWithoutRestoreOntoCommittedOutputAloneExitsTwo) {
  const Tree before = Trees();
  const std::string other_ck = dir_ / "other-ck";
  RunResult r = RunCairn(Args({"--set", "checkpoint.dir=" + other_ck}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("committed output file(s) of operator 'sink' in " + out() + " (such as " + out() + "/part-"));
  EXPECT_THAT(r.err, Not(HasSubstr("completed checkpoint(s)")));
  EXPECT_TRUE(SameTree(before, Trees()));
  EXPECT_FALSE(fs::exists(other_ck));
}

TEST_F(CompletedRun, FreshTogetherWithRestoreIsAUsageError) {
  const Tree before = Trees();
  RunResult r = RunCairn(Args({"--fresh", "--restore", "latest"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--fresh (start over) and --restore (resume) exclude each other"));
  EXPECT_THAT(r.err, HasSubstr("usage:"));
  EXPECT_TRUE(SameTree(before, Trees()));
}

TEST_F(CompletedRun, FreshStartsOverExactlyOnceKeepingTheOldCheckpointsUntilItHasItsOwn) {
  const std::set<uint64_t> old_ids = CompletedIds();
  const std::set<std::string> old_output = Names(out());
  Tree old_checkpoints;
  for (uint64_t id : old_ids)
    for (const auto& [p, v] : TreeSnapshot(chk(id))) old_checkpoints[std::to_string(id) + "/" + p] = v;

  // Crash before the fresh run's first checkpoint commits: the old checkpoints are all there,
  // untouched, but none may be restored any more (their output was set aside).
  RunResult crashed = RunCairn(Args({"--fresh", "--set", "operators.source.rate=500"}),
                               {"CAIRN_CRASH_AT=metadata.before_commit:1"});
  ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
  EXPECT_THAT(crashed.err, HasSubstr("--fresh: checkpoints up to " + std::to_string(*old_ids.rbegin())));
  Tree now;
  for (uint64_t id : old_ids)
    for (const auto& [p, v] : TreeSnapshot(chk(id))) now[std::to_string(id) + "/" + p] = v;
  EXPECT_TRUE(SameTree(old_checkpoints, now)) << "--fresh destroyed old checkpoints before it had its own";
  EXPECT_EQ(Names(out() + "/_superseded"), old_output) << "the old output is set aside, all of it";
  EXPECT_TRUE(Names(out()).empty()) << "nothing committed yet by the fresh run";

  RunResult latest = RunCairn(Args({"--restore", "latest"}));
  EXPECT_EQ(latest.exit_code, 2) << latest.err;
  EXPECT_THAT(latest.err, HasSubstr(chk(*old_ids.rbegin()) + ": superseded (abandoned by a --fresh start)"));
  RunResult old = RunCairn(Args({"--restore", chk(*old_ids.rbegin())}));
  EXPECT_EQ(old.exit_code, 2) << old.err;
  EXPECT_THAT(old.err, HasSubstr("is superseded"));

  // Nothing committed and no restorable checkpoint: a plain start is allowed; it completes
  // exactly once, and once it has checkpoints of its own the superseded ones are gone.
  RunResult r = RunCairn(Args({"--set", "checkpoint.retain=1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
  for (uint64_t id : CompletedIds()) EXPECT_GT(id, *old_ids.rbegin()) << "a fresh run numbers after the old ones";
  for (uint64_t id : old_ids)
    EXPECT_FALSE(fs::exists(chk(id))) << "superseded checkpoint " << id << " outlived checkpoint.retain";
  for (const std::string& n : Names(out())) EXPECT_EQ(old_output.count(n), 0u) << "reused name " << n;
}

TEST_F(CompletedRun, FreshCompletesExactlyOnceNextToTheOldOutputSetAside) {
  const std::set<std::string> old_output = Names(out());
  RunResult r = RunCairn(Args({"--fresh"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--fresh: set aside " + std::to_string(old_output.size()) +
                               " committed output file(s) of operator 'sink' in " + out() + "/_superseded/"));
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
  ExpectExactlyOnce(out() + "/_superseded", ExpectedCounts(input()));
}

// ---- the lock comes before the choice ---------------------------------------------------------

TEST_F(CompletedRun, ACheckpointIsNotChosenWhileAnotherJobHoldsTheDirectory) {
  int fd = open((ck() + "/_lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  const Tree before = Trees();
  // Without --quiet, so that a note of the checkpoint chosen would show.
  std::vector<std::string> args = Args({"--restore", "latest"});
  args.erase(std::find(args.begin(), args.end(), "--quiet"));
  RunResult r = RunCairn(args);
  close(fd);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("is in use by another running job"));
  EXPECT_THAT(r.err, Not(HasSubstr("restoring from checkpoint"))) << "chose a checkpoint without the lock";
  EXPECT_TRUE(SameTree(before, Trees()));
}

// ---- restoring an older checkpoint than the newest committed output --------------------------

TEST_F(CompletedRun, RestoringAnOlderCheckpointSetsAsideLaterOutputAndIsExactlyOnce) {
  const std::set<uint64_t> ids = CompletedIds();
  const uint64_t newest = *ids.rbegin();
  const std::set<std::string> before = Names(out());
  RunResult r = RunCairn(Args({"--restore", chk(2)}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(restored from checkpoint 2)"));
  EXPECT_THAT(r.err, HasSubstr("checkpoints 3-" + std::to_string(newest) + " are superseded"));
  ExpectExactlyOnce(out(), ExpectedCounts(input()));

  // Nothing committed before was lost: it is still there or set aside; no name was reused.
  const std::set<std::string> now = Names(out()), aside = Names(out() + "/_superseded");
  EXPECT_FALSE(aside.empty());
  for (const std::string& n : before) EXPECT_TRUE(now.count(n) + aside.count(n) == 1) << n;
  for (const std::string& n : aside) EXPECT_EQ(now.count(n), 0u) << "reused name " << n;
  // The abandoned checkpoints are kept (checkpoint.retain is large) but never restorable again.
  RunResult abandoned = RunCairn(Args({"--restore", chk(newest)}));
  EXPECT_EQ(abandoned.exit_code, 2) << abandoned.err;
  EXPECT_THAT(abandoned.err, HasSubstr("is superseded (abandoned by a restore of checkpoint 2)"));

  // Again, from an even older one, with two lineages' output on disk.
  const std::set<std::string> before2 = Names(out());
  RunResult again = RunCairn(Args({"--restore", chk(1)}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
  const std::set<std::string> now2 = Names(out()), aside2 = Names(out() + "/_superseded");
  for (const std::string& n : before2) EXPECT_TRUE(now2.count(n) + aside2.count(n) == 1) << n;
}

TEST_F(CompletedRun, RestoringACheckpointFromBeforeARescaleSetsAsideTheRescaledWritersOutput) {
  // chk-2 restored at parallelism 3: its three sink writers start runs chk-2 does not know and
  // commit output under them.
  RunResult rescaled = RunCairn(Args({"--restore", chk(2), "--set", "parallelism=3"}));
  ASSERT_EQ(rescaled.exit_code, 0) << rescaled.err;
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
  const std::set<std::string> before = Names(out());
  // Back to chk-1, at parallelism 2: the rescaled writers' output must go too.
  RunResult r = RunCairn(Args({"--restore", chk(1)}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("set aside the output of writers started after checkpoint 1"));
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
  const std::set<std::string> now = Names(out()), aside = Names(out() + "/_superseded");
  for (const std::string& n : before) EXPECT_TRUE(now.count(n) + aside.count(n) == 1) << n;
  for (const std::string& n : aside) EXPECT_EQ(now.count(n), 0u) << "reused name " << n;
}

TEST_F(CompletedRun, ACrashBeforeTheRestoredRunsFirstCheckpointResumesFromTheRestoredOne) {
  const uint64_t newest = *CompletedIds().rbegin();
  RunResult crashed = RunCairn(Args({"--restore", chk(2)}), {"CAIRN_CRASH_AT=metadata.before_commit:1"});
  ASSERT_EQ(crashed.signal, SIGKILL) << crashed.err;
  EXPECT_TRUE(fs::exists(chk(newest))) << "the abandoned checkpoints stay until the run has its own";
  RunResult newer = RunCairn(Args({"--restore", chk(newest)}));
  EXPECT_EQ(newer.exit_code, 2) << newer.err;
  EXPECT_THAT(newer.err, HasSubstr("superseded (abandoned by a restore of checkpoint 2)"));

  RunResult r = RunCairn(Args({"--restore", "latest"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(restored from checkpoint 2)")) << "the newest checkpoint not abandoned";
  ExpectExactlyOnce(out(), ExpectedCounts(input()));
}

// ---- a bad file_sink.path ---------------------------------------------------------------------

TEST_F(CompletedRun, ASinkPathUnderARegularFileIsExitTwoBeforeAnythingChanges) {
  WriteText(dir_ / "file", "not a directory\n");
  const Tree before = Trees();
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--restore", "latest"}, std::vector<std::string>{"--fresh"}}) {
    std::vector<std::string> a = extra;
    a.insert(a.end(), {"--set", "operators.sink.path=" + dir_ / "file/out"});
    RunResult r = RunCairn(Args(a));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("operator 'sink': path " + dir_ / "file/out" + ": " + dir_ / "file" +
                                 " exists and is not a directory"));
    EXPECT_TRUE(SameTree(before, Trees()));
    EXPECT_EQ(ReadText(dir_ / "file"), "not a directory\n");
  }
}

}  // namespace
}  // namespace cairn::testing
