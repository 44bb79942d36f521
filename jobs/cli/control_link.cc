#include "jobs/cli/control_link.h"

#include <sys/socket.h>

#include <asio.hpp>
#include <deque>
#include <thread>

#include "engine/base/mutex.h"
#include "engine/net/acceptor.h"

namespace cairn {

using asio::ip::tcp;

struct ControlLink::Impl {
  asio::io_context io;
  tcp::socket sock{io};
  asio::streambuf in;
  std::string peer;
  // The writer thread's queue: Send never blocks on a peer that stops reading.
  Mutex mu;
  CondVar cv;
  std::deque<std::string> outbox GUARDED_BY(mu);
  bool closed GUARDED_BY(mu) = false;
  bool writing GUARDED_BY(mu) = false;  // a line popped, not yet written
  Status failed GUARDED_BY(mu);
  std::thread writer;

  void Write() {
    for (;;) {
      std::string line;
      {
        MutexLock l(&mu);
        writing = false;
        cv.SignalAll();
        while (outbox.empty() && !closed) cv.Wait(&mu);
        if (outbox.empty()) return;  // closed
        line = std::move(outbox.front());
        outbox.pop_front();
        writing = true;
      }
      asio::error_code ec;
      asio::write(sock, asio::buffer(line), ec);
      if (ec) {
        MutexLock l(&mu);
        failed = Status::IOError("control connection to " + peer + ": " + ec.message());
        outbox.clear();
        writing = false;
        cv.SignalAll();
        return;
      }
    }
  }
};

ControlLink::ControlLink(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->writer = std::thread([i = impl_.get()] { i->Write(); });
}

ControlLink::~ControlLink() {
  Close();
  impl_->writer.join();
}

Status ControlLink::Connect(const net::Endpoint& to, Clock::time_point deadline, std::unique_ptr<ControlLink>* out) {
  auto impl = std::make_unique<Impl>();
  tcp::resolver resolver(impl->io);
  asio::error_code ec;
  auto endpoints = resolver.resolve(to.host, std::to_string(to.port), ec);
  if (ec) return Status::IOError("coordinator " + to.ToString() + ": " + ec.message());
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    asio::connect(impl->sock, endpoints, ec);
    if (!ec) break;
    if (Clock::now() >= deadline)
      return Status::IOError("cannot connect to the coordinator at " + to.ToString() + ": " + ec.message());
    impl->sock.close();
    std::this_thread::sleep_for(pause);  // a retry pause against a coordinator not yet listening
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
  impl->sock.set_option(tcp::no_delay(true), ec);
  impl->peer = to.ToString();
  out->reset(new ControlLink(std::move(impl)));
  return Status::OK();
}

Status ControlLink::Send(const nlohmann::json& m) {
  std::string line = m.dump();
  line.push_back('\n');
  MutexLock l(&impl_->mu);
  if (!impl_->failed.ok()) return impl_->failed;
  if (impl_->closed) return Status::IOError("control connection to " + impl_->peer + ": closed");
  impl_->outbox.push_back(std::move(line));
  impl_->cv.SignalAll();
  return Status::OK();
}

Status ControlLink::Receive(nlohmann::json* m) {
  asio::error_code ec;
  asio::read_until(impl_->sock, impl_->in, '\n', ec);
  if (ec) return Status::IOError("control connection to " + impl_->peer + " lost: " + ec.message());
  std::istream is(&impl_->in);
  std::string line;
  std::getline(is, line);
  *m = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!m->is_object() || !m->contains("type") || !(*m)["type"].is_string() || !m->contains("gen") ||
      !(*m)["gen"].is_number_unsigned())
    return Status::IOError("control connection to " + impl_->peer + ": malformed message '" + line.substr(0, 200) + "'");
  return Status::OK();
}

void ControlLink::Flush(Clock::time_point deadline) {
  MutexLock l(&impl_->mu);
  while ((!impl_->outbox.empty() || impl_->writing) && impl_->failed.ok() && !impl_->closed)
    if (!impl_->cv.WaitUntil(&impl_->mu, deadline)) return;
}

void ControlLink::Close() {
  {
    MutexLock l(&impl_->mu);
    impl_->closed = true;
    impl_->outbox.clear();
    impl_->cv.SignalAll();
  }
  // shutdown(2) on the descriptor wakes a reader blocked in read_until and a writer blocked in
  // write; the socket itself is closed by the destructor.
  if (impl_->sock.is_open()) ::shutdown(impl_->sock.native_handle(), SHUT_RDWR);
}

std::string ControlLink::local_host() const {
  asio::error_code ec;
  auto ep = impl_->sock.local_endpoint(ec);
  return ec ? "127.0.0.1" : ep.address().to_string();
}

std::string ControlLink::peer() const {
  asio::error_code ec;
  auto ep = impl_->sock.remote_endpoint(ec);
  return ec ? impl_->peer : ep.address().to_string() + ":" + std::to_string(ep.port());
}

struct ControlListener::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::atomic<bool> closed{false};
};

ControlListener::ControlListener() : impl_(std::make_unique<Impl>()) {}
ControlListener::~ControlListener() { Close(); }

Status ControlListener::Listen(const net::Endpoint& at) {
  return net::OpenAcceptor(&impl_->io, &impl_->acceptor, at).WithContext("--listen");
}

uint16_t ControlListener::port() const {
  asio::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

Status ControlListener::Accept(std::unique_ptr<ControlLink>* out) {
  auto link = std::make_unique<ControlLink::Impl>();
  asio::error_code ec;
  impl_->acceptor.accept(link->sock, ec);
  if (ec || impl_->closed.load()) return Status::IOError("control listener closed");
  link->sock.set_option(tcp::no_delay(true), ec);
  auto ep = link->sock.remote_endpoint(ec);
  link->peer = ec ? "worker" : ep.address().to_string() + ":" + std::to_string(ep.port());
  out->reset(new ControlLink(std::move(link)));
  return Status::OK();
}

void ControlListener::Close() {
  if (impl_->closed.exchange(true)) return;
  if (impl_->acceptor.is_open()) ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
}

nlohmann::json StatusToJson(const Status& s) {
  return {{"code", static_cast<int>(s.code())}, {"error", s.message()}};
}

Status StatusFromJson(const nlohmann::json& j) {
  const std::string msg = j.value("error", std::string("unknown error"));
  switch (static_cast<Status::Code>(j.value("code", static_cast<int>(Status::Code::kInternal)))) {
    case Status::Code::kOk: return Status::OK();
    case Status::Code::kInvalidArgument: return Status::InvalidArgument(msg);
    case Status::Code::kNotFound: return Status::NotFound(msg);
    case Status::Code::kCorruption: return Status::Corruption(msg);
    case Status::Code::kIOError: return Status::IOError(msg);
    case Status::Code::kAborted: return Status::Aborted(msg);
    default: return Status::Internal(msg);
  }
}

nlohmann::json BarrierToJson(const Barrier& b) {
  return {{"id", b.id},
          {"trigger_time_ms", b.trigger_time_ms},
          {"mode", static_cast<int>(b.mode)},
          {"aligned_timeout_ms", b.aligned_timeout_ms}};
}

Barrier BarrierFromJson(const nlohmann::json& j) {
  Barrier b;
  b.id = j.value("id", CheckpointId{0});
  b.trigger_time_ms = j.value("trigger_time_ms", int64_t{0});
  b.mode = static_cast<CheckpointMode>(j.value("mode", 0));
  b.aligned_timeout_ms = j.value("aligned_timeout_ms", int64_t{0});
  return b;
}

nlohmann::json AckToJson(const TaskAck& a) {
  nlohmann::json handles = nlohmann::json::array();
  for (const SubtaskStateHandle& h : a.handles)
    handles.push_back({{"operator_id", h.operator_id},
                       {"operator_type", h.operator_type},
                       {"subtask", h.subtask},
                       {"parallelism", h.parallelism},
                       {"kg_first", h.key_groups.first},
                       {"kg_last", h.key_groups.last},
                       {"keyed_dir", h.keyed_dir},
                       {"operator_state_file", h.operator_state_file},
                       {"list_state_file", h.list_state_file},
                       {"channel_state_file", h.channel_state_file},
                       // Bytes, as _metadata writes them (JSON strings must be UTF-8).
                       {"operator_state_inline", EscapeMetadataString(h.operator_state_inline)},
                       {"list_state_inline", EscapeMetadataString(h.list_state_inline)},
                       {"channel_state_inline", EscapeMetadataString(h.channel_state_inline)},
                       {"state_bytes", h.state_bytes},
                       {"channel_state_bytes", h.channel_state_bytes},
                       {"alignment_ms", h.alignment_ms},
                       {"sync_ms", h.sync_ms},
                       {"async_ms", h.async_ms},
                       {"records_skipped", h.records_skipped},
                       {"records_late", h.records_late}});
  nlohmann::json counts = nlohmann::json::array();
  for (const RebalanceCount& c : a.rebalance_counts)
    counts.push_back({{"edge", c.edge}, {"sent", c.sent}, {"received_before", c.received_before},
                      {"received_after", c.received_after}});
  return {{"id", a.id},
          {"task", a.task},
          {"status", StatusToJson(a.status)},
          {"mode", static_cast<int>(a.mode)},
          {"handles", handles},
          {"rebalance", counts}};
}

Status AckFromJson(const nlohmann::json& j, TaskAck* out) {
  try {
    out->id = j.at("id").get<CheckpointId>();
    out->task = j.at("task").get<int>();
    out->status = StatusFromJson(j.at("status"));
    out->mode = static_cast<SubtaskCheckpointMode>(j.at("mode").get<int>());
    for (const auto& h : j.at("handles")) {
      SubtaskStateHandle s;
      s.operator_id = h.at("operator_id").get<std::string>();
      s.operator_type = h.at("operator_type").get<std::string>();
      s.subtask = h.at("subtask").get<uint32_t>();
      s.parallelism = h.at("parallelism").get<uint32_t>();
      s.key_groups = KeyGroupRange{h.at("kg_first").get<uint32_t>(), h.at("kg_last").get<uint32_t>()};
      s.keyed_dir = h.at("keyed_dir").get<std::string>();
      s.operator_state_file = h.at("operator_state_file").get<std::string>();
      s.list_state_file = h.at("list_state_file").get<std::string>();
      s.channel_state_file = h.at("channel_state_file").get<std::string>();
      for (auto [key, dest] : {std::pair{"operator_state_inline", &s.operator_state_inline},
                               std::pair{"list_state_inline", &s.list_state_inline},
                               std::pair{"channel_state_inline", &s.channel_state_inline}}) {
        if (!UnescapeMetadataString(h.at(key).get<std::string>(), dest))
          return Status::InvalidArgument(std::string("malformed ") + key + " in a checkpoint acknowledgement");
      }
      s.state_bytes = h.at("state_bytes").get<uint64_t>();
      s.channel_state_bytes = h.at("channel_state_bytes").get<uint64_t>();
      s.alignment_ms = h.at("alignment_ms").get<int64_t>();
      s.sync_ms = h.at("sync_ms").get<int64_t>();
      s.async_ms = h.at("async_ms").get<int64_t>();
      s.records_skipped = h.at("records_skipped").get<int64_t>();
      s.records_late = h.at("records_late").get<int64_t>();
      out->handles.push_back(std::move(s));
    }
    for (const auto& c : j.at("rebalance"))
      out->rebalance_counts.push_back(RebalanceCount{c.at("edge").get<std::string>(), c.at("sent").get<uint64_t>(),
                                                     c.at("received_before").get<uint64_t>(),
                                                     c.at("received_after").get<uint64_t>()});
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("malformed acknowledgement: ") + e.what());
  }
  return Status::OK();
}

}  // namespace cairn
