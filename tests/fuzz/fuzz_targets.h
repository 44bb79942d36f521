// The bodies of the libFuzzer targets (fuzz_job_loader, fuzz_checkpoint_metadata), shared with
// tests/fuzz_regression_test.cc, which runs the committed seed corpus and every input a fuzzer
// ever crashed on (tests/fuzz/regressions/) through them in the normal suite.
//
// Contract of the code under test: every input is accepted or rejected with a Status; a crash,
// a hang, or an exception that escapes is a bug. These functions abort() when a property fails.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cairn::fuzz {

// The YAML job loader. Leading lines "--set KEY=VALUE" of the input are overrides, the rest is
// the job file.
void JobLoaderInput(const uint8_t* data, size_t size);

// The checkpoint metadata reader, on the input as it is and on the input with its checksum line
// recomputed (so that mutations reach the field parser). Whatever decodes must re-encode to a
// file that decodes to the same encoding.
void CheckpointMetadataInput(const uint8_t* data, size_t size);

}  // namespace cairn::fuzz
