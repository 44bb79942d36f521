// An operator written against the operator list-state API (state/operator_list_state.h): a
// split list and a union list, declared in Open, checkpointed, restored through a SIGKILL and a
// change of parallelism, and printed by `cairn state dump`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <map>
#include <string>
#include <vector>

#include "jobs/registry.h"
#include "state/checkpoint_metadata.h"
#include "state/operator_list_state.h"
#include "tests/operator_api/in_process_cli.h"
#include "tests/test_util.h"
#include "tests/tree_snapshot.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// tally: passes its records on; keeps, as split list state "counts", one item per run of each
// subtask with the number of records it passed in that run (so the items of all subtasks add up
// to every record, once), and as union list state "runs" every "<subtask>/<parallelism>" that
// has run.
class Tally final : public Operator {
 public:
  explicit Tally(const OperatorConfig&) {}
  Status Open(OperatorContext& ctx) override {
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetListState("counts", &counts_));
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetUnionListState("runs", &runs_));
    restored_ = counts_->items();
    runs_->Add(std::to_string(ctx.subtask) + "/" + std::to_string(ctx.parallelism));
    return Status::OK();
  }
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    out->AppendRange(in, 0, in.size());
    passed_ += static_cast<int64_t>(in.size());
    return Status::OK();
  }
  Status SnapshotState(CheckpointId, OperatorSnapshot*) override {
    std::vector<int64_t> items = restored_;
    items.push_back(passed_);
    counts_->Update(std::move(items));
    return Status::OK();
  }

 private:
  OperatorListState<int64_t>* counts_ = nullptr;
  OperatorListState<std::string>* runs_ = nullptr;
  std::vector<int64_t> restored_;
  int64_t passed_ = 0;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "tally",
    .role = OperatorRole::kTransform,
    .doc = "Passes records on; a split and a union list state (tests only).",
    .create = MakeOperator<Tally>,
});

namespace {

using testing::RunAsChild;

// The job of these tests, on `input`: source -> tokenize -> tally -> sink, at parallelism 2.
void WriteJob(const testing::ScratchDir& dir, const std::string& input) {
  testing::WriteText(dir / "input.txt", input);
  testing::WriteText(dir / "job.yaml",
                     "job: list-states\n"
                     "parallelism: 2\n"
                     "checkpoint:\n"
                     "  interval: 20ms\n"
                     "  dir: " + dir / "ck" + "\n"
                     "operators:\n"
                     "  - id: source\n    type: file_source\n    path: " + dir / "input.txt" + "\n"
                     "  - id: tokenize\n    type: tokenize\n    inputs: [source]\n"
                     "  - id: tally\n    type: tally\n    inputs: [tokenize]\n"
                     "  - id: sink\n    type: file_sink\n    path: " + dir / "out" + "\n    inputs: [tally]\n");
}

void WriteSmallJob(const testing::ScratchDir& dir) { WriteJob(dir, "a b a c\nb a\nx y\nz\n"); }

std::string LatestCheckpoint(const testing::ScratchDir& dir) {
  return dir / ("ck/chk-" + std::to_string(*testing::CompletedCheckpointIds(dir / "ck").rbegin()));
}

TEST(ListStates, SurviveAKillAndARescaleExactlyOnceAndAreDumped) {
  testing::ScratchDir dir;
  std::string input;
  std::vector<std::string> words;
  for (int i = 0; i < 400; ++i) {
    const std::string n = std::to_string(i);
    words.push_back(std::string("a").append(n));
    words.push_back(std::string("b").append(n));
    input.append(words[words.size() - 2]).append(" ").append(words.back()).append("\n");
  }
  WriteJob(dir, input);
  // Paced (20 lines/s: 400 lines take many seconds) and killed as checkpoint 3 commits.
  testing::RunResult r = RunAsChild(dir, {"run", dir / "job.yaml", "--quiet", "--set", "operators.source.rate=20"},
                                    {"CAIRN_CRASH_AT=checkpoint.committed:3"});
  ASSERT_EQ(r.signal, SIGKILL) << r.err;
  // Resumed unpaced at parallelism 3: the split items of the 2 old subtasks go to new subtasks
  // 0 and 1; every new subtask gets both old "runs".
  r = RunAsChild(dir, {"run", dir / "job.yaml", "--quiet", "--restore", "latest", "--set", "parallelism=3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> committed = testing::CommittedLines(dir / "out");
  std::sort(committed.begin(), committed.end());
  std::sort(words.begin(), words.end());
  EXPECT_EQ(committed, words) << "every word exactly once";

  const std::string latest = LatestCheckpoint(dir);
  testing::CliResult dump = testing::Cairn({"state", "dump", latest, "--operator", "tally", "--json"});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  // {"operator":"tally","subtask":S,"list_state":"counts","mode":"split","values":[...]}
  std::map<int, std::vector<int64_t>> counts;
  std::map<int, std::string> runs;
  for (size_t at = 0, end; (end = dump.out.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = dump.out.substr(at, end - at);
    const int subtask = std::stoi(line.substr(line.find("\"subtask\":") + 10));
    const std::string values = line.substr(line.find("\"values\":[") + 10);
    if (line.find("\"list_state\":\"counts\",\"mode\":\"split\"") != std::string::npos) {
      for (size_t p = 0; p < values.size() && values[p] != ']';) {
        size_t used = 0;
        counts[subtask].push_back(std::stoll(values.substr(p), &used));
        p += used + (values[p + used] == ',' ? 1 : 0);
      }
    } else if (line.find("\"list_state\":\"runs\",\"mode\":\"union\"") != std::string::npos) {
      runs[subtask] = values;
    }
  }
  ASSERT_EQ(counts.size(), 3u) << dump.out;
  EXPECT_EQ(counts[0].size(), 2u) << "old subtask 0's item, then this run's";
  EXPECT_EQ(counts[1].size(), 2u) << "old subtask 1's item, then this run's";
  EXPECT_EQ(counts[2].size(), 1u) << "this run's only";
  int64_t total = 0;
  for (const auto& [s, items] : counts)
    for (int64_t n : items) total += n;
  EXPECT_EQ(total, static_cast<int64_t>(words.size())) << "every record counted once, across the kill and the rescale";
  EXPECT_EQ(runs[0], "\"0/2\",\"1/2\",\"0/3\"]}");
  EXPECT_EQ(runs[1], "\"0/2\",\"1/2\",\"1/3\"]}");
  EXPECT_EQ(runs[2], "\"0/2\",\"1/2\",\"2/3\"]}");

  testing::CliResult text = testing::Cairn({"state", "dump", latest, "--operator", "tally"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("tally\t2\tlist_state\truns\tunion\t2/3\n"));
  EXPECT_THAT(text.out, HasSubstr("tally\t0\tlist_state\tcounts\tsplit\t"));
}

TEST(ListStates, ScaledDownEverySplitItemAndEveryUnionItemReachesTheOneSubtask) {
  testing::ScratchDir dir;
  WriteSmallJob(dir);
  testing::CliResult r = testing::Cairn({"run", dir / "job.yaml", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = testing::Cairn({"run", dir / "job.yaml", "--quiet", "--restore", "latest", "--set", "parallelism=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string latest = LatestCheckpoint(dir);
  r = testing::Cairn({"state", "dump", latest, "--operator", "tally"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> runs, counts;
  for (size_t at = 0, end; (end = r.out.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = r.out.substr(at, end - at);
    if (line.rfind("tally\t0\tlist_state\truns\tunion\t", 0) == 0) runs.push_back(line.substr(line.rfind('\t') + 1));
    if (line.rfind("tally\t0\tlist_state\tcounts\tsplit\t", 0) == 0) counts.push_back(line.substr(line.rfind('\t') + 1));
  }
  EXPECT_THAT(runs, ElementsAre("0/2", "1/2", "0/1"));
  ASSERT_EQ(counts.size(), 3u) << r.out;  // old subtask 0's, old subtask 1's, this run's (0: all was read)
  EXPECT_EQ(std::stoll(counts[0]) + std::stoll(counts[1]), 9) << "the 9 words, once";
  EXPECT_EQ(counts[2], "0");
  EXPECT_THAT(testing::CommittedLines(dir / "out"), UnorderedElementsAre("a", "b", "a", "c", "b", "a", "x", "y", "z"));
}

TEST(ListStates, ADamagedListStateFailsTheRestoreWithExit2NamingTheFileAndChangesNothing) {
  testing::ScratchDir dir;
  WriteSmallJob(dir);
  // list.state files (the default keeps list states this small inline in _metadata).
  testing::CliResult r = testing::Cairn({"run", dir / "job.yaml", "--quiet", "--set", "checkpoint.inline_state_threshold=0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string latest = LatestCheckpoint(dir);
  const std::string file = latest + "/tally-1/list.state";
  std::string bytes = testing::ReadText(file);
  ASSERT_FALSE(bytes.empty());
  bytes[bytes.size() / 3] = static_cast<char>(bytes[bytes.size() / 3] ^ 0x01);
  testing::WriteText(file, bytes);
  const testing::Tree ck = testing::TreeSnapshot(dir / "ck"), out = testing::TreeSnapshot(dir / "out");
  r = testing::Cairn({"run", dir / "job.yaml", "--quiet", "--restore", latest});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(file + ": damaged"));
  EXPECT_TRUE(testing::SameTree(ck, testing::TreeSnapshot(dir / "ck")));
  EXPECT_TRUE(testing::SameTree(out, testing::TreeSnapshot(dir / "out")));
}

// Inline in _metadata (checkpoint.inline_state_threshold), list states are covered by its
// checksum; bytes that pass it but do not parse (a _metadata written with a valid checksum)
// fail the restore, `cairn verify` and `cairn state dump` naming the operator, and change nothing.
TEST(ListStates, AnInlineListStateThatDoesNotParseFailsTheRestoreNamingTheOperatorAndChangesNothing) {
  testing::ScratchDir dir;
  WriteSmallJob(dir);
  testing::CliResult r = testing::Cairn({"run", dir / "job.yaml", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string latest = LatestCheckpoint(dir);
  CheckpointMetadata m;
  ASSERT_TRUE(ReadMetadata(latest, &m).ok());
  bool damaged = false;
  for (SubtaskStateHandle& h : m.subtasks) {
    if (h.operator_id != "tally" || h.subtask != 1) continue;
    ASSERT_EQ(h.list_state_file, "") << "kept inline by default";
    ASSERT_FALSE(h.list_state_inline.empty());
    h.list_state_inline.resize(h.list_state_inline.size() / 2);
    damaged = true;
  }
  ASSERT_TRUE(damaged);
  testing::WriteText(latest + "/_metadata", EncodeMetadata(m));
  const testing::Tree ck = testing::TreeSnapshot(dir / "ck"), out = testing::TreeSnapshot(dir / "out");
  r = testing::Cairn({"run", dir / "job.yaml", "--quiet", "--restore", latest});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("list state of operator 'tally' subtask 1 is damaged (it does not parse)"));
  r = testing::Cairn({"verify", latest});
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out + r.err, HasSubstr(latest + "/_metadata: damaged (list state of tally-1 does not parse)"));
  r = testing::Cairn({"state", "dump", latest, "--operator", "tally"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.err, HasSubstr(latest + "/_metadata: damaged (list state of tally-1 does not parse)"));
  EXPECT_TRUE(testing::SameTree(ck, testing::TreeSnapshot(dir / "ck")));
  EXPECT_TRUE(testing::SameTree(out, testing::TreeSnapshot(dir / "out")));
}

}  // namespace
}  // namespace cairn
