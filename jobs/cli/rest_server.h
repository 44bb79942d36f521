// The REST API of a running job (`cairn run JOB --http HOST:PORT`, and the coordinator of worker
// processes, jobs/cli/cluster.h, which attaches each generation; docs/rest.md has every path
// and JSON shape): GET /api/job, GET /api/checkpoints, GET /api/checkpoints/ID,
// POST /api/savepoints, POST /api/stop, GET /metrics (Prometheus text format).
//
// Contract: the server binds only the address it is given (port 0: a free port, printed on
// stderr as "cairn: REST API at http://HOST:PORT/"), serves on its own threads, and reads only
// what the job keeps anyway (the tasks' relaxed counters, the coordinator's statistics), once
// per request or once a second for the rates: it takes no lock on any record's path. A
// request it cannot serve gets a JSON body {"error": "..."} and a 4xx or 5xx status. After
// the job ended it keeps answering with the job's final state until Stop().
#pragma once

#include <memory>
#include <string>

#include "engine/base/status.h"
#include "engine/runtime/job_runner.h"

namespace cairn {

class RestServer {
 public:
  RestServer();
  ~RestServer();
  // Binds `address` ("HOST:PORT") and starts serving; *url is "http://HOST:PORT/" with the
  // port bound. InvalidArgument for a malformed address or one that cannot be bound.
  Status Start(const std::string& address, std::string* url);
  // RunOptions::on_start / on_end.
  void Attach(RunningJob* job);
  void Detach(RunningJob* job);
  void Stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn
