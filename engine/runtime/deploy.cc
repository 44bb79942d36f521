#include "engine/runtime/deploy.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "engine/base/crash_points.h"
#include "engine/runtime/state_redistribution.h"
#include "jobs/registry.h"
#include "state/checkpoint_layout.h"

namespace cairn {

namespace {

constexpr size_t kChannelCapacity = 16;  // batches

// "<producer tail op>[i]-><consumer head op>[j]": the name of a channel in messages, metrics
// and channel state (so it must not depend on anything but the job's operators).
std::string ChannelName(const JobSpec& spec, const ExecutionPlan& plan, const PlanEdge& e, uint32_t from, uint32_t to) {
  return spec.operators[plan.chains[e.from_chain].ops.back()].id + "[" + std::to_string(from) + "]->" +
         spec.operators[plan.chains[e.to_chain].ops.front()].id + "[" + std::to_string(to) + "]";
}


bool IsKeyed(const JobSpec& spec, const ChainedOperator& c) {
  return FindOperatorType(spec.Find(c.ctx.operator_id)->type)->keyed;
}

bool IsSource(const JobSpec& spec, const ChainedOperator& c) {
  return FindOperatorType(spec.Find(c.ctx.operator_id)->type)->role == OperatorRole::kSource;
}

}  // namespace

Status InstantiateOperators(const JobSpec& spec, const ExecutionPlan& plan, const RestorePlan& restore,
                            std::vector<SubtaskChain>* out, const std::vector<bool>* local) {
  int task = -1;
  for (int ci = 0; ci < static_cast<int>(plan.chains.size()); ++ci) {
    const PlanChain& ch = plan.chains[ci];
    for (uint32_t i = 0; i < ch.parallelism; ++i) {
      ++task;
      if (local != nullptr && !(*local)[static_cast<size_t>(task)]) continue;
      SubtaskChain st{ci, i, {}, task};
      for (int op_index : ch.ops) {
        const OperatorConfig& oc = spec.operators[op_index];
        const OperatorType* type = FindOperatorType(oc.type);
        ChainedOperator c;
        c.op = type->create(oc);
        c.ctx.operator_id = oc.id;
        c.ctx.operator_type = oc.type;
        c.ctx.job_name = spec.name;
        c.ctx.subtask = i;
        c.ctx.parallelism = oc.parallelism;
        c.ctx.max_parallelism = spec.max_parallelism;
        c.ctx.key_groups = KeyGroupRange::ForSubtask(i, spec.max_parallelism, oc.parallelism);
        c.ctx.output_schema = spec.schemas[op_index];
        for (const std::string& in : oc.inputs)
          c.ctx.input_schemas.push_back(spec.schemas[spec.Find(in) - spec.operators.data()]);
        c.list_state = std::make_unique<OperatorStateStore>();
        c.ctx.operator_state = c.list_state.get();
        if (restore.active) {
          c.ctx.restored_checkpoint = restore.checkpoint.metadata.id;
          auto it = restore.operator_state.find({oc.id, i});
          if (it != restore.operator_state.end()) c.ctx.restored_operator_state = it->second;
          auto lists = restore.list_state.find({oc.id, i});
          if (lists != restore.list_state.end())
            CAIRN_RETURN_IF_ERROR(c.list_state->Restore(lists->second, "checkpoint " + restore.checkpoint.path +
                                                                           ", operator " + oc.id + "[" +
                                                                           std::to_string(i) + "]"));
        }
        if (oc.watermark.enabled) {
          c.watermarks.enabled = true;
          c.watermarks.field = spec.schemas[op_index]->IndexOf(oc.watermark.field);  // checked by the loader
          c.watermarks.max_out_of_orderness_ms = oc.watermark.max_out_of_orderness.count();
          c.watermarks.idle_timeout_ms = oc.watermark.idle_timeout.count();
        }
        if (type->role == OperatorRole::kSource) CAIRN_RETURN_IF_ERROR(c.op->Open(c.ctx));
        st.ops.push_back(std::move(c));
      }
      out->push_back(std::move(st));
    }
  }
  return Status::OK();
}

Status OpenSubtasks(const JobSpec& spec, const StateBackend& backend, const RestorePlan& restore,
                    const std::string& work_dir, std::vector<SubtaskChain>* subtasks, const std::atomic<bool>* stop) {
  // One keyed operator subtask to restore (or create).
  struct KeyedRestore {
    ChainedOperator* op;
    std::string dir;
    std::vector<KeyedSnapshotHandle> snapshots;
    Status status;
  };
  std::vector<KeyedRestore> keyed;
  for (SubtaskChain& st : *subtasks) {
    for (ChainedOperator& c : st.ops) {
      if (!IsKeyed(spec, c)) continue;
      c.keyed_store = std::make_unique<KeyedStore>();
      KeyedRestore kr{&c, WorkingStatePath(work_dir, c.ctx.operator_id, st.subtask), {}, Status::OK()};
      auto it = restore.keyed.find(c.ctx.operator_id);
      if (it != restore.keyed.end())
        for (const KeyedSnapshotHandle& h : it->second)
          if (h.key_groups.Overlaps(c.ctx.key_groups)) kr.snapshots.push_back(h);
      keyed.push_back(std::move(kr));
    }
  }
  std::vector<std::thread> restorers;
  std::atomic<int> restored{0};
  const size_t to_restore =
      std::count_if(keyed.begin(), keyed.end(), [](const KeyedRestore& k) { return !k.snapshots.empty(); });
  const uint32_t max_parallelism = spec.max_parallelism;
  for (KeyedRestore& kr : keyed)
    restorers.emplace_back([&kr, &restored, &backend, max_parallelism, to_restore, stop] {
      ChainedOperator& c = *kr.op;
      KeyedSubtaskState ks;
      kr.status = kr.snapshots.empty()
                      ? backend.CreateKeyed(kr.dir, max_parallelism, c.ctx.key_groups, &ks)
                      : backend.RestoreKeyed(kr.snapshots, kr.dir, max_parallelism, c.ctx.key_groups, &ks, stop);
      if (kr.status.ok()) {
        c.keyed_state = std::move(ks.int64);
        c.keyed_store->store = std::move(ks.store);
        c.keyed_backend = std::move(ks.keyed);
      }
      // One subtask's state restored, the others' still being read.
      if (!kr.snapshots.empty() && kr.status.ok() && restored.fetch_add(1) == 0 && to_restore > 1)
        CAIRN_CRASH_POINT("restore.midway");
    });
  for (auto& t : restorers) t.join();
  if (stop != nullptr && stop->load()) return Status::Aborted("the restore was stopped");
  for (const KeyedRestore& kr : keyed) CAIRN_RETURN_IF_ERROR(kr.status);
  for (KeyedRestore& kr : keyed) {
    ChainedOperator& c = *kr.op;
    c.ctx.keyed_state = c.keyed_state.get();
    c.ctx.keyed = c.keyed_backend.get();
    if (FindOperatorType(spec.Find(c.ctx.operator_id)->type)->timers) {
      // Its timers are in the keyed state just restored: the index is rebuilt from it.
      CAIRN_RETURN_IF_ERROR(KeyedTimerService::Open(c.keyed_backend.get(), c.list_state.get(), nullptr, &c.timers)
                                .WithContext("operator " + c.ctx.operator_id + "[" + std::to_string(c.ctx.subtask) + "] timers"));
      c.ctx.timers = c.timers.get();
    }
  }

  for (SubtaskChain& st : *subtasks)
    for (ChainedOperator& c : st.ops)
      if (!IsSource(spec, c)) CAIRN_RETURN_IF_ERROR(c.op->Open(c.ctx));
  return Status::OK();
}

std::vector<Task*> Deployment::task_ptrs() const {
  std::vector<Task*> v;
  for (const auto& t : tasks)
    if (t != nullptr) v.push_back(t.get());
  return v;
}

std::vector<Channel*> Deployment::channel_ptrs() const {
  std::vector<Channel*> v;
  for (const auto& c : channels) v.push_back(c.get());
  return v;
}

Channel* MakeLocalChannel(const ChannelSpec& cs, std::vector<std::unique_ptr<Channel>>* owned, Channel** consumer_end) {
  owned->push_back(std::make_unique<Channel>(cs.name, cs.capacity, cs.from->parker(), cs.to->parker(),
                                             /*unbounded=*/cs.feedback, cs.backlog_limit, cs.listener));
  owned->back()->set_schema(cs.schema);
  *consumer_end = owned->back().get();
  return owned->back().get();
}

void BuildTasks(const JobSpec& spec, const ExecutionPlan& plan, std::vector<SubtaskChain> subtasks, RestorePlan* restore,
                SnapshotPersister* persister, TaskListener* tasks_listener, BacklogListener* backlog_listener,
                Deployment* out, const ChannelMaker& maker) {
  // By chain and subtask: the task, null when another process runs it; and its index.
  std::vector<std::vector<Task*>> chain_tasks(plan.chains.size());
  std::vector<std::vector<int>> chain_index(plan.chains.size());
  int total = 0;
  for (size_t c = 0; c < plan.chains.size(); ++c)
    for (uint32_t i = 0; i < plan.chains[c].parallelism; ++i) {
      chain_tasks[c].push_back(nullptr);
      chain_index[c].push_back(total++);
    }
  out->tasks.resize(static_cast<size_t>(total));
  for (SubtaskChain& st : subtasks) {
    std::string name = plan.ChainName(spec, st.chain) + "[" + std::to_string(st.subtask) + "]";
    std::string head = st.ops.front().ctx.operator_id;
    auto& slot = out->tasks[static_cast<size_t>(st.task)];
    slot = std::make_unique<Task>(st.task, name, std::move(st.ops), spec.max_parallelism, spec.checkpoint.dir, persister,
                                  tasks_listener);
    auto cs = restore->channels.find({head, st.subtask});
    if (cs != restore->channels.end()) slot->SetRestoredChannelState(std::move(cs->second));
    chain_tasks[st.chain][st.subtask] = slot.get();
  }
  for (const PlanEdge& e : plan.edges) {
    auto& from = chain_tasks[e.from_chain];
    auto& to = chain_tasks[e.to_chain];
    const SchemaRef& schema = spec.schemas[plan.chains[e.from_chain].ops.back()];
    const OperatorConfig& consumer = spec.operators[plan.chains[e.to_chain].ops.front()];
    KeySelector key;
    if (e.hash) {
      Status s = KeySelector::Make(*schema, consumer.KeyByOf(static_cast<size_t>(e.to_input)), &key);
      if (!s.ok()) std::abort();  // the loader checked every key_by field against every input
    }
    auto make = [&](uint32_t i, uint32_t j) {
      Task* a = from[i];
      Task* b = to[j];
      ChannelSpec cs{ChannelName(spec, plan, e, i, j), kChannelCapacity, a, b,
                     chain_index[e.from_chain][i], chain_index[e.to_chain][j], e.feedback,
                     spec.checkpoint.max_feedback_backlog, backlog_listener, schema};
      Channel* consumer_end = nullptr;
      Channel* producer_end = nullptr;
      if (maker) producer_end = maker(cs, &out->channels, &consumer_end);
      else if (a != nullptr && b != nullptr) producer_end = MakeLocalChannel(cs, &out->channels, &consumer_end);
      if (b != nullptr && consumer_end != nullptr) b->input_gate()->AddInput(GateInput{consumer_end, e.to_input, e.feedback});
      return producer_end;
    };
    if (e.rebalance) {
      // Every task of the edge is here, or none (CheckRebalanceEdges).
      if (std::find(from.begin(), from.end(), nullptr) != from.end()) continue;
      // One shared queue; each consumer's slot has a stand-in channel for its name and schema.
      const std::string producer = spec.operators[plan.chains[e.from_chain].ops.back()].id;
      auto q = std::make_unique<RebalanceQueue>(RebalanceEdgeName(producer, consumer.id),
                                                kChannelCapacity * std::max(from.size(), to.size()),
                                                static_cast<uint32_t>(from.size()));
      q->set_schema(schema);
      auto rs = restore->rebalance.find(q->name());
      if (rs != restore->rebalance.end())
        for (RecordBatch& b : rs->second) q->AddRestored(std::move(b));
      for (Task* t : from) q->AddProducer(t->parker());
      for (uint32_t j = 0; j < to.size(); ++j) {
        q->AddConsumer(to[j]->parker());
        out->channels.push_back(std::make_unique<Channel>(producer + "[*]->" + consumer.id + "[" + std::to_string(j) + "]",
                                                          1, to[j]->parker(), to[j]->parker()));
        out->channels.back()->set_schema(schema);
        to[j]->input_gate()->AddInput(GateInput{out->channels.back().get(), e.to_input, false, q.get()});
      }
      for (uint32_t i = 0; i < from.size(); ++i) from[i]->output_gate()->AddRebalanceEdge(q.get(), i, from[i]->parker());
      out->rebalance_queues.push_back(std::move(q));
      continue;
    }
    if (!e.hash) {
      for (uint32_t i = 0; i < from.size(); ++i) {
        Channel* c = make(i, i);
        if (from[i] != nullptr) from[i]->output_gate()->AddForwardEdge(c);
      }
    } else {
      for (uint32_t i = 0; i < from.size(); ++i) {
        std::vector<Channel*> outs;
        for (uint32_t j = 0; j < to.size(); ++j) outs.push_back(make(i, j));
        if (from[i] != nullptr) from[i]->output_gate()->AddHashEdge(std::move(outs), key);
      }
    }
  }
}

}  // namespace cairn
