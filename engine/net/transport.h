// The data plane between worker processes (docs/scale-out.md "Data plane"): one TCP
// connection per ordered pair of workers, multiplexing every channel from the one to the other,
// with per-channel credit-based flow control as in Flink.
//
// A remote channel is two local Channels (engine/dataflow/channel.h) bridged by a Transport on
// each side, so gates, barrier handlers and producers see exactly the channel they see in one
// process: aligned, unaligned (priority events overtake the data), at-least-once, the aligned
// timeout and feedback edges work unchanged.
//  - The sending side: the producer task pushes into an outbound Channel as today (it blocks and
//    takes unaligned snapshots while blocked when the channel is full); the Channel's consumer is
//    the Transport's sender thread for that peer (SenderParker), which sends the priority lane at
//    once and the data lane in order, a record batch only against a credit. Barriers, watermarks,
//    the end of input and of stream take no credit. A batch popped without credit is held (one
//    per channel) until credit comes.
//  - The receiving side: the Transport's receiver thread for the peer is the producer of an
//    inbound Channel (ReceiverParker): frames go onto its lanes in the order they came
//    (Channel::PushReceived, never blocking). The consumer task reads it as today. Every batch
//    the consumer pops returns one credit (Channel::set_notify_pops wakes the credit writer).
//    So at most `credits` batches of a channel are ever received and not yet popped (memory is
//    bounded on both sides: the outbound Channel by its capacity plus the held batch, the
//    inbound by the credits), and no channel can block another on the shared connection.
//    Records read ahead by an unaligned checkpoint have been popped: they are bounded by the
//    barrier's position, as in one process.
//  - Invariant kept from memory: a priority event reaches the receiver before any data that the
//    producer pushed after it (the sender drains a channel's priority lane before each data
//    frame it writes).
//
// Threads, per peer: a sender (parks on SenderParker) and a credit reader on the outgoing
// connection; a receiver and a credit writer (parks on ReceiverParker) on the incoming one.
// Synchronous Asio reads and writes (the one reader and the one writer of a socket run
// concurrently, which Asio allows for synchronous send and receive). Nothing spins.
//
// Failure: a connection lost or a malformed frame before the channels on it ended their stream
// fails the transport: status() reports it and every channel is cancelled, so that tasks stop.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "engine/base/parker.h"
#include "engine/base/status.h"
#include "engine/dataflow/channel.h"

namespace cairn::net {

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const { return host + ":" + std::to_string(port); }
};
// "HOST:PORT" (an IPv4 or IPv6 address or a name; PORT 0..65535); InvalidArgument naming `what`.
Status ParseEndpoint(std::string_view s, std::string_view what, Endpoint* out);

class Transport {
 public:
  // `worker`: this process's id, which peers use to name it.
  explicit Transport(uint32_t worker);
  ~Transport();  // Stop()
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Binds and listens (port 0: a free port, then port() says which). Before Start.
  Status Listen(const Endpoint& at);
  uint16_t port() const;

  // Wiring, before Start. The Parker to construct an outbound channel to `peer` with (as its
  // consumer), or an inbound channel from `peer` (as its producer).
  Parker* SenderParker(uint32_t peer);
  Parker* ReceiverParker(uint32_t peer);
  // `ch` (consumer: SenderParker(peer)) is sent to `peer`, onto its inbound channel `id`.
  void AddOutbound(uint32_t id, uint32_t peer, Channel* ch);
  // `ch` (producer: ReceiverParker(peer)) is fed by `peer`'s outbound channel `id`; `credits`
  // (>= 1): the batches the sender may have sent and the consumer not yet popped.
  void AddInbound(uint32_t id, uint32_t peer, Channel* ch, uint32_t credits);

  // Connects to every peer that has outbound channels (at peers[peer]; a refused connection is
  // retried, the peer may not listen yet), accepts a connection from every peer that has
  // inbound channels, and starts the threads. IOError naming the workers when a connection is
  // not made by `deadline` (a deadline already past: one attempt).
  using Clock = std::chrono::steady_clock;
  Status Start(const std::map<uint32_t, Endpoint>& peers, Clock::time_point deadline = Clock::time_point::max());
  // Blocks until every outbound channel has sent its end of stream, or the transport failed.
  Status Drain();
  // The first failure; OK while none.
  Status status() const;
  // Also told of the first failure (once, on a transport thread). Before Start.
  void SetFailureListener(std::function<void(const Status&)> f);
  // Closes the connections and joins the threads; later failures are not reported. Idempotent.
  // The channels must outlive it (or this call).
  void Stop();

  // For tests: the most batches inbound channel `id` held received and not yet popped.
  uint64_t max_unpopped(uint32_t id) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::net
