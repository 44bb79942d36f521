#include "tests/worker_processes.h"

#include <dirent.h>
#include <signal.h>

#include <fstream>
#include <iterator>
#include <random>

#include "tests/test_util.h"
#include "tests/wordcount_check.h"

namespace cairn::testing {

std::set<int> WorkerProcessesOf(int pid) {
  std::set<int> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/children");
    for (int c; f >> c;) {
      std::ifstream cmd("/proc/" + std::to_string(c) + "/cmdline");
      std::string argv0, argv1;
      std::getline(cmd, argv0, '\0');
      std::getline(cmd, argv1, '\0');
      if (argv1 == "worker") out.insert(c);
    }
  }
  closedir(d);
  return out;
}

::testing::AssertionResult HasWorkerProcesses(int pid, size_t n, const std::string& err_file, std::set<int>* workers) {
  if (PollUntil([&] { return (*workers = WorkerProcessesOf(pid)).size() == n; })) return ::testing::AssertionSuccess();
  std::string seen;
  for (int w : *workers) seen += " " + std::to_string(w);
  return ::testing::AssertionFailure() << "cairn run (pid " << pid << ") has the worker processes [" << seen
                                       << " ], not " << n << "\n"
                                       << ReadText(err_file);
}

void KillWorkerProcessesThenFinish(const std::vector<std::string>& args, const std::string& dir, size_t workers,
                                   int kills, const std::vector<std::string>& final_args) {
  const std::string ck = dir + "/ck", err_file = dir + "/run.err";
  CairnProcess p(args, dir + "/run.out", err_file);
  std::mt19937 rng(std::random_device{}());
  auto a_new_checkpoint = [&] {
    const uint64_t before = NewestCompletedCheckpoint(ck);
    return PollUntil([&] { return NewestCompletedCheckpoint(ck) > before; });
  };
  for (int k = 0; k < kills; ++k) {
    ASSERT_TRUE(a_new_checkpoint()) << ReadText(err_file);
    std::set<int> alive;
    ASSERT_TRUE(HasWorkerProcesses(p.pid(), workers, err_file, &alive));
    auto it = alive.begin();
    std::advance(it, rng() % alive.size());
    ASSERT_EQ(kill(*it, SIGKILL), 0);
    // The restart: the generation after this one is deployed.
    const std::string deployed = "generation " + std::to_string(k + 2) + ": deployed";
    ASSERT_TRUE(PollUntil([&] { return ReadText(err_file).find(deployed) != std::string::npos; }))
        << ReadText(err_file);
  }
  ASSERT_TRUE(a_new_checkpoint()) << ReadText(err_file);
  RunResult r;
  ASSERT_FALSE(p.Wait(0, &r)) << "the paced run ended before its kill\n" << ReadText(err_file);
  p.Kill();
  ASSERT_TRUE(p.Wait(120000, &r));
  const std::string err = ReadText(err_file);
  EXPECT_NE(err.find("restart " + std::to_string(kills) + " of"), std::string::npos) << err;
  EXPECT_NE(err.find("starting another"), std::string::npos) << err;
  std::vector<std::string> rest = args;
  rest.insert(rest.end(), {"--restore", "latest"});
  rest.insert(rest.end(), final_args.begin(), final_args.end());
  const RunResult last = RunCairn(rest);
  ASSERT_EQ(last.exit_code, 0) << last.err;
}

}  // namespace cairn::testing
