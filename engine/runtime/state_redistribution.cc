#include "engine/runtime/state_redistribution.h"

#include <algorithm>
#include <charconv>

#include "engine/base/key_groups.h"

namespace cairn {

namespace {

// "<id>[<n>]" at the start of `s`; the rest after it in *rest.
bool ParseEnd(std::string_view s, std::string* id, uint32_t* n) {
  if (s.size() < 4 || s.back() != ']') return false;
  size_t open = s.rfind('[');
  if (open == std::string_view::npos || open == 0) return false;
  std::string_view digits = s.substr(open + 1, s.size() - open - 2);
  if (digits.empty()) return false;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *n);
  if (ec != std::errc() || p != digits.data() + digits.size()) return false;
  *id = std::string(s.substr(0, open));
  return true;
}

}  // namespace

bool ParseChannelName(std::string_view name, std::string* producer, uint32_t* i, std::string* consumer, uint32_t* j) {
  // Operator ids hold only letters, digits, '_' and '-', so "]->" separates the two ends.
  size_t arrow = name.find("]->");
  if (arrow == std::string_view::npos) return false;
  return ParseEnd(name.substr(0, arrow + 1), producer, i) && ParseEnd(name.substr(arrow + 3), consumer, j);
}

std::string MakeChannelName(const std::string& producer, uint32_t i, const std::string& consumer, uint32_t j) {
  return producer + "[" + std::to_string(i) + "]->" + consumer + "[" + std::to_string(j) + "]";
}

std::string RebalanceEdgeName(const std::string& producer, const std::string& consumer) {
  return producer + "[*]->" + consumer + "[*]";
}

bool ParseRebalanceEdgeName(std::string_view name, std::string* producer, std::string* consumer) {
  size_t arrow = name.find("[*]->");
  if (arrow == std::string_view::npos || arrow == 0 || name.size() < arrow + 9 || name.substr(name.size() - 3) != "[*]")
    return false;
  *producer = std::string(name.substr(0, arrow));
  *consumer = std::string(name.substr(arrow + 5, name.size() - arrow - 8));
  return !consumer->empty();
}

Status RedistributeChannelState(const std::vector<RecordedChannel>& recorded, const std::vector<ChannelEdge>& edges,
                                uint32_t max_parallelism, const std::string& where, RestoredChannelsByTask* out) {
  // In old consumer-subtask order, then checkpoint order (stable).
  std::vector<const RecordedChannel*> order;
  for (const RecordedChannel& rc : recorded) order.push_back(&rc);
  std::stable_sort(order.begin(), order.end(),
                   [](const RecordedChannel* a, const RecordedChannel* b) { return a->recorded_by < b->recorded_by; });
  // The new channel (task, name) -> its index in (*out)[task].
  auto target = [out](const std::string& consumer, uint32_t j, const std::string& name,
                      const SchemaRef& schema) -> RestoredChannel& {
    std::vector<RestoredChannel>& chans = (*out)[{consumer, j}];
    for (RestoredChannel& c : chans)
      if (c.name == name) return c;
    chans.push_back(RestoredChannel{name, schema, RecordBatch(schema)});
    return chans.back();
  };
  for (const RecordedChannel* rc : order) {
    const std::string& name = rc->channel.name;
    std::string producer, consumer;
    uint32_t i = 0, j = 0;
    if (!ParseChannelName(name, &producer, &i, &consumer, &j))
      return Status::Corruption("checkpoint " + where + ": in-flight records of a channel named '" + name +
                                "', which is not a channel name");
    const ChannelEdge* edge = nullptr;
    for (const ChannelEdge& e : edges)
      if (e.producer == producer && e.consumer == consumer) edge = &e;
    if (edge == nullptr)
      return Status::InvalidArgument("checkpoint " + where + " holds in-flight records of channel " + name +
                                     ", but the job has no edge from '" + producer + "' to '" + consumer +
                                     "' (a changed topology); restore it with the job's original operators");
    if (j != rc->recorded_by || i >= edge->old_producers || j >= edge->old_consumers || (!edge->hash && i != j))
      return Status::Corruption("checkpoint " + where + ": in-flight records of channel " + name + " (recorded by " +
                                consumer + "[" + std::to_string(rc->recorded_by) + "]) do not fit the checkpoint's parallelism " +
                                std::to_string(edge->old_producers) + " -> " + std::to_string(edge->old_consumers));
    const RecordBatch& records = rc->channel.records;
    if (edge->schema != nullptr && *edge->schema != *rc->channel.schema)
      return Status::InvalidArgument("checkpoint " + where + " holds in-flight records " + rc->channel.schema->ToString() +
                                     " of channel " + name + ", but the job's edge from '" + producer + "' to '" +
                                     consumer + "' now carries " + edge->schema->ToString() +
                                     " (a changed schema); restore it with the job's original operators");
    if (!edge->hash) {
      uint32_t to = j % edge->new_consumers;
      RestoredChannel& t = target(consumer, to, MakeChannelName(producer, to, consumer, to), rc->channel.schema);
      t.records.AppendRange(records, 0, records.size());
      continue;
    }
    const uint32_t from = i % edge->new_producers;
    const KeyGroupRange old_range = KeyGroupRange::ForSubtask(j, max_parallelism, edge->old_consumers);
    // Per new consumer, the channel this old channel's records go to (looked up once).
    std::vector<RestoredChannel*> targets(edge->new_consumers, nullptr);
    KeySelector key;
    Status ks = KeySelector::Make(*rc->channel.schema, edge->key_by, &key);
    if (!ks.ok())
      return Status::InvalidArgument("checkpoint " + where + ": the in-flight records of channel " + name +
                                     " cannot be keyed by '" + edge->key_by.front() + "': " + ks.message());
    std::string scratch;
    for (size_t r = 0; r < records.size(); ++r) {
      uint32_t kg = KeyGroupOf(key.Hash(records, r, &scratch), max_parallelism);
      if (!old_range.Contains(kg))
        return Status::Corruption("checkpoint " + where + ": channel " + name + " holds a record with key '" +
                                  std::string(key.Key(records, r, &scratch)) + "' of key group " + std::to_string(kg) + ", which " +
                                  consumer + "[" + std::to_string(j) + "] (key groups " + old_range.ToString() +
                                  ") did not own");
      uint32_t to = SubtaskForKeyGroup(kg, max_parallelism, edge->new_consumers);
      if (targets[to] == nullptr)
        targets[to] = &target(consumer, to, MakeChannelName(producer, from, consumer, to), rc->channel.schema);
      targets[to]->records.AddFrom(records, r);
    }
  }
  // Drop channels that ended up empty (none should, but the task expects records).
  for (auto& [task, chans] : *out)
    chans.erase(std::remove_if(chans.begin(), chans.end(), [](const RestoredChannel& c) { return c.records.empty(); }),
                chans.end());
  return Status::OK();
}

}  // namespace cairn
