// Redistribution of a checkpoint's channel state when a restore changes parallelism: the
// in-flight records of the channels (unaligned checkpoints, and feedback channels in every
// mode). Operator state is redistributed by state/operator_state_redistribution.h, keyed state
// by key-group range when it is restored (StateBackend::RestoreKeyedState).
//
// Rules (docs/state.md, "Rescaling"):
// - Channel state. A record recorded on channel P[i]->C[j] goes to a channel of the new
//   topology:
//   * hash edge (C has key_by): to C[j'] where j' is the subtask that owns the record's key
//     group at C's new parallelism, on the channel from P[i mod p'(P)];
//   * forward edge (P and C have equal parallelism, before and after): to C[j mod p'(C)] on
//     the channel from P[j mod p'(C)] (forward channels of old subtasks that no longer exist
//     are folded onto the surviving ones).
//   The records of one old channel keep their order on whatever new channel they go to; the
//   records of several old channels that go to one new channel follow each other in old
//   consumer-subtask order, then in the order the checkpoint lists them. A restored task
//   processes every restored record before anything new (InputGate), so no record sent after
//   the checkpoint overtakes one sent before it, whatever channel either is on.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/checkpoint/checkpoint_messages.h"
#include "engine/base/status.h"
#include "engine/dataflow/record_codec.h"

namespace cairn {

// ---- Channel state --------------------------------------------------------------------------

// "<producer>[<i>]-><consumer>[<j>]" split into its parts; false when it is not of that form.
bool ParseChannelName(std::string_view name, std::string* producer, uint32_t* i, std::string* consumer, uint32_t* j);
std::string MakeChannelName(const std::string& producer, uint32_t i, const std::string& consumer, uint32_t j);
// "<producer>[*]-><consumer>[*]": a load-balanced edge's shared queue, the name its in-flight
// records have in every consumer subtask's channel state.
std::string RebalanceEdgeName(const std::string& producer, const std::string& consumer);
// The two ends of a RebalanceEdgeName; false when `name` is not one.
bool ParseRebalanceEdgeName(std::string_view name, std::string* producer, std::string* consumer);

// One logical edge between two chains, old and new parallelism of both ends.
struct ChannelEdge {
  std::string producer;  // the producing chain's tail operator
  std::string consumer;  // the consuming chain's head operator
  bool hash = false;     // key_by partitioning; else forward
  std::vector<std::string> key_by;  // hash edges: the consumer's key fields
  SchemaRef schema;      // what the edge carries now (null: not checked)
  uint32_t old_producers = 1, old_consumers = 1;  // parallelism in the checkpoint
  uint32_t new_producers = 1, new_consumers = 1;  // parallelism now
};

// A channel's recorded records, as read from the checkpoint of one consumer subtask.
struct RecordedChannel {
  uint32_t recorded_by = 0;  // the old consumer subtask whose channel.state held it
  RestoredChannel channel;
};

// (consumer head operator, new subtask) -> the channels to restore in that task, by new name.
using RestoredChannelsByTask = std::map<std::pair<std::string, uint32_t>, std::vector<RestoredChannel>>;

// Maps every recorded record to its channel in the new topology (rules above). Fails with
// InvalidArgument naming the channel when it belongs to no edge of the job, or lies outside
// the old parallelism, and with Corruption when a record of a hash edge was recorded on a
// channel whose consumer did not own its key group. `where` names the checkpoint in messages.
Status RedistributeChannelState(const std::vector<RecordedChannel>& recorded, const std::vector<ChannelEdge>& edges,
                                uint32_t max_parallelism, const std::string& where, RestoredChannelsByTask* out);

}  // namespace cairn
