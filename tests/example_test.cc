// The public C++ API, as a user meets it: Cairn is installed (`cmake --install`), the
// out-of-tree example examples/distinct is configured with find_package(Cairn) and built as a
// CMake project of its own, and its program runs a YAML job using its own keyed operator
// (`distinct`, a ValueState<bool> per key) with checkpoints, SIGKILLs and `--restore latest`:
// the output holds every distinct word of the input exactly once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn {
namespace {

using testing::ScratchDir;

// Runs a shell command, its output appended to `log`; its exit status.
int Shell(const std::string& command, const std::string& log) {
  return std::system((command + " >>" + log + " 2>&1").c_str());
}

// Not in sanitizer builds (not even as a skipped test, so that ctest's summary ends the run):
// their installed libraries need the sanitizer runtime to link.
#if !CAIRN_SANITIZED
TEST(ExampleTest, AnOutOfTreeOperatorBuiltAgainstTheInstalledApiRunsAJobThroughKillsExactlyOnce) {
  ScratchDir dir;
  const std::string log = dir / "build.log";
  const std::string prefix = dir / "prefix";
  ASSERT_EQ(Shell("cmake --install '" CAIRN_BUILD_DIR "' --prefix '" + prefix + "'", log), 0)
      << testing::ReadText(log);
  ASSERT_EQ(Shell("cmake -S '" + testing::SourceDir() + "/examples/distinct' -B '" + dir / "example" +
                      "' -DCMAKE_PREFIX_PATH='" + prefix + "' -DCMAKE_CXX_COMPILER='" CAIRN_CXX_COMPILER "'",
                  log),
            0)
      << testing::ReadText(log);
  ASSERT_EQ(Shell("cmake --build '" + dir / "example" + "' -j2", log), 0) << testing::ReadText(log);
  const std::string program = dir / "example/cairn-distinct";

  const std::string input = dir / "words.txt";
  ASSERT_EQ(testing::RunCairn({"generate", "--out", input, "--words", "200000", "--vocabulary", "20000"}).exit_code, 0);
  std::set<std::string> expected;
  for (const auto& [word, n] : testing::ExpectedCounts(input)) expected.insert(word);

  testing::KillPlan plan = testing::PacedKillPlan(2, dir / "ck", 100, {"operators.source.rate=100"},
                                                  {"operators.source.rate=0"});
  plan.binary = program;
  SCOPED_TRACE("kill plan seed " + std::to_string(plan.seed));
  testing::KillRun kr = testing::RunWithKills(
      {"run", testing::SourceDir() + "/examples/distinct/distinct.yaml", "--restore", "latest", "--set",
       "operators.source.path=" + input, "--set", "operators.sink.path=" + dir / "out", "--set",
       "checkpoint.dir=" + dir / "ck", "--set", "checkpoint.interval=100ms", "--quiet"},
      dir.path(), plan);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 2);

  std::multiset<std::string> got;
  for (const std::string& line : testing::CommittedLines(dir / "out")) got.insert(line);
  EXPECT_EQ(got.size(), expected.size()) << "every distinct word once";
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), expected);
}
#endif  // !CAIRN_SANITIZED

}  // namespace
}  // namespace cairn
