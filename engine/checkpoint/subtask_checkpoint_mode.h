// SubtaskCheckpointMode is how one subtask actually took a checkpoint: the mode its barriers
// carried, or aligned-then-unaligned when the subtask switched an aligned checkpoint to unaligned
// at the aligned timeout. It travels from the barrier handler through the PersistJob and the
// TaskAck to the coordinator, which names the checkpoint's mode in its _metadata after it.
#pragma once

#include <cstdint>

#include "engine/dataflow/stream_element.h"

namespace cairn {

enum class SubtaskCheckpointMode : uint8_t {
  kAligned,
  kUnaligned,
  kAlignedThenUnaligned,  // aligned at first, then unaligned at the aligned timeout
  kAtLeastOnce,
};

// The mode a subtask takes a checkpoint in when nothing switches it: the barrier's.
inline SubtaskCheckpointMode TakenAs(CheckpointMode m) {
  switch (m) {
    case CheckpointMode::kAligned: return SubtaskCheckpointMode::kAligned;
    case CheckpointMode::kUnaligned: return SubtaskCheckpointMode::kUnaligned;
    case CheckpointMode::kAtLeastOnce: return SubtaskCheckpointMode::kAtLeastOnce;
  }
  return SubtaskCheckpointMode::kAligned;
}

// The mode as _metadata names it: "aligned", "unaligned", "aligned->unaligned", "at_least_once".
inline const char* SubtaskCheckpointModeName(SubtaskCheckpointMode m) {
  switch (m) {
    case SubtaskCheckpointMode::kAligned: return CheckpointModeName(CheckpointMode::kAligned);
    case SubtaskCheckpointMode::kUnaligned: return CheckpointModeName(CheckpointMode::kUnaligned);
    case SubtaskCheckpointMode::kAlignedThenUnaligned: return "aligned->unaligned";
    case SubtaskCheckpointMode::kAtLeastOnce: return CheckpointModeName(CheckpointMode::kAtLeastOnce);
  }
  return "?";
}

// True when the subtask's snapshot overtook records (its barrier is forwarded on the priority
// lanes and its in-flight records are recorded as channel state).
inline bool IsUnaligned(SubtaskCheckpointMode m) {
  return m == SubtaskCheckpointMode::kUnaligned || m == SubtaskCheckpointMode::kAlignedThenUnaligned;
}

}  // namespace cairn
