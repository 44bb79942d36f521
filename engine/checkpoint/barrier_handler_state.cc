#include "engine/checkpoint/barrier_handler_state.h"

namespace cairn {

namespace {
// Continues in `next`, unless handling `step` in it moved on again.
std::unique_ptr<BarrierHandlerState> Then(std::unique_ptr<BarrierHandlerState> next,
                                          std::unique_ptr<BarrierHandlerState> step) {
  return step != nullptr ? std::move(step) : std::move(next);
}
}  // namespace

std::unique_ptr<BarrierHandlerState> WaitingForFirstBarrier::OnBarrier(BarrierHandlerController& c, size_t slot,
                                                                       const Barrier& b) {
  auto next = std::make_unique<CollectingAlignedBarriers>(b, c.Now());
  auto step = next->OnBarrier(c, slot, b);
  return Then(std::move(next), std::move(step));
}

std::unique_ptr<BarrierHandlerState> WaitingForFirstBarrier::OnPriorityEvent(BarrierHandlerController& c,
                                                                             size_t slot, const PriorityEvent& e) {
  if (e.kind == PriorityEvent::Kind::kAnnouncement) {
    c.RecordAnnouncement(slot, e.barrier, e.position);
    auto next = std::make_unique<CollectingAlignedBarriers>(e.barrier, c.Now());
    auto step = next->OnTimer(c);
    return Then(std::move(next), std::move(step));
  }
  c.TakeUnaligned(e.barrier, SubtaskCheckpointMode::kUnaligned, 0);
  c.UnalignedBarrierReceived(slot, e.barrier.id, e.position);
  return nullptr;
}

std::string CollectingAlignedBarriers::Describe() const {
  return "collecting the aligned barriers of checkpoint " + std::to_string(barrier_.id) + " (" +
         std::to_string(received_) + " received)";
}

int64_t CollectingAlignedBarriers::AlignmentMs(const BarrierHandlerController& c) const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(c.Now() - start_).count();
}

std::unique_ptr<BarrierHandlerState> CollectingAlignedBarriers::Switch(BarrierHandlerController& c) {
  c.TakeUnaligned(barrier_, SubtaskCheckpointMode::kAlignedThenUnaligned, AlignmentMs(c));
  return std::make_unique<WaitingForFirstBarrier>();
}

std::unique_ptr<BarrierHandlerState> CollectingAlignedBarriers::OnBarrier(BarrierHandlerController& c, size_t slot,
                                                                          const Barrier& b) {
  c.BlockChannel(slot);
  if (++received_ >= c.OpenChannels()) {
    c.TakeAligned(barrier_, AlignmentMs(c));
    return std::make_unique<WaitingForFirstBarrier>();
  }
  return OnTimer(c);
}

std::unique_ptr<BarrierHandlerState> CollectingAlignedBarriers::OnPriorityEvent(BarrierHandlerController& c,
                                                                                size_t slot, const PriorityEvent& e) {
  const Barrier& b = e.barrier;
  if (b.id > barrier_.id) {
    // A newer checkpoint overtook the one being aligned: take the older one first, unaligned.
    c.Defer(slot, e);
    return Switch(c);
  }
  if (e.kind == PriorityEvent::Kind::kAnnouncement) {
    c.RecordAnnouncement(slot, b, e.position);
    return OnTimer(c);
  }
  if (b.id == barrier_.id) {
    // An upstream subtask switched this checkpoint: so does this one.
    auto next = Switch(c);
    c.UnalignedBarrierReceived(slot, b.id, e.position);
    return next;
  }
  // An older checkpoint, unaligned: taken now; the alignment is given up.
  c.TakeUnaligned(b, SubtaskCheckpointMode::kUnaligned, AlignmentMs(c));
  c.UnalignedBarrierReceived(slot, b.id, e.position);
  return std::make_unique<WaitingForFirstBarrier>();
}

std::unique_ptr<BarrierHandlerState> CollectingAlignedBarriers::OnChannelEnded(BarrierHandlerController& c) {
  if (received_ < c.OpenChannels()) return nullptr;
  c.TakeAligned(barrier_, AlignmentMs(c));
  return std::make_unique<WaitingForFirstBarrier>();
}

std::unique_ptr<BarrierHandlerState> CollectingAlignedBarriers::OnTimer(BarrierHandlerController& c) {
  if (!c.AlignedTimeoutPassed(barrier_)) return nullptr;
  return Switch(c);
}

}  // namespace cairn
