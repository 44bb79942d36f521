// libFuzzer target for the YAML job loader (jobs/job_loader.h); see fuzz_targets.h.
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cairn::fuzz::JobLoaderInput(data, size);
  return 0;
}
