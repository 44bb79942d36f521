// RunJob as a sequence of named steps: pre-flight (nothing on disk changes), taking
// checkpoint.dir, deploy, run, summary. What each step does in detail is in restore.h and
// deploy.h; this file holds the steps' order, the job's failure collector, and the run loop.
#include "engine/runtime/job_runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <filesystem>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>

#include "engine/base/file_util.h"
#include "engine/base/mutex.h"
#include "engine/checkpoint/snapshot_persister.h"
#include "engine/dataflow/operator_capabilities.h"
#include "engine/runtime/checkpoint_dir_lock.h"
#include "engine/runtime/deploy.h"
#include "engine/runtime/loopback_workers.h"
#include "engine/runtime/execution_plan.h"
#include "engine/runtime/restore.h"
#include "engine/runtime/task.h"
#include "engine/runtime/test_hooks.h"
#include "state/checkpoint_layout.h"
#include "state/checkpoint_store.h"
#include "state/state_backend.h"

namespace cairn {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kPersisterThreads = 2;

std::atomic<int> g_interrupted{0};  // the signal that cancelled the job; RunTasks acts on it once
std::atomic<bool> g_stop_restore{false};  // set with it, and stays set: stops a restore in progress
std::atomic<bool> g_dump{false};
extern "C" void OnInterrupt(int sig) {
  g_interrupted.store(sig);
  g_stop_restore.store(true);
}
extern "C" void OnDump(int) { g_dump.store(true); }

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// An informational note (RunOptions::info).
void Info(const RunOptions& opt, const std::string& note) {
  if (opt.info) opt.info(note);
  else fprintf(stderr, "cairn: %s\n", note.c_str());
}

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

  void Fail(const Status& s) EXCLUDES(mu_) {
    {
      MutexLock l(&mu_);
      if (!status_.ok()) return;
      status_ = s;
    }
    for (Channel* c : channels_) c->Cancel();
    for (Task* t : tasks_) t->Cancel();
    if (main_ != nullptr) main_->Unpark();
  }
  Status status() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return status_;
  }
  void TaskEnded() {
    ended_.fetch_add(1);
    if (main_ != nullptr) main_->Unpark();
  }
  size_t ended() const { return ended_.load(); }

 private:
  Mutex mu_;
  Status status_ GUARDED_BY(mu_);
  // Set before the tasks start (SetParties, set_coordinator), read-only afterwards.
  std::vector<Task*> tasks_;
  std::vector<Channel*> channels_;
  Parker* main_ = nullptr;
  CheckpointCoordinator* coordinator_ = nullptr;
  std::atomic<size_t> ended_{0};
};

// SIGINT and SIGTERM cancel the job, SIGUSR1 asks for a dump, from Install() until Restore(),
// which puts the previous handlers back.
class SignalHandlers {
 public:
  void Install() {
    g_interrupted.store(0);
    g_stop_restore.store(false);
    struct sigaction sa {};
    sa.sa_handler = OnInterrupt;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    struct sigaction sd {};
    sd.sa_handler = OnDump;
    sigaction(SIGUSR1, &sd, &old_usr1_);
  }
  void Restore() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGUSR1, &old_usr1_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {}, old_usr1_ {};
};

// The keys in the keyed state of every subtask.
size_t KeyCount(const std::vector<Task*>& tasks) {
  size_t keys = 0;
  for (Task* t : tasks)
    for (auto& c : t->chain())
      if (c.keyed_backend != nullptr) {
        keys += c.keyed_backend->size();
      } else if (c.keyed_state != nullptr) {
        keys += c.keyed_state->size();
      }
  return keys;
}

// "Sink records": what the sinks consumed; a job without sinks (a cycle) counts what its
// non-source tasks consumed instead.
bool HasSinks(const std::vector<Task*>& tasks) {
  bool has_sinks = false;
  for (Task* t : tasks) has_sinks |= !t->output_gate()->has_outputs();
  return has_sinks;
}

void CountRecords(const std::vector<Task*>& tasks, bool has_sinks, uint64_t* source_records, uint64_t* sink_records) {
  *source_records = *sink_records = 0;
  for (Task* t : tasks) {
    if (t->is_source()) *source_records += t->records_in();
    if (has_sinks && !t->output_gate()->has_outputs()) *sink_records += t->records_out();
    if (!has_sinks && !t->is_source()) *sink_records += t->records_in();
  }
}

// Runs one thread per task until every task has ended, meanwhile answering signals (a cancel
// becomes the job's failure) and reporting progress once per interval. Returns the seconds
// from the start of the first thread to the end of the last.
double RunTasks(const std::vector<Task*>& tasks, CheckpointCoordinator* coordinator, JobControl* control,
                Parker* main_parker, const RunOptions& opt, bool* interrupted) {
  const auto run_start = Clock::now();
  std::vector<std::thread> threads;
  for (Task* t : tasks)
    threads.emplace_back([t, control] {
      t->Run();
      control->TaskEnded();
    });
  coordinator->Start();

  const bool has_sinks = HasSinks(tasks);
  const auto interval = std::max(opt.progress_interval, std::chrono::milliseconds(1));
  const double interval_s = std::chrono::duration<double>(interval).count();
  auto next_report = run_start + interval;
  uint64_t last_out = 0;
  while (control->ended() < tasks.size()) {
    uint32_t ticket = main_parker->Prepare();
    if (g_interrupted.load() != 0) {
      main_parker->Cancel();
      // The job's status stays its first failure when it had already failed; either way it is
      // not restarted: a cancel is never restarted.
      control->Fail(Status::Aborted("interrupted by signal " + std::to_string(g_interrupted.load())));
      *interrupted = true;
      g_interrupted.store(0);
    }
    if (g_dump.exchange(false)) {
      // kill -USR1: every task prints its state, the coordinator its pending checkpoints.
      fputs(coordinator->Describe().c_str(), stderr);
      for (Task* t : tasks) t->Dump();
    }
    if (Clock::now() >= next_report) {
      main_parker->Cancel();
      RunProgress p;
      CountRecords(tasks, has_sinks, &p.source_records, &p.sink_records);
      p.checkpoints = coordinator->stats();
      p.seconds = SecondsSince(run_start);
      p.sink_records_in_interval = p.sink_records - last_out;
      p.interval_seconds = interval_s;
      if (opt.progress) opt.progress(p);
      last_out = p.sink_records;
      next_report += interval;
      continue;
    }
    if (control->ended() >= tasks.size()) {
      main_parker->Cancel();
      break;
    }
    main_parker->Park(ticket, std::min(next_report, Clock::now() + std::chrono::milliseconds(100)));
  }
  for (auto& th : threads) th.join();
  return SecondsSince(run_start);
}

// The summary of a job that ended: its records, checkpoints and, once it succeeded, the
// largest keys of its keyed operators.
void CollectRecordsAndCheckpoints(const std::vector<Task*>& tasks, const CheckpointCoordinator& coordinator,
                                  RunSummary* summary) {
  summary->has_sinks = HasSinks(tasks);
  CountRecords(tasks, summary->has_sinks, &summary->source_records, &summary->sink_records);
  summary->checkpoints = coordinator.stats();
}

void CollectSkipped(const std::vector<Task*>& tasks, RunSummary* summary) {
  for (Task* t : tasks)
    for (auto& c : t->chain())
      if (const auto* sk = dynamic_cast<const SkippedRecords*>(c.op.get())) {
        summary->counts_skipped |= sk->counts_skipped();
        summary->records_skipped += sk->records_skipped();
      }
  for (Task* t : tasks)
    for (auto& c : t->chain())
      if (const auto* late = dynamic_cast<const LateRecords*>(c.op.get())) {
        summary->counts_late = true;
        summary->records_late += late->records_late();
      }
}

void CollectTopKeys(const std::vector<Task*>& tasks, RunSummary* summary) {
  for (Task* t : tasks)
    for (auto& c : t->chain())
      if (const auto* keyed = dynamic_cast<const KeyedSummary*>(c.op.get())) keyed->TopKeys(RunSummary::kTopKeys, &summary->top_keys);
  KeepTopKeys(RunSummary::kTopKeys, &summary->top_keys);
}

int64_t WallMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// CAIRN_LOOPBACK_WORKERS=<n>: run the tasks as if on n workers, the channels between them over
// loopback TCP (engine/runtime/loopback_workers.h). 0 or unset: every channel in memory. Test-only.
Status ParseLoopbackWorkers(uint32_t* n) {
  *n = 0;
  const char* env = getenv("CAIRN_LOOPBACK_WORKERS");
  if (env == nullptr || *env == '\0') return Status::OK();
  char* end = nullptr;
  const unsigned long x = std::strtoul(env, &end, 10);
  if (*end != '\0' || x > 64 || env[0] == '-')
    return Status::InvalidArgument(std::string("CAIRN_LOOPBACK_WORKERS=") + env +
                                   ": expected a number of workers in 0..64 (docs/scale-out.md)");
  *n = static_cast<uint32_t>(x);
  return Status::OK();
}

// One attempt's tasks in this process.
class RunningJobImpl : public CoordinatedJob {
 public:
  RunningJobImpl(const JobSpec& spec, std::vector<Task*> tasks, CheckpointCoordinator* coordinator,
                 CheckpointId restored_from, std::string restored_path, uint32_t restarts, uint32_t restores)
      : CoordinatedJob(spec, coordinator, restored_from, std::move(restored_path), restarts, restores),
        tasks_(std::move(tasks)) {}
  std::vector<TaskView> Tasks() const override {
    std::vector<TaskView> out;
    for (Task* t : tasks_) {
      const int64_t wm = t->watermark();
      out.push_back(TaskView{t->name(), t->is_source(), t->records_in(), t->records_out(), t->blocked_ns(),
                             wm != kMinWatermark && wm != kMaxWatermark, wm});
    }
    return out;
  }

 private:
  const std::vector<Task*> tasks_;
};

}  // namespace

CoordinatedJob::CoordinatedJob(const JobSpec& spec, CheckpointCoordinator* coordinator, CheckpointId restored_from,
                               std::string restored_path, uint32_t restarts, uint32_t restores)
    : spec_(spec),
      restarts_(restarts),
      restores_(restores),
      coordinator_(coordinator),
      restored_from_(restored_from),
      restored_path_(std::move(restored_path)),
      start_ms_(WallMillisNow()) {}

std::string CoordinatedJob::state() const {
  const char* s = state_.load();
  if (s != nullptr) return s;
  if (stopping_.load() || coordinator_->finished()) return "finishing";
  return "running";
}

std::string CoordinatedJob::default_savepoint_dir() const {
  return spec_.checkpoint.savepoint_dir.empty() ? spec_.checkpoint.dir + "/savepoints" : spec_.checkpoint.savepoint_dir;
}

void CoordinatedJob::RequestSavepoint(SavepointRequest r) {
  if (r.then != SavepointRequest::Then::kContinue) stopping_.store(true);
  coordinator_->RequestSavepoint(std::move(r));
}

Status RunJob(const JobSpec& spec, const RunOptions& opt, RunSummary* summary) {
  // Test-only hooks (docs/faults.md): CAIRN_SLOW_SUBTASK, CAIRN_INJECT_FAILURE.
  TestHooks hooks;
  CAIRN_RETURN_IF_ERROR(ParseTestHooks(spec, &hooks));
  const auto start = Clock::now();
  const ExecutionPlan plan = ExecutionPlan::Build(spec);
  const std::string& ckdir = spec.checkpoint.dir;
  StateBackendOptions state_options = spec.state;
  state_options.shared_dir = std::filesystem::path(SharedDir(ckdir)).lexically_normal().string();
  const std::unique_ptr<StateBackend> backend = NewStateBackend(state_options);
  if (opt.fresh && !opt.restore.empty())
    return Status::InvalidArgument("--fresh starts over and --restore resumes: give one of them");

  // 1. Pre-flight: everything that can be checked before the job touches the disk.
  std::vector<FileSink> file_sinks;
  CAIRN_RETURN_IF_ERROR(PreflightOperators(spec, &file_sinks));
  CAIRN_RETURN_IF_ERROR(CheckUsableDir(ckdir, "checkpoint.dir " + ckdir));
  // Lock checkpoint.dir before choosing the checkpoint to restore, so that no other job can
  // retire it meanwhile (a directory that does not exist holds nothing to choose).
  CheckpointDirLock lock;
  if (IsDirectory(ckdir)) CAIRN_RETURN_IF_ERROR(lock.Acquire(ckdir));
  RestorePlan restore;
  CAIRN_RETURN_IF_ERROR(PrepareRestore(spec, plan, opt.restore, *backend, &restore));
  // A start without --restore must not silently produce everything again next to what earlier
  // runs committed.
  EarlierRuns earlier;
  if (opt.restore.empty()) CAIRN_RETURN_IF_ERROR(FindEarlierRuns(spec, file_sinks, &earlier));
  if (restore.active) {
    summary->restored_from = restore.checkpoint.metadata.id;
    Info(opt, "restoring from checkpoint " + std::to_string(restore.checkpoint.metadata.id) + " (" +
                  restore.checkpoint.path + ")");
  }
  std::vector<SubtaskChain> subtasks;
  CAIRN_RETURN_IF_ERROR(InstantiateOperators(spec, plan, restore, &subtasks));
  // Checked after the job's own inputs, so that those errors are named first.
  CAIRN_RETURN_IF_ERROR(CheckFreshStart(earlier, opt.fresh));

  // 2. From here on the job owns checkpoint.dir.
  CheckpointStore store(ckdir);
  CAIRN_RETURN_IF_ERROR(CreateDirs(ckdir));
  if (!lock.held()) CAIRN_RETURN_IF_ERROR(lock.Acquire(ckdir));
  lock.set_owned();
  CAIRN_RETURN_IF_ERROR(store.RemoveIncomplete());
  CAIRN_RETURN_IF_ERROR(SupersedeAbandoned(restore, earlier, opt.fresh, file_sinks, store));
  const std::string work_dir = WorkDir(ckdir, getpid());
  CAIRN_RETURN_IF_ERROR(CreateDirs(work_dir));
  struct WorkDirCleanup {
    std::string dir;
    // Best effort: the next start removes the working directories of dead runs.
    ~WorkDirCleanup() { RemoveAll(dir).IgnoreError(); }
  } work_cleanup{work_dir};

  // Test-only: the channels between tasks over loopback TCP (docs/scale-out.md).
  uint32_t loopback_workers = 0;
  CAIRN_RETURN_IF_ERROR(ParseLoopbackWorkers(&loopback_workers));

  // SIGINT/SIGTERM cancel and SIGUSR1 dumps from here on; the old handlers are back on return.
  struct SignalScope {
    SignalHandlers h;
    SignalScope() { h.Install(); }
    ~SignalScope() { h.Restore(); }
  } signals;

  // 3.-5., once per attempt: deploy, run, collect. After a task failure, with a restart
  // strategy and attempts left, the attempt's tasks are torn down, and the next one restores
  // the latest completed checkpoint in this process.
  const bool first_restored = restore.active;
  std::string restart_from = restore.active ? restore.checkpoint.path : "";
  for (uint32_t attempt = 0;; ++attempt) {
    if (attempt > 0) {
      CAIRN_RETURN_IF_ERROR(store.RemoveIncomplete());  // the failed attempt's checkpoints in progress, _work/
      CAIRN_RETURN_IF_ERROR(CreateDirs(work_dir));
      restore = RestorePlan();
      // The newest checkpoint the failed attempt completed; when it completed none, what that
      // attempt started from (the same checkpoint or savepoint, or the beginning).
      CAIRN_RETURN_IF_ERROR(PrepareRestore(spec, plan, restart_from, *backend, &restore));
      summary->restored_from = restore.active ? restore.checkpoint.metadata.id : 0;
      if (restore.active) {
        Info(opt, "restart " + std::to_string(attempt) + " of " + std::to_string(spec.restart.attempts) +
                      ": restoring from checkpoint " + std::to_string(restore.checkpoint.metadata.id) + " (" +
                      restore.checkpoint.path + ")");
      } else {
        Info(opt, "restart " + std::to_string(attempt) + " of " + std::to_string(spec.restart.attempts) +
                      ": starting from the beginning (no checkpoint completed yet)");
      }
      subtasks.clear();
      CAIRN_RETURN_IF_ERROR(InstantiateOperators(spec, plan, restore, &subtasks));
    }
    const auto attempt_start = Clock::now();
    // 3. Deploy: keyed state, tasks, channels, coordinator.
    // A SIGINT/SIGTERM meanwhile stops the restore in progress: the job is cancelled before
    // any task starts (its working state removed, as on any return).
    Status opened = OpenSubtasks(spec, *backend, restore, work_dir, &subtasks, &g_stop_restore);
    if (!opened.ok() && g_stop_restore.load())
      return Status::Aborted("interrupted by signal " + std::to_string(g_interrupted.load()) +
                             (restore.active ? " during the restore of checkpoint " +
                                                   std::to_string(restore.checkpoint.metadata.id) + " (" +
                                                   restore.checkpoint.path + ")"
                                             : " before the job started"));
    CAIRN_RETURN_IF_ERROR(opened);
    JobControl control;
    std::unique_ptr<CheckpointCoordinator> coordinator;
    SnapshotPersister persister(
        kPersisterThreads, [&coordinator](TaskAck ack) { coordinator->Acknowledge(std::move(ack)); },
        spec.checkpoint.inline_state_threshold);
    Deployment job;
    std::unique_ptr<LoopbackWorkers> loopback;  // declared after `job`: stopped before the channels go
    if (loopback_workers > 0)
      CAIRN_RETURN_IF_ERROR(
          LoopbackWorkers::Create(plan, loopback_workers, [&control](const Status& f) { control.Fail(f); }, &loopback));
    BuildTasks(spec, plan, std::move(subtasks), &restore, &persister, &control, &control, &job,
               loopback ? loopback->maker() : ChannelMaker());
    if (loopback) CAIRN_RETURN_IF_ERROR(loopback->Start());
    const std::vector<Task*> tasks = job.task_ptrs();
    ApplyTestHooks(hooks, attempt, tasks);
    Parker main_parker;
    control.SetParties(tasks, job.channel_ptrs(), &main_parker);
    const CheckpointId first_id = std::max(store.MaxId(), restore.active ? restore.checkpoint.metadata.id : 0) + 1;
    coordinator = std::make_unique<CheckpointCoordinator>(spec.name, spec.max_parallelism, spec.checkpoint, &store,
                                                          std::vector<CheckpointParticipant*>(tasks.begin(), tasks.end()),
                                                          first_id, &control);
    coordinator->SetAbortHandler([&persister](CheckpointId id) { persister.Abort(id); });
    if (opt.info) coordinator->SetInfoLog(opt.info);
    control.set_coordinator(coordinator.get());
    summary->restore_seconds = SecondsSince(attempt == 0 ? start : attempt_start);
    summary->restored_keys = restore.active ? KeyCount(tasks) : 0;
    if (restore.active) {
      char secs[32];
      snprintf(secs, sizeof secs, "%.3f", summary->restore_seconds);
      Info(opt, "restored checkpoint " + std::to_string(restore.checkpoint.metadata.id) + " (" +
                    std::to_string(summary->restored_keys) + " keys) in " + secs + " s; processing starts");
    }

    // 4. Run.
    RunningJobImpl running(spec, tasks, coordinator.get(), restore.active ? restore.checkpoint.metadata.id : 0,
                           restore.active ? restore.checkpoint.path : "", attempt, attempt + (first_restored ? 1 : 0));
    if (opt.on_start) opt.on_start(&running);
    bool interrupted = false;
    summary->seconds = RunTasks(tasks, coordinator.get(), &control, &main_parker, opt, &interrupted);
    coordinator->Stop();
    persister.Stop();

    // 5. Summary.
    CollectRecordsAndCheckpoints(tasks, *coordinator, summary);
    CollectSkipped(tasks, summary);
    summary->restarts = attempt;
    summary->stopped_with_savepoint = coordinator->stop_savepoint();
    Status s = control.status();
    if (s.ok() && !coordinator->finished()) s = Status::Internal("tasks ended before the final checkpoint completed");
    const bool restart = !s.ok() && !interrupted && spec.restart.strategy != RestartConfig::Strategy::kNone &&
                         attempt < spec.restart.attempts;
    if (summary->checkpoints.completed > 0) restart_from = "latest";
    running.set_state(s.ok() ? "finished" : restart ? "restarting" : interrupted ? "cancelled" : "failed");
    if (opt.on_end) opt.on_end(&running);
    if (s.ok()) {
      CollectTopKeys(tasks, summary);
      return Status::OK();
    }
    if (!restart) {
      if (!interrupted && spec.restart.strategy != RestartConfig::Strategy::kNone)
        return s.WithContext("after " + std::to_string(attempt) + " restarts (restart.attempts = " +
                             std::to_string(spec.restart.attempts) + ")");
      return s;
    }
    // The wait before the next attempt; a signal meanwhile cancels the job.
    Millis delay = spec.restart.delay;
    if (spec.restart.strategy == RestartConfig::Strategy::kExponentialDelay)
      for (uint32_t i = 0; i < attempt && delay < spec.restart.max_delay; ++i) delay *= 2;
    if (spec.restart.strategy == RestartConfig::Strategy::kExponentialDelay) delay = std::min(delay, spec.restart.max_delay);
    fprintf(stderr, "cairn: job failed: %s; restarting in %lld ms (restart %u of %u, restart.strategy)\n",
            s.message().c_str(), static_cast<long long>(delay.count()), attempt + 1, spec.restart.attempts);
    const auto until = Clock::now() + delay;
    Parker waiter;
    while (Clock::now() < until) {
      if (g_interrupted.load() != 0)
        return s.WithContext("interrupted by signal " + std::to_string(g_interrupted.load()) + " before a restart");
      uint32_t t = waiter.Prepare();
      waiter.Park(t, std::min(until, Clock::now() + std::chrono::milliseconds(100)));
    }
    // The attempt's tasks, channels, coordinator and persister end with this scope.
  }
}

}  // namespace cairn
