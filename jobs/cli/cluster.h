// Worker processes and their coordinator (docs/scale-out.md, "Processes and control"):
// `cairn coordinator`, `cairn worker`, and `cairn run --local-workers N`, which runs the
// coordinator in its own process and supervises N worker processes on loopback.
//
// Contract. The coordinator validates the job (the YAML, the --set overrides, the checkpoint to
// restore, the inputs: what `cairn run` checks before touching the disk) before it listens,
// then owns checkpoint.dir (locks it, removes incomplete checkpoints), waits for N workers,
// deploys (the YAML text, the overrides, the checkpoint to restore, a new generation, every
// worker's data-plane address), runs the CheckpointCoordinator over the control connections
// (the coordinator alone writes _metadata), and returns the job's exit code (0, 1, 2). A
// worker that dies, loses its connection or misses heartbeats past the timeout fails the
// generation: every task is cancelled, and as `restart:` says (default none: exit 1) the job
// is deployed again from the latest completed checkpoint with a new generation. A worker that
// hears no heartbeat reply past the timeout stops its tasks by itself and never commits; a
// worker whose coordinator connection is lost exits (1). With --http the coordinator serves the
// REST API of one process (the same paths and fields; a savepoint or stop goes through its
// CheckpointCoordinator); the per-task counters are the workers' latest heartbeat's.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cairn {

struct CoordinatorOptions {
  std::string job_file;
  std::vector<std::string> sets;
  std::string restore;  // "", "latest" or a checkpoint path
  bool fresh = false;
  bool quiet = false;
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0: any (printed on stderr)
  uint32_t workers = 0;
  // Heartbeats: each worker sends one per interval; a side that has heard nothing from the
  // other for `timeout` declares it lost (docs/scale-out.md "Failure").
  std::chrono::milliseconds heartbeat_interval{500};
  std::chrono::milliseconds heartbeat_timeout{5000};
  // --local-workers: start this many worker processes (this binary, `cairn worker`) on
  // loopback and restart one that dies; 0: wait for workers started by others.
  uint32_t local_workers = 0;
  // --http HOST:PORT: the REST API and web page of `cairn run --http` (jobs/cli/rest_server.h),
  // served by the coordinator from the workers' counters (sent with their heartbeats); "": off.
  std::string http;
  // The progress lines of `cairn run` (jobs/cli/progress.h), once per interval while a
  // generation runs, unless quiet.
  std::chrono::milliseconds progress_interval{1000};
};

// `cairn coordinator` and `cairn run --local-workers`: the exit code.
int RunCoordinator(const CoordinatorOptions& opt);

struct WorkerOptions {
  std::string coordinator;  // HOST:PORT
  std::string listen;       // the data plane's HOST:PORT; "": the control connection's host, any port
  // How long to retry connecting to a coordinator that does not listen yet.
  std::chrono::milliseconds connect_timeout{30000};
};

// `cairn worker`: the exit code (0 after the coordinator's shutdown, 1 on a lost coordinator,
// 2 on bad flags).
int RunWorker(const WorkerOptions& opt);

}  // namespace cairn
