// An operator written against the keyed-state API (state/keyed_state_api.h): a ValueState, a
// MapState and a ListState side by side, declared in Open, checkpointed and restored by either
// backend (state.backend), also at another parallelism, and printed by `cairn state dump`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "jobs/cli/cli.h"
#include "jobs/registry.h"
#include "state/keyed_state_api.h"
#include "tests/operator_api/in_process_cli.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using ::testing::HasSubstr;

// word_stats: keyed by word; keeps how often each word was seen (a value), the count at which
// it was last seen under the mark "last" (a map), and the running counts it emitted (a list,
// cut to the latest once it passes 2); emits (word, times seen).
class WordStats final : public Operator {
 public:
  explicit WordStats(const OperatorConfig&) {}
  Status Open(OperatorContext& ctx) override {
    if (ctx.keyed == nullptr) return Status::Internal("word_stats has no keyed state");
    CAIRN_RETURN_IF_ERROR(ctx.keyed->GetValueState("seen", &seen_));
    CAIRN_RETURN_IF_ERROR(ctx.keyed->GetMapState("marks", &marks_));
    return ctx.keyed->GetListState("history", &history_);
  }
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view w = in.GetString(i, 0);
      int64_t n = 0;
      if (!seen_->Get(w, &n)) n = 0;
      seen_->Put(w, ++n);
      history_->Add(w, n);
      marks_->Put(w, "last", n);
      if (n > 2) history_->Update(w, {n});  // keep the list short: the latest only
      size_t r = out->AddRow();
      out->SetString(r, 0, w);
      out->SetInt64(r, 1, n);
    }
    return Status::OK();
  }

 private:
  ValueState<int64_t>* seen_ = nullptr;
  MapState<std::string, int64_t>* marks_ = nullptr;
  ListState<int64_t>* history_ = nullptr;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "word_stats",
    .role = OperatorRole::kTransform,
    .keyed = true,
    .output_schema = FixedSchema({{"word", FieldType::kString}, {"seen", FieldType::kInt64}}),
    .doc = "Keyed by word: a value, a map and a list state (tests only).",
    .create = MakeOperator<WordStats>,
});

namespace {

using testing::Cairn;
using testing::CliResult;

std::string Job(const testing::ScratchDir& dir, const std::string& input) {
  return "job: named-states\n"
         "parallelism: 2\n"
         "checkpoint:\n"
         "  interval: 20ms\n"
         "  dir: " + dir / "ck" + "\n"
         "operators:\n"
         "  - id: source\n    type: file_source\n    path: " + input + "\n"
         "  - id: tokenize\n    type: tokenize\n    inputs: [source]\n"
         "  - id: stats\n    type: word_stats\n    key_by: word\n    inputs: [tokenize]\n"
         "  - id: sink\n    type: file_sink\n    path: " + dir / "out" + "\n    inputs: [stats]\n";
}

std::string Latest(const testing::ScratchDir& dir) {
  return dir / ("ck/chk-" + std::to_string(*testing::CompletedCheckpointIds(dir / "ck").rbegin()));
}

class NamedStates : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(NamedStates, AreCheckpointedRestoredIntoEitherBackendRescaledAndDumped) {
  const auto [first, second] = GetParam();
  testing::ScratchDir dir;
  testing::WriteText(dir / "input.txt", "a b a c\nb a\n");
  testing::WriteText(dir / "job.yaml", Job(dir, dir / "input.txt"));
  CliResult r = Cairn({"run", dir / "job.yaml", "--quiet", "--set", std::string("state.backend=") + first});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Restored into the second backend (the input is all read: the run only restores and ends).
  r = Cairn({"run", dir / "job.yaml", "--quiet", "--restore", "latest", "--set", std::string("state.backend=") + second});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // And rescaled 2 -> 3 back on the first backend: every state is split by key group.
  r = Cairn({"run", dir / "job.yaml", "--quiet", "--restore", "latest", "--set", "parallelism=3", "--set",
             std::string("state.backend=") + first});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cairn({"state", "dump", Latest(dir), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_directory(Latest(dir) + "/stats-2/keyed"));  // three subtasks now
  EXPECT_THAT(r.out, HasSubstr("\"state\":\"seen\",\"kind\":\"value\",\"key\":\"a\",\"value\":3}"));
  EXPECT_THAT(r.out, HasSubstr("\"state\":\"seen\",\"kind\":\"value\",\"key\":\"c\",\"value\":1}"));
  EXPECT_THAT(r.out, HasSubstr("\"state\":\"history\",\"kind\":\"list\",\"key\":\"a\",\"values\":[3]}"));
  EXPECT_THAT(r.out, HasSubstr("\"state\":\"marks\",\"kind\":\"map\",\"key\":\"a\",\"user_key\":\"last\",\"value\":3}"));
  EXPECT_THAT(r.out, HasSubstr("\"state\":\"history\",\"kind\":\"list\",\"key\":\"b\",\"values\":[1,2]}"));
  r = Cairn({"state", "dump", Latest(dir)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\tvalue\tseen\tb\t2\n"));
  EXPECT_THAT(r.out, HasSubstr("\tmap\tmarks\tc\tlast\t1\n"));
  EXPECT_THAT(r.out, HasSubstr("\tlist\thistory\tb\t1\n"));
  EXPECT_THAT(r.out, HasSubstr("\tlist\thistory\tb\t2\n"));
}

INSTANTIATE_TEST_SUITE_P(Backends, NamedStates,
                         ::testing::Values(std::make_pair("heap", "heap"), std::make_pair("heap", "rocksdb"),
                                           std::make_pair("rocksdb", "rocksdb"), std::make_pair("rocksdb", "heap")),
                         [](const auto& info) { return std::string(info.param.first) + "_then_" + info.param.second; });

}  // namespace
}  // namespace cairn
