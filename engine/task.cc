#include "engine/task.h"

#include "engine/crash_points.h"
#include "engine/snapshot_persister.h"
#include "state/keyed_state.h"

namespace cairn {

namespace {
constexpr size_t kSourceBatchRecords = 1024;
using Clock = std::chrono::steady_clock;
int64_t MillisSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}
}  // namespace

Task::Task(int index, std::string name, std::vector<ChainedOperator> chain, uint32_t max_parallelism, std::string checkpoint_dir, SnapshotPersister* persister, TaskListener* listener)
    : index_(index),
      name_(std::move(name)),
      chain_(std::move(chain)),
      buffers_(chain_.size()),
      out_(max_parallelism),
      checkpoint_dir_(std::move(checkpoint_dir)),
      persister_(persister),
      listener_(listener) {
  source_ = dynamic_cast<SourceOperator*>(chain_.front().op.get());
}

void Task::TriggerCheckpoint(const Barrier& b) {
  control_.enqueue(Control{Control::Kind::kTrigger, b, b.id});
  parker_.Unpark();
}

void Task::NotifyCheckpointComplete(CheckpointId id) {
  control_.enqueue(Control{Control::Kind::kNotify, Barrier{}, id});
  parker_.Unpark();
}

void Task::Terminate() {
  control_.enqueue(Control{Control::Kind::kTerminate, Barrier{}, 0});
  parker_.Unpark();
}

void Task::Cancel() {
  cancelled_.store(true, std::memory_order_release);
  parker_.Unpark();
}

void Task::Fail(const Status& s) {
  if (failed_) return;
  failed_ = true;
  listener_->TaskFailed(index_, s.WithContext("task " + name_));
}

void Task::Run() {
  if (source_ != nullptr) {
    RunSource();
  } else {
    RunConsumer();
  }
  CloseAll();
}

void Task::CloseAll() {
  for (auto& c : chain_) {
    Status s = c.op->Close();
    if (!s.ok() && !cancelled_.load()) Fail(s);
  }
}

bool Task::HandleControl() {
  Control c;
  while (control_.try_dequeue(c)) {
    switch (c.kind) {
      case Control::Kind::kTrigger:
        if (!TakeCheckpoint(c.barrier, 0)) return false;
        CAIRN_CRASH_POINT("source.barrier_injected");
        break;
      case Control::Kind::kNotify:
        for (auto& op : chain_) op.op->NotifyCheckpointComplete(c.id);
        break;
      case Control::Kind::kTerminate:
        terminated_ = true;
        break;
    }
  }
  return !cancelled_.load(std::memory_order_acquire);
}

bool Task::ProcessChain(size_t from, int input, const RecordBatch& in) {
  const RecordBatch* cur = &in;
  for (size_t i = from; i < chain_.size(); ++i) {
    buffers_[i].clear();
    // A sink's "output" is what it consumed.
    if (i + 1 == chain_.size() && !out_.has_outputs()) records_out_.fetch_add(cur->size(), std::memory_order_relaxed);
    chain_[i].op->Process(i == from ? input : 0, *cur, &buffers_[i]);
    cur = &buffers_[i];
  }
  if (!out_.has_outputs()) return true;
  records_out_.fetch_add(cur->size(), std::memory_order_relaxed);
  return out_.Emit(&buffers_.back());
}

bool Task::FinishChain(size_t from) {
  // Finish each operator in order; what one emits flows through the rest of the chain.
  for (size_t i = from; i < chain_.size(); ++i) {
    buffers_[i].clear();
    chain_[i].op->Finish(&buffers_[i]);
    if (!buffers_[i].empty()) {
      RecordBatch emitted;
      std::swap(emitted, buffers_[i]);
      if (i + 1 < chain_.size()) {
        if (!ProcessChain(i + 1, 0, emitted)) return false;
      } else {
        records_out_.fetch_add(emitted.size(), std::memory_order_relaxed);
        if (out_.has_outputs() && !out_.Emit(&emitted)) return false;
      }
    }
  }
  return out_.Broadcast(StreamElement::EndOfInput());
}

bool Task::TakeCheckpoint(const Barrier& b, int64_t alignment_ms) {
  auto start = Clock::now();
  // Forward the barrier first (everything before it is already emitted), then snapshot:
  // no record is processed in between, so both describe the same point of the stream.
  if (!out_.Broadcast(StreamElement::OfBarrier(b))) return false;
  auto job = std::make_unique<PersistJob>();
  job->id = b.id;
  job->chk_dir = checkpoint_dir_ + "/chk-" + std::to_string(b.id);
  job->task = index_;
  job->alignment_ms = alignment_ms;
  for (auto& c : chain_) {
    SnapshotPart part;
    part.handle.operator_id = c.ctx.operator_id;
    part.handle.subtask = c.ctx.subtask;
    part.handle.parallelism = c.ctx.parallelism;
    part.handle.key_groups = c.ctx.key_groups;
    if (job->sync_status.ok()) {
      OperatorSnapshot snap;
      Status s = c.op->SnapshotState(b.id, &snap);
      if (s.ok()) {
        part.operator_state = std::move(snap.operator_state);
        part.async_part = std::move(snap.async_part);
      } else {
        job->sync_status = s.WithContext("operator " + c.ctx.operator_id + "[" + std::to_string(c.ctx.subtask) + "]");
      }
    }
    if (c.keyed_state != nullptr) {
      part.delta = c.keyed_state->TakeDelta();  // always: the changes must reach RocksDB
      part.keyed = c.keyed_store.get();
    }
    job->parts.push_back(std::move(part));
  }
  job->sync_ms = MillisSince(start);
  CAIRN_CRASH_POINT("task.sync_snapshot");
  persister_->Submit(std::move(job));
  return true;
}

void Task::RunSource() {
  RecordBatch& batch = buffers_[0];
  bool exhausted = false;
  while (true) {
    if (!HandleControl()) return;
    if (terminated_) {
      out_.Broadcast(StreamElement::EndOfStream());
      return;
    }
    if (exhausted) {
      uint32_t t = parker_.Prepare();
      if (control_.size_approx() > 0 || cancelled_.load()) {
        parker_.Cancel();
        continue;
      }
      parker_.Park(t);
      continue;
    }
    batch.clear();
    Clock::time_point resume_at;
    auto r = source_->Poll(&batch, kSourceBatchRecords, &resume_at);
    if (!batch.empty()) {
      records_in_.fetch_add(batch.size(), std::memory_order_relaxed);
      if (chain_.size() > 1) {
        if (!ProcessChain(1, 0, batch)) return;
      } else {
        records_out_.fetch_add(batch.size(), std::memory_order_relaxed);
        if (out_.has_outputs() && !out_.Emit(&batch)) return;
      }
    }
    if (r == SourceOperator::PollResult::kExhausted) {
      exhausted = true;
      if (!FinishChain(1)) return;
      listener_->SourceFinished(index_);
    } else if (r == SourceOperator::PollResult::kWait) {
      if (!out_.Flush()) return;
      uint32_t t = parker_.Prepare();
      if (control_.size_approx() > 0 || cancelled_.load()) {
        parker_.Cancel();
        continue;
      }
      parker_.Park(t, resume_at);
    }
  }
}

void Task::RunConsumer() {
  while (true) {
    if (!HandleControl()) return;
    GateEvent ev = in_.Poll();
    switch (ev.kind) {
      case GateEvent::Kind::kBatch:
        records_in_.fetch_add(ev.batch->size(), std::memory_order_relaxed);
        if (!ProcessChain(0, ev.input_index, *ev.batch)) return;
        ev.channel->Recycle(std::move(ev.batch));
        break;
      case GateEvent::Kind::kCheckpoint:
        if (!TakeCheckpoint(ev.barrier, ev.alignment_ms)) return;
        break;
      case GateEvent::Kind::kEndOfInput:
        if (!FinishChain(0)) return;
        break;
      case GateEvent::Kind::kEndOfStream:
        // Notifications sent before the end of stream (the final checkpoint's) come first.
        if (!HandleControl()) return;
        out_.Broadcast(StreamElement::EndOfStream());
        return;
      case GateEvent::Kind::kNone: {
        if (!out_.Flush()) return;
        uint32_t t = parker_.Prepare();
        if (in_.HasReadableData() || control_.size_approx() > 0 || cancelled_.load()) {
          parker_.Cancel();
          break;
        }
        parker_.Park(t);
        break;
      }
    }
  }
}

}  // namespace cairn
