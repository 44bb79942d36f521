#include "engine/output_gate.h"

#include "engine/key_groups.h"

namespace cairn {

void OutputGate::AddForwardEdge(Channel* ch) {
  Edge e{false, {}};
  e.targets.push_back(Target{ch, ch->TakeEmptyBatch()});
  edges_.push_back(std::move(e));
}

void OutputGate::AddHashEdge(std::vector<Channel*> channels) {
  Edge e{true, {}};
  for (Channel* ch : channels) e.targets.push_back(Target{ch, ch->TakeEmptyBatch()});
  edges_.push_back(std::move(e));
}

bool OutputGate::PushPending(Target* t) {
  if (t->pending->empty()) return true;
  std::unique_ptr<RecordBatch> b = std::move(t->pending);
  t->pending = t->channel->TakeEmptyBatch();
  return t->channel->Push(StreamElement::OfBatch(std::move(b)));
}

bool OutputGate::Emit(RecordBatch* batch) {
  if (batch->empty()) return true;
  records_out_ += batch->size();
  const size_t n_edges = edges_.size();
  for (size_t ei = 0; ei < n_edges; ++ei) {
    Edge& e = edges_[ei];
    const bool last_edge = ei + 1 == n_edges;
    if (!e.hash) {
      Target& t = e.targets[0];
      if (t.pending->empty() && last_edge && batch->size() >= kBatchRecords / 4) {
        // Hand the whole batch over; the caller keeps a recycled one.
        std::unique_ptr<RecordBatch> b = t.channel->TakeEmptyBatch();
        std::swap(*b, *batch);
        if (!t.channel->Push(StreamElement::OfBatch(std::move(b)))) return false;
        continue;
      }
      for (size_t i = 0; i < batch->size(); ++i) t.pending->AddFrom(*batch, i);
      if (t.pending->size() >= kBatchRecords && !PushPending(&t)) return false;
      continue;
    }
    const uint32_t p = static_cast<uint32_t>(e.targets.size());
    for (size_t i = 0; i < batch->size(); ++i) {
      uint32_t kg = KeyGroupOf(KeyHash(batch->key(i)), max_parallelism_);
      Target& t = e.targets[SubtaskForKeyGroup(kg, max_parallelism_, p)];
      t.pending->AddFrom(*batch, i);
      if (t.pending->size() >= kBatchRecords && !PushPending(&t)) return false;
    }
  }
  batch->clear();
  return true;
}

bool OutputGate::Flush() {
  for (Edge& e : edges_)
    for (Target& t : e.targets)
      if (!PushPending(&t)) return false;
  return true;
}

bool OutputGate::Broadcast(const StreamElement& e) {
  if (!Flush()) return false;
  for (Edge& edge : edges_)
    for (Target& t : edge.targets) {
      StreamElement copy;
      copy.kind = e.kind;
      copy.barrier = e.barrier;
      if (!t.channel->Push(std::move(copy))) return false;
    }
  return true;
}

}  // namespace cairn
