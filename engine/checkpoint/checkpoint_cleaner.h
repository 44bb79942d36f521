// CheckpointCleaner applies checkpoint retention on a thread of its own, after the coordinator
// has committed and announced a checkpoint. Removing the checkpoints it subsumed and collecting
// the shared files only they referenced is a chain of unlinks and fsyncs (3-12 ms a completion
// on this project's VMs with the default checkpoint.retain, more on slower storage); on the
// coordinator's thread it held up the next acknowledgements, triggers and savepoint answers.
// Flink's CheckpointsCleaner discards subsumed checkpoints on an I/O executor for that reason.
//
// Contract: Request() is called from one thread (the coordinator), with ids that never
// decrease, and does not block. A pass calls `retain(id)` with the newest id requested; the
// requests made while a pass runs coalesce into one more pass. A failed pass is handed to
// `on_error` on the cleaner's thread; later requests still get their passes. Drain() returns
// once every request made before it has had its pass. Stop() drains, then joins the thread;
// the destructor stops.
#pragma once

#include <functional>
#include <thread>

#include "engine/base/ids.h"
#include "engine/base/mutex.h"
#include "engine/base/status.h"

namespace cairn {

class CheckpointCleaner {
 public:
  // `retain(newest)`: apply retention counting only the checkpoints with ids <= `newest`, the
  // newest one completed when it was requested (CheckpointStore::Retain).
  using RetainFn = std::function<Status(CheckpointId newest)>;
  CheckpointCleaner(RetainFn retain, std::function<void(const Status&)> on_error);
  ~CheckpointCleaner();
  CheckpointCleaner(const CheckpointCleaner&) = delete;
  CheckpointCleaner& operator=(const CheckpointCleaner&) = delete;

  // Checkpoint `completed` was committed: retention is due.
  void Request(CheckpointId completed) EXCLUDES(mu_);
  void Drain() EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);

  const RetainFn retain_;
  const std::function<void(const Status&)> on_error_;
  Mutex mu_;
  CondVar changed_;                             // a request, a pass done, or the stop
  CheckpointId requested_ GUARDED_BY(mu_) = 0;  // the newest id requested
  CheckpointId done_ GUARDED_BY(mu_) = 0;       // the id of the last pass finished
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace cairn
