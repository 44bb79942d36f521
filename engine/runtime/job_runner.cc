#include "engine/runtime/job_runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/dataflow/channel.h"
#include "engine/base/crash_points.h"
#include "engine/runtime/execution_plan.h"
#include "engine/base/file_util.h"
#include "engine/checkpoint/snapshot_persister.h"
#include "engine/dataflow/operator_capabilities.h"
#include "engine/runtime/state_redistribution.h"
#include "engine/runtime/task.h"
#include "jobs/registry.h"
#include "state/checkpoint_layout.h"
#include "state/checkpoint_store.h"
#include "state/keyed_state.h"
#include "state/rocksdb_state_store.h"

namespace cairn {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChannelCapacity = 16;  // batches
constexpr size_t kPersisterThreads = 2;

std::atomic<int> g_interrupted{0};
std::atomic<bool> g_dump{false};
extern "C" void OnInterrupt(int sig) { g_interrupted.store(sig); }
extern "C" void OnDump(int) { g_dump.store(true); }

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Collects the first failure of any task, the coordinator, or the user (Ctrl-C), and cancels
// the job when it happens.
class JobControl : public TaskListener, public CheckpointCoordinator::Listener, public BacklogListener {
 public:
  void SetParties(std::vector<Task*> tasks, std::vector<Channel*> channels, Parker* main) {
    tasks_ = std::move(tasks);
    channels_ = std::move(channels);
    main_ = main;
  }
  void SourceFinished(int task) override { coordinator_->SourceFinished(task); }
  void TaskFailed(int task, const Status& s) override { Fail(s); }
  void JobFailed(const Status& s) override { Fail(s); }
  void BacklogExceeded(const Status& s) override { Fail(s); }
  void set_coordinator(CheckpointCoordinator* c) { coordinator_ = c; }

  void Fail(const Status& s) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!status_.ok()) return;
      status_ = s;
    }
    for (Channel* c : channels_) c->Cancel();
    for (Task* t : tasks_) t->Cancel();
    if (main_ != nullptr) main_->Unpark();
  }
  Status status() {
    std::lock_guard<std::mutex> l(mu_);
    return status_;
  }
  void TaskEnded() {
    ended_.fetch_add(1);
    if (main_ != nullptr) main_->Unpark();
  }
  size_t ended() const { return ended_.load(); }

 private:
  std::mutex mu_;
  Status status_;  // guarded by mu_
  std::vector<Task*> tasks_;
  std::vector<Channel*> channels_;
  Parker* main_ = nullptr;
  CheckpointCoordinator* coordinator_ = nullptr;
  std::atomic<size_t> ended_{0};
};

// Holds flock() on checkpoint.dir/_lock for the lifetime of the run. A lock file it created
// is removed again when the run fails before it owns the directory (bad input changes nothing).
class DirLock {
 public:
  ~DirLock() {
    if (fd_ >= 0) {
      if (created_ && !owned_) unlink(path_.c_str());
      close(fd_);
    }
  }
  bool held() const { return fd_ >= 0; }
  void set_owned() { owned_ = true; }
  Status Acquire(const std::string& dir) {
    path_ = LockPath(dir);
    fd_ = open(path_.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0 && errno == ENOENT) {
      fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      created_ = fd_ >= 0;
      if (fd_ < 0 && errno == EEXIST) fd_ = open(path_.c_str(), O_RDWR | O_CLOEXEC);
    }
    if (fd_ < 0) return Status::FromErrno("cannot open lock file", path_, errno);
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0)
      return Status::InvalidArgument("checkpoint directory " + dir +
                                     " is in use by another running job (" + path_ + " is locked)");
    return Status::OK();
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;
  bool owned_ = false;
};

// What a restore provides, read and checked before anything on disk changes.
struct RestorePlan {
  bool active = false;
  CompletedCheckpoint checkpoint;
  std::map<std::pair<std::string, uint32_t>, std::string> operator_state;  // (op, subtask) -> bytes
  std::map<std::string, std::vector<KeyedSnapshotHandle>> keyed;           // op -> snapshots
  // (head op, subtask) -> channel name -> in-flight records
  std::map<std::pair<std::string, uint32_t>, std::vector<RestoredChannel>> channels;
};

// "<producer tail op>[i]-><consumer head op>[j]": the name of a channel in messages, metrics
// and channel state (so it must not depend on anything but the job's operators).
std::string ChannelName(const JobSpec& spec, const ExecutionPlan& plan, const PlanEdge& e, uint32_t from, uint32_t to) {
  return spec.operators[plan.chains[e.from_chain].ops.back()].id + "[" + std::to_string(from) + "]->" +
         spec.operators[plan.chains[e.to_chain].ops.front()].id + "[" + std::to_string(to) + "]";
}

// The field names of what operator `op` emits; a pass-through transform (empty schema, such as
// throttle) emits its first input's records.
Schema EmittedSchema(const JobSpec& spec, int op) {
  for (size_t hops = 0; hops <= spec.operators.size(); ++hops) {
    const OperatorConfig& c = spec.operators[op];
    const OperatorType* t = FindOperatorType(c.type);
    if (!t->output.key.empty() || c.inputs.empty()) return t->output;
    const OperatorConfig* in = spec.Find(c.inputs[0]);
    op = static_cast<int>(in - spec.operators.data());
  }
  return Schema{};
}

Status PrepareRestore(const JobSpec& spec, const ExecutionPlan& exec, const RunOptions& opt, RestorePlan* plan) {
  if (opt.restore.empty()) return Status::OK();
  const std::string& ckdir = spec.checkpoint.dir;
  CheckpointStore store(ckdir);
  if (opt.restore == "latest") {
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
    plan->checkpoint = all.back();
  } else {
    CAIRN_RETURN_IF_ERROR(CheckpointStore::Resolve(opt.restore, &plan->checkpoint));
    // A checkpoint of checkpoint.dir that a restore of an older one or --fresh abandoned.
    std::error_code ec;
    std::filesystem::path parent = std::filesystem::path(plan->checkpoint.path).parent_path();
    if (parent.empty()) parent = ".";
    if (IsDirectory(ckdir) && std::filesystem::equivalent(parent, ckdir, ec)) {
      bool superseded = false;
      std::string reason;
      CAIRN_RETURN_IF_ERROR(store.IsSuperseded(plan->checkpoint.metadata.id, &superseded, &reason));
      if (superseded)
        return Status::InvalidArgument("checkpoint " + plan->checkpoint.path + " is superseded (" + reason +
                                       "): the output it committed was set aside, so it can no longer be restored "
                                       "exactly once");
    }
  }
  plan->active = true;
  const CheckpointMetadata& m = plan->checkpoint.metadata;
  const std::string& where = plan->checkpoint.path;
  if (m.max_parallelism != spec.max_parallelism)
    return Status::InvalidArgument("checkpoint " + where + " was taken with max_parallelism " +
                                   std::to_string(m.max_parallelism) + " but the job has " +
                                   std::to_string(spec.max_parallelism) + "; key groups cannot be remapped");
  std::map<std::string, uint32_t> old_parallelism;                          // op -> in the checkpoint
  std::map<std::string, std::map<uint32_t, std::string>> old_operator_state;  // op -> subtask -> bytes
  std::vector<RecordedChannel> recorded;                                     // every channel's records
  for (const SubtaskStateHandle& h : m.subtasks) {
    const OperatorConfig* op = spec.Find(h.operator_id);
    if (op == nullptr)
      return Status::InvalidArgument("checkpoint " + where + " has state for operator '" + h.operator_id +
                                     "', which the job does not have");
    const OperatorType* type = FindOperatorType(op->type);
    old_parallelism[h.operator_id] = h.parallelism;
    if (!h.operator_state_file.empty()) {
      std::string bytes;
      CAIRN_RETURN_IF_ERROR(ReadChecksummedFile(InCheckpoint(where, h.operator_state_file), &bytes));
      old_operator_state[h.operator_id][h.subtask] = std::move(bytes);
    }
    if (!h.channel_state_file.empty()) {
      std::string path = InCheckpoint(where, h.channel_state_file);
      std::string bytes;
      CAIRN_RETURN_IF_ERROR(ReadChecksummedFile(path, &bytes));
      std::vector<RestoredChannel> out;
      if (!DecodeChannelState(bytes, &out))
        return Status::Corruption(path + ": damaged (channel state records do not parse)");
      for (RestoredChannel& rc : out) recorded.push_back(RecordedChannel{h.subtask, std::move(rc)});
    }
    if (!h.keyed_dir.empty()) {
      if (type == nullptr || !type->keyed)
        return Status::InvalidArgument("checkpoint " + where + " has keyed state for operator '" + h.operator_id +
                                       "', which is not keyed in the job");
      std::string dir = InCheckpoint(where, h.keyed_dir);
      if (!IsDirectory(dir)) return Status::NotFound("checkpoint " + where + ": keyed state " + dir + " is missing");
      // Read it through once (RocksDB checks every block's checksum), so that damaged keyed
      // state fails here, before the job takes checkpoint.dir, rather than half-way through.
      CAIRN_RETURN_IF_ERROR(RocksDbStateStore::ReadSnapshot(dir, [](uint32_t, std::string_view, int64_t) {})
                                .WithContext("checkpoint " + where));
      plan->keyed[h.operator_id].push_back(KeyedSnapshotHandle{dir, h.key_groups});
    }
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
  std::vector<ChannelEdge> edges;
  for (const PlanEdge& e : exec.edges) {
    ChannelEdge ce;
    ce.producer = spec.operators[exec.chains[e.from_chain].ops.back()].id;
    ce.consumer = spec.operators[exec.chains[e.to_chain].ops.front()].id;
    ce.hash = e.hash;
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

}  // namespace

Status RunJob(const JobSpec& spec, const RunOptions& opt, RunSummary* summary) {
  const auto start = Clock::now();
  const ExecutionPlan plan = ExecutionPlan::Build(spec);
  const std::string& ckdir = spec.checkpoint.dir;
  if (opt.fresh && !opt.restore.empty())
    return Status::InvalidArgument("--fresh starts over and --restore resumes: give one of them");
  // Operator pre-flight: a sink directory that cannot be created fails now, not at Open.
  std::vector<std::pair<const OperatorConfig*, const OperatorType*>> file_sinks;  // sinks that commit files
  for (const OperatorConfig& oc : spec.operators) {
    const OperatorType* type = FindOperatorType(oc.type);
    if (type->preflight) CAIRN_RETURN_IF_ERROR(type->preflight(oc));
    if (type->committed_output) file_sinks.emplace_back(&oc, type);
  }
  // Lock checkpoint.dir before choosing the checkpoint to restore, so that no other job can
  // retire it meanwhile (a directory that does not exist holds nothing to choose).
  DirLock lock;
  if (IsDirectory(ckdir)) CAIRN_RETURN_IF_ERROR(lock.Acquire(ckdir));
  CheckpointStore store(ckdir);
  RestorePlan restore;
  CAIRN_RETURN_IF_ERROR(PrepareRestore(spec, plan, opt, &restore));
  // A start without --restore must not silently produce everything again next to what earlier
  // runs committed.
  std::vector<CompletedCheckpoint> earlier;
  if (opt.restore.empty() && IsDirectory(ckdir)) CAIRN_RETURN_IF_ERROR(store.ListCompleted(&earlier));
  std::string found;
  if (!earlier.empty())
    found += "\n  " + std::to_string(earlier.size()) + " completed checkpoint(s) in " + ckdir + " (newest " +
             earlier.back().path + ")";
  if (opt.restore.empty()) {
    for (const auto& [oc, type] : file_sinks) {
      std::vector<std::string> files;
      CAIRN_RETURN_IF_ERROR(type->committed_output(*oc, &files));
      if (!files.empty())
        found += "\n  " + std::to_string(files.size()) + " committed output file(s) of operator '" + oc->id + "' in " +
                 oc->GetString("path") + " (such as " + files.front() + ")";
    }
  }
  if (restore.active) {
    summary->restored_from = restore.checkpoint.metadata.id;
    fprintf(stderr, "cairn: restoring from checkpoint %" PRIu64 " (%s)\n", restore.checkpoint.metadata.id,
            restore.checkpoint.path.c_str());
  }

  // Instantiate every operator subtask; open the sources now, since they only read their
  // input, so that a missing input fails before anything on disk changes.
  struct SubtaskChain {
    int chain;
    uint32_t subtask;
    std::vector<ChainedOperator> ops;
  };
  std::vector<SubtaskChain> subtasks;
  for (int ci = 0; ci < static_cast<int>(plan.chains.size()); ++ci) {
    const PlanChain& ch = plan.chains[ci];
    for (uint32_t i = 0; i < ch.parallelism; ++i) {
      SubtaskChain st{ci, i, {}};
      for (int op_index : ch.ops) {
        const OperatorConfig& oc = spec.operators[op_index];
        const OperatorType* type = FindOperatorType(oc.type);
        ChainedOperator c;
        c.op = type->create(oc);
        c.ctx.operator_id = oc.id;
        c.ctx.job_name = spec.name;
        c.ctx.subtask = i;
        c.ctx.parallelism = oc.parallelism;
        c.ctx.max_parallelism = spec.max_parallelism;
        c.ctx.key_groups = KeyGroupRange::ForSubtask(i, spec.max_parallelism, oc.parallelism);
        if (restore.active) {
          c.ctx.restored_checkpoint = restore.checkpoint.metadata.id;
          auto it = restore.operator_state.find({oc.id, i});
          if (it != restore.operator_state.end()) c.ctx.restored_operator_state = it->second;
        }
        if (type->role == OperatorRole::kSource) CAIRN_RETURN_IF_ERROR(c.op->Open(c.ctx));
        st.ops.push_back(std::move(c));
      }
      subtasks.push_back(std::move(st));
    }
  }

  // Checked after the job's own inputs, so that those errors are named first.
  if (!found.empty() && !opt.fresh)
    return Status::InvalidArgument("a fresh start would produce the output again next to what earlier runs committed:" +
                                   found +
                                   "\nTo resume, run with --restore latest; to start over on purpose, run with --fresh "
                                   "(see docs/cli.md)");

  // From here on the job owns checkpoint.dir.
  CAIRN_RETURN_IF_ERROR(CreateDirs(ckdir));
  if (!lock.held()) CAIRN_RETURN_IF_ERROR(lock.Acquire(ckdir));
  lock.set_owned();
  CAIRN_RETURN_IF_ERROR(store.RemoveIncomplete());
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
  if (opt.fresh && !found.empty()) {
    if (!earlier.empty()) {
      CAIRN_RETURN_IF_ERROR(store.Supersede(1, store.MaxId(), "abandoned by a --fresh start"));
      fprintf(stderr,
              "cairn: --fresh: checkpoints up to %" PRIu64 " in %s are superseded (no longer restorable; kept until "
              "checkpoint.retain newer checkpoints completed)\n",
              store.MaxId(), ckdir.c_str());
    }
    for (const auto& [oc, type] : file_sinks) {
      size_t moved = 0;
      if (type->set_aside_output) CAIRN_RETURN_IF_ERROR(type->set_aside_output(*oc, &moved));
      if (moved > 0)
        fprintf(stderr, "cairn: --fresh: set aside %zu committed output file(s) of operator '%s' in %s/_superseded/\n",
                moved, oc->id.c_str(), oc->GetString("path").c_str());
    }
  }
  const std::string work_dir = WorkDir(ckdir, getpid());
  CAIRN_RETURN_IF_ERROR(CreateDirs(work_dir));
  struct WorkDirCleanup {
    std::string dir;
    ~WorkDirCleanup() { RemoveAll(dir); }
  } work_cleanup{work_dir};

  // Keyed state: restore (or create) each keyed subtask's store, all subtasks in parallel
  // (restoring is reading RocksDB and filling a hash table: CPU-bound per subtask).
  struct KeyedRestore {
    ChainedOperator* op;
    std::string dir;
    std::vector<KeyedSnapshotHandle> snapshots;
    Status status;
  };
  std::vector<KeyedRestore> keyed;
  for (SubtaskChain& st : subtasks) {
    for (ChainedOperator& c : st.ops) {
      const OperatorConfig& oc = *spec.Find(c.ctx.operator_id);
      if (!FindOperatorType(oc.type)->keyed) continue;
      c.keyed_state = std::make_unique<KeyedInt64State>(spec.max_parallelism, c.ctx.key_groups);
      c.keyed_store = std::make_unique<KeyedStore>();
      c.ctx.keyed_state = c.keyed_state.get();
      KeyedRestore kr{&c, WorkingStatePath(work_dir, oc.id, st.subtask), {}, Status::OK()};
      for (const auto& h : restore.keyed[oc.id])
        if (h.key_groups.Overlaps(c.ctx.key_groups)) kr.snapshots.push_back(h);
      keyed.push_back(std::move(kr));
    }
  }
  {
    std::vector<std::thread> restorers;
    std::atomic<int> restored{0};
    const size_t to_restore = std::count_if(keyed.begin(), keyed.end(), [](const KeyedRestore& k) { return !k.snapshots.empty(); });
    for (KeyedRestore& kr : keyed)
      restorers.emplace_back([&kr, &restored, to_restore] {
        ChainedOperator& c = *kr.op;
        kr.status = kr.snapshots.empty()
                        ? RocksDbStateStore::Create(kr.dir, &c.keyed_store->store)
                        : RocksDbStateStore::Restore(kr.snapshots, kr.dir, c.keyed_state.get(), &c.keyed_store->store);
        // One subtask's state restored, the others' still being read.
        if (!kr.snapshots.empty() && kr.status.ok() && restored.fetch_add(1) == 0 && to_restore > 1)
          CAIRN_CRASH_POINT("restore.midway");
      });
    for (auto& t : restorers) t.join();
    for (const KeyedRestore& kr : keyed) CAIRN_RETURN_IF_ERROR(kr.status);
  }
  for (SubtaskChain& st : subtasks)
    for (ChainedOperator& c : st.ops)
      if (FindOperatorType(spec.Find(c.ctx.operator_id)->type)->role != OperatorRole::kSource)
        CAIRN_RETURN_IF_ERROR(c.op->Open(c.ctx));

  // Tasks and channels.
  JobControl control;
  std::unique_ptr<CheckpointCoordinator> coordinator;
  SnapshotPersister persister(kPersisterThreads, [&coordinator](TaskAck ack) { coordinator->Acknowledge(std::move(ack)); });
  std::vector<std::unique_ptr<Task>> tasks;
  std::vector<std::vector<Task*>> chain_tasks(plan.chains.size());
  for (SubtaskChain& st : subtasks) {
    std::string name = plan.ChainName(spec, st.chain) + "[" + std::to_string(st.subtask) + "]";
    std::string head = st.ops.front().ctx.operator_id;
    tasks.push_back(std::make_unique<Task>(static_cast<int>(tasks.size()), name, std::move(st.ops), spec.max_parallelism,
                                           ckdir, &persister, &control));
    auto cs = restore.channels.find({head, st.subtask});
    if (cs != restore.channels.end()) tasks.back()->SetRestoredChannelState(std::move(cs->second));
    chain_tasks[st.chain].push_back(tasks.back().get());
  }
  std::vector<std::unique_ptr<Channel>> channels;
  for (const PlanEdge& e : plan.edges) {
    auto& from = chain_tasks[e.from_chain];
    auto& to = chain_tasks[e.to_chain];
    const Schema schema = EmittedSchema(spec, plan.chains[e.from_chain].ops.back());
    auto make = [&](Task* a, Task* b, uint32_t i, uint32_t j) {
      channels.push_back(std::make_unique<Channel>(ChannelName(spec, plan, e, i, j), kChannelCapacity, a->parker(),
                                                   b->parker(), /*unbounded=*/e.feedback,
                                                   spec.checkpoint.max_feedback_backlog, &control));
      channels.back()->set_schema(schema);
      b->input_gate()->AddInput(GateInput{channels.back().get(), e.to_input, e.feedback});
      return channels.back().get();
    };
    if (!e.hash) {
      for (uint32_t i = 0; i < from.size(); ++i) from[i]->output_gate()->AddForwardEdge(make(from[i], to[i], i, i));
    } else {
      for (uint32_t i = 0; i < from.size(); ++i) {
        std::vector<Channel*> outs;
        for (uint32_t j = 0; j < to.size(); ++j) outs.push_back(make(from[i], to[j], i, j));
        from[i]->output_gate()->AddHashEdge(std::move(outs));
      }
    }
  }

  std::vector<Task*> task_ptrs;
  for (auto& t : tasks) task_ptrs.push_back(t.get());
  std::vector<Channel*> channel_ptrs;
  for (auto& c : channels) channel_ptrs.push_back(c.get());
  Parker main_parker;
  control.SetParties(task_ptrs, channel_ptrs, &main_parker);
  CheckpointId first_id = std::max(store.MaxId(), restore.active ? restore.checkpoint.metadata.id : 0) + 1;
  coordinator = std::make_unique<CheckpointCoordinator>(spec.name, spec.max_parallelism, spec.checkpoint, &store,
                                                        std::vector<CheckpointParticipant*>(task_ptrs.begin(), task_ptrs.end()),
                                                        first_id, &control);
  coordinator->SetAbortHandler([&persister](CheckpointId id) { persister.Abort(id); });
  control.set_coordinator(coordinator.get());

  summary->restore_seconds = SecondsSince(start);
  if (restore.active) {
    size_t keys = 0;
    for (Task* t : task_ptrs)
      for (auto& c : t->chain())
        if (c.keyed_state != nullptr) keys += c.keyed_state->size();
    fprintf(stderr, "cairn: restored checkpoint %" PRIu64 " (%zu keys) in %.3f s; processing starts\n",
            restore.checkpoint.metadata.id, keys, summary->restore_seconds);
  }
  g_interrupted.store(0);
  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = OnInterrupt;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  struct sigaction sd {}, old_usr1 {};
  sd.sa_handler = OnDump;
  sigaction(SIGUSR1, &sd, &old_usr1);

  const auto run_start = Clock::now();
  std::vector<std::thread> threads;
  for (Task* t : task_ptrs)
    threads.emplace_back([t, &control] {
      t->Run();
      control.TaskEnded();
    });
  coordinator->Start();

  // "Sink records": what the sinks consumed; a job without sinks (a cycle) counts what its
  // non-source tasks consumed instead.
  bool has_sinks = false;
  for (Task* t : task_ptrs) has_sinks |= !t->output_gate()->has_outputs();
  summary->has_sinks = has_sinks;
  auto sum_records = [&](uint64_t* in, uint64_t* out) {
    *in = *out = 0;
    for (Task* t : task_ptrs) {
      if (t->is_source()) *in += t->records_in();
      if (has_sinks && !t->output_gate()->has_outputs()) *out += t->records_out();
      if (!has_sinks && !t->is_source()) *out += t->records_in();
    }
  };
  const auto interval = std::max(opt.progress_interval, std::chrono::milliseconds(1));
  const double interval_s = std::chrono::duration<double>(interval).count();
  auto next_report = run_start + interval;
  uint64_t last_out = 0;
  while (control.ended() < task_ptrs.size()) {
    uint32_t ticket = main_parker.Prepare();
    if (g_interrupted.load() != 0) {
      main_parker.Cancel();
      control.Fail(Status::Aborted("interrupted by signal " + std::to_string(g_interrupted.load())));
      g_interrupted.store(0);
    }
    if (g_dump.exchange(false)) {
      // kill -USR1: every task prints its state, the coordinator its pending checkpoints.
      fputs(coordinator->Describe().c_str(), stderr);
      for (Task* t : task_ptrs) t->Dump();
    }
    if (Clock::now() >= next_report) {
      main_parker.Cancel();
      uint64_t in, out;
      sum_records(&in, &out);
      CheckpointStats cs = coordinator->stats();
      if (opt.progress)
        fprintf(stderr, "cairn: %6.1fs  source records %12" PRIu64 "  sink records %12" PRIu64 "  (%.2fM/s)  checkpoints %" PRIu64
                        " (last %" PRId64 " ms)\n",
                SecondsSince(run_start), in, out, static_cast<double>(out - last_out) / 1e6 / interval_s, cs.completed,
                cs.last_duration_ms);
      last_out = out;
      next_report += interval;
      continue;
    }
    if (control.ended() >= task_ptrs.size()) {
      main_parker.Cancel();
      break;
    }
    main_parker.Park(ticket, std::min(next_report, Clock::now() + std::chrono::milliseconds(100)));
  }
  for (auto& th : threads) th.join();
  summary->seconds = SecondsSince(run_start);
  coordinator->Stop();
  persister.Stop();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGUSR1, &old_usr1, nullptr);

  sum_records(&summary->source_records, &summary->sink_records);
  summary->checkpoints = coordinator->stats();
  Status s = control.status();
  if (s.ok() && !coordinator->finished()) s = Status::Internal("tasks ended before the final checkpoint completed");
  if (!s.ok()) return s;
  for (Task* t : task_ptrs)
    for (auto& c : t->chain())
      if (const auto* keyed = dynamic_cast<const KeyedSummary*>(c.op.get())) keyed->TopKeys(10, &summary->top_keys);
  std::sort(summary->top_keys.begin(), summary->top_keys.end(),
            [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  if (summary->top_keys.size() > 10) summary->top_keys.resize(10);
  return Status::OK();
}

}  // namespace cairn
