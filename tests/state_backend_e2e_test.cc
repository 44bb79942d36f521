// End to end: the word count with `state.backend: rocksdb` killed with SIGKILL and restored,
// checkpoints of one backend restored into the other, incremental checkpoints whose shared
// files outlive the checkpoints that uploaded them and go once nothing references them, and
// keyed state several times larger than the RocksDB block cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "state/checkpoint_layout.h"
#include "state/shared_files.h"
#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> WordCountArgs(const ScratchDir& dir, const std::string& input) {
  return {"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet", "--restore", "latest",
          "--set", "operators.source.path=" + input,
          "--set", "operators.sink.path=" + dir / "out",
          "--set", "checkpoint.dir=" + dir / "ck",
          "--set", "checkpoint.interval=50ms"};
}

// Every shared file on disk, and every shared file the checkpoints on disk reference.
void SharedFiles(const std::string& ck, std::set<std::string>* on_disk, std::set<std::string>* referenced) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(SharedDir(ck), ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) on_disk->insert(it->path().lexically_normal().string());
  for (uint64_t id : CompletedCheckpointIds(ck)) {
    const std::string chk = ck + "/chk-" + std::to_string(id);
    for (const auto& e : fs::directory_iterator(chk)) {
      if (!e.is_directory()) continue;
      const std::string keyed = e.path().string() + "/keyed";
      if (!fs::is_directory(keyed)) continue;
      std::vector<SharedFileRef> refs;
      bool incremental = false;
      ASSERT_TRUE(ReadSharedList(keyed, &refs, &incremental).ok()) << keyed;
      EXPECT_TRUE(incremental) << keyed;
      for (const auto& r : refs) referenced->insert(r.path);
    }
  }
}

// `cairn state dump` of the newest checkpoint: the count of every word (summed over subtasks).
std::map<std::string, int64_t> DumpedCounts(const std::string& ck) {
  std::map<std::string, int64_t> counts;
  RunResult r = RunCairn({"state", "dump", ck + "/chk-" + std::to_string(NewestCompletedCheckpoint(ck))});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    // <op> \t <subtask> \t key \t <word> \t <count>
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, '\t');) f.push_back(x);
    if (f.size() == 5 && f[2] == "key") counts[f[3]] += std::stoll(f[4]);
  }
  return counts;
}

// The word count on a generated input (`seed`), with `extra` arguments, killed 4 times (the
// killed runs with `killed` overrides, the completing one with `last`): the committed output
// and the dumped state are exactly-once, and shared/ holds exactly the files the checkpoints on
// disk list, none missing.
void KillFourTimesThenCheck(const std::string& seed, const std::vector<std::string>& extra,
                            const std::vector<std::string>& killed, const std::vector<std::string>& last) {
  ScratchDir dir;
  const std::string input = dir / "input.txt";
  ASSERT_EQ(RunCairn({"generate", "--out", input, "--words", "600000", "--vocabulary", "3000", "--seed", seed}).exit_code, 0);
  std::vector<std::string> args = WordCountArgs(dir, input);
  args.insert(args.end(), extra.begin(), extra.end());
  KillPlan plan = PacedKillPlan(4, dir / "ck", 50, killed, last);
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 4);
  const auto expected = ExpectedCounts(input);
  ExpectExactlyOnce(dir / "out", expected);
  EXPECT_EQ(DumpedCounts(dir / "ck"), expected);
  std::set<std::string> on_disk, referenced;
  SharedFiles(dir / "ck", &on_disk, &referenced);
  EXPECT_FALSE(referenced.empty());
  EXPECT_EQ(on_disk, referenced);
}

TEST(RocksDbBackendE2E, RandomSigkillsThenRestoreLatestGiveExactlyOnceCounts) {
  // The killed runs read 250 lines/s per subtask (120 s for the input): none ends before its kill.
  KillFourTimesThenCheck("11", {"--set", "state.backend=rocksdb"}, {"operators.source.rate=250"},
                         {"operators.source.rate=0"});
}

// The heap backend with changelog checkpoints (materialized every 100 ms, so that checkpoints
// list materializations and segments both); the last run restores the changelog checkpoint
// into the heap backend without changelog.
TEST(ChangelogE2E, RandomSigkillsThenRestoreLatestGiveExactlyOnceCounts) {
  KillFourTimesThenCheck("13", {},
                         {"operators.source.rate=250", "state.changelog=true", "state.materialize_interval=100ms"},
                         {"operators.source.rate=0", "state.changelog=false"});
}

// Killed runs on one backend, the last run on the other: each restore crosses backends once
// (the last one), and the counts stay exactly-once.
class CrossBackendE2E : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(CrossBackendE2E, CheckpointsOfOneBackendRestoreIntoTheOther) {
  const auto [from, to] = GetParam();
  ScratchDir dir;
  const std::string input = dir / "input.txt";
  ASSERT_EQ(RunCairn({"generate", "--out", input, "--words", "300000", "--vocabulary", "2000", "--seed", "5"}).exit_code, 0);
  KillPlan plan = PacedKillPlan(2, dir / "ck", 50, {"operators.source.rate=250", std::string("state.backend=") + from},
                                {"operators.source.rate=0", std::string("state.backend=") + to});
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(WordCountArgs(dir, input), dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 2);
  const auto expected = ExpectedCounts(input);
  ExpectExactlyOnce(dir / "out", expected);
  EXPECT_EQ(DumpedCounts(dir / "ck"), expected);
}

INSTANTIATE_TEST_SUITE_P(Backends, CrossBackendE2E,
                         ::testing::Values(std::make_pair("heap", "rocksdb"), std::make_pair("rocksdb", "heap")),
                         [](const auto& info) { return std::string(info.param.first) + "_to_" + info.param.second; });

TEST(RocksDbBackendE2E, StateThreeTimesLargerThanTheBlockCacheCheckpointsAndRestores) {
  ScratchDir dir;
  const std::string input = dir / "input.txt";
  // About 40000 distinct words: their counts take far more than 3x a 64 KiB block cache.
  ASSERT_EQ(RunCairn({"generate", "--out", input, "--words", "400000", "--vocabulary", "60000", "--zipf", "0.5",
                      "--seed", "9"}).exit_code, 0);
  const uint64_t block_cache = 64 << 10;
  std::vector<std::string> args = WordCountArgs(dir, input);
  args.insert(args.end(), {"--set", "state.backend=rocksdb", "--set", "state.rocksdb.block_cache=64KB",
                           "--set", "state.rocksdb.write_buffer=64KB", "--set", "checkpoint.retain=1"});
  KillPlan plan = PacedKillPlan(2, dir / "ck", 50, {"operators.source.rate=250"}, {"operators.source.rate=0"});
  SCOPED_TRACE("kill seed " + std::to_string(plan.seed));
  KillRun kr = RunWithKills(args, dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  const auto expected = ExpectedCounts(input);
  ASSERT_GT(expected.size(), 20000u);
  ExpectExactlyOnce(dir / "out", expected);
  EXPECT_EQ(DumpedCounts(dir / "ck"), expected);
  // The state the last checkpoint holds (its SST files) is more than 3x the block cache of a
  // subtask, per subtask.
  std::set<std::string> on_disk, referenced;
  SharedFiles(dir / "ck", &on_disk, &referenced);
  EXPECT_EQ(on_disk, referenced);  // retain 1: only the last checkpoint's files are left
  std::map<std::string, uint64_t> per_subtask;
  for (const auto& f : referenced) per_subtask[fs::path(f).parent_path().filename().string()] += fs::file_size(f);
  ASSERT_FALSE(per_subtask.empty());
  uint64_t total = 0;
  for (const auto& [sub, bytes] : per_subtask) total += bytes;
  EXPECT_GT(total, 3 * block_cache * 2) << "the state of 2 subtasks is not 3x their block caches";
}

}  // namespace
}  // namespace cairn::testing
