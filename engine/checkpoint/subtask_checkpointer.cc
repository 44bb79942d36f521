#include "engine/checkpoint/subtask_checkpointer.h"

#include <algorithm>
#include <chrono>

#include "engine/base/crash_points.h"
#include "engine/checkpoint/snapshot_persister.h"
#include "state/checkpoint_layout.h"

namespace cairn {

namespace {
using Clock = std::chrono::steady_clock;
int64_t MillisSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}
}  // namespace

SubtaskCheckpointer::SubtaskCheckpointer(int task, std::string checkpoint_dir, OutputGate* out,
                                         SnapshotPersister* persister, SnapshotChainFn snapshot_chain)
    : task_(task),
      checkpoint_dir_(std::move(checkpoint_dir)),
      out_(out),
      persister_(persister),
      snapshot_chain_(std::move(snapshot_chain)) {}

bool SubtaskCheckpointer::ForwardBarrier(const Barrier& b, SubtaskCheckpointMode mode) {
  if (IsUnaligned(mode)) {
    PriorityEvent pe;
    pe.kind = PriorityEvent::Kind::kUnalignedBarrier;
    pe.barrier = b;
    pe.barrier.mode = CheckpointMode::kUnaligned;
    out_->BroadcastPriority(pe);
    return true;
  }
  bool saved = forwarding_;
  forwarding_ = true;
  bool ok = out_->Broadcast(StreamElement::OfBarrier(b));
  forwarding_ = saved;
  if (!ok) return false;
  if (b.mode == CheckpointMode::kAligned && b.aligned_timeout_ms > 0) {
    PriorityEvent pe;
    pe.kind = PriorityEvent::Kind::kAnnouncement;
    pe.barrier = b;
    out_->BroadcastPriority(pe);
  }
  return true;
}

bool SubtaskCheckpointer::Checkpoint(const Barrier& b, SubtaskCheckpointMode mode, int64_t alignment_ms,
                                     bool channel_state_pending) {
  auto start = Clock::now();
  last_taken_ = std::max(last_taken_, b.id);
  // 1. Forward the barrier.
  if (!ForwardBarrier(b, mode)) return false;
  // 2. The synchronous snapshot: operator state and keyed-state deltas.
  auto job = std::make_unique<PersistJob>();
  job->id = b.id;
  job->chk_dir = CheckpointPath(checkpoint_dir_, b.id);
  job->task = task_;
  job->alignment_ms = alignment_ms;
  job->mode = mode;
  job->rebalance_counts = out_->RebalanceCounts(b.id);  // as the barrier recoloured them
  snapshot_chain_(b, job.get());
  job->sync_ms = MillisSince(start);
  CAIRN_CRASH_POINT("task.sync_snapshot");
  // 3. The asynchronous part, in checkpoint order: now, or after the channel state.
  waiting_[b.id] = WaitingJob{std::move(job), !channel_state_pending};
  SubmitReadyJobs();
  return true;
}

void SubtaskCheckpointer::OnChannelStateDone(std::unique_ptr<ChannelStateRecords> cs) {
  auto it = waiting_.find(cs->id);
  if (it == waiting_.end()) return;
  for (RebalanceCount& c : cs->rebalance_counts) it->second.job->rebalance_counts.push_back(std::move(c));
  it->second.job->channel_state = std::move(cs);
  it->second.ready = true;
  SubmitReadyJobs();
}

void SubtaskCheckpointer::SubmitReadyJobs() {
  // In checkpoint order, so that a subtask's state deltas reach RocksDB in order.
  while (!waiting_.empty() && waiting_.begin()->second.ready) {
    persister_->Submit(std::move(waiting_.begin()->second.job));
    waiting_.erase(waiting_.begin());
  }
}

std::string SubtaskCheckpointer::Describe() const {
  std::string out;
  for (const auto& [id, w] : waiting_)
    out += " waiting_job=" + std::to_string(id) + (w.ready ? "(ready)" : "(channel state)");
  return out;
}

}  // namespace cairn
