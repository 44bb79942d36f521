// Opens a listening TCP socket for `at` (an IP address or a name; port 0: any): the one way the
// data plane (Transport::Listen) and the control connections (jobs/cli/control_link.h) bind.
// InvalidArgument when the name does not resolve, IOError when the socket cannot listen.
#pragma once

#include <asio.hpp>

#include "engine/base/status.h"
#include "engine/net/transport.h"

namespace cairn::net {

Status OpenAcceptor(asio::io_context* io, asio::ip::tcp::acceptor* acceptor, const Endpoint& at);

}  // namespace cairn::net
