#include "engine/checkpoint/checkpoint_coordinator.h"

#include <cinttypes>
#include <cstdio>

#include <algorithm>
#include <cstdio>

#include "engine/base/crash_points.h"
#include "engine/base/file_util.h"
#include "engine/base/storage_faults.h"
#include "state/checkpoint_layout.h"
#include "state/savepoint.h"

namespace cairn {

const char* CheckpointFailureMessage(CheckpointFailureReason r) {
  switch (r) {
    case CheckpointFailureReason::kDeclined: return "a task declined the checkpoint";
    case CheckpointFailureReason::kTimeout: return "the checkpoint expired before completing (checkpoint.timeout)";
    case CheckpointFailureReason::kMetadataWriteFailed: return "the checkpoint metadata could not be written";
    case CheckpointFailureReason::kSavepointWriteFailed: return "the savepoint could not be written";
    case CheckpointFailureReason::kJobEnded: return "the job ended before the checkpoint completed";
    case CheckpointFailureReason::kUncountedInFlight:
      return "the batches in flight on a load-balanced edge were not all received";
  }
  return "?";
}

void CheckpointStats::RecordCompleted(CheckpointId id, int64_t duration_ms, size_t history) {
  completed++;
  last_duration_ms = duration_ms;
  max_duration_ms = std::max(max_duration_ms, duration_ms);
  total_duration_ms += duration_ms;
  last_completed_id = id;
  for (size_t i = 0; i < std::size(kDurationBucketsMs); ++i)
    if (duration_ms <= kDurationBucketsMs[i]) duration_buckets[i]++;
  durations_ms.push_back(duration_ms);
  if (durations_ms.size() > std::max<size_t>(history, 1))
    durations_ms.erase(durations_ms.begin(), durations_ms.end() - std::max<size_t>(history, 1));
}

static int64_t WallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

CheckpointCoordinator::CheckpointCoordinator(std::string job_name, uint32_t max_parallelism,
                                             const CheckpointConfig& config, const CheckpointStore* store,
                                             std::vector<CheckpointParticipant*> tasks, CheckpointId first_id,
                                             Listener* listener)
    : job_name_(std::move(job_name)),
      max_parallelism_(max_parallelism),
      config_(config),
      store_(store),
      tasks_(std::move(tasks)),
      listener_(listener),
      next_id_(first_id),
      cleaner_([this](CheckpointId newest) { return store_->Retain(config_.retain, newest); },
               [this](const Status& s) { RetentionFailed(s.WithContext("checkpoint retention")); }) {
  for (CheckpointParticipant* t : tasks_)
    if (t->is_source()) sources_.push_back(t);
}

CheckpointCoordinator::~CheckpointCoordinator() { Stop(); }

void CheckpointCoordinator::Start() {
  last_trigger_ = Clock::now();
  last_end_ = Clock::time_point::min();
  thread_ = std::thread([this] { Loop(); });
}

void CheckpointCoordinator::Stop() {
  stop_.store(true);
  parker_.Unpark();
  if (thread_.joinable()) thread_.join();
  cleaner_.Stop();  // the retention of the last completion, if it is still running
  // The thread is gone: answer every savepoint request still open.
  std::vector<SavepointRequest> open;
  {
    MutexLock l(&stats_mu_);
    if (stopped_) return;
    stopped_ = true;
    pending_records_.clear();
    in_progress_.store(0);
  }
  Event e;
  while (events_.try_dequeue(e))
    if (e.kind == Event::Kind::kSavepoint) open.push_back(std::move(e.savepoint));
  for (auto& r : savepoints_) open.push_back(std::move(r));
  savepoints_.clear();
  for (auto& [id, p] : pending_)
    for (auto& r : p.savepoints) open.push_back(std::move(r));
  for (auto& r : open)
    if (r.done) r.done(Status::Aborted("the job ended before the savepoint completed"), 0, "");
}

void CheckpointCoordinator::RequestSavepoint(SavepointRequest r) {
  {
    MutexLock l(&stats_mu_);
    if (!stopped_) {
      Event e;
      e.kind = Event::Kind::kSavepoint;
      e.savepoint = std::move(r);
      events_.enqueue(std::move(e));
      parker_.Unpark();
      return;
    }
  }
  if (r.done) r.done(Status::Aborted("the job has ended: no savepoint can be taken"), 0, "");
}

std::vector<CheckpointRecord> CheckpointCoordinator::History() const {
  MutexLock l(&stats_mu_);
  std::vector<CheckpointRecord> out = history_;
  out.insert(out.end(), pending_records_.begin(), pending_records_.end());
  return out;
}

std::optional<CheckpointRecord> CheckpointCoordinator::LatestSavepoint() const {
  MutexLock l(&stats_mu_);
  return latest_savepoint_;
}

void CheckpointCoordinator::AddHistory(CheckpointRecord r) {
  if (r.kind == "savepoint" && r.status == "completed" && r.failure.empty()) latest_savepoint_ = r;
  history_.push_back(std::move(r));
  const size_t keep = std::max<size_t>(config_.history, 1);
  if (history_.size() > keep) history_.erase(history_.begin(), history_.end() - keep);
}

void CheckpointCoordinator::Acknowledge(TaskAck ack) {
  Event e;
  e.kind = Event::Kind::kAck;
  e.ack = std::move(ack);
  events_.enqueue(std::move(e));
  parker_.Unpark();
}

void CheckpointCoordinator::SourceFinished(int task) {
  Event e;
  e.kind = Event::Kind::kSourceFinished;
  e.task = task;
  events_.enqueue(std::move(e));
  parker_.Unpark();
}

std::string CheckpointCoordinator::Describe() const {
  MutexLock l(&describe_mu_);
  return description_;
}

CheckpointStats CheckpointCoordinator::stats() const {
  MutexLock l(&stats_mu_);
  return stats_;
}

Status CheckpointCoordinator::retention_failure() const {
  MutexLock l(&stats_mu_);
  return retention_failure_;
}

void CheckpointCoordinator::RetentionFailed(const Status& s) {
  {
    MutexLock l(&stats_mu_);
    if (retention_failure_.ok()) retention_failure_ = s;
  }
  listener_->JobFailed(s);
}

void CheckpointCoordinator::Loop() {
  const CheckpointConfig& cfg = config_;
  while (!stop_.load()) {
    uint32_t ticket = parker_.Prepare();
    Event e;
    bool any = false;
    while (events_.try_dequeue(e)) {
      any = true;
      if (e.kind == Event::Kind::kAck) {
        OnAck(std::move(e.ack));
      } else if (e.kind == Event::Kind::kSavepoint) {
        SavepointRequest r = std::move(e.savepoint);
        if (terminating_ || (draining_ && r.then != SavepointRequest::Then::kContinue)) {
          if (r.done) r.done(Status::Aborted("the job is already finishing: no savepoint can be taken"), 0, "");
        } else if (r.then == SavepointRequest::Then::kDrain) {
          // The sources end their input; the final checkpoint then takes this savepoint.
          draining_ = true;
          savepoints_.push_back(std::move(r));
          for (CheckpointParticipant* src : sources_) src->Drain();
        } else {
          savepoints_.push_back(std::move(r));
        }
      } else {
        ++sources_finished_;
      }
      if (stop_.load()) break;
    }
    if (stop_.load()) {
      parker_.Cancel();
      break;
    }
    auto now = Clock::now();
    // Expire checkpoints past their timeout.
    for (auto it = pending_.begin(); it != pending_.end();) {
      CheckpointId id = it->first;
      bool expired = now - it->second.trigger >= cfg.timeout;
      ++it;
      if (expired) Fail(id, CheckpointFailureReason::kTimeout, "after " + std::to_string(cfg.timeout.count()) + " ms");
    }
    if (stop_.load()) break;
    Clock::time_point deadline = Clock::time_point::max();
    std::string waiting;  // for Describe: why no checkpoint is triggered now
    if (!terminating_) {
      const bool all_finished = sources_finished_ == sources_.size();
      const bool can_trigger = pending_.size() < cfg.max_concurrent;
      const bool final_pending =
          std::any_of(pending_.begin(), pending_.end(), [](const auto& kv) { return kv.second.final_candidate; });
      // checkpoint.min_pause runs from the end of the previous checkpoint, completed or failed,
      // also before a final checkpoint (a failed one is retried at this pace, not back to back).
      const auto pause_end = last_end_ == Clock::time_point::min() ? Clock::time_point::min() : last_end_ + cfg.min_pause;
      if (all_finished && !final_pending && can_trigger) {
        if (now >= pause_end) {
          Trigger(true);
        } else {
          deadline = pause_end;
          waiting = "  final checkpoint waits for checkpoint.min_pause (" +
                    std::to_string(std::chrono::ceil<std::chrono::milliseconds>(pause_end - now).count()) +
                    " ms left)\n";
        }
      } else if (!all_finished && !draining_ && !savepoints_.empty()) {
        // A savepoint is triggered at once (not at the interval's pace).
        if (can_trigger) Trigger(false);
      } else if (!all_finished && !draining_ && cfg.interval.count() > 0) {
        auto due = std::max(last_trigger_ + cfg.interval, pause_end);
        if (now >= due && can_trigger) {
          Trigger(false);
        } else if (can_trigger) {
          deadline = due;
        }
      }
    }
    for (const auto& kv : pending_) deadline = std::min(deadline, kv.second.trigger + cfg.timeout);
    {
      std::string d = "coordinator: sources finished " + std::to_string(sources_finished_) + "/" +
                      std::to_string(sources_.size()) + (terminating_ ? ", terminating" : "") + "\n" + waiting;
      for (const auto& [id, p] : pending_) {
        d += "  pending checkpoint " + std::to_string(id) + (p.final_candidate ? " (final)" : "") + ": waiting for";
        for (size_t t = 0; t < tasks_.size(); ++t)
          if (!p.acked[t]) d += " " + tasks_[t]->name();
        d += "\n";
      }
      MutexLock l(&describe_mu_);
      description_ = std::move(d);
    }
    PublishPending();
    if (any || events_.size_approx() > 0) {
      parker_.Cancel();
      continue;
    }
    parker_.Park(ticket, deadline);
  }
}

void CheckpointCoordinator::Trigger(bool final_candidate) {
  Pending p;
  p.id = next_id_++;
  p.trigger = Clock::now();
  p.trigger_wall_ms = WallMillis();
  p.final_candidate = final_candidate;
  p.acked.assign(tasks_.size(), false);
  last_trigger_ = p.trigger;
  Barrier b;
  b.id = p.id;
  b.trigger_time_ms = p.trigger_wall_ms;
  b.mode = config_.mode;
  b.aligned_timeout_ms = config_.mode == CheckpointMode::kAligned ? config_.aligned_timeout.count() : 0;
  if (final_candidate) {
    // The final checkpoint must cover every record: its barriers follow the end of input on
    // every channel and overtake nothing, so it is always aligned.
    b.mode = CheckpointMode::kAligned;
    b.aligned_timeout_ms = 0;
  }
  p.mode = TakenAs(b.mode);
  if (final_candidate || !draining_) {
    p.savepoints = std::move(savepoints_);
    savepoints_.clear();
  }
  pending_.emplace(p.id, std::move(p));
  for (CheckpointParticipant* s : sources_) s->TriggerCheckpoint(b);
}

void CheckpointCoordinator::OnAck(TaskAck ack) {
  auto it = pending_.find(ack.id);
  if (it == pending_.end()) {
    // A late answer for a checkpoint that failed or was subsumed (a completed one has had all
    // its answers): what its persister wrote since the failure is garbage. Best effort: a
    // directory without _metadata is never restored, and the next start removes it.
    RemoveAll(store_->CheckpointPath(ack.id)).IgnoreError();
    store_->MarkGarbagePossible();  // shared files its SHARED list named, if any
    return;
  }
  if (!ack.status.ok()) {
    Fail(ack.id, CheckpointFailureReason::kDeclined, ack.status.message());
    return;
  }
  Pending& p = it->second;
  if (ack.mode == SubtaskCheckpointMode::kAlignedThenUnaligned) p.mode = ack.mode;
  if (ack.task >= 0 && static_cast<size_t>(ack.task) < p.acked.size()) p.acked[ack.task] = true;
  for (auto& h : ack.handles) p.handles.push_back(std::move(h));
  for (const RebalanceCount& c : ack.rebalance_counts) {
    auto& [sent, received] = p.rebalance[c.edge];
    sent += c.sent;
    received += c.received_before + c.received_after;
  }
  if (++p.acks < tasks_.size()) return;
  if (std::string why = RebalanceMismatch(p); !why.empty()) {
    Fail(ack.id, CheckpointFailureReason::kUncountedInFlight, why);
    return;
  }
  Pending done = std::move(p);
  pending_.erase(it);
  Complete(std::move(done));
}

std::string CheckpointCoordinator::RebalanceMismatch(const Pending& p) {
  // Each consumer closed its recording only once the edge's counts matched, so this holds by
  // construction; checked here all the same, since a recording short of a batch loses it.
  std::string why;
  for (const auto& [edge, counts] : p.rebalance)
    if (counts.first != counts.second)
      why += (why.empty() ? "" : "; ") + std::string("load-balanced edge ") + edge + ": " +
             std::to_string(counts.first) + " batches sent before the producers' snapshots, " +
             std::to_string(counts.second) + " received by the consumers";
  return why;
}

void CheckpointCoordinator::Complete(Pending p) {
  CheckpointMetadata m;
  m.id = p.id;
  m.job_name = job_name_;
  m.trigger_time_ms = p.trigger_wall_ms;
  m.mode = SubtaskCheckpointModeName(p.mode);
  m.max_parallelism = max_parallelism_;
  m.sources_finished = p.final_candidate;
  std::sort(p.handles.begin(), p.handles.end(), [](const SubtaskStateHandle& a, const SubtaskStateHandle& b) {
    return a.operator_id != b.operator_id ? a.operator_id < b.operator_id : a.subtask < b.subtask;
  });
  for (const auto& h : p.handles) {
    m.state_bytes += h.state_bytes;
    m.channel_state_bytes += h.channel_state_bytes;
    m.alignment_ms = std::max(m.alignment_ms, h.alignment_ms);
    m.sync_ms = std::max(m.sync_ms, h.sync_ms);
    m.async_ms = std::max(m.async_ms, h.async_ms);
  }
  m.subtasks = std::move(p.handles);
  auto now = Clock::now();
  m.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - p.trigger).count();
  std::string dir = store_->CheckpointPath(p.id);
  CAIRN_CRASH_POINT("metadata.before_commit");
  Status s = CreateDirs(dir);
  if (s.ok()) s = WriteMetadata(dir, m);
  if (!s.ok()) {
    pending_.emplace(p.id, std::move(p));
    Fail(m.id, CheckpointFailureReason::kMetadataWriteFailed, s.message());
    return;
  }
  CAIRN_CRASH_POINT("checkpoint.committed");
  last_end_ = now;
  consecutive_failures_ = 0;
  // Older pending checkpoints are subsumed by this one (their savepoint requests move here).
  std::vector<CheckpointId> subsumed;
  while (!pending_.empty() && pending_.begin()->first < m.id) {
    CheckpointId old = pending_.begin()->first;
    for (auto& r : pending_.begin()->second.savepoints) p.savepoints.push_back(std::move(r));
    pending_.erase(pending_.begin());
    Discard(old);
    subsumed.push_back(old);
  }
  // Savepoints: copies of this checkpoint, made before retention may remove it.
  struct Answer {
    SavepointRequest r;
    Status s;
    std::string path;
  };
  std::vector<Answer> answers;
  bool stop_after = false;
  std::string savepoint_failure;
  for (auto& r : p.savepoints) {
    Answer a{std::move(r), Status::OK(), ""};
    a.s = WriteSavepoint(dir, m, a.r.dir, &a.path);
    if (a.s.ok()) {
      const std::string note = "savepoint " + std::to_string(m.id) + " written to " + a.path;
      if (info_) info_(note);
      else fprintf(stderr, "cairn: %s\n", note.c_str());
      if (a.r.then != SavepointRequest::Then::kContinue) {
        stop_after = true;
        stop_savepoint_ = a.path;
      }
    } else {
      savepoint_failure = a.s.message();
      fprintf(stderr, "cairn: savepoint %" PRIu64 " failed: %s\n", m.id, a.s.message().c_str());
    }
    answers.push_back(std::move(a));
  }
  {
    MutexLock l(&stats_mu_);
    stats_.RecordCompleted(m.id, m.duration_ms, config_.history);
    stats_.last_state_bytes = m.state_bytes;
    stats_.last_channel_state_bytes = m.channel_state_bytes;
    for (CheckpointId old : subsumed) {
      CheckpointRecord r;
      r.id = old;
      r.status = "failed";
      r.failure = "subsumed by checkpoint " + std::to_string(m.id);
      r.path = store_->CheckpointPath(old);
      for (const CheckpointRecord& pr : pending_records_)
        if (pr.id == old) r.trigger_time_ms = pr.trigger_time_ms;
      AddHistory(std::move(r));
    }
    std::erase_if(pending_records_, [&](const CheckpointRecord& pr) { return pr.id <= m.id; });
    CheckpointRecord r;
    r.id = m.id;
    r.status = "completed";
    r.path = dir;
    for (const Answer& a : answers) {
      r.kind = "savepoint";
      if (a.s.ok()) r.path = a.path;
    }
    if (!savepoint_failure.empty())
      r.failure = std::string(CheckpointFailureMessage(CheckpointFailureReason::kSavepointWriteFailed)) + ": " +
                  savepoint_failure;
    r.trigger_time_ms = m.trigger_time_ms;
    r.duration_ms = m.duration_ms;
    r.mode = m.mode;
    r.final_checkpoint = m.sources_finished;
    r.state_bytes = m.state_bytes;
    r.channel_state_bytes = m.channel_state_bytes;
    r.alignment_ms = m.alignment_ms;
    r.sync_ms = m.sync_ms;
    r.async_ms = m.async_ms;
    r.acknowledged = r.tasks = tasks_.size();
    r.subtasks = m.subtasks;
    AddHistory(std::move(r));
  }
  for (CheckpointParticipant* t : tasks_) t->NotifyCheckpointComplete(m.id);
  cleaner_.Request(m.id);
  if (stop_after && !terminating_) {
    // A stop with a savepoint: the sources end the stream right after it (after the
    // notification above, so the sinks commit this checkpoint's output first).
    terminating_ = true;
    for (CheckpointParticipant* s : sources_) s->Terminate();
    final_completed_.store(true);
    for (auto& a : answers)
      if (a.r.done) a.r.done(a.s, m.id, a.path);
    return;
  }
  for (auto& a : answers)
    if (a.r.done) a.r.done(a.s, m.id, a.path);
  // Final: every source finished and nothing in flight on any channel. Termination is a stable
  // property, so a snapshot that shows it proves it (in a cycle, records may still circulate
  // in the first such checkpoints; then another is taken).
  if (p.final_candidate && m.channel_state_bytes == 0) {
    terminating_ = true;
    for (CheckpointParticipant* s : sources_) s->Terminate();
    final_completed_.store(true);
  } else if (p.final_candidate && ++undrained_finals_ >= config_.max_drain_checkpoints) {
    // Records that circulate without end (a cycle that never drains) would keep the job, and
    // whatever its sinks write, going forever.
    std::string into;
    for (const SubtaskStateHandle& h : m.subtasks)
      if (h.channel_state_bytes > 0)
        into += (into.empty() ? "" : ", ") + h.operator_id + "[" + std::to_string(h.subtask) + "]";
    listener_->JobFailed(Status::Aborted(
        "the job's cycle does not drain: " + std::to_string(undrained_finals_) +
        " final checkpoints after every source finished (the last: checkpoint " + std::to_string(m.id) +
        ") still found records in flight on the feedback edges into " + into + " (" +
        std::to_string(m.channel_state_bytes) + " bytes of channel state); checkpoint.max_drain_checkpoints = " +
        std::to_string(config_.max_drain_checkpoints) +
        " (raise it if the cycle drains slowly)"));
    stop_.store(true);
  }
}

void CheckpointCoordinator::PublishPending() {
  std::vector<CheckpointRecord> recs;
  for (const auto& [id, p] : pending_) {
    CheckpointRecord r;
    r.id = id;
    r.kind = p.savepoints.empty() ? "checkpoint" : "savepoint";
    r.status = "in_progress";
    r.path = store_->CheckpointPath(id);
    r.trigger_time_ms = p.trigger_wall_ms;
    r.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - p.trigger).count();
    r.mode = SubtaskCheckpointModeName(p.mode);
    r.final_checkpoint = p.final_candidate;
    r.acknowledged = p.acks;
    r.tasks = tasks_.size();
    recs.push_back(std::move(r));
  }
  in_progress_.store(recs.size(), std::memory_order_relaxed);
  MutexLock l(&stats_mu_);
  pending_records_ = std::move(recs);
}

void CheckpointCoordinator::Discard(CheckpointId id) {
  if (abort_handler_) abort_handler_(id);
  // As retention does: the commit point goes first (a metadata write that failed after its
  // rename leaves one), so that a crash half-way leaves an incomplete checkpoint, never a
  // complete-looking one with missing state.
  const std::string dir = store_->CheckpointPath(id);
  const std::string meta = MetadataPath(dir);
  if (PathExists(meta)) {
    LogDurabilityEvent("remove", meta);
    Status s = RemoveAll(meta);
    if (s.ok()) s = FsyncDir(dir);
    // Whatever is left is still a consistent checkpoint: its _metadata was only written once
    // every task had acknowledged (a restore from it commits what it owes the sinks).
    if (!s.ok())
      fprintf(stderr, "cairn: warning: checkpoint %" PRIu64 " failed but its commit point may remain: %s\n", id,
              s.message().c_str());
  }
  LogDurabilityEvent("remove", dir);
  // Best effort: a directory without _metadata is never restored, and the next start removes it.
  RemoveAll(dir).IgnoreError();
}

void CheckpointCoordinator::Fail(CheckpointId id, CheckpointFailureReason reason, const std::string& detail) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  const bool final_candidate = it->second.final_candidate;
  std::vector<SavepointRequest> savepoints = std::move(it->second.savepoints);
  const int64_t trigger_wall_ms = it->second.trigger_wall_ms;
  const auto trigger = it->second.trigger;
  const size_t acks = it->second.acks;
  pending_.erase(it);
  Discard(id);
  last_end_ = Clock::now();
  std::string msg = "checkpoint " + std::to_string(id) + " failed: " + CheckpointFailureMessage(reason) +
                    (detail.empty() ? "" : ": " + detail);
  FailedCheckpoint failed;
  {
    MutexLock l(&stats_mu_);
    stats_.failed++;
    std::erase_if(pending_records_, [&](const CheckpointRecord& pr) { return pr.id == id; });
    CheckpointRecord r;
    r.id = id;
    r.kind = savepoints.empty() ? "checkpoint" : "savepoint";
    r.status = "failed";
    r.failure = std::string(CheckpointFailureMessage(reason)) + (detail.empty() ? "" : ": " + detail);
    r.path = store_->CheckpointPath(id);
    r.trigger_time_ms = trigger_wall_ms;
    r.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(last_end_ - trigger).count();
    r.final_checkpoint = final_candidate;
    r.acknowledged = acks;
    r.tasks = tasks_.size();
    failed.id = id;
    failed.kind = r.kind;
    failed.trigger_time_ms = r.trigger_time_ms;
    failed.duration_ms = r.duration_ms;
    failed.reason = r.failure;
    AddHistory(std::move(r));
  }
  // For `cairn checkpoints`; a history only, so a failure to write it fails nothing.
  store_->RecordFailure(failed).IgnoreError();
  for (auto& r : savepoints)
    if (r.done) r.done(Status::Aborted(msg), id, "");
  ++consecutive_failures_;
  if (consecutive_failures_ > config_.tolerable_failures) {
    listener_->JobFailed(Status::Aborted(msg + " (" + std::to_string(consecutive_failures_) +
                                         " consecutive failures exceed checkpoint.tolerable_failures = " +
                                         std::to_string(config_.tolerable_failures) + ")"));
    stop_.store(true);
  } else {
    fprintf(stderr, "cairn: %s (tolerated: %u of %u consecutive failures)%s\n", msg.c_str(), consecutive_failures_,
            config_.tolerable_failures,
            final_candidate ? ("; the final checkpoint is retried after checkpoint.min_pause = " +
                               std::to_string(config_.min_pause.count()) + " ms")
                                  .c_str()
                            : "");
  }
}

}  // namespace cairn
