#include "engine/dataflow/output_gate.h"

#include <algorithm>

#include "engine/base/key_groups.h"

namespace cairn {

void OutputGate::AddForwardEdge(Channel* ch) {
  Edge e{false, {}, {}, {}};
  e.targets.push_back(Target{ch, ch->TakeEmptyBatch(), {}, 0});
  edges_.push_back(std::move(e));
}

void OutputGate::AddHashEdge(std::vector<Channel*> channels, KeySelector key) {
  Edge e{true, {}, std::move(key), {}};
  for (Channel* ch : channels) e.targets.push_back(Target{ch, ch->TakeEmptyBatch(), {}, 0});
  const uint32_t p = static_cast<uint32_t>(e.targets.size());
  e.target_of.resize(max_parallelism_);
  for (uint32_t kg = 0; kg < max_parallelism_; ++kg) e.target_of[kg] = static_cast<uint16_t>(SubtaskForKeyGroup(kg, max_parallelism_, p));
  edges_.push_back(std::move(e));
}

void OutputGate::AddRebalanceEdge(RebalanceQueue* queue, uint32_t index, Parker* self) {
  Rebalance r{queue, index, self, queue->MakeProducerToken(), queue->TakeEmptyBatch(), {}, 0, 0, 0, 0};
  rebalance_.push_back(std::move(r));
}

bool OutputGate::PushRebalance(Rebalance* r) {
  // Counted as sent before the push, which may block: a snapshot taken meanwhile (unaligned,
  // from the BlockedHandler) must count this batch among those sent before it.
  while (!r->sealed.empty()) {
    RebalanceItem item = std::move(r->sealed.front());
    r->sealed.erase(r->sealed.begin());
    if (!r->queue->Push(r->token.get(), std::move(item), r->self, handler_)) return false;
  }
  if (r->pending->empty()) return true;
  RebalanceItem item{std::move(r->pending), r->colour};
  r->pending = r->queue->TakeEmptyBatch();
  ++r->sent;
  return r->queue->Push(r->token.get(), std::move(item), r->self, handler_);
}

void OutputGate::Recolour(Rebalance* r, const Barrier& b) {
  if (b.id <= r->colour) return;
  if (!r->pending->empty()) {
    // Records assigned before the snapshot: white, pushed later with the old colour.
    r->sealed.push_back(RebalanceItem{std::move(r->pending), r->colour});
    r->pending = r->queue->TakeEmptyBatch();
    ++r->sent;
  }
  r->colour = b.id;
  r->reported_id = b.id;
  r->reported = r->queue->ProducerSnapshotted(r->index, b, r->sent);
}

std::vector<RebalanceCount> OutputGate::RebalanceCounts(CheckpointId id) const {
  std::vector<RebalanceCount> out;
  for (const Rebalance& r : rebalance_)
    if (r.reported_id == id) out.push_back(RebalanceCount{r.queue->name(), r.reported, 0, 0});
  return out;
}

bool OutputGate::PushFull(Target* t) {
  if (t->full.empty()) return true;
  for (std::unique_ptr<RecordBatch>& b : t->full) {
    if (b == nullptr) continue;  // pushed before a push that returned false
    if (!t->channel->Push(StreamElement::OfBatch(std::move(b)), handler_)) return false;
  }
  t->full.clear();
  return true;
}

bool OutputGate::PushFullEach(Edge* e) {
  push_channels_.clear();
  push_elements_.clear();
  for (Target& t : e->targets) {
    if (t.full.empty()) continue;
    if (t.channel->unbounded()) return true;  // a feedback edge: PushFull, one by one
    push_channels_.push_back(t.channel);
    push_elements_.push_back(&t.full);
  }
  if (push_channels_.size() < 2) return true;
  return Channel::PushEach(push_channels_, push_elements_, handler_);
}

void OutputGate::Seal(Target* t, const std::vector<int>& hash_fields) {
  t->full.push_back(std::move(t->pending));
  t->pending = t->channel->TakeEmptyBatch();
  t->pending->set_key_hash_fields(hash_fields);
}

bool OutputGate::PushPending(Target* t) {
  if (!PushFull(t)) return false;
  if (t->pending->empty()) return true;
  std::unique_ptr<RecordBatch> b = std::move(t->pending);
  t->pending = t->channel->TakeEmptyBatch();
  return t->channel->Push(StreamElement::OfBatch(std::move(b)), handler_);
}

bool OutputGate::Emit(RecordBatch* batch) {
  if (batch->empty()) return true;
  records_out_ += batch->size();
  // Two phases. First every record of the batch gets its place (and number) in every outgoing
  // channel of every edge; only then is anything pushed. A push may block, and while blocked the
  // task may take an unaligned snapshot (BlockedHandler) that stamps each channel with its
  // `assigned` count and covers this batch in the task's own state (e.g. a source's position):
  // so on no channel may the batch be missing from what lies before the barrier. Pushing edge by
  // edge as records are assigned would split one emitted batch across the snapshot.
  Target* handed_over = nullptr;
  Rebalance* rebalance_handed_over = nullptr;
  for (size_t ri = 0; ri < rebalance_.size(); ++ri) {
    Rebalance& r = rebalance_[ri];
    if (edges_.empty() && ri + 1 == rebalance_.size() && r.pending->empty() && batch->size() >= kBatchRecords / 4) {
      std::swap(*r.pending, *batch);
      rebalance_handed_over = &r;
      continue;
    }
    r.pending->AppendRange(*batch, 0, batch->size());
  }
  const size_t n_edges = edges_.size();
  for (size_t ei = 0; ei < n_edges; ++ei) {
    Edge& e = edges_[ei];
    if (!e.hash) {
      Target& t = e.targets[0];
      if (t.pending->empty() && ei + 1 == n_edges && batch->size() >= kBatchRecords / 4) {
        // The last edge takes the whole batch (the caller keeps pending's empty capacity).
        std::swap(*t.pending, *batch);
        t.assigned += t.pending->size();
        handed_over = &t;
        continue;
      }
      for (size_t i = 0; i < batch->size(); ++i) t.pending->AddFrom(*batch, i);
      t.assigned += batch->size();
      continue;
    }
    // Hash the batch's keys in one pass (or take the hashes it carries), then copy each record
    // with its hash to the channel of its key group.
    const size_t n = batch->size();
    const uint64_t* hashes;
    if (batch->HasKeyHashes(e.key.fields())) {
      hashes = batch->key_hashes();
    } else {
      hashes_.resize(n);
      if (e.key.single_bytes()) {
        const size_t kf = static_cast<size_t>(e.key.fields()[0]);
        for (size_t i = 0; i < n; ++i) hashes_[i] = KeyHash(batch->GetString(i, kf));
      } else {
        for (size_t i = 0; i < n; ++i) hashes_[i] = e.key.Hash(*batch, i, &scratch_);
      }
      hashes = hashes_.data();
    }
    for (Target& t : e.targets) t.pending->set_key_hash_fields(e.key.fields());
    const uint16_t* target_of = e.target_of.data();
    Target* targets = e.targets.data();
    if (e.key.single_bytes() && batch->one_var_field() && n <= UINT32_MAX) {
      // The word count: the rows of each target first, then each target's rows copied in one
      // pass per batch of kBatchRecords.
      rows_of_.resize(e.targets.size());
      for (std::vector<uint32_t>& r : rows_of_) r.clear();
      for (size_t i = 0; i < n; ++i)
        rows_of_[target_of[KeyGroupOf(hashes[i], max_parallelism_)]].push_back(static_cast<uint32_t>(i));
      for (size_t ti = 0; ti < e.targets.size(); ++ti) {
        Target& t = targets[ti];
        const std::vector<uint32_t>& rows = rows_of_[ti];
        t.assigned += rows.size();
        for (size_t done = 0; done < rows.size();) {
          const size_t take = std::min(rows.size() - done, kBatchRecords - std::min(kBatchRecords, t.pending->size()));
          t.pending->AppendOneVarRowsWithHashes(*batch, rows.data() + done, take, hashes);
          done += take;
          if (t.pending->size() >= kBatchRecords) Seal(&t, e.key.fields());
        }
      }
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      Target& t = targets[target_of[KeyGroupOf(hashes[i], max_parallelism_)]];
      t.pending->AddFromWithHash(*batch, i, hashes[i]);
      ++t.assigned;
      if (__builtin_expect(t.pending->size() >= kBatchRecords, 0)) Seal(&t, e.key.fields());
    }
  }
  batch->clear();
  for (Edge& e : edges_) {
    if (e.hash && e.targets.size() > 1 && !PushFullEach(&e)) return false;
    for (Target& t : e.targets) {
      if (!PushFull(&t)) return false;
      if ((&t == handed_over || t.pending->size() >= kBatchRecords) && !PushPending(&t)) return false;
    }
  }
  for (Rebalance& r : rebalance_)
    if ((&r == rebalance_handed_over || r.pending->size() >= kBatchRecords) && !PushRebalance(&r)) return false;
  return true;
}

bool OutputGate::Flush() {
  for (Edge& e : edges_)
    for (Target& t : e.targets)
      if (!PushPending(&t)) return false;
  for (Rebalance& r : rebalance_)
    if (!PushRebalance(&r)) return false;
  return true;
}

bool OutputGate::Broadcast(const StreamElement& e) {
  if (!Flush()) return false;
  for (Edge& edge : edges_)
    for (Target& t : edge.targets) {
      StreamElement copy;
      copy.kind = e.kind;
      copy.barrier = e.barrier;
      copy.watermark = e.watermark;
      if (!t.channel->Push(std::move(copy), handler_)) return false;
    }
  // A load-balanced edge carries no barrier (the colour changes instead) and no watermark.
  for (Rebalance& r : rebalance_) {
    if (e.kind == StreamElement::Kind::kBarrier) {
      Recolour(&r, e.barrier);
    } else if (e.kind == StreamElement::Kind::kEndOfInput) {
      r.queue->ProducerEndedInput(r.colour);
    } else if (e.kind == StreamElement::Kind::kEndOfStream) {
      r.queue->ProducerEndedStream();
    }
  }
  return true;
}

void OutputGate::BroadcastPriority(PriorityEvent e) {
  for (Edge& edge : edges_)
    for (Target& t : edge.targets) {
      e.position = t.assigned;
      t.channel->PushPriority(e);
    }
  if (e.kind == PriorityEvent::Kind::kUnalignedBarrier)
    for (Rebalance& r : rebalance_) Recolour(&r, e.barrier);
}

}  // namespace cairn
