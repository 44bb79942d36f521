// Loopback workers: a job run in one process with its tasks assigned to N workers
// (AssignWorkers) and every channel between tasks of different workers carried over loopback
// TCP by one net::Transport per worker (engine/net), exactly as between worker processes. The
// checkpoint protocol, the persister and the coordinator stay in the process. A test mode
// (CAIRN_LOOPBACK_WORKERS, docs/scale-out.md): it runs the whole runtime, every operator and
// every checkpoint mode over the network data plane before the worker processes exist.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/base/status.h"
#include "engine/net/transport.h"
#include "engine/runtime/deploy.h"
#include "engine/runtime/execution_plan.h"
#include "engine/runtime/remote_channels.h"
#include "engine/runtime/worker_assignment.h"

namespace cairn {

class LoopbackWorkers {
 public:
  // Listens on 127.0.0.1 (a free port) for each of `workers` (>= 1) transports. A transport
  // failure (a connection lost, a malformed frame) is reported to `on_failure`, from a
  // transport thread.
  static Status Create(const ExecutionPlan& plan, uint32_t workers, std::function<void(const Status&)> on_failure,
                       std::unique_ptr<LoopbackWorkers>* out);
  ~LoopbackWorkers();  // Stop()

  // For BuildTasks: a local channel between tasks of one worker, a remote channel (an outbound
  // and an inbound Channel, credits = the capacity) between workers (RemoteChannels).
  ChannelMaker maker() { return channels_->maker(); }
  // Connects the transports (after BuildTasks, before the tasks start).
  Status Start();
  // Before the channels are destroyed.
  void Stop();
  size_t remote_channels() const { return channels_->remote_channels(); }

 private:
  LoopbackWorkers() = default;
  WorkerAssignment assignment_;
  std::vector<std::unique_ptr<net::Transport>> transports_;
  std::function<void(const Status&)> on_failure_;
  std::atomic<bool> stopping_{false};  // failures seen while stopping are not reported
  std::unique_ptr<RemoteChannels> channels_;
};

}  // namespace cairn
