// The fuzz targets' properties (tests/fuzz/fuzz_targets.h) on the committed seed corpus and on
// every input a fuzzer crashed on (tests/fuzz/regressions/<target>/), in the normal suite: an
// input that crashes, hangs or aborts fails the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/fuzz/fuzz_targets.h"
#include "tests/test_util.h"

namespace cairn::testing {
namespace {

template <typename Fn>
int RunEvery(const std::string& target, Fn fn) {
  namespace fs = std::filesystem;
  int n = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    const fs::path dir = fs::path(SourceDir()) / "tests/fuzz" / kind / target;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      SCOPED_TRACE(e.path().string());
      const std::string bytes = ReadText(e.path().string());
      fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++n;
    }
  }
  return n;
}

TEST(FuzzRegression, JobLoaderAcceptsOrRejectsEveryCorpusAndRegressionInput) {
  EXPECT_GT(RunEvery("job_loader", fuzz::JobLoaderInput), 0);
}

TEST(FuzzRegression, CheckpointMetadataReaderAcceptsOrRejectsEveryCorpusAndRegressionInput) {
  EXPECT_GT(RunEvery("checkpoint_metadata", fuzz::CheckpointMetadataInput), 0);
}

}  // namespace
}  // namespace cairn::testing
