// Durability and cleanup, observed through the durability log (CAIRN_DURABILITY_LOG, see
// engine/base/storage_faults.h) of real runs:
// - every sink file is fsynced before the checkpoint that commits it completes, also when an
//   earlier checkpoint failed before its async part ran, and after an fsync error;
// - every directory of a completed checkpoint was fsynced (subtask directories without
//   operator state too);
// - every file a checkpoint's persist writes is fsynced, then its directory, after it and before
//   the checkpoint's _metadata, each subtask directory once (unaligned, changelog state), and
//   every changelog segment before the commit of its checkpoint;
// - a failed commit is removed _metadata first;
// - the persister skips checkpoints the coordinator aborted (expired).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct LogLine {
  std::string event;
  std::string path;  // for "commit": "<from> <to>"
};

std::vector<LogLine> ReadLog(const std::string& path) {
  std::vector<LogLine> lines;
  std::istringstream in(ReadText(path));
  for (std::string line; std::getline(in, line);) {
    size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    lines.push_back({line.substr(0, sp), line.substr(sp + 1)});
  }
  return lines;
}

class LoggedRun {
 public:
  LoggedRun(const std::string& words = "200000", int pace = 10000, const std::string& job = "wordcount.yaml") {
    RunResult gen = RunCairn({"generate", "--out", input(), "--words", words, "--vocabulary", "2000", "--seed", "41"});
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    args_ = {"run", SourceDir() + "/jobs/" + job, "--quiet",
             "--set", "operators.source.path=" + input(),
             "--set", "operators.sink.path=" + out(),
             "--set", "checkpoint.dir=" + ck(),
             "--set", "checkpoint.interval=20ms",
             "--set", "checkpoint.retain=1000",
             "--set", "checkpoint.tolerable_failures=50",
             "--set", "operators.source.rate=" + std::to_string(pace)};
  }
  RunResult Run(const std::vector<std::string>& extra, const std::vector<std::string>& env) {
    std::vector<std::string> a = args_;
    a.insert(a.end(), extra.begin(), extra.end());
    std::vector<std::string> e = env;
    e.push_back("CAIRN_DURABILITY_LOG=" + log());
    return RunCairn(a, e);
  }
  std::string input() const { return dir_ / "input.txt"; }
  std::string ck() const { return dir_ / "ck"; }
  std::string out() const { return dir_ / "out"; }
  std::string log() const { return dir_ / "durability.log"; }

 private:
  ScratchDir dir_;
  std::vector<std::string> args_;
};

// Every commit of a sink file comes after an fsync of that very file.
void ExpectEveryCommitAfterAnFsyncOfItsFile(const std::vector<LogLine>& log) {
  std::set<std::string> synced;
  size_t commits = 0;
  for (const LogLine& l : log) {
    if (l.event == "fsync") synced.insert(l.path);
    if (l.event != "commit") continue;
    ++commits;
    const std::string from = l.path.substr(0, l.path.find(' '));
    EXPECT_TRUE(synced.count(from)) << "committed without an fsync: " << from;
  }
  EXPECT_GT(commits, 0u);
}

TEST(DurabilityTest, SinkFilesOfCheckpointsThatFailedBeforeTheirAsyncPartAreFsyncedBeforeTheyAreCommitted) {
  LoggedRun run;
  // sink[0]'s operator state of checkpoints 2 and 3 cannot be written: both are declined before
  // sink[0]'s async part (its fsync) ran; checkpoint 4 commits their files.
  // (Operator state in files: inline in _metadata it would need no write of its own.)
  RunResult r = run.Run({"--set", "checkpoint.inline_state_threshold=0"},
                        {"CAIRN_STORAGE_FAULT=enospc:sink-0/operator.state:1:2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(tolerated: 2 of 50 consecutive failures)"));
  ExpectEveryCommitAfterAnFsyncOfItsFile(ReadLog(run.log()));
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

TEST(DurabilityTest, ASinkFileWhoseFsyncFailedIsFsyncedAgainBeforeItIsCommitted) {
  LoggedRun run;
  // The first fsync of a sink file fails: that checkpoint is declined, the next must fsync the
  // file again (it commits it).
  RunResult r = run.Run({}, {"CAIRN_STORAGE_FAULT=eio:.inprogress:0:1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr(".inprogress: Input/output error (injected by CAIRN_STORAGE_FAULT)"));
  EXPECT_THAT(r.err, HasSubstr("(tolerated: 1 of 50 consecutive failures)"));
  ExpectEveryCommitAfterAnFsyncOfItsFile(ReadLog(run.log()));
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

TEST(DurabilityTest, EveryDirectoryOfACompletedCheckpointWasFsynced) {
  LoggedRun run;
  RunResult r = run.Run({}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> synced;
  for (const LogLine& l : ReadLog(run.log()))
    if (l.event == "fsync-dir") synced.insert(l.path);
  size_t checked = 0;
  for (const auto& c : fs::directory_iterator(run.ck())) {
    if (c.path().filename().string().rfind("chk-", 0) != 0) continue;
    EXPECT_TRUE(synced.count(c.path().string())) << c.path();
    for (const auto& e : fs::recursive_directory_iterator(c.path()))
      if (e.is_directory()) {
        ++checked;
        EXPECT_TRUE(synced.count(e.path().string())) << "never fsynced: " << e.path();
      }
  }
  EXPECT_GT(checked, 0u);
}

TEST(DurabilityTest, EveryFileOfACheckpointIsFsyncedThenItsDirectoryOnceBeforeTheCommit) {
  // The backpressure job (a throttle before the sink), unaligned, with the changelog state: its
  // checkpoints write operator, list and channel state and changelog segments.
  LoggedRun run("200000", 1000000, "wordcount-backpressure.yaml");
  RunResult r = run.Run({"--set", "checkpoint.mode=unaligned", "--set", "state.changelog=true"}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<LogLine> log = ReadLog(run.log());
  size_t files = 0, channel_files = 0;
  for (const auto& c : fs::directory_iterator(run.ck())) {
    const std::string chk = c.path().string();
    if (c.path().filename().string().rfind("chk-", 0) != 0) continue;
    size_t commit = log.size();
    for (size_t i = 0; i < log.size(); ++i)
      if (log[i].event == "write" && log[i].path == chk + "/_metadata") commit = i;
    ASSERT_LT(commit, log.size()) << "no _metadata write logged for " << chk;
    std::map<std::string, int> subtask_dir_syncs;
    for (size_t i = 0; i < commit; ++i) {
      const LogLine& l = log[i];
      if (l.event == "fsync-dir" && fs::path(l.path).parent_path() == c.path()) ++subtask_dir_syncs[l.path];
      if (l.event != "write" || l.path.rfind(chk + "/", 0) != 0) continue;
      ++files;
      if (l.path.size() > 14 && l.path.substr(l.path.size() - 14) == "/channel.state") ++channel_files;
      const std::string dir = fs::path(l.path).parent_path().string();
      bool synced = false, file_synced = false;
      for (size_t j = i + 1; j < commit && !synced; ++j) {
        file_synced |= log[j].event == "fsync" && log[j].path == l.path;
        synced = file_synced && log[j].event == "fsync-dir" && log[j].path == dir;
      }
      EXPECT_TRUE(synced) << l.path << ": not fsynced, then its directory, between its write and the commit";
    }
    for (const auto& [dir, n] : subtask_dir_syncs) EXPECT_EQ(n, 1) << dir;
    EXPECT_FALSE(subtask_dir_syncs.empty()) << chk;
  }
  // Each changelog segment (written outside the checkpoint directories, in the store's working
  // directory, and linked into shared/) is fsynced before the next commit: that of the
  // checkpoint it was written for, none of which failed in this run.
  size_t segments = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    if (log[i].event != "write" || log[i].path.find(".changelog/changelog.") == std::string::npos) continue;
    ++segments;
    bool synced = false;
    for (size_t j = i + 1; j < log.size() && !synced; ++j) {
      if (log[j].event == "write" && fs::path(log[j].path).filename() == "_metadata") break;
      synced = log[j].event == "fsync" && log[j].path == log[i].path;
    }
    EXPECT_TRUE(synced) << log[i].path << ": not fsynced before the next commit";
  }
  EXPECT_GT(segments, 0u);
  EXPECT_GT(files, 0u);
  EXPECT_GT(channel_files, 0u) << "no checkpoint held channel state: the run did not test its write";
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

TEST(DurabilityTest, AFailedCommitIsRemovedMetadataFirst) {
  LoggedRun run;
  // chk-2's _metadata is renamed into place, then the directory fsync fails: the commit failed.
  RunResult r = run.Run({}, {"CAIRN_STORAGE_FAULT=eio:chk-2/.:0:1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("checkpoint 2 failed: the checkpoint metadata could not be written"));
  const std::string chk2 = run.ck() + "/chk-2";
  EXPECT_FALSE(fs::exists(chk2));
  int metadata_removed = -1, dir_removed = -1, i = 0;
  for (const LogLine& l : ReadLog(run.log())) {
    if (l.event == "remove" && l.path == chk2 + "/_metadata" && metadata_removed < 0) metadata_removed = i;
    if (l.event == "remove" && l.path == chk2 && dir_removed < 0) dir_removed = i;
    ++i;
  }
  ASSERT_GE(metadata_removed, 0) << "the failed commit's _metadata was not removed on its own";
  ASSERT_GE(dir_removed, 0);
  EXPECT_LT(metadata_removed, dir_removed);
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

TEST(DurabilityTest, ThePersisterSkipsTheWritesOfAnExpiredCheckpoint) {
  LoggedRun run("300000");
  // source[0]'s first operator-state write stalls past checkpoint.timeout: checkpoint 1
  // expires while sink[0]'s part of it (the same persister thread: tasks 0 and 2) waits behind.
  // (Operator state in files: inline in _metadata it would need no write of its own.)
  RunResult r = run.Run({"--set", "checkpoint.timeout=1500ms", "--set", "checkpoint.inline_state_threshold=0"},
                        {"CAIRN_STORAGE_FAULT=slow=3000:source-0/operator.state:0:1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<uint64_t> expired;
  std::regex re("checkpoint (\\d+) failed: the checkpoint expired");
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), re); it != std::sregex_iterator(); ++it)
    expired.insert(std::stoull((*it)[1]));
  ASSERT_FALSE(expired.empty()) << r.err;
  const std::vector<LogLine> log = ReadLog(run.log());
  for (uint64_t id : expired) {
    const std::string dir = run.ck() + "/chk-" + std::to_string(id) + "/";
    bool aborted = false;
    std::vector<std::string> after;
    for (const LogLine& l : log) {
      if (l.event == "abort" && l.path == std::to_string(id)) aborted = true;
      if (aborted && l.event == "write" && l.path.rfind(dir, 0) == 0) after.push_back(l.path);
    }
    EXPECT_TRUE(aborted) << "the persister was not told that checkpoint " << id << " expired";
    // The abort does not wait for the persister: each of its 2 threads may have passed its
    // check just before and begin one write. Every other write of the checkpoint's 6 subtasks
    // is skipped (SnapshotPersisterTest shows which, without a clock).
    EXPECT_LE(after.size(), 2u) << "written after the abort: " << ::testing::PrintToString(after);
    EXPECT_FALSE(fs::exists(dir));
  }
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

}  // namespace
}  // namespace cairn::testing
