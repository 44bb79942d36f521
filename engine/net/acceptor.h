// Opens a listening TCP socket for `at` (an IP address or a name; port 0: any): the one way the
// data plane (Transport::Listen) and the control connections (jobs/cli/control_link.h) bind,
// and PortReservation, which binds without listening.
// InvalidArgument when the name does not resolve, IOError when the socket cannot listen.
#pragma once

#include <asio.hpp>

#include "engine/base/status.h"
#include "engine/net/transport.h"

namespace cairn::net {

Status OpenAcceptor(asio::io_context* io, asio::ip::tcp::acceptor* acceptor, const Endpoint& at);

// A port held for this process: a socket bound to `at` (port 0: a free one) with SO_REUSEADDR
// that never listens. While it is held the system gives the port to no other socket (neither
// to a bind to port 0 nor as a connection's local port), yet OpenAcceptor on it succeeds as
// often as asked: Linux lets sockets that all set SO_REUSEADDR share a port while no other
// one listens on it. A worker's data port, kept across its generations
// (jobs/cli/cluster_worker.cc); a port probed and closed could be taken by another process
// before the first generation listened on it.
class PortReservation {
 public:
  PortReservation() : socket_(io_) {}
  // InvalidArgument when the name does not resolve, IOError when the port cannot be bound.
  Status Reserve(const Endpoint& at);
  uint16_t port() const;

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor socket_;
};

}  // namespace cairn::net
