#include "tests/wordcount_check.h"

#include <filesystem>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
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

uint64_t NewestCompletedCheckpoint(const std::string& dir) {
  const std::set<uint64_t> ids = CompletedCheckpointIds(dir);
  return ids.empty() ? 0 : *ids.rbegin();
}

KillPlan PacedKillPlan(int kills, const std::string& checkpoint_dir, int max_extra_ms,
                       const std::vector<std::string>& paced, const std::vector<std::string>& unpaced) {
  KillPlan plan;
  plan.kills = kills;
  plan.seed = std::random_device{}();
  plan.checkpoint_dir = checkpoint_dir;
  plan.max_extra_ms = max_extra_ms;
  for (const std::string& s : paced) plan.killed_run_args.insert(plan.killed_run_args.end(), {"--set", s});
  for (const std::string& s : unpaced) plan.last_run_args.insert(plan.last_run_args.end(), {"--set", s});
  return plan;
}

KillRun RunWithKills(const std::vector<std::string>& args, const std::string& logs, const KillPlan& plan) {
  std::mt19937 rng(plan.seed);
  KillRun kr;
  auto list = [&] {
    if (!plan.list_checkpoints) return;
    RunResult ck = RunCairn({"checkpoints", plan.checkpoint_dir, "--json"});
    std::istringstream in(ck.out);
    for (std::string line; std::getline(in, line);) kr.checkpoint_lines.push_back(line);
  };
  auto with = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> a = args;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // A run that makes no progress at all for this long is hung (not slow): a generous bound
  // that only turns a hang into a failure instead of a stuck suite.
  constexpr int kHungMs = 300000;
  while (kr.kills < plan.kills) {
    ++kr.runs;
    const uint64_t before = NewestCompletedCheckpoint(plan.checkpoint_dir);
    const int new_checkpoints = std::uniform_int_distribution<int>(1, std::max(1, plan.max_new_checkpoints))(rng);
    const int extra_ms = std::uniform_int_distribution<int>(0, std::max(0, plan.max_extra_ms))(rng);
    CairnProcess p(ResumeArgs(with(plan.killed_run_args)), logs + "/out.log", logs + "/err.log", plan.env, plan.binary);
    RunResult r;
    bool exited = false;
    auto last_progress = std::chrono::steady_clock::now();
    uint64_t seen = before;
    while (!exited && seen < before + new_checkpoints) {
      exited = p.Wait(2, &r);
      uint64_t now = NewestCompletedCheckpoint(plan.checkpoint_dir);
      if (now != seen) {
        seen = now;
        last_progress = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - last_progress > std::chrono::milliseconds(kHungMs)) {
        ADD_FAILURE() << "no checkpoint completed for " << kHungMs / 1000 << " s in run " << kr.runs;
        return kr;
      }
    }
    if (!exited && extra_ms > 0) exited = p.Wait(extra_ms, &r);
    if (exited) {
      list();
      ADD_FAILURE() << "run " << kr.runs << " ended by itself (exit " << r.exit_code << ", signal " << r.signal
                    << ") before its kill after " << new_checkpoints << " new checkpoints: the killed runs' pace "
                    << "must keep the job from finishing\n" << ReadText(logs + "/err.log");
      return kr;
    }
    p.Kill();
    p.Wait(kHungMs, &r);
    ++kr.kills;
    list();
  }
  ++kr.runs;
  CairnProcess p(ResumeArgs(with(plan.last_run_args)), logs + "/out.log", logs + "/err.log", plan.env, plan.binary);
  RunResult r;
  if (!p.Wait(600000, &r)) {
    ADD_FAILURE() << "cairn run did not finish";
    return kr;
  }
  list();
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 0) << ReadText(logs + "/err.log");
  kr.completed = r.signal == 0 && r.exit_code == 0;
  return kr;
}

}  // namespace cairn::testing
