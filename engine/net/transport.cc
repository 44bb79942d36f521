#include "engine/net/transport.h"

#include <sys/socket.h>

#include <asio.hpp>

#include "engine/net/acceptor.h"
#include <atomic>
#include <charconv>
#include <optional>
#include <thread>
#include <vector>

#include "engine/base/mutex.h"
#include "engine/net/frame.h"

namespace cairn::net {

using asio::ip::tcp;

Status ParseEndpoint(std::string_view s, std::string_view what, Endpoint* out) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(std::string(what) + " '" + std::string(s) + "': " + why + " (expected HOST:PORT)");
  };
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("no host");
  std::string_view host = s.substr(0, colon), port = s.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned v = 0;
  auto r = std::from_chars(port.data(), port.data() + port.size(), v);
  if (port.empty() || r.ec != std::errc() || r.ptr != port.data() + port.size() || v > 65535)
    return bad("the port is not a number in 0..65535");
  out->host = std::string(host);
  out->port = static_cast<uint16_t>(v);
  return Status::OK();
}

namespace {

constexpr size_t kFlushBytes = 1 << 20;  // the sender writes at least this often

struct Outbound {
  uint32_t id = 0;
  Channel* ch = nullptr;
  std::atomic<uint64_t> credit{0};
  std::optional<StreamElement> held;  // popped, waiting for credit
  std::atomic<bool> ended{false};     // its end of stream was written
};

struct Inbound {
  uint32_t id = 0;
  Channel* ch = nullptr;
  uint32_t credits = 0;
  uint64_t returned = 0;   // pops already credited back (credit writer)
  uint64_t received = 0;   // batches received (receiver)
  std::atomic<uint64_t> max_unpopped{0};
  std::atomic<bool> ended{false};
};

}  // namespace

struct Transport::Impl {
  struct Peer {
    uint32_t id = 0;
    Parker send_parker;    // the sender: outbound channels' consumer
    Parker credit_parker;  // the credit writer: inbound channels' producer
    std::vector<std::unique_ptr<Outbound>> out;
    std::map<uint32_t, Outbound*> out_by_id;
    std::vector<std::unique_ptr<Inbound>> in;
    std::map<uint32_t, Inbound*> in_by_id;
    std::unique_ptr<tcp::socket> out_sock;  // this process -> peer
    std::unique_ptr<tcp::socket> in_sock;   // peer -> this process
    std::vector<std::thread> threads;
  };

  explicit Impl(uint32_t w) : worker(w), acceptor(io) {}

  Peer& GetPeer(uint32_t id) {
    auto& p = peers[id];
    if (p == nullptr) {
      p = std::make_unique<Peer>();
      p->id = id;
    }
    return *p;
  }

  void Fail(const Status& s) {
    {
      MutexLock l(&mu);
      if (stopping.load() || !first_error.ok()) return;
      first_error = s;
    }
    drained_cv.SignalAll();
    if (on_failure) on_failure(s);
    for (auto& [id, p] : peers) {
      for (auto& o : p->out) o->ch->Cancel();
      for (auto& i : p->in) i->ch->Cancel();
      p->send_parker.Unpark();
      p->credit_parker.Unpark();
      ShutdownSocket(p->out_sock.get());
      ShutdownSocket(p->in_sock.get());
    }
  }

  static void ShutdownSocket(tcp::socket* s) {
    // ::shutdown wakes a thread blocked reading the socket; the descriptor stays open.
    if (s != nullptr && s->is_open()) ::shutdown(s->native_handle(), SHUT_RDWR);
  }

  // Reads one frame; false at the end of the connection or an error (*s set for an error that
  // is not a plain end of file).
  static bool ReadFrame(tcp::socket* sock, FrameHeader* h, std::string* payload, Status* s) {
    char hdr[kFrameHeaderBytes];
    asio::error_code ec;
    asio::read(*sock, asio::buffer(hdr, sizeof hdr), ec);
    if (ec) {
      if (ec != asio::error::eof) *s = Status::IOError(ec.message());
      return false;
    }
    *s = DecodeFrameHeader(std::string_view(hdr, sizeof hdr), h);
    if (!s->ok()) return false;
    payload->resize(h->length);
    asio::read(*sock, asio::buffer(payload->data(), payload->size()), ec);
    if (ec) {
      *s = Status::IOError("connection cut inside a frame: " + ec.message());
      return false;
    }
    return true;
  }

  bool Write(tcp::socket* sock, const std::string& buf, Status* s) {
    asio::error_code ec;
    asio::write(*sock, asio::buffer(buf), ec);
    if (ec) *s = Status::IOError(ec.message());
    return !ec;
  }

  static bool AllEnded(const Peer& p, bool outbound) {
    if (outbound) {
      for (auto& o : p.out)
        if (!o->ended.load()) return false;
    } else {
      for (auto& i : p.in)
        if (!i->ended.load()) return false;
    }
    return true;
  }

  std::string Where(const Peer& p, const char* dir) const {
    return std::string("connection ") + dir + " worker " + std::to_string(p.id) + " (this is worker " +
           std::to_string(worker) + ")";
  }

  void SendLoop(Peer* p) {
    std::string buf;
    std::vector<Outbound*> ended;  // end of stream in `buf`
    auto drain_priority = [&](Outbound* o) {
      PriorityEvent pe;
      while (o->ch->TryPopPriority(&pe)) AppendPriorityFrame(o->id, pe, &buf);
    };
    while (!stopping.load()) {
      uint32_t ticket = p->send_parker.Prepare();
      ended.clear();
      for (auto& o : p->out) {
        drain_priority(o.get());
        while (buf.size() < kFlushBytes) {
          if (!o->held) {
            StreamElement e;
            if (!o->ch->TryPop(&e)) break;
            o->held = std::move(e);
          }
          bool batch = o->held->kind == StreamElement::Kind::kBatch;
          if (batch) {
            if (o->credit.load() == 0) break;
            o->credit.fetch_sub(1);
          }
          // Events the producer put on the priority lane before this element go first.
          drain_priority(o.get());
          AppendElementFrame(o->id, *o->held, &buf);
          if (batch) o->ch->Recycle(std::move(o->held->batch));
          if (o->held->kind == StreamElement::Kind::kEndOfStream) ended.push_back(o.get());
          o->held.reset();
        }
      }
      if (buf.empty()) {
        p->send_parker.Park(ticket);
        continue;
      }
      p->send_parker.Cancel();
      Status s;
      if (!Write(p->out_sock.get(), buf, &s)) return Fail(Status::IOError(Where(*p, "to") + ": " + s.message()));
      buf.clear();
      if (!ended.empty()) {
        // Marked after the write: Drain() returns only once the end of stream left.
        MutexLock l(&mu);
        for (Outbound* o : ended) o->ended.store(true);
        drained_cv.SignalAll();
      }
    }
  }

  void CreditReadLoop(Peer* p) {
    FrameHeader h;
    std::string payload;
    Status s;
    while (ReadFrame(p->out_sock.get(), &h, &payload, &s)) {
      uint64_t n = 0;
      auto it = p->out_by_id.find(h.channel);
      if (h.type != FrameType::kCredit || it == p->out_by_id.end()) {
        s = Status::Corruption("unexpected frame type " + std::to_string(static_cast<int>(h.type)) +
                               " for channel " + std::to_string(h.channel));
        break;
      }
      s = DecodeCredit(payload, &n);
      if (!s.ok()) break;
      it->second->credit.fetch_add(n);
      p->send_parker.Unpark();
    }
    if (!s.ok() || !AllEnded(*p, true)) {
      if (s.ok()) s = Status::IOError("closed by the peer");
      Fail(Status::IOError(Where(*p, "to") + ": " + s.message()));
    }
  }

  void ReceiveLoop(Peer* p) {
    FrameHeader h;
    std::string payload;
    Status s;
    while (ReadFrame(p->in_sock.get(), &h, &payload, &s)) {
      auto it = p->in_by_id.find(h.channel);
      if (it == p->in_by_id.end() || h.type == FrameType::kHello || h.type == FrameType::kCredit) {
        s = Status::Corruption("unexpected frame type " + std::to_string(static_cast<int>(h.type)) +
                               " for channel " + std::to_string(h.channel));
        break;
      }
      Inbound* in = it->second;
      if (h.type == FrameType::kPriority) {
        PriorityEvent pe;
        s = DecodePriority(payload, &pe);
        if (!s.ok()) break;
        in->ch->PushPriority(pe);
        continue;
      }
      StreamElement e;
      s = DecodeElement(h, payload, h.type == FrameType::kBatch ? in->ch->TakeEmptyBatch() : nullptr, &e);
      if (!s.ok()) break;
      bool batch = e.kind == StreamElement::Kind::kBatch, end = e.kind == StreamElement::Kind::kEndOfStream;
      if (!in->ch->PushReceived(std::move(e))) continue;  // cancelled: the job is stopping
      if (batch) {
        in->received++;
        uint64_t unpopped = in->received - in->ch->popped_batches();
        if (unpopped > in->max_unpopped.load(std::memory_order_relaxed)) in->max_unpopped.store(unpopped);
      }
      if (end) in->ended.store(true);
    }
    if (!s.ok() || !AllEnded(*p, false)) {
      if (s.ok()) s = Status::IOError("closed by the peer");
      Fail(Status::IOError(Where(*p, "from") + ": " + s.message()));
    }
  }

  void CreditWriteLoop(Peer* p) {
    std::string buf;
    for (auto& in : p->in) AppendCreditFrame(in->id, in->credits, &buf);
    while (!stopping.load()) {
      uint32_t ticket = p->credit_parker.Prepare();
      for (auto& in : p->in) {
        uint64_t popped = in->ch->popped_batches();
        if (popped > in->returned) {
          AppendCreditFrame(in->id, popped - in->returned, &buf);
          in->returned = popped;
        }
      }
      if (buf.empty()) {
        p->credit_parker.Park(ticket);
        continue;
      }
      p->credit_parker.Cancel();
      Status s;
      if (!Write(p->in_sock.get(), buf, &s)) {
        // After the peer's last end of stream the peer may close first: nothing more to credit.
        if (!AllEnded(*p, false)) Fail(Status::IOError(Where(*p, "from") + ": " + s.message()));
        return;
      }
      buf.clear();
    }
  }

  uint32_t worker;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::map<uint32_t, std::unique_ptr<Peer>> peers;
  std::atomic<bool> stopping{false};
  bool started = false;
  std::function<void(const Status&)> on_failure;  // set before Start
  mutable Mutex mu;
  CondVar drained_cv;
  Status first_error GUARDED_BY(mu);
};

Transport::Transport(uint32_t worker) : impl_(std::make_unique<Impl>(worker)) {}
Transport::~Transport() { Stop(); }

namespace {

// Opens `socket` and binds it to `at` with SO_REUSEADDR; `what` names the step in errors.
Status BindReusable(asio::io_context* io, tcp::acceptor* socket, const Endpoint& at, std::string_view what) {
  asio::error_code ec;
  auto addr = asio::ip::make_address(at.host, ec);
  tcp::endpoint ep;
  if (ec) {
    tcp::resolver r(*io);
    auto res = r.resolve(at.host, std::to_string(at.port), ec);
    if (ec || res.empty()) return Status::InvalidArgument("cannot resolve " + at.ToString() + ": " + ec.message());
    ep = *res.begin();
  } else {
    ep = tcp::endpoint(addr, at.port);
  }
  socket->open(ep.protocol(), ec);
  if (!ec) socket->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) socket->bind(ep, ec);
  if (ec) return Status::IOError(std::string(what) + " " + at.ToString() + ": " + ec.message());
  return Status::OK();
}

}  // namespace

Status OpenAcceptor(asio::io_context* io, tcp::acceptor* acceptor, const Endpoint& at) {
  CAIRN_RETURN_IF_ERROR(BindReusable(io, acceptor, at, "cannot listen on"));
  asio::error_code ec;
  acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::IOError("cannot listen on " + at.ToString() + ": " + ec.message());
  return Status::OK();
}

Status PortReservation::Reserve(const Endpoint& at) { return BindReusable(&io_, &socket_, at, "cannot bind"); }

uint16_t PortReservation::port() const {
  asio::error_code ec;
  auto ep = socket_.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

Status Transport::Listen(const Endpoint& at) { return OpenAcceptor(&impl_->io, &impl_->acceptor, at); }

uint16_t Transport::port() const {
  asio::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

Parker* Transport::SenderParker(uint32_t peer) { return &impl_->GetPeer(peer).send_parker; }
Parker* Transport::ReceiverParker(uint32_t peer) { return &impl_->GetPeer(peer).credit_parker; }

void Transport::AddOutbound(uint32_t id, uint32_t peer, Channel* ch) {
  auto& p = impl_->GetPeer(peer);
  auto o = std::make_unique<Outbound>();
  o->id = id;
  o->ch = ch;
  p.out_by_id[id] = o.get();
  p.out.push_back(std::move(o));
}

void Transport::AddInbound(uint32_t id, uint32_t peer, Channel* ch, uint32_t credits) {
  auto& p = impl_->GetPeer(peer);
  auto in = std::make_unique<Inbound>();
  in->id = id;
  in->ch = ch;
  in->credits = credits < 1 ? 1 : credits;
  ch->set_notify_pops(true);
  p.in_by_id[id] = in.get();
  p.in.push_back(std::move(in));
}

// Runs `io` until the pending operation set `done` or `deadline` passed; then cancels it (and
// runs its handler) and returns false.
static bool RunUntil(asio::io_context* io, Transport::Clock::time_point deadline, const bool& done,
                     const std::function<void()>& cancel) {
  io->restart();
  if (deadline == Transport::Clock::time_point::max()) {
    io->run();
  } else {
    io->run_until(deadline);
  }
  if (done) return true;
  cancel();
  io->restart();
  io->run();  // the cancelled operation's handler
  return false;
}

Status Transport::Start(const std::map<uint32_t, Endpoint>& peer_endpoints, Clock::time_point deadline) {
  Impl& m = *impl_;
  asio::error_code ec;
  size_t expect_in = 0;
  for (auto& [id, p] : m.peers) {
    if (!p->in.empty()) expect_in++;
    if (p->out.empty()) continue;
    auto at = peer_endpoints.find(id);
    if (at == peer_endpoints.end()) return Status::InvalidArgument("no address for worker " + std::to_string(id));
    tcp::resolver r(m.io);
    auto res = r.resolve(at->second.host, std::to_string(at->second.port), ec);
    if (ec) return Status::IOError("cannot resolve " + at->second.ToString() + ": " + ec.message());
    p->out_sock = std::make_unique<tcp::socket>(m.io);
    // The peer may not listen yet (workers start concurrently): retry until the deadline.
    for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, std::chrono::milliseconds(200))) {
      asio::connect(*p->out_sock, res, ec);
      if (!ec && p->out_sock->local_endpoint(ec) == p->out_sock->remote_endpoint(ec)) {
        // A TCP self-connect (the ephemeral port chosen was the peer's port): not the peer.
        p->out_sock->close(ec);
        ec = asio::error::connection_refused;
      }
      if (!ec || ec != asio::error::connection_refused || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - Clock::now()));
    }
    if (ec) return Status::IOError("cannot connect to worker " + std::to_string(id) + " at " + at->second.ToString() + ": " + ec.message());
    p->out_sock->set_option(tcp::no_delay(true), ec);
    std::string hello;
    AppendHelloFrame(m.worker, &hello);
    Status s;
    if (!m.Write(p->out_sock.get(), hello, &s)) return s;
  }
  for (size_t k = 0; k < expect_in; k++) {
    auto sock = std::make_unique<tcp::socket>(m.io);
    bool accepted = false;
    m.acceptor.async_accept(*sock, [&](const asio::error_code& e) {
      accepted = true;
      ec = e;
    });
    if (!RunUntil(&m.io, deadline, accepted, [&] { m.acceptor.cancel(ec); })) {
      std::string missing;
      for (auto& [pid, pp] : m.peers)
        if (!pp->in.empty() && pp->in_sock == nullptr) missing += (missing.empty() ? "" : ", ") + std::to_string(pid);
      return Status::IOError("worker(s) " + missing + " did not connect to worker " + std::to_string(m.worker) +
                             " in time");
    }
    if (ec) return Status::IOError("accepting a worker's connection: " + ec.message());
    sock->set_option(tcp::no_delay(true), ec);
    // The hello (a header without payload), by the same deadline.
    char hdr[kFrameHeaderBytes];
    bool got = false;
    asio::async_read(*sock, asio::buffer(hdr, sizeof hdr), [&](const asio::error_code& e, size_t) {
      got = true;
      ec = e;
    });
    if (!RunUntil(&m.io, deadline, got, [&] { sock->cancel(ec); }))
      return Status::IOError("a connection to worker " + std::to_string(m.worker) + " sent no hello in time");
    if (ec) return Status::IOError("reading a worker's hello: " + ec.message());
    FrameHeader h;
    Status s = DecodeFrameHeader(std::string_view(hdr, sizeof hdr), &h);
    if (!s.ok() || h.type != FrameType::kHello || h.length != 0)
      return Status::Corruption("a connection did not start with a hello frame" + (s.ok() ? "" : ": " + s.message()));
    auto it = m.peers.find(h.channel);
    if (it == m.peers.end() || it->second->in.empty() || it->second->in_sock != nullptr)
      return Status::Corruption("unexpected connection from worker " + std::to_string(h.channel));
    it->second->in_sock = std::move(sock);
  }
  m.started = true;
  for (auto& [id, p] : m.peers) {
    Impl::Peer* pp = p.get();
    if (pp->out_sock != nullptr) {
      pp->threads.emplace_back([&m, pp] { m.SendLoop(pp); });
      pp->threads.emplace_back([&m, pp] { m.CreditReadLoop(pp); });
    }
    if (pp->in_sock != nullptr) {
      pp->threads.emplace_back([&m, pp] { m.ReceiveLoop(pp); });
      pp->threads.emplace_back([&m, pp] { m.CreditWriteLoop(pp); });
    }
  }
  return Status::OK();
}

Status Transport::Drain() {
  Impl& m = *impl_;
  MutexLock l(&m.mu);
  while (m.first_error.ok()) {
    bool all = true;
    for (auto& [id, p] : m.peers) all = all && Impl::AllEnded(*p, true);
    if (all) break;
    m.drained_cv.Wait(&m.mu);
  }
  return m.first_error;
}

void Transport::SetFailureListener(std::function<void(const Status&)> f) { impl_->on_failure = std::move(f); }

Status Transport::status() const {
  MutexLock l(&impl_->mu);
  return impl_->first_error;
}

void Transport::Stop() {
  Impl& m = *impl_;
  if (m.stopping.exchange(true)) return;
  for (auto& [id, p] : m.peers) {
    p->send_parker.Unpark();
    p->credit_parker.Unpark();
    Impl::ShutdownSocket(p->out_sock.get());
    Impl::ShutdownSocket(p->in_sock.get());
  }
  for (auto& [id, p] : m.peers)
    for (auto& t : p->threads) t.join();
  asio::error_code ec;
  m.acceptor.close(ec);
}

uint64_t Transport::max_unpopped(uint32_t id) const {
  for (auto& [pid, p] : impl_->peers) {
    auto it = p->in_by_id.find(id);
    if (it != p->in_by_id.end()) return it->second->max_unpopped.load();
  }
  return 0;
}

}  // namespace cairn::net
