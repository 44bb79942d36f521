// Identifiers shared by every layer.
#pragma once

#include <cstdint>

namespace cairn {

// A checkpoint's number: 1, 2, ... in trigger order within one checkpoint.dir (a restored job
// continues after the highest id there). 0 means "none".
using CheckpointId = uint64_t;

}  // namespace cairn
