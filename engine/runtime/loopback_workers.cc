#include "engine/runtime/loopback_workers.h"

#include <future>
#include <map>

namespace cairn {

Status LoopbackWorkers::Create(const ExecutionPlan& plan, uint32_t workers, std::function<void(const Status&)> on_failure,
                               std::unique_ptr<LoopbackWorkers>* out) {
  std::unique_ptr<LoopbackWorkers> w(new LoopbackWorkers());
  CAIRN_RETURN_IF_ERROR(AssignWorkers(plan, workers, &w->assignment_));
  w->on_failure_ = std::move(on_failure);
  for (uint32_t i = 0; i < workers; ++i) {
    w->transports_.push_back(std::make_unique<net::Transport>(i));
    CAIRN_RETURN_IF_ERROR(w->transports_.back()->Listen(net::Endpoint{"127.0.0.1", 0}));
    LoopbackWorkers* self = w.get();
    w->transports_.back()->SetFailureListener([self](const Status& s) {
      if (!self->stopping_.load() && self->on_failure_) self->on_failure_(s);
    });
  }
  *out = std::move(w);
  return Status::OK();
}

LoopbackWorkers::~LoopbackWorkers() { Stop(); }

ChannelMaker LoopbackWorkers::maker() {
  return [this](const ChannelSpec& cs, std::vector<std::unique_ptr<Channel>>* owned, Channel** consumer_end) {
    const uint32_t a = assignment_.worker_of_task[static_cast<size_t>(cs.from->index())];
    const uint32_t b = assignment_.worker_of_task[static_cast<size_t>(cs.to->index())];
    if (a == b) return MakeLocalChannel(cs, owned, consumer_end);
    net::Transport& ta = *transports_[a];
    net::Transport& tb = *transports_[b];
    owned->push_back(std::make_unique<Channel>(cs.name, cs.capacity, cs.from->parker(), ta.SenderParker(b),
                                               /*unbounded=*/cs.feedback, cs.backlog_limit, cs.listener));
    Channel* producer_end = owned->back().get();
    owned->push_back(std::make_unique<Channel>(cs.name, cs.capacity, tb.ReceiverParker(a), cs.to->parker()));
    *consumer_end = owned->back().get();
    producer_end->set_schema(cs.schema);
    (*consumer_end)->set_schema(cs.schema);
    const uint32_t id = next_id_++;
    ta.AddOutbound(id, b, producer_end);
    tb.AddInbound(id, a, *consumer_end, static_cast<uint32_t>(cs.capacity));
    return producer_end;
  };
}

Status LoopbackWorkers::Start() {
  std::map<uint32_t, net::Endpoint> peers;
  for (uint32_t i = 0; i < transports_.size(); ++i) peers[i] = net::Endpoint{"127.0.0.1", transports_[i]->port()};
  // Each transport connects, then accepts: all at once.
  std::vector<std::future<Status>> started;
  // A bound on a failure (a transport that cannot connect), not a timing check.
  const auto deadline = net::Transport::Clock::now() + std::chrono::seconds(60);
  for (auto& t : transports_)
    started.push_back(std::async(std::launch::async, [&t, &peers, deadline] { return t->Start(peers, deadline); }));
  Status first;
  for (auto& f : started) {
    Status s = f.get();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

void LoopbackWorkers::Stop() {
  stopping_.store(true);
  for (auto& t : transports_) t->Stop();
}

}  // namespace cairn
