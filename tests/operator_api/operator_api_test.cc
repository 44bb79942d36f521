// Specification of the operator API from the side of someone adding an operator: an operator
// defined and registered in a file of its own (at_least.cc, the example of docs/architecture.md,
// "Writing an operator") is found by the registry and runs in a job through `cairn run`; an
// error an operator returns from Process, Finish or NotifyCheckpointComplete fails the job with
// exit code 1, naming the operator and subtask.
//
// This binary is not cairn_tests: its registry holds operators that the documented catalog
// (docs/configuration.md, checked against the registry of cairn_tests) must not list.
#include <ostream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "jobs/cli/cli.h"
#include "jobs/registry.h"
#include "tests/operator_api/in_process_cli.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// fail_at: passes records on, and fails with an I/O error in the call named by `call`
// (process, finish or notify).
class FailAt final : public Operator {
 public:
  explicit FailAt(const OperatorConfig& config) : call_(config.GetString("call")) {}

  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    if (call_ == "process") return Status::IOError("failed on purpose in Process");
    out->AppendRange(in, 0, in.size());
    return Status::OK();
  }
  Status NotifyCheckpointComplete(CheckpointId id) override {
    if (call_ == "notify") return Status::IOError("failed on purpose in NotifyCheckpointComplete");
    return Status::OK();
  }
  Status Finish(RecordBatch*) override {
    if (call_ == "finish") return Status::IOError("failed on purpose in Finish");
    return Status::OK();
  }

 private:
  const std::string call_;
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "fail_at",
    .params = {{.name = "call", .type = ParamType::kString, .required = true, .doc = "process, finish or notify"}},
    .doc = "Fails in the call named by `call` (tests only).",
    .create = MakeOperator<FailAt>,
});

namespace {

using testing::Cairn;
using testing::CliResult;

// A job of two chains: file_source -> tokenize, then count -> operator `id` (of `type`, with
// the YAML lines `params`) -> file_sink.
class OperatorJob {
 public:
  OperatorJob(const std::string& id, const std::string& type, const std::string& params = "") {
    testing::WriteText(dir_ / "input.txt", "a b a c\nb a\n");
    testing::WriteText(dir_ / "job.yaml",
                       "job: operator-api\n"
                       "parallelism: 1\n"
                       "checkpoint:\n"
                       "  interval: 20ms\n"
                       "  dir: " + dir_ / "ck" + "\n"
                       "operators:\n"
                       "  - id: source\n    type: file_source\n    path: " + dir_ / "input.txt" + "\n"
                       "  - id: tokenize\n    type: tokenize\n    inputs: [source]\n"
                       "  - id: count\n    type: count\n    key_by: word\n    inputs: [tokenize]\n"
                       "  - id: " + id + "\n    type: " + type + "\n" + params + "    inputs: [count]\n"
                       "  - id: sink\n    type: file_sink\n    path: " + dir_ / "out" + "\n    inputs: [" + id + "]\n");
  }
  CliResult Run() { return Cairn({"run", dir_ / "job.yaml", "--quiet"}); }
  std::vector<std::string> Committed() const {
    std::vector<std::string> lines = testing::CommittedLines(dir_ / "out");
    std::sort(lines.begin(), lines.end());
    return lines;
  }

 private:
  testing::ScratchDir dir_;
};

// ---- Writing an operator --------------------------------------------------------------------

TEST(WritingAnOperator, TheRegistryFindsAnOperatorRegisteredInItsOwnFile) {
  const OperatorType* t = FindOperatorType("at_least");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->role, OperatorRole::kTransform);
  EXPECT_FALSE(t->keyed);
  ASSERT_NE(t->FindParam("min"), nullptr);
  EXPECT_TRUE(t->FindParam("min")->required);
  EXPECT_EQ(t->FindParam("min")->type, ParamType::kInt);
  std::vector<std::string> names;
  for (const OperatorType& type : OperatorTypes()) names.push_back(type.name);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "at_least"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "count"), names.end()) << "next to the built-ins";
}

TEST(WritingAnOperator, ARegisteredOperatorRunsInAJob) {
  // count emits (word, running count); at_least keeps the counts of 2 and more.
  OperatorJob job("frequent", "at_least", "    field: count\n    min: 2\n");
  CliResult r = job.Run();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("job operator-api completed"));
  EXPECT_THAT(job.Committed(), ElementsAre("a\t2", "a\t3", "b\t2"));
}

TEST(WritingAnOperator, TheLoaderValidatesTheParametersOfARegisteredOperator) {
  OperatorJob job("frequent", "at_least", "    field: count\n");
  CliResult r = job.Run();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(type at_least) is missing required parameter 'min' (integer: smallest value passed on)"));
  EXPECT_THAT(job.Committed(), IsEmpty());
}

TEST(WritingAnOperator, ArchitectureDocShowsTheExampleOperatorVerbatimInUnder40Lines) {
  const std::string doc = testing::ReadText(testing::SourceDir() + "/docs/architecture.md");
  const std::string code = testing::ReadText(testing::SourceDir() + "/tests/operator_api/at_least.cc");
  size_t section = doc.find("\n## Writing an operator\n");
  ASSERT_NE(section, std::string::npos) << "docs/architecture.md lacks the section";
  size_t begin = doc.find("```cpp\n", section);
  ASSERT_NE(begin, std::string::npos);
  begin += 7;
  size_t end = doc.find("```\n", begin);
  ASSERT_NE(end, std::string::npos);
  EXPECT_EQ(doc.substr(begin, end - begin), code) << "the code block must be tests/operator_api/at_least.cc";
  EXPECT_LT(std::count(code.begin(), code.end(), '\n'), 40);
}

// ---- Errors returned by an operator fail the job --------------------------------------------

struct FailCase {
  const char* call;
  const char* method;
};
void PrintTo(const FailCase& c, std::ostream* os) { *os << c.method; }

class OperatorErrorTest : public ::testing::TestWithParam<FailCase> {};

TEST_P(OperatorErrorTest, FailsTheJobWithExitCode1NamingTheOperatorAndSubtask) {
  OperatorJob job("fail", "fail_at", std::string("    call: ") + GetParam().call + "\n");
  CliResult r = job.Run();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("cairn: error: task "));
  EXPECT_THAT(r.err, HasSubstr(std::string("operator fail[0]: failed on purpose in ") + GetParam().method)) << r.err;
  EXPECT_THAT(r.out, IsEmpty()) << "no summary for a failed job";
}

INSTANTIATE_TEST_SUITE_P(Calls, OperatorErrorTest,
                         ::testing::Values(FailCase{"process", "Process"}, FailCase{"finish", "Finish"},
                                           FailCase{"notify", "NotifyCheckpointComplete"}),
                         [](const auto& info) { return std::string(info.param.method); });

}  // namespace
}  // namespace cairn
