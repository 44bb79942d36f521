#include "engine/input_gate.h"

namespace cairn {

bool InputGate::HasReadableData() const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!state_[i].blocked && !state_[i].end_of_stream && inputs_[i].channel->HasData()) return true;
  return false;
}

bool InputGate::AlignmentComplete() const {
  size_t open = inputs_.size() - ended_stream_;
  return barriers_received_ >= open;
}

GateEvent InputGate::FinishAlignment() {
  GateEvent ev;
  ev.kind = GateEvent::Kind::kCheckpoint;
  ev.barrier = aligning_barrier_;
  ev.alignment_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - alignment_start_).count();
  aligning_ = false;
  barriers_received_ = 0;
  for (State& s : state_) s.blocked = false;
  return ev;
}

GateEvent InputGate::OnBarrier(size_t ch, const Barrier& b) {
  if (!aligning_) {
    aligning_ = true;
    aligning_barrier_ = b;
    barriers_received_ = 0;
    alignment_start_ = Clock::now();
  }
  state_[ch].blocked = true;
  ++barriers_received_;
  if (AlignmentComplete()) return FinishAlignment();
  return GateEvent{};
}

GateEvent InputGate::Poll() {
  const size_t n = inputs_.size();
  const size_t start = next_;  // next_ moves as elements are taken; the scan still visits each channel once
  for (size_t k = 0; k < n; ++k) {
    size_t i = (start + k) % n;
    State& s = state_[i];
    if (s.blocked || s.end_of_stream) continue;
    StreamElement e;
    if (!inputs_[i].channel->TryPop(&e)) continue;
    next_ = (i + 1) % n;
    switch (e.kind) {
      case StreamElement::Kind::kBatch: {
        GateEvent ev;
        ev.kind = GateEvent::Kind::kBatch;
        ev.input_index = inputs_[i].input_index;
        ev.channel = inputs_[i].channel;
        ev.batch = std::move(e.batch);
        return ev;
      }
      case StreamElement::Kind::kBarrier: {
        GateEvent ev = OnBarrier(i, e.barrier);
        if (ev.kind != GateEvent::Kind::kNone) return ev;
        break;
      }
      case StreamElement::Kind::kEndOfInput:
        s.end_of_input = true;
        if (++ended_input_ == n && !end_of_input_reported_) {
          end_of_input_reported_ = true;
          GateEvent ev;
          ev.kind = GateEvent::Kind::kEndOfInput;
          return ev;
        }
        break;
      case StreamElement::Kind::kEndOfStream:
        s.end_of_stream = true;
        ++ended_stream_;
        // A channel that ended can send no barrier: an alignment waiting on it is complete.
        if (aligning_ && AlignmentComplete()) return FinishAlignment();
        break;
    }
  }
  if (ended_stream_ == n && !end_of_stream_reported_) {
    end_of_stream_reported_ = true;
    GateEvent ev;
    ev.kind = GateEvent::Kind::kEndOfStream;
    return ev;
  }
  return GateEvent{};
}

}  // namespace cairn
