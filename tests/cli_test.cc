// Specification of the `cairn` command line, run as a child process: usage errors, job file
// errors, restore errors that must leave everything on disk untouched, and the checkpoint
// listing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tests/tree_snapshot.h"

namespace cairn::testing {
namespace {

using ::testing::HasSubstr;

std::string WordCountYaml() { return SourceDir() + "/jobs/wordcount.yaml"; }

void ExpectUsageError(const RunResult& r, const std::string& message) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(message));
  EXPECT_THAT(r.err, HasSubstr("usage:"));
  EXPECT_THAT(r.err, HasSubstr("cairn run JOB.yaml"));
}

// A completed small word count run in a scratch directory: input, checkpoints and output.
class WordCountRun : public ::testing::Test {
 protected:
  void SetUp() override {
    RunResult gen = RunCairn({"generate", "--out", input(), "--words", "100000", "--vocabulary", "1000"});
    ASSERT_EQ(gen.exit_code, 0) << gen.err;
    RunResult run = RunCairn(RunArgs({"--set", "operators.source.rate=20000"}));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_THAT(run.out, HasSubstr("job wordcount completed"));
  }

  std::string input() const { return dir_ / "input.txt"; }
  std::string ck() const { return dir_ / "ck"; }
  std::string out() const { return dir_ / "out"; }

  // `cairn run` of the word count over this fixture's input, checkpoints and output.
  std::vector<std::string> RunArgs(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"run", WordCountYaml(), "--quiet",
                                     "--set", "operators.source.path=" + input(),
                                     "--set", "operators.sink.path=" + out(),
                                     "--set", "checkpoint.dir=" + ck(),
                                     "--set", "checkpoint.interval=20ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Ids of the completed checkpoints on disk (chk-<id> directories with _metadata).
  std::set<uint64_t> CompletedIds() const { return CompletedCheckpointIds(ck()); }

  std::map<std::string, std::string> Trees() const {
    std::map<std::string, std::string> all;
    for (const auto& [p, v] : TreeSnapshot(ck())) all["ck/" + p] = v;
    for (const auto& [p, v] : TreeSnapshot(out())) all["out/" + p] = v;
    return all;
  }

  ScratchDir dir_;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// ---------------------------------------------------------------------------------------------
// Usage errors

TEST(CliTest, NoCommandIsAUsageError) { ExpectUsageError(RunCairn({}), "missing command"); }

TEST(CliTest, UnknownCommandIsAUsageError) {
  ExpectUsageError(RunCairn({"frobnicate"}), "unknown command 'frobnicate'");
}

TEST(CliTest, UnknownFlagIsAUsageError) {
  ExpectUsageError(RunCairn({"run", WordCountYaml(), "--frobnicate"}), "unknown flag '--frobnicate'");
}

TEST(CliTest, RunWithoutAJobFileIsAUsageError) { ExpectUsageError(RunCairn({"run"}), "missing JOB.yaml"); }

TEST(CliTest, RestoreWithoutAValueIsAUsageError) {
  ExpectUsageError(RunCairn({"run", WordCountYaml(), "--restore"}), "--restore needs");
  ExpectUsageError(RunCairn({"run", WordCountYaml(), "--restore="}), "--restore needs");
}

TEST(CliTest, HelpPrintsUsageOnStdoutAndSucceeds) {
  RunResult r = RunCairn({"help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("usage:"));
}

// ---------------------------------------------------------------------------------------------
// validate

TEST(CliTest, ValidateAcceptsTheWordCountJob) {
  RunResult r = RunCairn({"validate", WordCountYaml()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("valid job 'wordcount'"));
  EXPECT_THAT(r.out, HasSubstr("source+tokenize -> count+sink  hash"));
}

TEST(CliTest, MalformedYamlIsBadInputLocatedByFileLineAndColumn) {
  ScratchDir dir;
  const std::string path = dir / "bad.yaml";
  WriteText(path,
            "job: x\n"
            "parallelism: 2\n"
            "checkpoint:\n"
            "  interval: 1s\n"
            "   mode: aligned\n");
  RunResult r = RunCairn({"validate", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(path + ":5:8: YAML syntax error"));
  RunResult run = RunCairn({"run", path});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr(path + ":5:8: "));
}

TEST(CliTest, MissingJobFileIsBadInputNamingIt) {
  ScratchDir dir;
  RunResult r = RunCairn({"validate", dir / "absent.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir / "absent.yaml"));
}

// ---------------------------------------------------------------------------------------------
// run --restore

TEST_F(WordCountRun, RestoreFromAMissingCheckpointFailsNamingItAndChangesNothing) {
  const auto before = Trees();
  RunResult r = RunCairn(RunArgs({"--restore", "/nonexistent"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("/nonexistent"));
  EXPECT_TRUE(SameTree(before, Trees()));
}

// It used to warn and start from the beginning, which commits every record a second time when
// the output directory holds a finished run's output (tests/restart_test.cc has the rest).
TEST_F(WordCountRun, RestoreLatestFromAnEmptyDirectoryFailsClosedAndChangesNothing) {
  const std::string empty = dir_ / "empty-ck";
  std::filesystem::create_directory(empty);
  const auto before = Trees();
  RunResult r = RunCairn({"run", WordCountYaml(), "--quiet", "--restore", "latest",
                          "--set", "operators.source.path=" + input(),
                          "--set", "operators.sink.path=" + out(),
                          "--set", "checkpoint.dir=" + empty,
                          "--set", "checkpoint.interval=20ms"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--restore latest: no checkpoint in " + empty + " can be restored"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("starting from the beginning")));
  EXPECT_TRUE(SameTree(before, Trees()));
  EXPECT_TRUE(std::filesystem::is_empty(empty));
}

TEST(CliTest, FreshWithRestoreIsAUsageError) {
  ExpectUsageError(RunCairn({"run", WordCountYaml(), "--fresh", "--restore", "latest"}),
                   "--fresh (start over) and --restore (resume) exclude each other");
}

TEST_F(WordCountRun, QuietLeavesOnlyTheSummaryAndSaysWhatWasRestored) {
  // The fixture's run was --quiet: a restore of its final checkpoint, --quiet, prints nothing on
  // stderr, and its summary names the checkpoint, the keys loaded and the time to first record.
  // (What each run restores is read from the disk before it: a restored run may take a periodic
  // checkpoint before its final one, when its sources take longer than an interval to finish.)
  const uint64_t fixture_newest = *CompletedIds().rbegin();
  RunResult quiet = RunCairn(RunArgs({"--restore", "latest"}));
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  EXPECT_THAT(quiet.out, HasSubstr("(restored from checkpoint " + std::to_string(fixture_newest) + ")"));
  EXPECT_THAT(quiet.out, ::testing::ContainsRegex("restore +checkpoint " + std::to_string(fixture_newest) +
                                                  ": [1-9][0-9]* keys, [0-9.]+ s to the first record"));
  // Without it the same restore notes what it does on stderr.
  const uint64_t last = *CompletedIds().rbegin();
  EXPECT_GT(last, fixture_newest) << "the restored run's final checkpoint";
  std::vector<std::string> args = RunArgs({"--restore", "latest"});
  args.erase(std::find(args.begin(), args.end(), "--quiet"));
  RunResult loud = RunCairn(args);
  ASSERT_EQ(loud.exit_code, 0) << loud.err;
  EXPECT_THAT(loud.err, HasSubstr("cairn: restoring from checkpoint " + std::to_string(last) + " ("));
  EXPECT_THAT(loud.err, HasSubstr("cairn: restored checkpoint " + std::to_string(last) + " ("));
}

TEST_F(WordCountRun, StateDumpDecodesOperatorStateByTheOperatorsType) {
  // The final checkpoint: each source subtask read its byte range of the input to the end; each
  // sink subtask's state names its run and next part file.
  const std::string chk = ck() + "/chk-" + std::to_string(*CompletedIds().rbegin());
  RunResult text = RunCairn({"state", "dump", chk});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::string size = std::to_string(std::filesystem::file_size(input()));
  int sources = 0, sinks = 0;
  for (const std::string& line : Lines(text.out)) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex("source\t([01])\toperator_state\t16 bytes\tposition=([0-9]+) size=([0-9]+)"))) {
      ++sources;
      EXPECT_EQ(m[3].str(), size) << line;
      EXPECT_LE(std::stoull(m[2].str()), std::stoull(size)) << line;
    } else if (std::regex_match(line, std::regex("sink\t[01]\toperator_state\t[0-9]+ bytes\trun=[0-9a-z-]+ next_seq=[0-9]+ "
                                                "pending=(none|[0-9]+@[0-9]+(,[0-9]+@[0-9]+)*)"))) {
      ++sinks;
    } else {
      EXPECT_THAT(line, ::testing::Not(HasSubstr("operator_state"))) << "not decoded";
    }
  }
  EXPECT_EQ(sources, 2) << text.out;
  EXPECT_EQ(sinks, 2) << text.out;
  RunResult json = RunCairn({"state", "dump", chk, "--operator", "source", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out, ::testing::ContainsRegex("\"operator_state_bytes\":16,\"operator_state\":\"0x[0-9a-f]+\","
                                                 "\"decoded\":\"position=[0-9]+ size=" + size + "\"}"));
}

TEST_F(WordCountRun, RestoreIntoADifferentMaxParallelismFailsAndChangesNothing) {
  const auto before = Trees();
  RunResult r = RunCairn(RunArgs({"--restore", "latest", "--set", "max_parallelism=64"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("max_parallelism 128 but the job has 64"));
  EXPECT_TRUE(SameTree(before, Trees()));
}

TEST_F(WordCountRun, RescalingAnOperatorWithOperatorStateIsAcceptedAndAddsNoOutput) {
  // count is keyed; the forward edge makes the sink follow it, and the sink's operator state (its
  // pending files) is redistributed by its rule (docs/state.md, "Rescaling"). Restoring the
  // final checkpoint of a completed run reads nothing more and commits nothing twice.
  std::vector<std::string> before = CommittedLines(out());
  std::sort(before.begin(), before.end());
  RunResult r = RunCairn(RunArgs({"--restore", "latest", "--set", "operators.count.parallelism=3",
                                  "--set", "operators.sink.parallelism=3"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("restored from checkpoint"));
  std::vector<std::string> after = CommittedLines(out());
  std::sort(after.begin(), after.end());
  EXPECT_EQ(after, before);
}

// ---------------------------------------------------------------------------------------------
// checkpoints

TEST_F(WordCountRun, CheckpointsListsOneLinePerCompletedCheckpoint) {
  RunResult r = RunCairn({"checkpoints", ck()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::set<uint64_t> on_disk = CompletedIds();
  ASSERT_FALSE(on_disk.empty());
  std::set<uint64_t> listed;
  size_t completed_lines = 0;
  for (const std::string& line : Lines(r.out)) {
    SCOPED_TRACE(line);
    // A checkpoint that failed (say, one that timed out on a loaded machine) has its own line.
    if (line.find(" status=failed ") != std::string::npos) continue;
    ++completed_lines;
    std::map<std::string, std::string> f;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      size_t eq = w.find('=');
      if (eq != std::string::npos) f[w.substr(0, eq)] = w.substr(eq + 1);
    }
    for (const char* key : {"id", "path", "trigger_time", "duration_ms", "state_bytes", "mode"})
      EXPECT_TRUE(f.count(key)) << "missing field " << key;
    uint64_t id = std::stoull(f["id"]);
    listed.insert(id);
    EXPECT_EQ(f["path"], ck() + "/chk-" + f["id"]);
    EXPECT_TRUE(std::regex_match(f["trigger_time"], std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
        << f["trigger_time"];
    EXPECT_TRUE(std::regex_match(f["duration_ms"], std::regex(R"(\d+)")));
    EXPECT_GT(std::stoull(f["state_bytes"]), 0u);
    EXPECT_EQ(f["mode"], "aligned");
  }
  EXPECT_EQ(listed, on_disk);
  EXPECT_EQ(completed_lines, on_disk.size());
}

TEST_F(WordCountRun, CheckpointsJsonPrintsOneObjectPerCompletedCheckpoint) {
  RunResult r = RunCairn({"checkpoints", ck(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::set<uint64_t> on_disk = CompletedIds();
  std::set<uint64_t> listed;
  const std::vector<std::string> lines = Lines(r.out);
  for (const std::string& line : lines) {
    SCOPED_TRACE(line);
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.front(), '{');
    EXPECT_EQ(line.back(), '}');
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, std::regex(R"("id":(\d+)[,}])")));
    const std::string id = m[1];
    listed.insert(std::stoull(id));
    EXPECT_THAT(line, HasSubstr("\"path\":\"" + ck() + "/chk-" + id + "\""));
    EXPECT_TRUE(std::regex_search(line, std::regex(R"("trigger_time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")")));
    EXPECT_TRUE(std::regex_search(line, std::regex(R"("duration_ms":\d+[,}])")));
    EXPECT_TRUE(std::regex_search(line, std::regex(R"("state_bytes":[1-9]\d*[,}])")));
    EXPECT_THAT(line, HasSubstr("\"mode\":\"aligned\""));
  }
  EXPECT_EQ(listed, on_disk);
  EXPECT_EQ(lines.size(), on_disk.size());
}

TEST(CliTest, CheckpointsOfAMissingDirectoryIsBadInput) {
  RunResult r = RunCairn({"checkpoints", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent"));
}

// ---------------------------------------------------------------------------------------------
// debug

TEST(CliTest, DebugCrashPointsListsEveryCrashPoint) {
  RunResult r = RunCairn({"debug", "crash-points"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> names;
  for (const std::string& line : Lines(r.out)) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.insert(name);
  }
  for (const char* expected : {"source.barrier_injected", "task.sync_snapshot", "persist.keyed",
                               "persist.operator_state", "metadata.before_commit", "checkpoint.committed",
                               "sink.commit", "retention.cleanup", "restore.midway"})
    EXPECT_TRUE(names.count(expected)) << expected;
}

}  // namespace
}  // namespace cairn::testing
