#include "tests/wordcount_check.h"

#include <filesystem>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>

#include "tests/test_util.h"

namespace cairn::testing {

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

void ExpectExactlyOnce(const std::string& out_dir, const std::map<std::string, int64_t>& expected, bool at_least_once) {
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
    if (at_least_once) {
      // Replayed records are counted again, so a count may go past n and skip values; nothing
      // is lost when the count reached at least n.
      ASSERT_GE(counts.back(), n) << "word " << word << " was counted " << counts.back() << " times, expected >= " << n;
      continue;
    } else {
      ASSERT_EQ(counts.size(), static_cast<size_t>(n))
          << "word " << word << " has " << counts.size() << " output lines, expected " << n;
    }
    for (int64_t k = 0; k < n; ++k) ASSERT_EQ(counts[k], k + 1) << "word " << word;
  }
}

std::vector<std::string> ResumeArgs(const std::vector<std::string>& args) {
  std::string ck;
  for (const std::string& a : args)
    if (a.rfind("checkpoint.dir=", 0) == 0) ck = a.substr(std::string("checkpoint.dir=").size());
  bool resumable = false;
  std::error_code ec;
  if (!ck.empty() && std::filesystem::is_directory(ck, ec))
    for (const auto& e : std::filesystem::directory_iterator(ck, ec))
      resumable |= e.path().filename().string().rfind("chk-", 0) == 0 && std::filesystem::exists(e.path() / "_metadata");
  if (resumable) return args;
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--restore" && i + 1 < args.size() && args[i + 1] == "latest") {
      ++i;
      continue;
    }
    out.push_back(args[i]);
  }
  return out;
}

KillRun RunWithKills(const std::vector<std::string>& args, const std::string& logs, int max_kills, uint32_t seed,
                     int min_delay_ms, int max_delay_ms, const std::string& checkpoint_dir) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(min_delay_ms, max_delay_ms);
  KillRun kr;
  auto list = [&] {
    if (checkpoint_dir.empty()) return;
    RunResult ck = RunCairn({"checkpoints", checkpoint_dir, "--json"});
    std::istringstream in(ck.out);
    for (std::string line; std::getline(in, line);) kr.checkpoint_lines.push_back(line);
  };
  while (kr.runs < max_kills + 10) {
    ++kr.runs;
    CairnProcess p(ResumeArgs(args), logs + "/out.log", logs + "/err.log");
    RunResult r;
    bool kill_this = kr.kills < max_kills;
    if (kill_this && !p.Wait(delay_ms(rng), &r)) {
      p.Kill();
      p.Wait(60000, &r);
      ++kr.kills;
      list();
      continue;
    }
    if (!kill_this && !p.Wait(300000, &r)) {
      ADD_FAILURE() << "cairn run did not finish";
      return kr;
    }
    list();
    if (r.signal == 0) {
      EXPECT_EQ(r.exit_code, 0) << ReadText(logs + "/err.log");
      kr.completed = r.exit_code == 0;
      return kr;
    }
  }
  return kr;
}

}  // namespace cairn::testing
