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
  std::map<uint32_t, net::Transport*> all;
  for (uint32_t i = 0; i < workers; ++i) all[i] = w->transports_[i].get();
  w->channels_ = std::make_unique<RemoteChannels>(&w->assignment_, std::move(all));
  *out = std::move(w);
  return Status::OK();
}

LoopbackWorkers::~LoopbackWorkers() { Stop(); }

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
