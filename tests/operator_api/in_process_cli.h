// `cairn args...` run inside the test process, so that the command line sees the operators the
// test binary registers itself (tests/operator_api/).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "jobs/cli/cli.h"

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

}  // namespace cairn::testing
