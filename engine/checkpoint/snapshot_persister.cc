#include "engine/checkpoint/snapshot_persister.h"

#include "engine/base/coding.h"
#include "engine/base/file_util.h"
#include "engine/base/crash_points.h"
#include "engine/base/storage_faults.h"
#include "engine/base/thread_priority.h"
#include "engine/dataflow/record_codec.h"
#include <filesystem>
#include <string>
#include <thread>
#include <vector>
#include "state/checkpoint_layout.h"
#include "state/rocksdb_state_store.h"

namespace cairn {

std::string EncodeChannelState(const ChannelStateRecords& c) {
  std::string out;
  uint64_t channels = 0;
  for (const RecordBatch& b : c.records) channels += b.empty() ? 0 : 1;
  PutFixed64(&out, channels);
  for (size_t i = 0; i < c.records.size(); ++i) {
    const RecordBatch& b = c.records[i];
    if (b.empty()) continue;
    PutLengthPrefixed(&out, c.channel_names[i]);
    EncodeSchema(*b.schema(), &out);
    PutFixed64(&out, b.size());
    EncodeRows(b, &out);
  }
  return out;
}

bool DecodeChannelState(std::string_view bytes, std::vector<RestoredChannel>* out) {
  Decoder d(bytes);
  uint64_t channels;
  if (!d.GetFixed64(&channels)) return false;
  for (uint64_t c = 0; c < channels; ++c) {
    RestoredChannel rc;
    uint64_t n;
    if (!d.GetLengthPrefixed(&rc.name) || !DecodeSchema(&d, &rc.schema) || !d.GetFixed64(&n)) return false;
    RecordBatch& b = rc.records;
    b.set_schema(rc.schema);
    for (uint64_t r = 0; r < n; ++r)
      if (!DecodeRow(&d, &b)) return false;
    out->push_back(std::move(rc));
  }
  return d.done();
}

SnapshotPersister::SnapshotPersister(size_t threads, AckFn ack, uint64_t inline_state_threshold)
    : ack_(std::move(ack)), inline_state_threshold_(inline_state_threshold) {
  for (size_t i = 0; i < threads; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    Worker* w = workers_.back().get();
    w->thread = std::thread([this, w] { Loop(w); });
  }
}

SnapshotPersister::~SnapshotPersister() { Stop(); }

void SnapshotPersister::Submit(std::unique_ptr<PersistJob> job) {
  Worker* w = workers_[static_cast<size_t>(job->task) % workers_.size()].get();
  {
    MutexLock l(&w->mu);
    w->queue.push_back(std::move(job));
  }
  w->cv.Signal();
}

void SnapshotPersister::Abort(CheckpointId id) {
  constexpr size_t kMaxAborted = 1024;  // older ids have long been persisted or skipped
  MutexLock l(&aborted_mu_);
  aborted_.insert(id);
  while (aborted_.size() > kMaxAborted) aborted_.erase(aborted_.begin());
  // Logged once it is in effect: a write logged after this line checked Aborted() before it,
  // which only a write already past its check can have done (one per persister thread).
  LogDurabilityEvent("abort", std::to_string(id));
}

bool SnapshotPersister::Aborted(CheckpointId id) const {
  MutexLock l(&aborted_mu_);
  return aborted_.count(id) > 0;
}

void SnapshotPersister::Stop() {
  for (auto& w : workers_) {
    {
      MutexLock l(&w->mu);
      w->stop = true;
    }
    w->cv.Signal();
  }
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

void SnapshotPersister::Loop(Worker* w) {
  RequestShortSchedulerSlice();
  for (;;) {
    std::unique_ptr<PersistJob> job;
    {
      MutexLock l(&w->mu);
      while (!w->stop && w->queue.empty()) w->cv.Wait(&w->mu);
      if (w->queue.empty()) return;
      job = std::move(w->queue.front());
      w->queue.pop_front();
    }
    TaskAck ack = Persist(*job);
    ack_(std::move(ack));
  }
}

namespace {

// What a job (or its part) of an aborted checkpoint answers instead of writing.
Status AbortedStatus(CheckpointId id) {
  return Status::Aborted("checkpoint " + std::to_string(id) + " was aborted; its state was not written");
}

}  // namespace

SnapshotPersister::ChannelStateWrite SnapshotPersister::WriteChannelState(const PersistJob& job,
                                                                        DeferredSyncs* syncs) const {
  ChannelStateWrite out;
  bool any = false;
  for (const RecordBatch& b : job.channel_state->records) any |= !b.empty();
  if (!any) return out;
  const SubtaskStateHandle& h = job.parts[0].handle;
  std::string bytes = EncodeChannelState(*job.channel_state);
  if (bytes.size() < inline_state_threshold_) {
    out.bytes = bytes.size();
    out.in_line = std::move(bytes);
    return out;
  }
  out.status = CreateDirs(InCheckpoint(job.chk_dir, SubtaskStateRelPath(h.operator_id, h.subtask)));
  if (!out.status.ok()) return out;
  if (Aborted(job.id)) {
    out.status = AbortedStatus(job.id);
    return out;
  }
  CAIRN_CRASH_POINT("persist.channel_state");
  out.status = WriteChecksummedFile(InCheckpoint(job.chk_dir, ChannelStateRelPath(h.operator_id, h.subtask)), bytes,
                                    syncs);
  if (out.status.ok()) out.bytes = bytes.size() + kBlobFooterSize;
  return out;
}

Status SnapshotPersister::PersistBlob(const std::string& chk_dir, const std::string& rel, std::string* bytes,
                                      std::string* file, std::string* in_line, uint64_t* state_bytes,
                                      DeferredSyncs* syncs) const {
  if (bytes->size() < inline_state_threshold_) {
    *state_bytes += bytes->size();
    *in_line = std::move(*bytes);
    return Status::OK();
  }
  const std::string path = InCheckpoint(chk_dir, rel);
  CAIRN_RETURN_IF_ERROR(CreateDirs(std::filesystem::path(path).parent_path().string()));
  CAIRN_RETURN_IF_ERROR(WriteChecksummedFile(path, *bytes, syncs));
  *file = rel;
  *state_bytes += bytes->size() + kBlobFooterSize;
  return Status::OK();
}

TaskAck SnapshotPersister::Persist(PersistJob& job) {
  auto start = std::chrono::steady_clock::now();
  TaskAck ack;
  ack.id = job.id;
  ack.task = job.task;
  ack.status = job.sync_status;
  auto aborted = [&] {
    if (!ack.status.ok() || !Aborted(job.id)) return false;
    ack.status = AbortedStatus(job.id);
    return true;
  };
  aborted();
  // The operators' own async parts (the file sink's fsync of its part files) touch nothing
  // the rest of this job writes: each runs on a thread of its own from the start, overlapping
  // the state written below, and is waited for before the ack. Another subtask's persist queued
  // on this worker then waits for neither.
  struct Side {
    size_t part;
    Status status;
    std::thread thread;
  };
  std::vector<Side> sides;
  sides.reserve(job.parts.size());
  for (size_t i = 0; i < job.parts.size(); ++i) {
    if (!job.parts[i].async_part || !ack.status.ok() || aborted()) continue;
    sides.push_back(Side{i, Status::OK(), {}});
    Side& side = sides.back();
    side.thread = std::thread([&side, fn = &job.parts[i].async_part] {
      RequestShortSchedulerSlice();
      side.status = (*fn)();
    });
  }
  // Every file written below is fsynced at the end, then every directory once, after the last
  // write into it (a subtask's directory may get its keyed state's entry, operator, list and
  // channel state): DeferredSyncs.
  DeferredSyncs syncs;
  // The channel state (unaligned checkpoints) is the first subtask's and independent of the
  // rest: encoded and written on a thread of its own too, its write overlapping the keyed
  // state's. Like every write here it is skipped once the checkpoint is aborted.
  ChannelStateWrite channel;
  std::thread channel_thread;
  if (ack.status.ok() && !aborted() && job.channel_state != nullptr && !job.parts.empty()) {
    channel_thread = std::thread([this, &job, &channel, &syncs] {
      RequestShortSchedulerSlice();
      channel = WriteChannelState(job, &syncs);
    });
  }
  for (SnapshotPart& part : job.parts) {
    SubtaskStateHandle& h = part.handle;
    const std::string rel = SubtaskStateRelPath(h.operator_id, h.subtask);
    const std::string dir = InCheckpoint(job.chk_dir, rel);
    const std::string keyed_rel = KeyedStateRelPath(h.operator_id, h.subtask);
    const std::string keyed_dir = InCheckpoint(job.chk_dir, keyed_rel);
    if (part.keyed != nullptr) {
      // Deltas must reach the working database even when this checkpoint fails.
      std::unique_ptr<StateDelta> delta = std::move(part.keyed->unwritten);
      if (delta == nullptr) {
        delta = std::move(part.delta);
      } else if (part.delta != nullptr) {
        delta->Merge(*part.delta);
      }
      aborted();
      Status s = ack.status;
      if (s.ok()) s = CreateDirs(dir);
      uint64_t bytes = 0;
      if (s.ok()) {
        CAIRN_CRASH_POINT("persist.keyed");
        // RocksDB's own writes cannot be reached, so an injected fault fails before them.
        s = InjectStorageFault(keyed_dir);
        if (s.ok()) s = part.keyed->store->PersistAndCheckpoint(*delta, keyed_dir, &bytes);
        // The keyed directory's entry in the subtask directory, which holds nothing else
        // when the operator has no operator state.
        if (s.ok()) {
          syncs.AddDir(keyed_dir);
          syncs.AddDir(dir);
        }
      }
      if (!s.ok()) {
        part.keyed->unwritten = std::move(delta);
        if (ack.status.ok()) ack.status = s.WithContext("operator " + rel + " keyed state");
        continue;
      }
      h.keyed_dir = keyed_rel;
      h.state_bytes += bytes;
    }
    if (aborted() || !ack.status.ok()) continue;
    if (!part.operator_state.empty()) {
      CAIRN_CRASH_POINT("persist.operator_state");
      Status s = PersistBlob(job.chk_dir, OperatorStateRelPath(h.operator_id, h.subtask), &part.operator_state,
                             &h.operator_state_file, &h.operator_state_inline, &h.state_bytes, &syncs);
      if (!s.ok()) {
        ack.status = s.WithContext("operator " + rel + " state");
        continue;
      }
    }
    if (!part.list_state.empty()) {
      Status s = PersistBlob(job.chk_dir, ListStateRelPath(h.operator_id, h.subtask), &part.list_state,
                             &h.list_state_file, &h.list_state_inline, &h.state_bytes, &syncs);
      if (!s.ok()) {
        ack.status = s.WithContext("operator " + rel + " list state");
        continue;
      }
    }
  }
  if (channel_thread.joinable()) {
    channel_thread.join();
    SubtaskStateHandle& h = job.parts[0].handle;
    if (!channel.status.ok()) {
      if (ack.status.ok())
        ack.status = channel.status.WithContext("operator " + SubtaskStateRelPath(h.operator_id, h.subtask) +
                                                " channel state");
    } else if (!channel.in_line.empty()) {
      h.channel_state_inline = std::move(channel.in_line);
      h.channel_state_bytes = channel.bytes;
    } else if (channel.bytes > 0) {
      h.channel_state_file = ChannelStateRelPath(h.operator_id, h.subtask);
      h.channel_state_bytes = channel.bytes;
    }
  }
  for (Side& side : sides) {
    side.thread.join();
    if (!side.status.ok() && ack.status.ok()) {
      const SubtaskStateHandle& h = job.parts[side.part].handle;
      ack.status = side.status.WithContext("operator " + SubtaskStateRelPath(h.operator_id, h.subtask));
    }
  }
  if (!sides.empty()) aborted();  // an abort raised while they ran
  // The files' fsyncs, then the directories', which make the renames above durable (an error
  // names the file or directory).
  if (ack.status.ok()) ack.status = syncs.SyncAll();
  ack.mode = job.mode;
  ack.rebalance_counts = std::move(job.rebalance_counts);
  int64_t async_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (ack.status.ok()) {
    for (SnapshotPart& part : job.parts) {
      part.handle.alignment_ms = job.alignment_ms;
      part.handle.sync_ms = job.sync_ms;
      part.handle.async_ms = async_ms;
      ack.handles.push_back(part.handle);
    }
  }
  return ack;
}

}  // namespace cairn
