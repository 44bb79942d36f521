// StridedPosition is the read position of a source whose subtask i of p produces the items
// i, i+p, i+2p, ... of a deterministic sequence: the index of the next item, restored from and
// saved to the subtask's operator state.
#pragma once

#include <cstdint>
#include <string>

#include "engine/coding.h"
#include "engine/operator.h"

namespace cairn {

class StridedPosition {
 public:
  // Starts at the subtask's first item, or where the restored checkpoint left off. `what`
  // names the position in the message about damaged state ("generator position").
  Status Open(const OperatorContext& ctx, const std::string& what) {
    step_ = ctx.parallelism;
    next_ = ctx.subtask;
    if (!ctx.restored_operator_state) return Status::OK();
    Decoder d(*ctx.restored_operator_state);
    uint64_t next;
    if (!d.GetFixed64(&next) || !d.done())
      return Status::Corruption("operator " + ctx.operator_id + ": damaged " + what + " in the checkpoint");
    next_ = static_cast<int64_t>(next);
    return Status::OK();
  }
  void Snapshot(OperatorSnapshot* snap) const { PutFixed64(&snap->operator_state, static_cast<uint64_t>(next_)); }
  int64_t next() const { return next_; }
  void Advance() { next_ += step_; }

 private:
  int64_t step_ = 1;
  int64_t next_ = 0;
};

}  // namespace cairn
