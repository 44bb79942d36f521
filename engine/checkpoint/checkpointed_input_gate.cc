#include "engine/checkpoint/checkpointed_input_gate.h"

namespace cairn {

CheckpointedInputGate::CheckpointedInputGate(const BarrierClock* clock)
    : recorder_(&gate_), handler_(&gate_, &recorder_, clock) {}

GateEvent CheckpointedInputGate::Checkpoint(std::optional<CheckpointTrigger> t) {
  GateEvent ev;
  if (!t.has_value()) return ev;
  ev.kind = GateEvent::Kind::kCheckpoint;
  ev.barrier = t->barrier;
  ev.alignment_ms = t->alignment_ms;
  ev.mode = t->mode;
  ev.channel_state_pending = t->channel_state_pending;
  return ev;
}

GateEvent CheckpointedInputGate::FinishedRecording() {
  GateEvent ev;
  ev.channel_state = recorder_.TakeFinished();
  if (ev.channel_state != nullptr) ev.kind = GateEvent::Kind::kChannelStateDone;
  return ev;
}

void CheckpointedInputGate::MarkProcessed(size_t slot, const RecordBatch& batch, size_t begin, size_t end) {
  recorder_.OnProcessed(slot, batch, begin, end);
  gate_.MarkProcessed(slot, batch, begin, end);
}

GateEvent CheckpointedInputGate::DrainPriority(size_t slot) {
  GateEvent ev = Checkpoint(handler_.HandleDeferred());
  if (ev.kind != GateEvent::Kind::kNone) return ev;
  PriorityEvent e;
  while (gate_.PopPriority(slot, &e)) {
    ev = Checkpoint(handler_.OnPriorityEvent(slot, e));
    if (ev.kind != GateEvent::Kind::kNone) return ev;
  }
  return GateEvent{};
}

GateEvent CheckpointedInputGate::TakeStash() {
  // Whatever overtook the stashed batch on the priority lane is handled before it. The batch
  // waits in the stash meanwhile, where a snapshot's read-ahead finds it.
  const size_t slot = gate_.stash_slot();
  GateEvent ev = DrainPriority(slot);
  if (ev.kind != GateEvent::Kind::kNone) return ev;
  ev.kind = GateEvent::Kind::kBatch;
  ev.slot = slot;
  ev.input_index = gate_.inputs()[slot].input_index;
  ev.channel = gate_.inputs()[slot].channel;
  ev.rebalance = gate_.rebalance(slot);
  ev.batch = gate_.TakeStash();
  return ev;
}

GateEvent CheckpointedInputGate::RebalanceBarrier(size_t slot, const Barrier& b) {
  // A load-balanced edge's barrier of an unaligned checkpoint: as if it overtook the data.
  PriorityEvent pe;
  pe.kind = PriorityEvent::Kind::kUnalignedBarrier;
  pe.barrier = b;
  pe.position = gate_.consumed(slot);
  return Checkpoint(handler_.OnPriorityEvent(slot, pe));
}

bool CheckpointedInputGate::HasPriorityWork() const {
  if (handler_.has_deferred() || gate_.HasPriorityWork() || recorder_.RebalanceClosable()) return true;
  Barrier b;
  for (size_t i = 0; i < gate_.size(); ++i)
    if (gate_.rebalance(i) != nullptr && gate_.EagerRebalanceBarrier(i, &b)) return true;
  return false;
}

GateEvent CheckpointedInputGate::PollPriority() {
  recorder_.AdvanceAll();
  GateEvent ev = FinishedRecording();
  if (ev.kind != GateEvent::Kind::kNone) return ev;
  for (size_t i = 0; i < gate_.size(); ++i) {
    ev = DrainPriority(i);
    if (ev.kind != GateEvent::Kind::kNone) return ev;
    Barrier b;
    if (gate_.rebalance(i) != nullptr && gate_.EagerRebalanceBarrier(i, &b)) {
      gate_.RebalanceBarrierReported(i, b.id);
      ev = RebalanceBarrier(i, b);
      if (ev.kind != GateEvent::Kind::kNone) return ev;
    }
  }
  return Checkpoint(handler_.OnTimer());
}

GateEvent CheckpointedInputGate::Poll() {
  GateEvent ev = PollPriority();
  if (ev.kind != GateEvent::Kind::kNone) return ev;
  if (gate_.has_stash()) return TakeStash();
  InputGate::Scan scan = gate_.BeginScan();
  size_t slot = 0;
  Barrier barrier;
  for (;;) {
    InputGate::Read r = gate_.ReadNext(&scan, &slot, &barrier);
    if (r == InputGate::Read::kDone) break;
    switch (r) {
      case InputGate::Read::kBatch:
        return TakeStash();
      case InputGate::Read::kBarrier:
        if (gate_.rebalance(slot) != nullptr && barrier.mode == CheckpointMode::kUnaligned) {
          ev = RebalanceBarrier(slot, barrier);
        } else {
          ev = Checkpoint(handler_.OnBarrier(slot, barrier));
        }
        break;
      case InputGate::Read::kWatermark:
        ev.kind = GateEvent::Kind::kWatermark;
        ev.watermark = gate_.watermark();
        break;
      case InputGate::Read::kEndOfInput:
        ev.kind = GateEvent::Kind::kEndOfInput;
        break;
      case InputGate::Read::kChannelEndOfStream:
        ev = Checkpoint(handler_.OnChannelEnded(slot));
        break;
      case InputGate::Read::kChannelEndOfInput:
      case InputGate::Read::kDone:
        break;
    }
    if (ev.kind != GateEvent::Kind::kNone) return ev;
  }
  // A barrier read above may have completed a recording.
  ev = FinishedRecording();
  if (ev.kind != GateEvent::Kind::kNone) return ev;
  if (gate_.TakeEndOfStream()) ev.kind = GateEvent::Kind::kEndOfStream;
  return ev;
}

std::string CheckpointedInputGate::Describe() const {
  return "  gate: stash=" + std::string(gate_.has_stash() ? "yes" : "no") + "\n" + handler_.Describe() +
         gate_.Describe() + recorder_.Describe();
}

}  // namespace cairn
