// RemoteChannels makes the channels of a deployment whose tasks are spread over workers
// (AssignWorkers): a local Channel between two tasks of one worker, a remote channel (an
// outbound Channel on the producer's worker, an inbound one on the consumer's, bridged by their
// net::Transports, engine/net/transport.h) between workers. The same code serves the worker
// processes (`cairn worker`: one transport, only the ends of its own tasks) and the loopback
// test mode (engine/runtime/loopback_workers.h: every worker's transport in one process).
//
// Contract: a remote channel's id is its rank among the plan's cross-worker channels in
// BuildTasks' order, so every process numbers them alike without talking. Use maker() for one
// BuildTasks call, before the transports start.
#pragma once

#include <cstdint>
#include <map>

#include "engine/base/status.h"
#include "engine/net/transport.h"
#include "engine/runtime/deploy.h"
#include "engine/runtime/worker_assignment.h"

namespace cairn {

class RemoteChannels {
 public:
  // `transports`: worker -> its transport, for the workers whose tasks this process runs.
  // Both outlive the deployment's channels.
  RemoteChannels(const WorkerAssignment* assignment, std::map<uint32_t, net::Transport*> transports)
      : assignment_(assignment), transports_(std::move(transports)) {}

  ChannelMaker maker();
  size_t remote_channels() const { return next_id_; }

 private:
  const WorkerAssignment* assignment_;
  std::map<uint32_t, net::Transport*> transports_;
  uint32_t next_id_ = 0;
};

}  // namespace cairn
