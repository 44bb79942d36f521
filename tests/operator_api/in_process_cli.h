// `cairn args...` run inside the test process, or as a child process of this same binary, so
// that the command line sees the operators the test binary registers itself
// (tests/operator_api/).
#pragma once

#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "jobs/cli/cli.h"
#include "tests/test_util.h"

namespace cairn::testing {

struct CliResult {
  int exit_code;
  std::string out;
  std::string err;
};

inline CliResult Cairn(std::vector<std::string> args) {
  args.insert(args.begin(), "cairn");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int rc = CairnMain(static_cast<int>(args.size()), argv.data());
  fflush(stdout);
  return CliResult{rc, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
}

// `cairn args...` as a child process of this binary (main.cc runs CairnMain when
// CAIRN_OPERATOR_API_AS_CAIRN is set), to its end: for kill tests of the operators it registers.
inline RunResult RunAsChild(const ScratchDir& dir, const std::vector<std::string>& args,
                            const std::vector<std::string>& env = {}) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  const std::string self = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  std::vector<std::string> all_env = env;
  all_env.push_back("CAIRN_OPERATOR_API_AS_CAIRN=1");
  const std::string out = dir / "child.out", err = dir / "child.err";
  WriteText(out, "");
  WriteText(err, "");
  RunResult r;
  {
    CairnProcess p(args, out, err, all_env, self);
    EXPECT_TRUE(p.Wait(300000, &r)) << "still running after 5 minutes";
  }
  r.out = ReadText(out);
  r.err = ReadText(err);
  return r;
}

}  // namespace cairn::testing
