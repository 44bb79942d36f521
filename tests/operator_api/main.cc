// The operator API tests' main: the tests, or, with CAIRN_OPERATOR_API_AS_CAIRN set, the whole
// `cairn` command line with the operators this binary registers (so that a test can run a job
// of them as a child process, kill it and restore it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "jobs/cli/cli.h"

int main(int argc, char** argv) {
  if (std::getenv("CAIRN_OPERATOR_API_AS_CAIRN") != nullptr) return cairn::CairnMain(argc, argv);
  ::testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}
