#include "engine/runtime/task.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <thread>

#include "engine/base/crash_points.h"
#include "engine/checkpoint/snapshot_persister.h"
#include "engine/dataflow/operator_capabilities.h"
#include "state/keyed_state.h"

namespace cairn {

namespace {
constexpr size_t kSourceBatchRecords = 1024;
using Clock = std::chrono::steady_clock;
}  // namespace

Task::Task(int index, std::string name, std::vector<ChainedOperator> chain, uint32_t max_parallelism,
           std::string checkpoint_dir, SnapshotPersister* persister, TaskListener* listener)
    : index_(index),
      name_(std::move(name)),
      chain_(std::move(chain)),
      listener_(listener),
      buffers_(chain_.size()),
      out_(max_parallelism),
      checkpointer_(index, std::move(checkpoint_dir), &out_, persister,
                    [this](const Barrier& b, PersistJob* job) { SnapshotChain(b, job); }) {
  source_ = dynamic_cast<SourceOperator*>(chain_.front().op.get());
  flow_control_ = dynamic_cast<FlowControlled*>(chain_.front().op.get());
  for (auto& c : chain_) {
    c.skipped = dynamic_cast<const SkippedRecords*>(c.op.get());
    c.late = dynamic_cast<const LateRecords*>(c.op.get());
    has_timers_ |= c.timers != nullptr;
  }
  out_.set_blocked_handler(this);
}

void Task::TriggerCheckpoint(const Barrier& b) {
  control_.enqueue(Control{Control::Kind::kTrigger, b, b.id});
  parker_.Unpark();
}

void Task::NotifyCheckpointComplete(CheckpointId id) {
  control_.enqueue(Control{Control::Kind::kNotify, Barrier{}, id});
  parker_.Unpark();
}

void Task::Drain() {
  control_.enqueue(Control{Control::Kind::kDrain, Barrier{}, 0});
  parker_.Unpark();
}

void Task::Terminate() {
  control_.enqueue(Control{Control::Kind::kTerminate, Barrier{}, 0});
  parker_.Unpark();
}

void Task::Dump() {
  control_.enqueue(Control{Control::Kind::kDump, Barrier{}, 0});
  parker_.Unpark();
}

void Task::PrintState() {
  std::string out = "task " + name_ + ": " + (has_current_ ? "processing a batch" : "idle") +
                    " records_in=" + std::to_string(records_in()) + " records_out=" + std::to_string(records_out());
  out += checkpointer_.Describe();
  out += "\n" + in_.Describe();
  fputs(out.c_str(), stderr);
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

bool Task::OperatorFailed(const ChainedOperator& c, const Status& s) {
  Fail(s.WithContext("operator " + c.ctx.operator_id + "[" + std::to_string(c.ctx.subtask) + "]"));
  return false;
}

bool Task::NotifyChain(CheckpointId id) {
  last_notified_ = std::max(last_notified_, id);
  for (auto& c : chain_) {
    Status s = c.op->NotifyCheckpointComplete(id);
    if (!s.ok()) return OperatorFailed(c, s);
  }
  return true;
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
  auto handle = [this](const Control& c) -> bool {
    switch (c.kind) {
      case Control::Kind::kTrigger: {
        if (!checkpointer_.Checkpoint(c.barrier, TakenAs(c.barrier.mode), 0, false)) return false;
        CAIRN_CRASH_POINT("source.barrier_injected");
        break;
      }
      case Control::Kind::kNotify:
        if (!NotifyChain(c.id)) return false;
        break;
      case Control::Kind::kTerminate:
        terminated_ = true;
        break;
      case Control::Kind::kDump:
        PrintState();
        break;
      case Control::Kind::kDrain:
        drain_requested_ = true;
        break;
    }
    return true;
  };
  if (!deferred_.empty()) {
    std::vector<Control> d = std::move(deferred_);
    deferred_.clear();
    for (const Control& c : d)
      if (!handle(c)) return false;
  }
  Control c;
  while (control_.try_dequeue(c))
    if (!handle(c)) return false;
  return !cancelled_.load(std::memory_order_acquire);
}

bool Task::AwaitLastCheckpointNotified() {
  const CheckpointId final_id = checkpointer_.last_taken();
  while (true) {
    if (!HandleControl()) return false;
    if (last_notified_ >= final_id) return true;
    uint32_t t = parker_.Prepare();
    if (control_.size_approx() > 0 || cancelled_.load(std::memory_order_acquire)) {
      parker_.Cancel();
      continue;
    }
    parker_.Park(t, Clock::time_point::max());
  }
}

bool Task::OnBlocked(Clock::time_point* deadline) {
  if (cancelled_.load(std::memory_order_acquire)) return false;
  // While a barrier is being put on full channels, take no other snapshot from here:
  // checkpoints must be taken and persisted in order.
  if (in_blocked_handler_ || checkpointer_.forwarding()) return true;
  in_blocked_handler_ = true;
  bool ok = true;
  // Unaligned triggers (their barriers overtake the full channel) and completion notices are
  // taken now; an aligned trigger and the end wait until the output moves (in order).
  Control c;
  while (ok && control_.try_dequeue(c)) {
    if (!deferred_.empty()) {
      deferred_.push_back(c);
    } else if (c.kind == Control::Kind::kTrigger && c.barrier.mode == CheckpointMode::kUnaligned) {
      ok = checkpointer_.Checkpoint(c.barrier, SubtaskCheckpointMode::kUnaligned, 0, false);
      if (ok) CAIRN_CRASH_POINT("source.barrier_injected");
    } else if (c.kind == Control::Kind::kNotify) {
      ok = NotifyChain(c.id);
    } else if (c.kind == Control::Kind::kDump) {
      PrintState();
    } else {
      deferred_.push_back(c);
    }
  }
  // Unaligned barriers and alignment timeouts on the inputs.
  while (ok && !in_.empty()) {
    GateEvent ev = in_.PollPriority();
    if (ev.kind == GateEvent::Kind::kNone) break;
    ok = HandleGateEvent(ev);
  }
  *deadline = in_.empty() ? Clock::time_point::max() : in_.NextDeadline();
  in_blocked_handler_ = false;
  return ok && !cancelled_.load(std::memory_order_acquire);
}

void Task::ResetBuffer(size_t i) {
  // Emit may have swapped a channel's batch into the buffer: make it hold the operator's records.
  if (chain_[i].ctx.output_schema != nullptr) {
    buffers_[i].Reset(chain_[i].ctx.output_schema);
  } else {
    buffers_[i].clear();
  }
}

bool Task::ProcessChain(size_t from, int input, const RecordBatch& in) {
  const RecordBatch* cur = &in;
  for (size_t i = from; i < chain_.size(); ++i) {
    ResetBuffer(i);
    // A sink's "output" is what it consumed.
    if (i + 1 == chain_.size() && !out_.has_outputs()) records_out_.fetch_add(cur->size(), std::memory_order_relaxed);
    if (__builtin_expect(slow_us_ > 0, 0) && i == slow_op_)
      std::this_thread::sleep_for(std::chrono::microseconds(slow_us_));  // test-only: a slow subtask
    Status s = chain_[i].op->Process(i == from ? input : 0, *cur, &buffers_[i]);
    if (!s.ok()) return OperatorFailed(chain_[i], s);
    if (chain_[i].keyed_state != nullptr && !chain_[i].keyed_state->foreign_key_error().ok()) {
      // Never let a record change state its subtask does not own: fail the job loudly.
      Fail(chain_[i].keyed_state->foreign_key_error().WithContext(
          "operator " + chain_[i].ctx.operator_id + "[" + std::to_string(chain_[i].ctx.subtask) + "]"));
      return false;
    }
    if (chain_[i].keyed_backend != nullptr && !chain_[i].keyed_backend->foreign_key_error().ok()) {
      Fail(chain_[i].keyed_backend->foreign_key_error().WithContext(
          "operator " + chain_[i].ctx.operator_id + "[" + std::to_string(chain_[i].ctx.subtask) + "]"));
      return false;
    }
    cur = &buffers_[i];
  }
  if (!out_.has_outputs()) return true;
  records_out_.fetch_add(cur->size(), std::memory_order_relaxed);
  return out_.Emit(&buffers_.back());
}

bool Task::FinishChain(size_t from) {
  // Finish each operator in order; what one emits flows through the rest of the chain.
  for (size_t i = from; i < chain_.size(); ++i) {
    ResetBuffer(i);
    Status s = chain_[i].op->Finish(&buffers_[i]);
    if (!s.ok()) return OperatorFailed(chain_[i], s);
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

bool Task::EmitFrom(size_t i) {
  if (buffers_[i].empty()) return true;
  RecordBatch emitted;
  std::swap(emitted, buffers_[i]);
  if (i + 1 < chain_.size()) return ProcessChain(i + 1, 0, emitted);
  records_out_.fetch_add(emitted.size(), std::memory_order_relaxed);
  return !out_.has_outputs() || out_.Emit(&emitted);
}

bool Task::ProcessWatermarkChain(size_t from, int64_t watermark) {
  if (watermark <= out_watermark_) return true;
  for (size_t i = from; i < chain_.size(); ++i) {
    ChainedOperator& c = chain_[i];
    if (c.timers != nullptr && c.timers->AdvanceWatermark(watermark)) {
      int64_t ts;
      std::string key;
      while (c.timers->PopEventTimer(&ts, &key)) {
        ResetBuffer(i);
        Status s = c.op->OnTimer(TimeDomain::kEventTime, ts, key, &buffers_[i]);
        if (!s.ok()) return OperatorFailed(c, s);
        if (!EmitFrom(i)) return false;
      }
    }
    ResetBuffer(i);
    Status s = c.op->ProcessWatermark(watermark, &buffers_[i]);
    if (!s.ok()) return OperatorFailed(c, s);
    if (!EmitFrom(i)) return false;
  }
  out_watermark_ = watermark;
  watermark_view_.store(watermark, std::memory_order_relaxed);
  out_idle_ = false;
  return out_.Broadcast(StreamElement::OfWatermark(Watermark{watermark, false}));
}

bool Task::ForwardIdle(bool idle) {
  if (idle == out_idle_) return true;
  out_idle_ = idle;
  return out_.Broadcast(StreamElement::OfWatermark(Watermark{out_watermark_, idle}));
}

bool Task::HandleWatermarkEvent(const Watermark& w) {
  if (w.idle) return ForwardIdle(true);
  if (w.timestamp <= out_watermark_) return ForwardIdle(false);
  return ProcessWatermarkChain(0, w.timestamp);
}

bool Task::FireProcessingTimers(int64_t* next) {
  *next = std::numeric_limits<int64_t>::max();
  if (!has_timers_) return true;
  for (size_t i = 0; i < chain_.size(); ++i) {
    ChainedOperator& c = chain_[i];
    if (c.timers == nullptr) continue;
    if (c.timers->NextProcessingTime() != std::numeric_limits<int64_t>::max()) {
      const int64_t now = c.timers->CurrentProcessingTime();
      int64_t ts;
      std::string key;
      while (c.timers->PopProcessingTimer(now, &ts, &key)) {
        ResetBuffer(i);
        Status s = c.op->OnTimer(TimeDomain::kProcessingTime, ts, key, &buffers_[i]);
        if (!s.ok()) return OperatorFailed(c, s);
        if (!EmitFrom(i)) return false;
      }
    }
    *next = std::min(*next, c.timers->NextProcessingTime());
  }
  return true;
}

Clock::time_point Task::ParkDeadline(Clock::time_point deadline) {
  if (has_timers_) {
    int64_t next = std::numeric_limits<int64_t>::max();
    for (const ChainedOperator& c : chain_)
      if (c.timers != nullptr) next = std::min(next, c.timers->NextProcessingTime());
    if (next != std::numeric_limits<int64_t>::max()) {
      int64_t now = 0;
      for (const ChainedOperator& c : chain_)
        if (c.timers != nullptr) now = c.timers->CurrentProcessingTime();
      deadline = std::min(deadline, Clock::now() + std::chrono::milliseconds(std::max<int64_t>(0, next - now)));
    }
  }
  if (source_ != nullptr && watermarks_.enabled() && !out_idle_)
    deadline = std::min(deadline, watermarks_.NextIdleDeadline(Clock::now()));
  return deadline;
}

void Task::NoteEventTimes(const RecordBatch& batch) {
  if (!watermarks_.enabled()) return;
  batch_at_ = Clock::now();
  watermarks_.OnRecords(batch, batch_at_);
}

bool Task::EmitSourceWatermark() {
  if (!watermarks_.enabled()) return true;
  // At the batch's time, not now: emitting it may have taken longer than idle_timeout (a
  // loaded machine), and the splits it came from must count with the watermark it carries,
  // else they would go idle without it ever being sent.
  return ForwardSourceWatermark(watermarks_.Now(batch_at_));
}

bool Task::ForwardSourceWatermark(const SourceWatermarkGenerator::Current& c) {
  if (out_idle_) return true;  // a record makes it active again (RunSource), before this
  if (c.watermark > out_watermark_ && !ProcessWatermarkChain(1, c.watermark)) return false;
  return c.idle ? ForwardIdle(true) : true;
}

bool Task::CheckSourceIdle() {
  if (!watermarks_.enabled()) return true;
  // Without records: every split may have gone idle, or one that held the others back.
  return ForwardSourceWatermark(watermarks_.Now(Clock::now()));
}

void Task::SnapshotChain(const Barrier& b, PersistJob* job) {
  for (auto& c : chain_) {
    SnapshotPart part;
    part.handle.operator_id = c.ctx.operator_id;
    part.handle.operator_type = c.ctx.operator_type;
    part.handle.subtask = c.ctx.subtask;
    part.handle.parallelism = c.ctx.parallelism;
    part.handle.key_groups = c.ctx.key_groups;
    if (job->sync_status.ok()) {
      OperatorSnapshot snap;
      Status s = c.op->SnapshotState(b.id, &snap);
      if (s.ok()) {
        part.operator_state = std::move(snap.operator_state);
        if (c.list_state != nullptr && !c.list_state->empty()) part.list_state = c.list_state->Snapshot();
        part.async_part = std::move(snap.async_part);
        if (c.skipped != nullptr && c.skipped->counts_skipped())
          part.handle.records_skipped = static_cast<int64_t>(c.skipped->records_skipped());
        if (c.late != nullptr) part.handle.records_late = static_cast<int64_t>(c.late->records_late());
      } else {
        job->sync_status = s.WithContext("operator " + c.ctx.operator_id + "[" + std::to_string(c.ctx.subtask) + "]");
      }
    }
    if (c.keyed_backend != nullptr) {
      // Always, even when the checkpoint is declined: the changes must reach RocksDB.
      Status s = c.keyed_backend->Snapshot(&part.delta);
      if (!s.ok() && job->sync_status.ok())
        job->sync_status = s.WithContext("operator " + c.ctx.operator_id + "[" + std::to_string(c.ctx.subtask) + "] keyed state");
      part.keyed = c.keyed_store.get();
    } else if (c.keyed_state != nullptr) {
      part.delta = c.keyed_state->TakeDelta();  // always: the changes must reach RocksDB
      part.keyed = c.keyed_store.get();
    }
    job->parts.push_back(std::move(part));
  }
}

bool Task::HandleGateEvent(GateEvent& ev) {
  switch (ev.kind) {
    case GateEvent::Kind::kBatch:
      records_in_.fetch_add(ev.batch->size(), std::memory_order_relaxed);
      if (__builtin_expect(fail_after_ != 0, 0) && records_in() >= fail_after_) {
        Fail(Status::Internal("injected failure (CAIRN_INJECT_FAILURE) after " + std::to_string(records_in()) +
                              " records"));
        return false;
      }
      current_ = std::move(ev);
      current_offset_ = 0;
      has_current_ = true;
      return true;
    case GateEvent::Kind::kCheckpoint:
      return checkpointer_.Checkpoint(ev.barrier, ev.mode, ev.alignment_ms, ev.channel_state_pending);
    case GateEvent::Kind::kChannelStateDone:
      checkpointer_.OnChannelStateDone(std::move(ev.channel_state));
      return true;
    case GateEvent::Kind::kWatermark:
      return HandleWatermarkEvent(ev.watermark);
    case GateEvent::Kind::kEndOfInput:
      // Every input ended: the final watermark (each producer sent it already), then Finish.
      if (!ProcessWatermarkChain(0, kMaxWatermark)) return false;
      return FinishChain(0);
    case GateEvent::Kind::kEndOfStream:
    case GateEvent::Kind::kNone:
      return true;
  }
  return true;
}

bool Task::ProcessCurrent(bool* waiting, Clock::time_point* resume_at) {
  *waiting = false;
  RecordBatch& batch = *current_.batch;
  size_t want = batch.size() - current_offset_;
  size_t n = want;
  if (want > 0 && flow_control_ != nullptr) n = flow_control_->Admit(want, resume_at);
  if (n == 0 && want > 0) {
    *waiting = true;
    return true;
  }
  if (current_offset_ == 0 && n == want) {
    in_.MarkProcessed(current_.slot, batch, 0, n);
    if (!ProcessChain(0, current_.input_index, batch)) return false;
  } else {
    slice_.Reset(batch.schema());
    slice_.AppendRange(batch, current_offset_, current_offset_ + n);
    in_.MarkProcessed(current_.slot, batch, current_offset_, current_offset_ + n);
    if (!ProcessChain(0, current_.input_index, slice_)) return false;
  }
  current_offset_ += n;
  if (current_offset_ == batch.size()) {
    if (current_.rebalance != nullptr) {
      current_.rebalance->Recycle(std::move(current_.batch));
    } else {
      current_.channel->Recycle(std::move(current_.batch));
    }
    has_current_ = false;
  }
  return true;
}

bool Task::LoadRestoredChannels() {
  for (RestoredChannel& rc : restored_channels_) {
    const auto& inputs = in_.inputs();
    bool found = false;
    for (size_t slot = 0; slot < inputs.size() && !found; ++slot)
      if (inputs[slot].channel->name() == rc.name) {
        in_.AddRestored(slot, std::move(rc.records));
        found = true;
      }
    if (!found) {
      // Never drop restored records silently.
      Fail(Status::Internal("restored in-flight records of channel " + rc.name + ", which is not an input of this task"));
      return false;
    }
  }
  restored_channels_.clear();
  return true;
}

void Task::RunSource() {
  RecordBatch& batch = buffers_[0];
  bool exhausted = false;
  // After Open: a SplitSource knows its splits. idle_timeout counts from the start too.
  watermarks_.Start(chain_.front().watermarks, dynamic_cast<const SplitSource*>(chain_.front().op.get()), Clock::now());
  while (true) {
    if (!HandleControl()) return;
    if (terminated_) {
      out_.Broadcast(StreamElement::EndOfStream());
      return;
    }
    if (drain_requested_ && !exhausted) {
      // A stop with --drain: the input ends here, as if exhausted.
      exhausted = true;
      if (!ProcessWatermarkChain(1, kMaxWatermark)) return;
      if (!FinishChain(1)) return;
      listener_->SourceFinished(index_);
      continue;
    }
    if (exhausted) {
      if (!out_.Flush()) return;
      uint32_t t = parker_.Prepare();
      if (control_.size_approx() > 0 || !deferred_.empty() || cancelled_.load()) {
        parker_.Cancel();
        continue;
      }
      parker_.Park(t);
      continue;
    }
    int64_t next_timer;
    if (!FireProcessingTimers(&next_timer)) return;
    ResetBuffer(0);
    Clock::time_point resume_at;
    auto r = source_->Poll(&batch, kSourceBatchRecords, &resume_at);
    if (!batch.empty()) {
      records_in_.fetch_add(batch.size(), std::memory_order_relaxed);
      // Active again: the channels downstream count this source before its records arrive.
      if (out_idle_ && !ForwardIdle(false)) return;
      NoteEventTimes(batch);  // before Emit takes the records
      if (chain_.size() > 1) {
        if (!ProcessChain(1, 0, batch)) return;
      } else {
        records_out_.fetch_add(batch.size(), std::memory_order_relaxed);
        if (out_.has_outputs() && !out_.Emit(&batch)) return;
      }
      if (!EmitSourceWatermark()) return;
    } else if (!CheckSourceIdle()) {
      return;
    }
    if (r == SourceOperator::PollResult::kFailed) return;  // CloseAll fails the task with Close's status
    if (r == SourceOperator::PollResult::kExhausted) {
      exhausted = true;
      // The final watermark, then the end of input.
      if (!ProcessWatermarkChain(1, kMaxWatermark)) return;
      if (!FinishChain(1)) return;
      listener_->SourceFinished(index_);
    } else if (r == SourceOperator::PollResult::kWait) {
      if (!out_.Flush()) return;
      uint32_t t = parker_.Prepare();
      if (control_.size_approx() > 0 || !deferred_.empty() || cancelled_.load()) {
        parker_.Cancel();
        continue;
      }
      parker_.Park(t, ParkDeadline(resume_at));
    }
  }
}

void Task::RunConsumer() {
  if (!LoadRestoredChannels()) return;
  while (true) {
    if (!HandleControl()) return;
    int64_t next_timer;
    if (!FireProcessingTimers(&next_timer)) return;
    Clock::time_point deadline = Clock::time_point::max();
    if (has_current_) {
      bool waiting = false;
      if (!ProcessCurrent(&waiting, &deadline)) return;
      if (!waiting) continue;
      // Throttled: only priority events until the head admits more.
      GateEvent ev = in_.PollPriority();
      if (ev.kind != GateEvent::Kind::kNone) {
        if (!HandleGateEvent(ev)) return;
        continue;
      }
    } else {
      GateEvent ev = in_.Poll();
      if (ev.kind == GateEvent::Kind::kEndOfStream) {
        // The end of stream follows the final checkpoint (or a stop's savepoint): the sources
        // end the stream only once it completed, after its completion was sent to every task.
        // The task ends only after that notification (as Flink's tasks wait for the final
        // checkpoint, FLIP-147), so that a sink commits the final checkpoint's output: in one
        // process the notification is already queued here, but across worker processes it
        // comes on the coordinator's connection and may arrive after the data.
        if (!AwaitLastCheckpointNotified()) return;
        out_.Broadcast(StreamElement::EndOfStream());
        return;
      }
      if (ev.kind != GateEvent::Kind::kNone) {
        if (!HandleGateEvent(ev)) return;
        continue;
      }
    }
    // Nothing to do now: flush, then park until new input, a control message, or a deadline.
    if (!out_.Flush()) return;
    deadline = ParkDeadline(std::min(deadline, in_.NextDeadline()));
    uint32_t t = parker_.Prepare();
    // While throttled, new data is no reason to wake; priority events are.
    bool work = has_current_ ? in_.HasPriorityWork() : in_.HasWork();
    if (work || control_.size_approx() > 0 || !deferred_.empty() || cancelled_.load()) {
      parker_.Cancel();
      continue;
    }
    parker_.Park(t, deadline);
  }
}

}  // namespace cairn
