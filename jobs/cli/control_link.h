// The control connection between a worker process and the coordinator (docs/scale-out.md,
// "Processes and control"): one TCP connection per worker, opened by the worker, carrying one
// JSON object per line (nlohmann-json) in both directions. Every message has a "type" and a
// "gen" (the generation, raised at every deploy; a message of another generation is ignored by
// both sides). Synchronous Asio, as engine/net: one reader thread per connection blocks in
// Receive; Send (any thread) queues the message for the link's writer thread and never blocks,
// so that a peer that stops reading (SIGSTOP) cannot stall the sender; the queue is dropped
// when the link closes. Close from any thread unblocks the reader and the writer.
//
// Also here: the JSON form of what the checkpoint protocol sends across (Barrier, TaskAck and
// its state handles), so that the coordinator and the workers encode them alike.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/base/status.h"
#include "engine/checkpoint/checkpoint_messages.h"
#include "engine/net/transport.h"

namespace cairn {

class ControlLink {
 public:
  using Clock = std::chrono::steady_clock;
  ~ControlLink();
  ControlLink(const ControlLink&) = delete;
  ControlLink& operator=(const ControlLink&) = delete;

  // Connects to `to`, retrying a refused connection (the coordinator may not listen yet) until
  // `deadline`; IOError naming the address after it.
  static Status Connect(const net::Endpoint& to, Clock::time_point deadline, std::unique_ptr<ControlLink>* out);

  // Queues one message, in order (thread-safe, never blocks). IOError once a write failed or
  // the link was closed.
  Status Send(const nlohmann::json& m);
  // The next message (one reader). IOError when the connection ended, or a line was not a JSON
  // object with a "type".
  Status Receive(nlohmann::json* m);
  // Waits until every queued message was written (or a write failed, or `deadline`).
  void Flush(Clock::time_point deadline);
  // Drops what is queued and shuts the connection down (any thread); Receive and Send then fail. Idempotent.
  void Close();
  // The local and remote addresses of the connection ("HOST").
  std::string local_host() const;
  std::string peer() const;

 private:
  friend class ControlListener;
  struct Impl;
  explicit ControlLink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The coordinator's listening socket.
class ControlListener {
 public:
  ControlListener();
  ~ControlListener();
  Status Listen(const net::Endpoint& at);
  uint16_t port() const;
  // Blocks for the next connection; IOError once Close() was called.
  Status Accept(std::unique_ptr<ControlLink>* out);
  void Close();  // any thread: unblocks Accept

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A Status across the connection: {"code", "error"} and back (the code keeps the exit code).
nlohmann::json StatusToJson(const Status& s);
Status StatusFromJson(const nlohmann::json& j);

nlohmann::json BarrierToJson(const Barrier& b);
Barrier BarrierFromJson(const nlohmann::json& j);
nlohmann::json AckToJson(const TaskAck& a);
// InvalidArgument when a field is missing or of the wrong type.
Status AckFromJson(const nlohmann::json& j, TaskAck* out);

}  // namespace cairn
