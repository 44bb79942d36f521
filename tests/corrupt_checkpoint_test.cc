// Corrupt and incomplete checkpoints. A restore of a checkpoint whose _metadata is truncated,
// bit-flipped, empty, foreign or of another format version, or whose state files are damaged
// or missing, exits 2 naming the file and whether it is damaged or of an incompatible version,
// and changes nothing in the checkpoint or output directory. `--restore latest` skips a damaged
// newest checkpoint with a warning, restores the newest intact one, and leaves the damaged one
// as it is. A leftover checkpoint without _metadata is removed when a job starts, and by
// nothing else. Restoring never changes the checkpoint it restores. `cairn verify` finds every
// one of these damages (exit 1, naming the file) without changing anything, calls sound
// checkpoints sound (exit 0), and a path that holds no checkpoint exit 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "state/checkpoint_metadata.h"
#include "state/shared_files.h"
#include "tests/test_util.h"
#include "tests/tree_snapshot.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A word count killed right after checkpoint 4 committed (before the sink was told): chk-1 to
// chk-4 are complete, committed output covers checkpoint 3, and in-progress files hold the rest.
// The source is paced so that the crash comes long before the input ends, even on a loaded
// machine with slow fsyncs; runs that go on from the crash lift the pace (Run).
// With `backpressure`, an unaligned run killed right after checkpoint 1 committed (its source
// soon reads all its input into the full channels, after which checkpoints are aligned).
// `extra` goes to every run (e.g. checkpoint.inline_state_threshold=0: each operator state in a
// file of its own, which the default keeps in _metadata).
class CrashedRun {
 public:
  explicit CrashedRun(bool backpressure = false, const std::vector<std::string>& extra = {})
      : backpressure_(backpressure) {
    RunResult gen = RunCairn({"generate", "--out", input(), "--words", backpressure ? "600000" : "600000",
                              "--vocabulary", "2000", "--seed", "29"});
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    args_ = {"run", SourceDir() + (backpressure ? "/jobs/wordcount-backpressure.yaml" : "/jobs/wordcount.yaml"),
             "--quiet",
             "--set", "operators.source.path=" + input(),
             "--set", "operators.sink.path=" + out(),
             "--set", "checkpoint.dir=" + ck(),
             "--set", "checkpoint.interval=20ms",
             "--set", "checkpoint.retain=100"};
    args_.insert(args_.end(), extra.begin(), extra.end());
    if (backpressure) {
      // 20000 records/s per subtask: 15 s for the input, so checkpoint 1 comes (with records in
      // flight) long before the end however slow the machine; the runs after the crash lift it.
      args_.insert(args_.end(), {"--set", "checkpoint.mode=unaligned", "--set", "operators.throttle.rate=20000"});
    } else {
      args_.insert(args_.end(), {"--set", "operators.source.rate=500"});  // 10000 words/s: a minute at most
    }
    RunResult r = RunCairn(args_, {backpressure ? "CAIRN_CRASH_AT=checkpoint.committed:1"
                                                : "CAIRN_CRASH_AT=checkpoint.committed:4"});
    crashed_ = r.signal == SIGKILL;
    EXPECT_TRUE(crashed_) << "the run was to crash after a checkpoint committed; exit " << r.exit_code << "\n"
                          << r.out << r.err;
  }
  bool crashed() const { return crashed_; }

  std::string input() const { return dir_ / "input.txt"; }
  std::string ck() const { return dir_ / "ck"; }
  std::string out() const { return dir_ / "out"; }
  std::string chk(int id) const { return ck() + "/chk-" + std::to_string(id); }
  const ScratchDir& dir() const { return dir_; }

  RunResult Run(const std::vector<std::string>& extra) const {
    std::vector<std::string> a = args_;
    a.insert(a.end(), {"--set", "operators.source.rate=0"});
    if (backpressure_) a.insert(a.end(), {"--set", "operators.throttle.rate=100000000"});
    a.insert(a.end(), extra.begin(), extra.end());
    return RunCairn(a);
  }
  Tree Trees() const {
    Tree all;
    for (const auto& [p, v] : TreeSnapshot(ck())) all["ck/" + p] = v;
    for (const auto& [p, v] : TreeSnapshot(out())) all["out/" + p] = v;
    return all;
  }

 private:
  ScratchDir dir_;
  bool backpressure_;
  std::vector<std::string> args_;
  bool crashed_ = false;
};

void ExpectVerifyFindsDamage(const CrashedRun& run, int id, const std::string& expect);

// ---- damaged _metadata ----------------------------------------------------------------------

struct MetadataDamage {
  const char* name;
  std::function<std::string(const std::string&)> damage;  // original bytes -> damaged bytes
  std::string expect;                                     // after "<chk>/_metadata: "
};

void PrintTo(const MetadataDamage& d, std::ostream* os) { *os << d.name; }

class DamagedMetadataTest : public ::testing::TestWithParam<MetadataDamage> {};

TEST_P(DamagedMetadataTest, RestoreExitsTwoNamingTheFileAndChangesNothing) {
  const MetadataDamage& d = GetParam();
  CrashedRun run;
  ASSERT_TRUE(run.crashed());
  const std::string meta = run.chk(4) + "/_metadata";
  WriteText(meta, d.damage(ReadText(meta)));
  ExpectVerifyFindsDamage(run, 4, meta + ": " + d.expect);
  const Tree before = run.Trees();
  for (const std::string& target : {run.chk(4), meta}) {
    RunResult r = run.Run({"--restore", target});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(meta + ": " + d.expect));
    EXPECT_TRUE(SameTree(before, run.Trees()));
  }
  RunResult list = RunCairn({"checkpoints", run.ck()});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.err, HasSubstr("skipping damaged checkpoint: " + meta + ": " + d.expect));
  EXPECT_THAT(list.out, HasSubstr("id=3 "));
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr("id=4 ")));
}

std::string FlipBit(std::string s, size_t byte, int bit) {
  s[byte] = static_cast<char>(s[byte] ^ (1 << bit));
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Damage, DamagedMetadataTest,
    ::testing::Values(
        MetadataDamage{"TruncatedToHalf", [](const std::string& s) { return s.substr(0, s.size() / 2); }, "damaged (truncated"},
        MetadataDamage{"TruncatedByOneByte", [](const std::string& s) { return s.substr(0, s.size() - 1); }, "damaged (truncated"},
        MetadataDamage{"BitFlippedInAField", [](const std::string& s) { return FlipBit(s, s.size() / 2, 3); },
                       "damaged (checksum mismatch)"},
        MetadataDamage{"BitFlippedInTheChecksum", [](const std::string& s) { return FlipBit(s, s.size() - 3, 0); },
                       "damaged ("},
        MetadataDamage{"Empty", [](const std::string&) { return std::string(); }, "damaged (empty file)"},
        MetadataDamage{"Foreign", [](const std::string&) { return std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16); },
                       "not a Cairn checkpoint metadata file"},
        MetadataDamage{"NewerFormatVersion",
                       [](const std::string& s) { return "cairn-checkpoint 2\n" + s.substr(s.find('\n') + 1); },
                       "incompatible format version 2 (this build reads version 1)"}),
    [](const ::testing::TestParamInfo<MetadataDamage>& info) { return std::string(info.param.name); });

TEST(CorruptCheckpointTest, RestoreLatestSkipsTheDamagedNewestAndRestoresTheNewestIntactOne) {
  CrashedRun run;
  ASSERT_TRUE(run.crashed());
  const std::string meta = run.chk(4) + "/_metadata";
  WriteText(meta, FlipBit(ReadText(meta), 40, 1));
  const Tree damaged_before = TreeSnapshot(run.chk(4));
  RunResult r = run.Run({"--restore", "latest"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: skipping damaged checkpoint: " + meta + ": damaged (checksum mismatch)"));
  EXPECT_THAT(r.out, HasSubstr("(restored from checkpoint 3)"));
  EXPECT_TRUE(SameTree(damaged_before, TreeSnapshot(run.chk(4)))) << "the damaged checkpoint was changed";
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

// ---- damaged or missing state files ----------------------------------------------------------

// `cairn verify` finds the same damage, names the file, exits 1, and changes nothing; the
// other checkpoints of the directory verify as sound.
void ExpectVerifyFindsDamage(const CrashedRun& run, int id, const std::string& expect) {
  const Tree before = run.Trees();
  RunResult v = RunCairn({"verify", run.chk(id)});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  EXPECT_THAT(v.out, HasSubstr(expect));
  EXPECT_THAT(v.out, HasSubstr(run.chk(id) + ": damaged ("));
  RunResult all = RunCairn({"verify", run.ck(), "--json"});
  EXPECT_EQ(all.exit_code, 1) << all.out << all.err;
  EXPECT_THAT(all.out, HasSubstr("{\"path\":\"" + run.chk(id) + "\""));
  EXPECT_THAT(all.out, HasSubstr("\"sound\":false"));
  if (id > 1) {  // every checkpoint is checked
    EXPECT_THAT(all.out, HasSubstr("{\"path\":\"" + run.chk(id - 1) + "\""));
  }
  EXPECT_TRUE(SameTree(before, run.Trees())) << "verify changed something";
}

void ExpectRestoreFailsNaming(const CrashedRun& run, int id, const std::string& expect) {
  ExpectVerifyFindsDamage(run, id, expect);
  const Tree before = run.Trees();
  RunResult r = run.Run({"--restore", run.chk(id)});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(expect));
  EXPECT_TRUE(SameTree(before, run.Trees()));
}

// Operator state in files of their own, not inline in _metadata (which its checksum guards).
const std::vector<std::string> kOperatorStateInFiles = {"--set", "checkpoint.inline_state_threshold=0"};

TEST(CorruptCheckpointTest, BitFlippedOperatorStateIsExitTwoNamingTheFile) {
  CrashedRun run(false, kOperatorStateInFiles);
  ASSERT_TRUE(run.crashed());
  const std::string file = run.chk(4) + "/sink-1/operator.state";
  WriteText(file, FlipBit(ReadText(file), 2, 5));
  ExpectRestoreFailsNaming(run, 4, file + ": damaged (checksum mismatch)");
}

TEST(CorruptCheckpointTest, TruncatedOperatorStateIsExitTwoNamingTheFile) {
  CrashedRun run(false, kOperatorStateInFiles);
  ASSERT_TRUE(run.crashed());
  const std::string file = run.chk(4) + "/source-0/operator.state";
  std::string bytes = ReadText(file);
  WriteText(file, bytes.substr(0, bytes.size() - 7));
  ExpectRestoreFailsNaming(run, 4, file + ": damaged (");
}

TEST(CorruptCheckpointTest, EmptyOperatorStateIsExitTwoNamingTheFile) {
  CrashedRun run(false, kOperatorStateInFiles);
  ASSERT_TRUE(run.crashed());
  const std::string file = run.chk(4) + "/source-1/operator.state";
  WriteText(file, "");
  ExpectRestoreFailsNaming(run, 4, file + ": damaged (empty file)");
}

TEST(CorruptCheckpointTest, MissingOperatorStateIsExitTwoNamingTheFile) {
  CrashedRun run(false, kOperatorStateInFiles);
  ASSERT_TRUE(run.crashed());
  const std::string file = run.chk(4) + "/sink-0/operator.state";
  fs::remove(file);
  ExpectRestoreFailsNaming(run, 4, file);
}

TEST(CorruptCheckpointTest, MissingKeyedStateDirectoryIsExitTwoNamingIt) {
  CrashedRun run;
  ASSERT_TRUE(run.crashed());
  fs::remove_all(run.chk(4) + "/count-1/keyed");
  ExpectRestoreFailsNaming(run, 4, "keyed state " + run.chk(4) + "/count-1/keyed is missing");
}

// RocksDB checks its own block checksums; the restore reads the keyed state through before it
// takes the checkpoint directory, so damage there changes nothing either.
// The first (by name) SST file the keyed snapshot `keyed_dir` lists in shared/.
std::string FirstSharedFile(const std::string& keyed_dir) {
  std::vector<SharedFileRef> refs;
  bool incremental = false;
  if (!ReadSharedList(keyed_dir, &refs, &incremental).ok() || !incremental) return "";
  std::string first;
  for (const auto& r : refs)
    if (first.empty() || r.path < first) first = r.path;
  return first;
}

TEST(CorruptCheckpointTest, BitFlippedKeyedStateFileIsExitTwoNamingTheFile) {
  CrashedRun run;
  ASSERT_TRUE(run.crashed());
  // Its SST files are shared files (state/shared_files.h) that the checkpoint lists.
  std::string sst = FirstSharedFile(run.chk(4) + "/count-0/keyed");
  ASSERT_FALSE(sst.empty());
  std::string bytes = ReadText(sst);
  WriteText(sst, FlipBit(bytes, bytes.size() / 3, 4));
  fs::create_directories(run.chk(998));  // an incomplete checkpoint a started job would remove
  ExpectRestoreFailsNaming(run, 4, sst);
}

TEST(CorruptCheckpointTest, MissingKeyedStateFileIsExitTwoNamingTheFile) {
  CrashedRun run;
  ASSERT_TRUE(run.crashed());
  std::string sst = FirstSharedFile(run.chk(4) + "/count-1/keyed");
  ASSERT_FALSE(sst.empty());
  fs::remove(sst);
  fs::create_directories(run.chk(998));
  ExpectRestoreFailsNaming(run, 4, run.chk(4) + "/count-1/keyed");
}

TEST(CorruptCheckpointTest, BitFlippedChannelStateIsExitTwoNamingTheFile) {
  CrashedRun run(/*backpressure=*/true);
  ASSERT_TRUE(run.crashed());
  // Unaligned checkpoints under backpressure hold in-flight records; damage one's channel state.
  std::string file;
  for (const auto& e : fs::recursive_directory_iterator(run.chk(1)))
      if (e.path().filename() == "channel.state") {
        file = e.path().string();
        break;
      }
  ASSERT_FALSE(file.empty()) << "checkpoint 1 holds no channel state";
  std::string bytes = ReadText(file);
  WriteText(file, FlipBit(bytes, bytes.size() / 2, 6));
  ExpectRestoreFailsNaming(run, 1, file + ": damaged (checksum mismatch)");
}

// With every state inline (a threshold above any state's size), an unaligned checkpoint's
// in-flight records live in _metadata alone: no state file is written, `cairn verify` and
// `cairn state dump` read them there, and the restore is exactly-once.
TEST(CorruptCheckpointTest, ChannelStateKeptInlineInMetadataRestoresExactlyOnce) {
  CrashedRun run(/*backpressure=*/true, {"--set", "checkpoint.inline_state_threshold=1GB"});
  ASSERT_TRUE(run.crashed());
  CheckpointMetadata m;
  ASSERT_TRUE(ReadMetadata(run.chk(1), &m).ok());
  uint64_t inline_channel_bytes = 0;
  for (const SubtaskStateHandle& h : m.subtasks) {
    EXPECT_EQ(h.operator_state_file, "") << h.operator_id;
    EXPECT_EQ(h.list_state_file, "") << h.operator_id;
    EXPECT_EQ(h.channel_state_file, "") << h.operator_id;
    inline_channel_bytes += h.channel_state_inline.size();
  }
  ASSERT_GT(inline_channel_bytes, 0u) << "checkpoint 1 holds no channel state";
  for (const auto& e : fs::recursive_directory_iterator(run.chk(1))) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name != "operator.state" && name != "list.state" && name != "channel.state") << e.path();
  }
  RunResult verify = RunCairn({"verify", run.chk(1)});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  RunResult dump = RunCairn({"state", "dump", run.chk(1), "--json"});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_THAT(dump.out, HasSubstr(",\"channel\":"));
  RunResult r = run.Run({"--restore", run.chk(1)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(restored from checkpoint 1)"));
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

// ---- incomplete checkpoints ------------------------------------------------------------------

TEST(CorruptCheckpointTest, ALeftoverCheckpointWithoutMetadataIsRemovedWhenAJobStartsAndOnlyThen) {
  CrashedRun run;
  ASSERT_TRUE(run.crashed());
  fs::create_directories(run.chk(998) + "/count-0");
  WriteText(run.chk(998) + "/count-0/operator.state", "half-written");
  WriteText(run.chk(998) + "/_metadata.tmp", "cairn-checkpoint 1\nid 998\n");
  fs::create_directories(run.chk(999));
  const Tree before = run.Trees();

  RunResult v = RunCairn({"validate", SourceDir() + "/jobs/wordcount.yaml", "--set", "checkpoint.dir=" + run.ck()});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  RunResult list = RunCairn({"checkpoints", run.ck()});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  RunResult bad = run.Run({"--set", "operators.source.path=" + run.dir() / "absent.txt"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  RunResult bad_restore = run.Run({"--restore", run.chk(998)});
  EXPECT_EQ(bad_restore.exit_code, 2) << bad_restore.err;
  EXPECT_THAT(bad_restore.err, HasSubstr("not a completed checkpoint"));
  EXPECT_TRUE(SameTree(before, run.Trees())) << "only a job that starts may remove incomplete checkpoints";

  RunResult r = run.Run({"--restore", "latest"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(run.chk(998)));
  EXPECT_FALSE(fs::exists(run.chk(999)));
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

TEST(CorruptCheckpointTest, RestoringACheckpointNeverChangesIt) {
  CrashedRun run;
  ASSERT_TRUE(run.crashed());
  const Tree chk3 = TreeSnapshot(run.chk(3)), chk4 = TreeSnapshot(run.chk(4));
  // Sound checkpoints verify as sound (exit 0); a path that is no checkpoint is exit 2.
  RunResult sound = RunCairn({"verify", run.ck()});
  EXPECT_EQ(sound.exit_code, 0) << sound.out << sound.err;
  EXPECT_THAT(sound.out, HasSubstr(run.chk(4) + ": sound (checkpoint 4, "));
  EXPECT_EQ(RunCairn({"verify", run.input()}).exit_code, 2);
  EXPECT_EQ(RunCairn({"verify", run.dir() / "nothing-here"}).exit_code, 2);
  RunResult r = run.Run({"--restore", run.chk(3)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(restored from checkpoint 3)"));
  EXPECT_TRUE(SameTree(chk3, TreeSnapshot(run.chk(3)))) << "the restored checkpoint";
  EXPECT_TRUE(SameTree(chk4, TreeSnapshot(run.chk(4)))) << "a newer retained checkpoint";
  ExpectExactlyOnce(run.out(), ExpectedCounts(run.input()));
}

}  // namespace
}  // namespace cairn::testing
