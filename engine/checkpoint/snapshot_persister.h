// SnapshotPersister runs the asynchronous part of subtask snapshots on a few background
// threads, while the tasks go on processing: it writes keyed-state deltas to each subtask's
// StateStore and has it make a checkpoint (with RocksDB: a RocksDB checkpoint), writes
// operator state and channel state, and then acknowledges (or declines) to the coordinator.
// The operators' async parts (a file sink's fsync of its part files) and the channel state run
// each on a thread of their own from the job's start, beside those writes, and the ack waits for
// them: one subtask's fsync neither adds to its own writes nor holds up the jobs queued behind
// it. The files a job writes are fsynced at its end, then each directory it wrote into once
// (DeferredSyncs).
//
// Contract: jobs of one task run in submission order on one thread (task index mod threads),
// so a subtask's deltas reach its StateStore in checkpoint order. Submit is called by task
// threads; the callback runs on a persister thread. Stop() drains the queued jobs and joins.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "engine/base/file_util.h"
#include "engine/base/mutex.h"
#include "engine/checkpoint/checkpoint_messages.h"

namespace cairn {

class SnapshotPersister {
 public:
  using AckFn = std::function<void(TaskAck)>;
  // Operator, list and channel state smaller than `inline_state_threshold` bytes is not written
  // to a file: its handle carries the bytes, which the coordinator stores in _metadata
  // (checkpoint.inline_state_threshold); 0 writes every state to a file.
  SnapshotPersister(size_t threads, AckFn ack, uint64_t inline_state_threshold = 0);
  ~SnapshotPersister();

  void Submit(std::unique_ptr<PersistJob> job);
  void Stop();
  // Checkpoint `id` failed (declined, expired, metadata not written) or was subsumed: jobs of it
  // that have not started are skipped, and a running one stops before its next write. A
  // skipped job still carries its keyed-state delta over to the next checkpoint and answers
  // (Aborted), which the coordinator ignores. Any thread. Abort does not wait: a write that
  // passed its check just before may still begin (at most one per thread, a job's channel-state
  // thread included); what it leaves is removed when its job's late answer reaches the
  // coordinator.
  void Abort(CheckpointId id) EXCLUDES(aborted_mu_);

 private:
  struct Worker {
    Mutex mu;
    CondVar cv;
    std::deque<std::unique_ptr<PersistJob>> queue GUARDED_BY(mu);
    bool stop GUARDED_BY(mu) = false;
    std::thread thread;
  };
  void Loop(Worker* w);
  TaskAck Persist(PersistJob& job);
  // Encodes and writes the channel state of `job` (its first subtask's), unless empty or the
  // checkpoint was aborted; the file's and its directory's fsyncs are added to `syncs`. Bytes
  // below the inline threshold are returned instead of written.
  struct ChannelStateWrite {
    Status status;
    uint64_t bytes = 0;    // 0: nothing written
    std::string in_line;   // the encoded bytes instead of a file, when below the threshold
  };
  ChannelStateWrite WriteChannelState(const PersistJob& job, DeferredSyncs* syncs) const;

  // Operator or list state `bytes` of one subtask: below the inline threshold moved into
  // *in_line, otherwise written to <chk_dir>/<rel> (its fsyncs added to `syncs`) and *file set
  // to `rel`; *state_bytes grows by what it takes in the checkpoint.
  Status PersistBlob(const std::string& chk_dir, const std::string& rel, std::string* bytes, std::string* file,
                     std::string* in_line, uint64_t* state_bytes, DeferredSyncs* syncs) const;

  bool Aborted(CheckpointId id) const EXCLUDES(aborted_mu_);

  // Constant after construction.
  const AckFn ack_;
  const uint64_t inline_state_threshold_;
  std::vector<std::unique_ptr<Worker>> workers_;

  mutable Mutex aborted_mu_;
  std::set<CheckpointId> aborted_ GUARDED_BY(aborted_mu_);  // the newest kMaxAborted ids
};

}  // namespace cairn
