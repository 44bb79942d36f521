#include "engine/runtime/restore.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <thread>

#include "engine/base/file_util.h"
#include "engine/runtime/state_redistribution.h"
#include "state/checkpoint_layout.h"
#include "state/operator_list_state.h"
#include "state/operator_state_redistribution.h"

namespace cairn {

Status PreflightOperators(const JobSpec& spec, std::vector<FileSink>* file_sinks) {
  for (const OperatorConfig& oc : spec.operators) {
    const OperatorType* type = FindOperatorType(oc.type);
    if (type->preflight) CAIRN_RETURN_IF_ERROR(type->preflight(oc));
    if (type->committed_output) file_sinks->push_back(FileSink{&oc, type});
  }
  return Status::OK();
}

namespace {

// The checkpoint `restore` ("latest" or a path) names, if it may be restored.
Status ChooseCheckpoint(const JobSpec& spec, const std::string& restore, CompletedCheckpoint* out) {
  const std::string& ckdir = spec.checkpoint.dir;
  CheckpointStore store(ckdir);
  if (restore == "latest") {
    // Fail closed: starting from the beginning here would commit every record again.
    const std::string how = "; to start from the beginning, run without --restore (--fresh if the directories hold "
                            "earlier output)";
    if (!IsDirectory(ckdir))
      return Status::NotFound("--restore latest: checkpoint.dir " + ckdir + " does not exist, so there is no checkpoint to restore" + how);
    std::vector<CompletedCheckpoint> all;
    std::vector<Status> skipped, superseded;
    CAIRN_RETURN_IF_ERROR(store.ListCompleted(&all, &skipped, &superseded));
    if (all.empty()) {
      std::string why;
      for (const Status& s : skipped) why += "\n  damaged: " + s.message();
      for (const Status& s : superseded) why += "\n  " + s.message();
      if (why.empty()) why = "\n  " + ckdir + " holds no completed checkpoint";
      return Status::NotFound("--restore latest: no checkpoint in " + ckdir + " can be restored" + how + ":" + why);
    }
    for (const Status& s : skipped) fprintf(stderr, "cairn: warning: skipping damaged checkpoint: %s\n", s.message().c_str());
    *out = all.back();
    return Status::OK();
  }
  CAIRN_RETURN_IF_ERROR(CheckpointStore::Resolve(restore, out));
  // A checkpoint of checkpoint.dir that a restore of an older one or --fresh abandoned.
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(out->path).parent_path();
  if (parent.empty()) parent = ".";
  if (IsDirectory(ckdir) && std::filesystem::equivalent(parent, ckdir, ec)) {
    bool superseded = false;
    std::string reason;
    CAIRN_RETURN_IF_ERROR(store.IsSuperseded(out->metadata.id, &superseded, &reason));
    if (superseded)
      return Status::InvalidArgument("checkpoint " + out->path + " is superseded (" + reason +
                                     "): the output it committed was set aside, so it can no longer be restored "
                                     "exactly once");
  }
  return Status::OK();
}

}  // namespace

Status PrepareRestore(const JobSpec& spec, const ExecutionPlan& exec, const std::string& restore,
                      const StateBackend& backend, RestorePlan* plan) {
  if (restore.empty()) return Status::OK();
  CAIRN_RETURN_IF_ERROR(ChooseCheckpoint(spec, restore, &plan->checkpoint));
  plan->active = true;
  const CheckpointMetadata& m = plan->checkpoint.metadata;
  const std::string& where = plan->checkpoint.path;
  if (m.max_parallelism != spec.max_parallelism)
    return Status::InvalidArgument("checkpoint " + where + " was taken with max_parallelism " +
                                   std::to_string(m.max_parallelism) + " but the job has " +
                                   std::to_string(spec.max_parallelism) + "; key groups cannot be remapped");
  std::map<std::string, uint32_t> old_parallelism;                          // op -> in the checkpoint
  std::map<std::string, std::map<uint32_t, std::string>> old_operator_state;  // op -> subtask -> bytes
  std::map<std::string, std::map<uint32_t, std::string>> old_list_state;      // op -> subtask -> list.state bytes
  std::vector<RecordedChannel> recorded;                                     // every channel's records
  std::vector<std::string> to_read;                                          // keyed snapshots, in order
  for (const SubtaskStateHandle& h : m.subtasks) {
    const OperatorConfig* op = spec.Find(h.operator_id);
    if (op == nullptr)
      return Status::InvalidArgument("checkpoint " + where + " has state for operator '" + h.operator_id +
                                     "', which the job does not have");
    const OperatorType* type = FindOperatorType(op->type);
    old_parallelism[h.operator_id] = h.parallelism;
    std::string bytes;
    CAIRN_RETURN_IF_ERROR(ReadSubtaskState(where, h.operator_state_file, h.operator_state_inline, &bytes));
    if (!bytes.empty()) old_operator_state[h.operator_id][h.subtask] = std::move(bytes);
    CAIRN_RETURN_IF_ERROR(ReadSubtaskState(where, h.list_state_file, h.list_state_inline, &bytes));
    if (!bytes.empty()) old_list_state[h.operator_id][h.subtask] = std::move(bytes);
    CAIRN_RETURN_IF_ERROR(ReadSubtaskState(where, h.channel_state_file, h.channel_state_inline, &bytes));
    if (!bytes.empty()) {
      std::vector<RestoredChannel> out;
      if (!DecodeChannelState(bytes, &out))
        return Status::Corruption(
            SubtaskStateDamaged(where, h, h.channel_state_file, "channel state records", "do not parse"));
      for (RestoredChannel& rc : out) recorded.push_back(RecordedChannel{h.subtask, std::move(rc)});
    }
    if (!h.keyed_dir.empty()) {
      if (type == nullptr || !type->keyed)
        return Status::InvalidArgument("checkpoint " + where + " has keyed state for operator '" + h.operator_id +
                                       "', which is not keyed in the job");
      std::string dir = InCheckpoint(where, h.keyed_dir);
      if (!IsDirectory(dir)) return Status::NotFound("checkpoint " + where + ": keyed state " + dir + " is missing");
      to_read.push_back(dir);
      plan->keyed[h.operator_id].push_back(KeyedSnapshotHandle{dir, h.key_groups});
    }
  }
  // Check every keyed snapshot by its checksums (every file it lists present, every block and
  // changelog segment sound; StateBackend::VerifySnapshot), so that damaged keyed state fails
  // here, before the job takes checkpoint.dir, rather than half-way through; one thread per
  // snapshot, as the restore itself (deploy.cc). The first damaged one in the metadata's order
  // is reported.
  {
    std::vector<Status> read(to_read.size());
    std::vector<std::thread> readers;
    for (size_t i = 0; i < to_read.size(); ++i)
      readers.emplace_back([&backend, &to_read, &read, i] { read[i] = backend.VerifySnapshot(to_read[i]); });
    for (auto& t : readers) t.join();
    for (const Status& st : read) CAIRN_RETURN_IF_ERROR(st.WithContext("checkpoint " + where));
  }
  // Operator state and channel state go to the subtasks of the job's parallelism, by the rules
  // of state/operator_state_redistribution.h and engine/runtime/state_redistribution.h
  // (identity where the parallelism is unchanged).
  for (const auto& [id, old] : old_operator_state) {
    const OperatorConfig* op = spec.Find(id);
    std::map<uint32_t, std::string> now;
    CAIRN_RETURN_IF_ERROR(RedistributeOperatorState(id, FindOperatorType(op->type)->state, old_parallelism[id], old,
                                                    op->parallelism, where, &now));
    for (auto& [subtask, bytes] : now) plan->operator_state[{id, subtask}] = std::move(bytes);
  }
  for (const auto& [id, old] : old_list_state) {
    std::map<uint32_t, std::string> now;
    CAIRN_RETURN_IF_ERROR(
        RedistributeListStates(id, old_parallelism[id], old, spec.Find(id)->parallelism, where, &now));
    for (auto& [subtask, bytes] : now) plan->list_state[{id, subtask}] = std::move(bytes);
  }
  // The records of load-balanced edges go back on their shared queue, whatever channel
  // recorded them (also a FIFO channel of an edge that is rebalanced now).
  std::vector<RecordedChannel> fifo;
  for (RecordedChannel& rc : recorded) {
    std::string producer, consumer;
    uint32_t i = 0, j = 0;
    const bool named_rebalance = ParseRebalanceEdgeName(rc.channel.name, &producer, &consumer);
    if (!named_rebalance && !ParseChannelName(rc.channel.name, &producer, &i, &consumer, &j)) {
      fifo.push_back(std::move(rc));  // RedistributeChannelState names the damage
      continue;
    }
    const PlanEdge* edge = nullptr;
    for (const PlanEdge& e : exec.edges)
      if (spec.operators[exec.chains[e.from_chain].ops.back()].id == producer &&
          spec.operators[exec.chains[e.to_chain].ops.front()].id == consumer)
        edge = &e;
    if (edge != nullptr && edge->rebalance) {
      const SchemaRef& schema = spec.schemas[exec.chains[edge->from_chain].ops.back()];
      if (schema != nullptr && *schema != *rc.channel.schema)
        return Status::InvalidArgument("checkpoint " + where + " holds in-flight records " + rc.channel.schema->ToString() +
                                       " of channel " + rc.channel.name + ", but the job's edge from '" + producer +
                                       "' to '" + consumer + "' now carries " + schema->ToString() +
                                       " (a changed schema); restore it with the job's original operators");
      plan->rebalance[RebalanceEdgeName(producer, consumer)].push_back(std::move(rc.channel.records));
      continue;
    }
    if (named_rebalance)
      return Status::InvalidArgument("checkpoint " + where + " holds in-flight records of the load-balanced edge " +
                                     rc.channel.name + ", but the job has no such edge (partition: rebalance from '" +
                                     producer + "' into '" + consumer + "'); restore it with the job's original operators");
    fifo.push_back(std::move(rc));
  }
  recorded = std::move(fifo);
  std::vector<ChannelEdge> edges;
  for (const PlanEdge& e : exec.edges) {
    ChannelEdge ce;
    ce.producer = spec.operators[exec.chains[e.from_chain].ops.back()].id;
    ce.consumer = spec.operators[exec.chains[e.to_chain].ops.front()].id;
    ce.hash = e.hash;
    ce.key_by = spec.operators[exec.chains[e.to_chain].ops.front()].KeyByOf(static_cast<size_t>(e.to_input));
    ce.schema = spec.schemas[exec.chains[e.from_chain].ops.back()];
    ce.new_producers = exec.chains[e.from_chain].parallelism;
    ce.new_consumers = exec.chains[e.to_chain].parallelism;
    auto old_p = [&old_parallelism](const std::string& op, uint32_t now) {
      auto it = old_parallelism.find(op);
      return it == old_parallelism.end() ? now : it->second;
    };
    ce.old_producers = old_p(ce.producer, ce.new_producers);
    ce.old_consumers = old_p(ce.consumer, ce.new_consumers);
    edges.push_back(ce);
  }
  return RedistributeChannelState(recorded, edges, spec.max_parallelism, where, &plan->channels);
}

Status FindEarlierRuns(const JobSpec& spec, const std::vector<FileSink>& file_sinks, EarlierRuns* out) {
  const std::string& ckdir = spec.checkpoint.dir;
  if (IsDirectory(ckdir)) CAIRN_RETURN_IF_ERROR(CheckpointStore(ckdir).ListCompleted(&out->checkpoints));
  if (!out->checkpoints.empty())
    out->found += "\n  " + std::to_string(out->checkpoints.size()) + " completed checkpoint(s) in " + ckdir +
                  " (newest " + out->checkpoints.back().path + ")";
  for (const FileSink& sink : file_sinks) {
    std::vector<std::string> files;
    CAIRN_RETURN_IF_ERROR(sink.type->committed_output(*sink.config, &files));
    if (!files.empty())
      out->found += "\n  " + std::to_string(files.size()) + " committed output file(s) of operator '" + sink.config->id +
                    "' in " + sink.config->GetString("path") + " (such as " + files.front() + ")";
  }
  return Status::OK();
}

Status CheckFreshStart(const EarlierRuns& earlier, bool fresh) {
  if (earlier.found.empty() || fresh) return Status::OK();
  return Status::InvalidArgument("a fresh start would produce the output again next to what earlier runs committed:" +
                                 earlier.found +
                                 "\nTo resume, run with --restore latest; to start over on purpose, run with --fresh "
                                 "(see docs/cli.md)");
}

Status SupersedeAbandoned(const RestorePlan& restore, const EarlierRuns& earlier, bool fresh,
                          const std::vector<FileSink>& file_sinks, const CheckpointStore& store) {
  if (restore.active) {
    // Restoring an older checkpoint abandons the newer ones: the output they committed is set
    // aside by the sinks (it is produced again), so they must never be restored, not even by
    // --restore latest after a crash before this run's first checkpoint. Recorded before the
    // sinks touch their output.
    std::vector<CompletedCheckpoint> all;
    CAIRN_RETURN_IF_ERROR(store.ListCompleted(&all));
    const CheckpointId id = restore.checkpoint.metadata.id;
    if (!all.empty() && all.back().metadata.id > id) {
      CAIRN_RETURN_IF_ERROR(store.Supersede(id + 1, store.MaxId(), "abandoned by a restore of checkpoint " + std::to_string(id)));
      fprintf(stderr,
              "cairn: checkpoint %" PRIu64 " is older than the newest completed checkpoint %" PRIu64
              ": checkpoints %" PRIu64 "-%" PRIu64 " are superseded (no longer restorable; kept until "
              "checkpoint.retain newer checkpoints completed) and the output committed after checkpoint %" PRIu64 " is set aside in each "
              "sink's _superseded/\n",
              id, all.back().metadata.id, id + 1, store.MaxId(), id);
    }
  }
  if (fresh && !earlier.found.empty()) {
    if (!earlier.checkpoints.empty()) {
      CAIRN_RETURN_IF_ERROR(store.Supersede(1, store.MaxId(), "abandoned by a --fresh start"));
      fprintf(stderr,
              "cairn: --fresh: checkpoints up to %" PRIu64 " in %s are superseded (no longer restorable; kept until "
              "checkpoint.retain newer checkpoints completed)\n",
              store.MaxId(), store.dir().c_str());
    }
    for (const FileSink& sink : file_sinks) {
      size_t moved = 0;
      if (sink.type->set_aside_output) CAIRN_RETURN_IF_ERROR(sink.type->set_aside_output(*sink.config, &moved));
      if (moved > 0)
        fprintf(stderr, "cairn: --fresh: set aside %zu committed output file(s) of operator '%s' in %s/_superseded/\n",
                moved, sink.config->id.c_str(), sink.config->GetString("path").c_str());
    }
  }
  return Status::OK();
}

}  // namespace cairn
