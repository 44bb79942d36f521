// End to end: the word count job killed with SIGKILL at random instants and restored with
// `--restore latest` until it completes commits, for every word, the counts 1..n exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>

#include "tests/test_util.h"

namespace cairn::testing {
namespace {

// Word counts of `path`, split at ASCII whitespace as the tokenize operator does.
std::map<std::string, int64_t> ExpectedCounts(const std::string& path) {
  std::map<std::string, int64_t> counts;
  std::string text = ReadText(path);
  size_t i = 0, n = text.size();
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (i < n) {
    while (i < n && space(text[i])) ++i;
    size_t s = i;
    while (i < n && !space(text[i])) ++i;
    if (i > s) counts[text.substr(s, i - s)]++;
  }
  return counts;
}

// Checks that the committed output holds, for every word, exactly the counts 1..n.
void ExpectExactlyOnce(const std::string& out_dir, const std::map<std::string, int64_t>& expected) {
  std::map<std::string, std::vector<int64_t>> seen;
  for (const std::string& line : CommittedLines(out_dir)) {
    size_t tab = line.rfind('\t');
    ASSERT_NE(tab, std::string::npos) << "malformed output line: " << line;
    seen[line.substr(0, tab)].push_back(std::stoll(line.substr(tab + 1)));
  }
  ASSERT_EQ(seen.size(), expected.size()) << "distinct words in the output";
  for (const auto& [word, n] : expected) {
    auto it = seen.find(word);
    ASSERT_NE(it, seen.end()) << "missing word " << word;
    std::vector<int64_t> counts = it->second;
    std::sort(counts.begin(), counts.end());
    ASSERT_EQ(counts.size(), static_cast<size_t>(n)) << "word " << word << " has " << counts.size()
                                                     << " output lines, expected " << n;
    for (int64_t k = 0; k < n; ++k) ASSERT_EQ(counts[k], k + 1) << "word " << word;
  }
}

struct KillRun {
  int kills = 0;
  int runs = 0;
  bool completed = false;
};

// Runs the job until it completes, SIGKILLing it after a random delay up to `max_kills` times.
KillRun RunWithKills(const std::vector<std::string>& args, const std::string& logs, int max_kills, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(60, 500);
  KillRun kr;
  while (kr.runs < max_kills + 10) {
    ++kr.runs;
    CairnProcess p(args, logs + "/out.log", logs + "/err.log");
    RunResult r;
    bool kill_this = kr.kills < max_kills;
    if (kill_this && !p.Wait(delay_ms(rng), &r)) {
      p.Kill();
      p.Wait(60000, &r);
      ++kr.kills;
      continue;
    }
    if (!kill_this && !p.Wait(300000, &r)) {
      ADD_FAILURE() << "cairn run did not finish";
      return kr;
    }
    if (r.signal == 0) {
      EXPECT_EQ(r.exit_code, 0) << ReadText(logs + "/err.log");
      kr.completed = r.exit_code == 0;
      return kr;
    }
  }
  return kr;
}

TEST(WordCountRecovery, RandomSigkillsThenRestoreLatestGiveExactlyOnceCounts) {
  ScratchDir dir;
  std::string input = dir / "input.txt";
  RunResult gen = RunCairn({"generate", "--out", input, "--words", "2000000", "--vocabulary", "3000", "--seed", "7"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  std::vector<std::string> args = {"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet", "--restore", "latest",
                                   "--set", "operators.source.path=" + input,
                                   "--set", "operators.source.rate=25000",
                                   "--set", "operators.sink.path=" + dir / "out",
                                   "--set", "checkpoint.dir=" + dir / "ck",
                                   "--set", "checkpoint.interval=50ms"};
  uint32_t seed = std::random_device{}();
  SCOPED_TRACE("kill delay seed " + std::to_string(seed));
  KillRun kr = RunWithKills(args, dir.path(), 6, seed);
  ASSERT_TRUE(kr.completed);
  EXPECT_EQ(kr.kills, 6);
  ExpectExactlyOnce(dir / "out", ExpectedCounts(input));
}

TEST(WordCountRecovery, UninterruptedRunCommitsExactlyOnceCounts) {
  ScratchDir dir;
  std::string input = dir / "input.txt";
  ASSERT_EQ(RunCairn({"generate", "--out", input, "--words", "300000", "--vocabulary", "2000", "--seed", "3"}).exit_code, 0);
  RunResult r = RunCairn({"run", SourceDir() + "/jobs/wordcount.yaml", "--quiet",
                          "--set", "operators.source.path=" + input,
                          "--set", "operators.sink.path=" + dir / "out",
                          "--set", "checkpoint.dir=" + dir / "ck",
                          "--set", "checkpoint.interval=20ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("job wordcount completed"), std::string::npos) << r.out;
  ExpectExactlyOnce(dir / "out", ExpectedCounts(input));
  RunResult ck = RunCairn({"checkpoints", dir / "ck", "--json"});
  ASSERT_EQ(ck.exit_code, 0) << ck.err;
  EXPECT_NE(ck.out.find("\"final\":true"), std::string::npos) << ck.out;
}

}  // namespace
}  // namespace cairn::testing
