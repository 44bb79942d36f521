#include "engine/runtime/remote_channels.h"

namespace cairn {

ChannelMaker RemoteChannels::maker() {
  return [this](const ChannelSpec& cs, std::vector<std::unique_ptr<Channel>>* owned, Channel** consumer_end) -> Channel* {
    *consumer_end = nullptr;
    const uint32_t a = assignment_->worker_of_task[static_cast<size_t>(cs.from_task)];
    const uint32_t b = assignment_->worker_of_task[static_cast<size_t>(cs.to_task)];
    if (a == b) return cs.from != nullptr && cs.to != nullptr ? MakeLocalChannel(cs, owned, consumer_end) : nullptr;
    const uint32_t id = next_id_++;
    Channel* producer_end = nullptr;
    auto ta = transports_.find(a);
    if (ta != transports_.end() && cs.from != nullptr) {
      owned->push_back(std::make_unique<Channel>(cs.name, cs.capacity, cs.from->parker(), ta->second->SenderParker(b),
                                                 /*unbounded=*/cs.feedback, cs.backlog_limit, cs.listener));
      producer_end = owned->back().get();
      producer_end->set_schema(cs.schema);
      ta->second->AddOutbound(id, b, producer_end);
    }
    auto tb = transports_.find(b);
    if (tb != transports_.end() && cs.to != nullptr) {
      owned->push_back(std::make_unique<Channel>(cs.name, cs.capacity, tb->second->ReceiverParker(a), cs.to->parker()));
      *consumer_end = owned->back().get();
      (*consumer_end)->set_schema(cs.schema);
      tb->second->AddInbound(id, a, *consumer_end, static_cast<uint32_t>(cs.capacity));
    }
    return producer_end;
  };
}

}  // namespace cairn
