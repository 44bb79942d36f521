// libFuzzer target for the checkpoint metadata reader (state/checkpoint_metadata.h); see
// fuzz_targets.h.
#include "tests/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cairn::fuzz::CheckpointMetadataInput(data, size);
  return 0;
}
