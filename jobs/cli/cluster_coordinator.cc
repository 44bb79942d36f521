// `cairn coordinator` and `cairn run --local-workers N`: pre-flight, the workers' control
// connections, deploy by generation, the CheckpointCoordinator over the network, failure and
// restart (jobs/cli/cluster.h is the contract).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "engine/base/file_util.h"
#include "engine/base/mutex.h"
#include "engine/checkpoint/checkpoint_coordinator.h"
#include "engine/dataflow/operator_capabilities.h"
#include "engine/runtime/checkpoint_dir_lock.h"
#include "engine/runtime/deploy.h"
#include "engine/runtime/execution_plan.h"
#include "engine/runtime/restore.h"
#include "engine/runtime/test_hooks.h"
#include "engine/runtime/worker_assignment.h"
#include "jobs/cli/cluster.h"
#include "jobs/cli/control_link.h"
#include "jobs/cli/progress.h"
#include "jobs/cli/rest_server.h"
#include "jobs/cli/run_summary.h"
#include "engine/runtime/job_runner.h"
#include "jobs/job_loader.h"
#include "jobs/registry.h"
#include "state/checkpoint_layout.h"
#include "state/checkpoint_store.h"
#include "state/state_backend.h"

namespace cairn {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::atomic<int> g_signal{0};
extern "C" void OnCoordinatorSignal(int sig) { g_signal.store(sig); }

void Note(const CoordinatorOptions& opt, const std::string& s) {
  if (!opt.quiet) fprintf(stderr, "cairn: %s\n", s.c_str());
}

// One control connection (a worker, registered or not yet).
struct Conn {
  std::unique_ptr<ControlLink> link;
  std::string addr;  // the worker's data-plane address, once registered
  int64_t pid = 0;
  bool registered = false;
  bool alive = true;
  Clock::time_point last_seen;
  std::thread reader;
};

struct Event {
  enum class Kind { kConnected, kMessage, kLost, kJobFailed } kind;
  size_t conn = 0;
  json m;
  Status status;
};

// The events of every reader thread, the acceptor, and the checkpoint coordinator, for the
// main thread.
class Events {
 public:
  void Push(Event e) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    q_.push_back(std::move(e));
    cv_.SignalAll();
  }
  // False when `deadline` passed first.
  bool Pop(Event* e, Clock::time_point deadline) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    while (q_.empty())
      if (!cv_.WaitUntil(&mu_, deadline) && q_.empty()) return false;
    *e = std::move(q_.front());
    q_.pop_front();
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<Event> q_ GUARDED_BY(mu_);
};

// A task of the job as the CheckpointCoordinator sees it: its calls go to the task's worker,
// tagged with the generation.
class RemoteTask : public CheckpointParticipant {
 public:
  RemoteTask(int index, std::string name, bool source, uint64_t gen, ControlLink* link)
      : index_(index), name_(std::move(name)), source_(source), gen_(gen), link_(link) {}
  const std::string& name() const override { return name_; }
  bool is_source() const override { return source_; }
  void TriggerCheckpoint(const Barrier& b) override { Send("trigger", {{"barrier", BarrierToJson(b)}}); }
  void NotifyCheckpointComplete(CheckpointId id) override { Send("notify", {{"id", id}}); }
  void Terminate() override { Send("terminate", json::object()); }
  void Drain() override { Send("drain", json::object()); }

 private:
  void Send(const char* type, json m) {
    m["type"] = type;
    m["gen"] = gen_;
    m["task"] = index_;
    link_->Send(m).IgnoreError();  // a lost worker is its reader's to report
  }
  const int index_;
  const std::string name_;
  const bool source_;
  const uint64_t gen_;
  ControlLink* const link_;
};

class JobFailures : public CheckpointCoordinator::Listener {
 public:
  explicit JobFailures(Events* ev) : ev_(ev) {}
  void JobFailed(const Status& s) override { ev_->Push(Event{Event::Kind::kJobFailed, 0, {}, s}); }

 private:
  Events* ev_;
};

// The generation's tasks as the REST API and the progress lines see them: the counters of
// each worker's latest heartbeat (and of its task_ended message, the final ones). Written by
// the main thread, read by the REST server's threads.
class TaskTable {
 public:
  void Reset(std::vector<TaskView> tasks, std::vector<bool> sinks) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    tasks_ = std::move(tasks);
    sinks_ = std::move(sinks);
  }
  // One task's counters, from a heartbeat's "tasks" entry or a task_ended message.
  void Update(const json& t) EXCLUDES(mu_) {
    if (!t.is_object()) return;
    const int i = t.value("task", -1);
    MutexLock l(&mu_);
    if (i < 0 || static_cast<size_t>(i) >= tasks_.size()) return;
    TaskView& v = tasks_[static_cast<size_t>(i)];
    v.records_in = t.value("records_in", v.records_in);
    v.records_out = t.value("records_out", v.records_out);
    v.blocked_ns = t.value("blocked_ns", v.blocked_ns);
    if (t.contains("watermark") && t["watermark"].is_number_integer()) {
      v.has_watermark = true;
      v.watermark = t["watermark"].get<int64_t>();
    }
  }
  std::vector<TaskView> Tasks() const EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return tasks_;
  }
  // As RunJob's progress: sources' records in; sinks' records out (a job without sinks: the
  // records its non-source tasks read).
  void Count(uint64_t* source_records, uint64_t* sink_records) const EXCLUDES(mu_) {
    MutexLock l(&mu_);
    *source_records = *sink_records = 0;
    const bool has_sinks = std::find(sinks_.begin(), sinks_.end(), true) != sinks_.end();
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (tasks_[i].source) *source_records += tasks_[i].records_in;
      if (has_sinks && sinks_[i]) *sink_records += tasks_[i].records_out;
      if (!has_sinks && !tasks_[i].source) *sink_records += tasks_[i].records_in;
    }
  }

 private:
  mutable Mutex mu_;
  std::vector<TaskView> tasks_ GUARDED_BY(mu_);
  std::vector<bool> sinks_ GUARDED_BY(mu_);
};

// One generation as the REST server sees it (jobs/cli/rest_server.h): the coordinator's
// CheckpointCoordinator and the workers' counters.
class ClusterJob : public CoordinatedJob {
 public:
  ClusterJob(const JobSpec& spec, CheckpointCoordinator* coordinator, const TaskTable* table, CheckpointId restored_from,
             std::string restored_path, uint32_t restarts, uint32_t restores)
      : CoordinatedJob(spec, coordinator, restored_from, std::move(restored_path), restarts, restores), table_(table) {}
  std::vector<TaskView> Tasks() const override { return table_->Tasks(); }

 private:
  const TaskTable* const table_;
};

// --local-workers: the worker processes, each restarted when it dies while the job runs.
class Supervisor {
 public:
  Supervisor(std::string coordinator, uint32_t n) : coordinator_(std::move(coordinator)), n_(n) {}
  ~Supervisor() { Stop(); }
  Status Start() {
    for (uint32_t i = 0; i < n_; ++i) {
      pid_t pid = Spawn();
      if (pid < 0) return Status::IOError(std::string("cannot start a worker process: ") + strerror(errno));
      watchers_.emplace_back([this, pid] { Watch(pid); });
    }
    return Status::OK();
  }
  void StopRestarting() { stopping_.store(true); }
  // Lets the workers in `registered` end (they were told to shut down, or will see the
  // connection close), and kills those still there after `grace`. A worker that never
  // registered holds no task and has no coordinator left to reach (it would retry its connect
  // for --heartbeat-timeout): it is killed at once.
  void Stop(const std::set<int64_t>& registered = {}, std::chrono::milliseconds grace = std::chrono::milliseconds(10000)) {
    stopping_.store(true);
    const auto until = Clock::now() + grace;
    {
      MutexLock l(&mu_);
      for (pid_t p : pids_)
        if (registered.count(p) == 0) kill(p, SIGKILL);
      while (!pids_.empty() && cv_.WaitUntil(&mu_, until)) {
      }
      for (pid_t p : pids_) kill(p, SIGKILL);
    }
    for (auto& t : watchers_) t.join();
    watchers_.clear();
  }

 private:
  pid_t Spawn() {
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) {
      if (pid > 0) {
        MutexLock l(&mu_);
        pids_.push_back(pid);
      }
      return pid;
    }
    // The child: dies with the thread that started it (which lives as long as the child), and
    // holds none of the coordinator's descriptors (the checkpoint.dir lock, the listener).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
      for (int fd = 3; fd < 4096; ++fd) close(fd);
    const std::string c = coordinator_;
    execl("/proc/self/exe", "cairn", "worker", "--coordinator", c.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  void Watch(pid_t pid) {
    for (;;) {
      int st = 0;
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      {
        MutexLock l(&mu_);
        pids_.erase(std::remove(pids_.begin(), pids_.end(), pid), pids_.end());
        cv_.SignalAll();
      }
      if (stopping_.load()) return;
      fprintf(stderr, "cairn: worker process %d %s; starting another\n", static_cast<int>(pid),
              WIFSIGNALED(st) ? ("killed by signal " + std::to_string(WTERMSIG(st))).c_str()
                              : ("exited with " + std::to_string(WEXITSTATUS(st))).c_str());
      pid = Spawn();
      if (pid < 0) return;
    }
  }

  const std::string coordinator_;
  const uint32_t n_;
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> watchers_;
  Mutex mu_;
  CondVar cv_;
  std::vector<pid_t> pids_ GUARDED_BY(mu_);
};

class Coordinator {
 public:
  explicit Coordinator(const CoordinatorOptions& opt) : opt_(opt), failures_(&events_) {}
  ~Coordinator() {
    listener_.Close();
    if (acceptor_.joinable()) acceptor_.join();
    for (auto& c : conns_) {
      c->link->Close();
      if (c->reader.joinable()) c->reader.join();
    }
  }

  // Everything `cairn run` checks before the job touches the disk, then checkpoint.dir taken.
  Status Prepare() {
    net::Endpoint at;
    CAIRN_RETURN_IF_ERROR(net::ParseEndpoint(opt_.listen, "--listen", &at));
    if (opt_.workers == 0) return Status::InvalidArgument("--workers needs a number of workers >= 1");
    std::ifstream f(opt_.job_file);
    if (!f) return Status::NotFound("job file " + opt_.job_file + ": cannot be read");
    std::stringstream ss;
    ss << f.rdbuf();
    yaml_ = ss.str();
    CAIRN_RETURN_IF_ERROR(LoadJobFromString(yaml_, opt_.job_file, opt_.sets, &spec_));
    plan_ = ExecutionPlan::Build(spec_);
    WorkerAssignment a;
    CAIRN_RETURN_IF_ERROR(AssignWorkers(plan_, opt_.workers, &a));
    CAIRN_RETURN_IF_ERROR(CheckRebalanceEdges(spec_, plan_, a));
    // The test-only hooks (docs/faults.md) that the workers will apply: bad values exit 2 here.
    TestHooks hooks;
    CAIRN_RETURN_IF_ERROR(ParseTestHooks(spec_, &hooks));
    if (opt_.fresh && !opt_.restore.empty())
      return Status::InvalidArgument("--fresh starts over and --restore resumes: give one of them");
    const std::string& ckdir = spec_.checkpoint.dir;
    StateBackendOptions state_options = spec_.state;
    state_options.shared_dir = std::filesystem::path(SharedDir(ckdir)).lexically_normal().string();
    backend_ = NewStateBackend(state_options);
    std::vector<FileSink> file_sinks;
    CAIRN_RETURN_IF_ERROR(PreflightOperators(spec_, &file_sinks));
    CAIRN_RETURN_IF_ERROR(CheckUsableDir(ckdir, "checkpoint.dir " + ckdir));
    if (IsDirectory(ckdir)) CAIRN_RETURN_IF_ERROR(lock_.Acquire(ckdir));
    RestorePlan restore;
    CAIRN_RETURN_IF_ERROR(PrepareRestore(spec_, plan_, opt_.restore, *backend_, &restore));
    EarlierRuns earlier;
    if (opt_.restore.empty()) CAIRN_RETURN_IF_ERROR(FindEarlierRuns(spec_, file_sinks, &earlier));
    {
      std::vector<SubtaskChain> check;  // the sources' inputs, as the workers will open them
      CAIRN_RETURN_IF_ERROR(InstantiateOperators(spec_, plan_, restore, &check));
    }
    CAIRN_RETURN_IF_ERROR(CheckFreshStart(earlier, opt_.fresh));
    restore_ = std::move(restore);
    earlier_ = std::move(earlier);
    file_sinks_ = std::move(file_sinks);
    return Status::OK();
  }

  // From here on the job owns checkpoint.dir (after Prepare and Listen).
  Status TakeCheckpointDir() {
    const std::string& ckdir = spec_.checkpoint.dir;
    const RestorePlan& restore = restore_;
    store_ = std::make_unique<CheckpointStore>(ckdir);
    CAIRN_RETURN_IF_ERROR(CreateDirs(ckdir));
    if (!lock_.held()) CAIRN_RETURN_IF_ERROR(lock_.Acquire(ckdir));
    lock_.set_owned();
    CAIRN_RETURN_IF_ERROR(store_->RemoveIncomplete());
    CAIRN_RETURN_IF_ERROR(SupersedeAbandoned(restore, earlier_, opt_.fresh, file_sinks_, *store_));
    if (restore.active) {
      restore_path_ = restore.checkpoint.path;
      restore_id_ = restore.checkpoint.metadata.id;
      first_restored_ = true;
      Note(opt_, "restoring from checkpoint " + std::to_string(restore_id_) + " (" + restore_path_ + ")");
    }
    return Status::OK();
  }

  Status Listen() {
    net::Endpoint at;
    CAIRN_RETURN_IF_ERROR(net::ParseEndpoint(opt_.listen, "--listen", &at));
    CAIRN_RETURN_IF_ERROR(listener_.Listen(at));
    address_ = at.host + ":" + std::to_string(listener_.port());
    acceptor_ = std::thread([this] {
      for (;;) {
        std::unique_ptr<ControlLink> link;
        if (!listener_.Accept(&link).ok()) return;
        Event e{Event::Kind::kConnected, 0, {}, Status::OK()};
        e.m = json::object();
        {
          MutexLock l(&pending_links_mu_);
          pending_links_.push_back(std::move(link));
        }
        events_.Push(std::move(e));
      }
    });
    // Always printed (also with --quiet): with port 0 it is the only way to learn the port.
    fprintf(stderr, "cairn: coordinator listening on %s, waiting for %u workers\n", address_.c_str(), opt_.workers);
    return Status::OK();
  }
  const std::string& address() const { return address_; }
  // The process ids the workers gave when they registered.
  std::set<int64_t> registered_pids() const {
    std::set<int64_t> out;
    for (const auto& c : conns_)
      if (c->registered) out.insert(c->pid);
    return out;
  }
  // --http: the server (started by the caller) that each generation is attached to.
  void set_rest(RestServer* server, std::string url) {
    rest_ = server;
    rest_url_ = std::move(url);
  }

  // The job, generation after generation: the exit code.
  int Run() {
    const auto start = Clock::now();
    uint32_t attempt = 0;
    for (;;) {
      std::vector<size_t> slots;
      attempt_ = attempt;
      Status s = WaitForWorkers(attempt == 0, &slots);
      if (s.ok()) s = RunGeneration(slots);
      if (s.ok()) {
        Shutdown();
        // The summary of `cairn run` (stdout); the counts are of the last generation.
        RunSummary summary;
        summary.seconds = std::chrono::duration<double>(Clock::now() - run_start_).count();
        summary.restored_from = restore_id_;
        summary.source_records = source_records_;
        summary.sink_records = sink_records_;
        summary.has_sinks = sink_records_ > 0 || has_sinks_;
        summary.checkpoints = stats_;
        summary.restarts = attempt;
        summary.top_keys = top_keys_;
        summary.stopped_with_savepoint = stop_savepoint_;
        KeepTopKeys(RunSummary::kTopKeys, &summary.top_keys);
        fputs(FormatSummary(spec_, summary).c_str(), stdout);
        Note(opt_, "job finished in " + std::to_string(std::chrono::duration<double>(Clock::now() - start).count()) +
                       " s on " + std::to_string(slots.size()) + " workers, " + std::to_string(attempt) + " restarts");
        return 0;
      }
      const bool interrupted = g_signal.load() != 0;
      const bool restart = WillRestart(s);
      if (!restart) {
        Shutdown();
        if (!interrupted && spec_.restart.strategy != RestartConfig::Strategy::kNone)
          s = s.WithContext("after " + std::to_string(attempt) + " restarts (restart.attempts = " +
                            std::to_string(spec_.restart.attempts) + ")");
        fprintf(stderr, "cairn: error: %s\n", s.message().c_str());
        return s.ExitCode();
      }
      std::chrono::milliseconds delay = spec_.restart.delay;
      if (spec_.restart.strategy == RestartConfig::Strategy::kExponentialDelay) {
        for (uint32_t i = 0; i < attempt && delay < spec_.restart.max_delay; ++i) delay *= 2;
        delay = std::min(delay, spec_.restart.max_delay);
      }
      fprintf(stderr, "cairn: generation %" PRIu64 " failed: %s; restarting in %lld ms (restart %u of %u, restart.strategy)\n",
              gen_, s.message().c_str(), static_cast<long long>(delay.count()), attempt + 1, spec_.restart.attempts);
      ++attempt;
      Serve(Clock::now() + delay, [] { return false; });
      Status r = PrepareNextRestore();
      if (!r.ok()) {
        Shutdown();
        fprintf(stderr, "cairn: error: %s\n", r.message().c_str());
        return r.ExitCode();
      }
    }
  }

 private:
  // Whether a generation that failed with `s` is deployed again (restart:).
  bool WillRestart(const Status& s) const {
    return g_signal.load() == 0 && !s.IsInvalidArgument() && spec_.restart.strategy != RestartConfig::Strategy::kNone &&
           attempt_ < spec_.restart.attempts;
  }

  // Once per --progress-interval while a generation runs (not with --quiet): the progress line
  // of `cairn run`, from the workers' latest counters.
  void MaybeProgress() {
    if (progress_of_ == nullptr || Clock::now() < next_progress_) return;
    RunProgress p;
    table_.Count(&p.source_records, &p.sink_records);
    p.checkpoints = progress_of_->stats();
    p.seconds = std::chrono::duration<double>(Clock::now() - run_start_).count();
    p.sink_records_in_interval = p.sink_records >= last_progress_sink_ ? p.sink_records - last_progress_sink_ : 0;
    p.interval_seconds = std::chrono::duration<double>(opt_.progress_interval).count();
    PrintProgress(p);
    last_progress_sink_ = p.sink_records;
    next_progress_ += opt_.progress_interval;
  }

  // What a restart restores: the newest completed checkpoint, or what the failed generation
  // started from when none completed since.
  Status PrepareNextRestore() {
    CAIRN_RETURN_IF_ERROR(store_->RemoveIncomplete());
    CompletedCheckpoint latest;
    if (store_->Latest(&latest).ok()) {
      RestorePlan restore;
      CAIRN_RETURN_IF_ERROR(PrepareRestore(spec_, plan_, "latest", *backend_, &restore));
      if (restore.active) {
        restore_path_ = restore.checkpoint.path;
        restore_id_ = restore.checkpoint.metadata.id;
      }
    }
    Note(opt_, restore_path_.empty() ? "restart: starting from the beginning (no checkpoint completed yet)"
                                     : "restart: restoring from checkpoint " + std::to_string(restore_id_) + " (" +
                                           restore_path_ + ")");
    return Status::OK();
  }

  // Handles the events that need no generation (connections, registrations, heartbeats,
  // losses) until `deadline` or until `done()`; hands the others to `other` (dropped when null).
  template <typename Done>
  void Serve(Clock::time_point deadline, Done done, const std::function<void(const Event&)>& other = nullptr) {
    while (!done()) {
      const auto now = Clock::now();
      if (now >= deadline) return;
      if (g_signal.load() != 0 && !other) return;
      MaybeProgress();
      Event e;
      auto wake = std::min(deadline, now + opt_.heartbeat_interval);
      if (progress_of_ != nullptr) wake = std::min(wake, next_progress_);
      if (!events_.Pop(&e, wake)) {
        CheckHeartbeats(other);
        if (other) other(Event{Event::Kind::kMessage, 0, json{{"type", "tick"}, {"gen", gen_}}, Status::OK()});
        continue;
      }
      CheckHeartbeats(other);
      if (e.kind == Event::Kind::kConnected) {
        AdoptLinks();
        continue;
      }
      if (e.kind == Event::Kind::kLost) {
        Conn& c = *conns_[e.conn];
        if (c.alive) {
          c.alive = false;
          c.link->Close();
          if (c.registered) Note(opt_, "worker " + c.addr + " lost: " + e.status.message());
          if (other) other(e);
        }
        continue;
      }
      if (e.kind == Event::Kind::kMessage) {
        Conn& c = *conns_[e.conn];
        if (!c.alive) continue;
        c.last_seen = Clock::now();
        const std::string type = e.m["type"];
        if (type == "register") {
          c.addr = e.m.value("addr", std::string());
          c.pid = e.m.value("pid", int64_t{0});
          net::Endpoint ep;
          if (!net::ParseEndpoint(c.addr, "worker address", &ep).ok()) {
            c.alive = false;
            c.link->Close();
            continue;
          }
          c.registered = true;
          c.link->Send({{"type", "welcome"}, {"gen", gen_},
                        {"heartbeat_interval_ms", opt_.heartbeat_interval.count()},
                        {"heartbeat_timeout_ms", opt_.heartbeat_timeout.count()}})
              .IgnoreError();
          Note(opt_, "worker " + c.addr + " registered (pid " + std::to_string(c.pid) + ")");
          continue;
        }
        if (type == "heartbeat") {
          c.link->Send({{"type", "heartbeat"}, {"gen", e.m["gen"]}, {"seq", e.m.value("seq", uint64_t{0})}})
              .IgnoreError();
          // The worker's task counters, for the REST API and the progress lines.
          if (e.m.value("gen", uint64_t{0}) == gen_ && e.m.contains("tasks") && e.m["tasks"].is_array())
            for (const json& t : e.m["tasks"]) table_.Update(t);
          continue;
        }
      }
      if (other) other(e);
    }
  }

  void AdoptLinks() {
    std::vector<std::unique_ptr<ControlLink>> links;
    {
      MutexLock l(&pending_links_mu_);
      links.swap(pending_links_);
    }
    for (auto& l : links) {
      auto c = std::make_unique<Conn>();
      c->link = std::move(l);
      c->last_seen = Clock::now();
      const size_t id = conns_.size();
      ControlLink* link = c->link.get();
      c->reader = std::thread([this, id, link] {
        for (;;) {
          json m;
          Status s = link->Receive(&m);
          if (!s.ok()) {
            events_.Push(Event{Event::Kind::kLost, id, {}, s});
            return;
          }
          events_.Push(Event{Event::Kind::kMessage, id, std::move(m), Status::OK()});
        }
      });
      conns_.push_back(std::move(c));
    }
  }

  // A worker not heard from for the heartbeat timeout is lost.
  void CheckHeartbeats(const std::function<void(const Event&)>& other) {
    const auto now = Clock::now();
    for (size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = *conns_[i];
      if (!c.alive || now - c.last_seen <= opt_.heartbeat_timeout) continue;
      c.alive = false;
      c.link->Close();
      const Status s = Status::IOError("worker " + (c.addr.empty() ? c.link->peer() : c.addr) + " sent no heartbeat for " +
                                       std::to_string(opt_.heartbeat_timeout.count()) + " ms (--heartbeat-timeout)");
      Note(opt_, s.message());
      if (other) other(Event{Event::Kind::kLost, i, {}, s});
    }
  }

  // The first deploy waits for every worker; a redeploy waits at most the heartbeat timeout,
  // then runs on the workers it has.
  Status WaitForWorkers(bool first, std::vector<size_t>* slots) {
    auto registered = [this] {
      size_t n = 0;
      for (auto& c : conns_) n += c->alive && c->registered;
      return n;
    };
    Serve(first ? Clock::time_point::max() : Clock::now() + opt_.heartbeat_timeout,
          [&] { return registered() >= opt_.workers; });
    if (g_signal.load() != 0) return Status::Aborted("interrupted by signal " + std::to_string(g_signal.load()));
    for (size_t i = 0; i < conns_.size() && slots->size() < opt_.workers; ++i)
      if (conns_[i]->alive && conns_[i]->registered) slots->push_back(i);
    if (slots->empty()) return Status::IOError("no worker registered within --heartbeat-timeout");
    return Status::OK();
  }

  Status RunGeneration(const std::vector<size_t>& slots) {
    ++gen_;
    const uint64_t gen = gen_;
    WorkerAssignment assignment;
    CAIRN_RETURN_IF_ERROR(AssignWorkers(plan_, static_cast<uint32_t>(slots.size()), &assignment));
    CAIRN_RETURN_IF_ERROR(CheckRebalanceEdges(spec_, plan_, assignment));
    json addrs = json::array();
    for (size_t i : slots) addrs.push_back(conns_[i]->addr);
    for (uint32_t w = 0; w < slots.size(); ++w)
      conns_[slots[w]]->link->Send({{"type", "deploy"}, {"gen", gen}, {"yaml", yaml_}, {"name", opt_.job_file},
                                    {"sets", opt_.sets}, {"restore", restore_path_}, {"worker", w}, {"workers", addrs},
                                    {"attempt", attempt_}})
          .IgnoreError();
    Note(opt_, "generation " + std::to_string(gen) + ": deployed " + std::to_string(assignment.worker_of_task.size()) +
                   " tasks on " + std::to_string(slots.size()) + " workers");

    // The generation's state, changed by `handle` only.
    Status failure;
    size_t started = 0, ended = 0, cancelled = 0;
    const size_t total = assignment.worker_of_task.size();
    // By connection; connections made later are no slot of this generation.
    std::vector<bool> in_slot(conns_.size(), false);
    std::vector<bool> answered(conns_.size(), false);
    for (size_t i : slots) in_slot[i] = true;
    std::unique_ptr<CheckpointCoordinator> coordinator;
    std::unique_ptr<ClusterJob> running;  // declared after `coordinator`: destroyed first
    std::vector<std::unique_ptr<RemoteTask>> remote;
    std::vector<int> finished_early;  // sources that finished before `coordinator` existed
    source_records_ = sink_records_ = 0;
    top_keys_.clear();
    // The generation's tasks by task index (as BuildTasks numbers them): names and kinds, for
    // the REST API's view (counters from zero) and the checkpoint coordinator's participants.
    std::vector<TaskView> task_views;
    {
      std::vector<TaskView> views;
      std::vector<bool> sinks;
      for (size_t c = 0; c < plan_.chains.size(); ++c) {
        const bool sink = std::none_of(plan_.edges.begin(), plan_.edges.end(),
                                       [c](const PlanEdge& e) { return e.from_chain == static_cast<int>(c); });
        for (uint32_t sub = 0; sub < plan_.chains[c].parallelism; ++sub) {
          TaskView v;
          v.name = plan_.ChainName(spec_, static_cast<int>(c)) + "[" + std::to_string(sub) + "]";
          v.source = plan_.chains[c].is_source;
          views.push_back(std::move(v));
          sinks.push_back(sink);
        }
      }
      task_views = views;
      table_.Reset(std::move(views), std::move(sinks));
    }
    auto fail = [&](const Status& s) {
      if (!failure.ok()) return;
      failure = s;
    };
    auto handle = [&](const Event& e) {
      if (e.kind == Event::Kind::kJobFailed) return fail(e.status);
      if (e.conn >= in_slot.size() || !in_slot[e.conn]) return;
      if (e.kind == Event::Kind::kLost) {
        if (!answered[e.conn]) {
          answered[e.conn] = true;
          ++cancelled;  // a lost worker answers no cancel
        }
        return fail(e.status);
      }
      const json& m = e.m;
      if (m["type"] == "tick" || m.value("gen", uint64_t{0}) != gen) return;  // another generation's
      const std::string type = m["type"];
      if (type == "started") {
        ++started;
      } else if (type == "failed") {
        fail(StatusFromJson(m));
      } else if (type == "cancelled") {
        if (!answered[e.conn]) {
          answered[e.conn] = true;
          ++cancelled;
        }
      } else if (type == "task_ended") {
        ++ended;
        table_.Update(m);
        if (m.value("source", false)) source_records_ += m.value("records_in", uint64_t{0});
        if (m.contains("top") && m["top"].is_array())
          for (const auto& kv : m["top"])
            if (kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_number_integer())
              top_keys_.emplace_back(kv[0].get<std::string>(), kv[1].get<int64_t>());
        if (m.value("sink", false)) {
          has_sinks_ = true;
          sink_records_ += m.value("records_out", uint64_t{0});
        }
      } else if (coordinator && type == "ack") {
        TaskAck ack;
        Status s = AckFromJson(m, &ack);
        if (!s.ok()) return fail(s);
        coordinator->Acknowledge(std::move(ack));
      } else if (type == "source_finished") {
        // A fast source may finish before every worker has started (and the coordinator exists).
        if (coordinator) coordinator->SourceFinished(m.value("task", 0));
        else finished_early.push_back(m.value("task", 0));
      }
    };
    auto interrupted = [&] {
      if (g_signal.load() != 0) fail(Status::Aborted("interrupted by signal " + std::to_string(g_signal.load())));
      return !failure.ok();
    };

    // Deployed: every worker said started (or the generation failed).
    Serve(Clock::time_point::max(), [&] { return interrupted() || started == slots.size(); }, handle);
    run_start_ = Clock::now();
    if (failure.ok()) {
      for (size_t t = 0; t < total; ++t)
        remote.push_back(std::make_unique<RemoteTask>(static_cast<int>(t), task_views[t].name, task_views[t].source, gen,
                                                      conns_[slots[assignment.worker_of_task[t]]]->link.get()));
      std::vector<CheckpointParticipant*> parts;
      for (auto& r : remote) parts.push_back(r.get());
      const CheckpointId first_id = std::max(store_->MaxId(), restore_id_) + 1;
      coordinator = std::make_unique<CheckpointCoordinator>(spec_.name, spec_.max_parallelism, spec_.checkpoint,
                                                            store_.get(), parts, first_id, &failures_);
      std::vector<ControlLink*> links;
      for (size_t i : slots) links.push_back(conns_[i]->link.get());
      coordinator->SetAbortHandler([links, gen](CheckpointId id) {
        for (ControlLink* l : links) l->Send({{"type", "abort"}, {"gen", gen}, {"id", id}}).IgnoreError();
      });
      if (opt_.quiet) coordinator->SetInfoLog([](const std::string&) {});
      coordinator->Start();
      for (int t : finished_early) coordinator->SourceFinished(t);
      running = std::make_unique<ClusterJob>(spec_, coordinator.get(), &table_, restore_id_, restore_path_, attempt_,
                                             attempt_ + (first_restored_ ? 1 : 0));
      if (rest_ != nullptr) {
        rest_->Attach(running.get());
        fprintf(stderr, "cairn: REST API at %s (web page: %s, metrics: %smetrics)\n", rest_url_.c_str(),
                rest_url_.c_str(), rest_url_.c_str());
      }
      if (!opt_.quiet) {
        progress_of_ = coordinator.get();
        next_progress_ = run_start_ + opt_.progress_interval;
        last_progress_sink_ = 0;
      }
      // Running: until every task ended, or the generation failed.
      Serve(Clock::time_point::max(), [&] { return interrupted() || ended == total; }, handle);
      progress_of_ = nullptr;
      // No checkpoint commits after this (a failed generation commits nothing more).
      coordinator->Stop();
      // The retention of the final checkpoint runs beside the tasks' end: a failure of it
      // reaches the event queue after Serve returned.
      if (failure.ok()) failure = coordinator->retention_failure();
      stats_ = coordinator->stats();
      stop_savepoint_ = coordinator->stop_savepoint();
      if (failure.ok() && !coordinator->finished())
        failure = Status::Internal("tasks ended before the final checkpoint completed");
      // The REST API answers with the generation's final state until the next one is attached.
      running->set_state(failure.ok()           ? "finished"
                         : WillRestart(failure) ? "restarting"
                         : g_signal.load() != 0 ? "cancelled"
                                                : "failed");
      if (rest_ != nullptr) rest_->Detach(running.get());
    }
    if (failure.ok()) return Status::OK();
    // Failed: cancel every task, wait for the workers' answers or the heartbeat timeout.
    for (size_t i : slots)
      if (conns_[i]->alive) conns_[i]->link->Send({{"type", "cancel"}, {"gen", gen}}).IgnoreError();
    for (size_t i : slots)
      if (!conns_[i]->alive && !answered[i]) {
        answered[i] = true;
        ++cancelled;
      }
    const bool by_signal = g_signal.load() != 0;
    if (by_signal) g_signal.store(0);  // Serve returns at once on a pending signal
    Serve(Clock::now() + opt_.heartbeat_timeout, [&] { return cancelled >= slots.size(); }, handle);
    if (by_signal) g_signal.store(SIGTERM);
    // A worker that did not answer is lost: it stops by itself (no heartbeat replies).
    for (size_t i : slots)
      if (!answered[i] && conns_[i]->alive) {
        conns_[i]->alive = false;
        conns_[i]->link->Close();
      }
    return failure;
  }

  void Shutdown() {
    for (auto& c : conns_)
      if (c->alive) c->link->Send({{"type", "shutdown"}, {"gen", gen_}}).IgnoreError();
    // A bound on a worker that does not read, not a timing check.
    const auto until = Clock::now() + opt_.heartbeat_timeout;
    for (auto& c : conns_)
      if (c->alive) c->link->Flush(until);
  }

  const CoordinatorOptions opt_;
  std::string yaml_;
  JobSpec spec_;
  ExecutionPlan plan_;
  std::unique_ptr<StateBackend> backend_;
  CheckpointDirLock lock_;
  RestorePlan restore_;  // Prepare's, until TakeCheckpointDir
  EarlierRuns earlier_;
  std::vector<FileSink> file_sinks_;
  std::unique_ptr<CheckpointStore> store_;
  std::string restore_path_;
  CheckpointId restore_id_ = 0;
  uint64_t gen_ = 0;
  uint64_t source_records_ = 0, sink_records_ = 0;
  bool has_sinks_ = false;
  std::vector<std::pair<std::string, int64_t>> top_keys_;  // of the last generation's tasks
  CheckpointStats stats_;
  std::string stop_savepoint_;  // the last generation's (a stop's savepoint)
  Clock::time_point run_start_;  // when the last generation's tasks started
  uint32_t attempt_ = 0;         // the generation's attempt: 0, then one more per restart
  bool first_restored_ = false;  // the first generation restored (--restore)
  TaskTable table_;
  RestServer* rest_ = nullptr;  // --http
  std::string rest_url_;
  // The progress lines: the running generation's coordinator (null: none), the next line's time.
  CheckpointCoordinator* progress_of_ = nullptr;
  Clock::time_point next_progress_;
  uint64_t last_progress_sink_ = 0;

  Events events_;
  JobFailures failures_;
  ControlListener listener_;
  std::string address_;
  std::thread acceptor_;
  Mutex pending_links_mu_;
  std::vector<std::unique_ptr<ControlLink>> pending_links_ GUARDED_BY(pending_links_mu_);
  std::vector<std::unique_ptr<Conn>> conns_;  // touched by the main thread only
};

}  // namespace

int RunCoordinator(const CoordinatorOptions& opt) {
  g_signal.store(0);
  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = OnCoordinatorSignal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  signal(SIGPIPE, SIG_IGN);
  int rc;
  std::unique_ptr<Supervisor> sup;
  std::set<int64_t> registered;  // the worker processes that ever registered
  RestServer rest;  // --http; outlives the coordinator, which attaches each generation
  {
    Coordinator c(opt);
    Status s = c.Prepare();
    if (s.ok() && !opt.http.empty()) {
      std::string url;
      s = rest.Start(opt.http, &url);
      if (s.ok()) c.set_rest(&rest, url);
    }
    if (s.ok()) s = c.Listen();
    if (s.ok()) s = c.TakeCheckpointDir();
    if (s.ok() && opt.local_workers > 0) {
      sup = std::make_unique<Supervisor>(c.address(), opt.local_workers);
      s = sup->Start();
    }
    if (!s.ok()) {
      fprintf(stderr, "cairn: error: %s\n", s.message().c_str());
      rc = s.ExitCode();
    } else {
      rc = c.Run();
    }
    // No worker is started again from here; the coordinator's connections close with it, so
    // that a worker not told to shut down (one that had not registered yet) ends too.
    if (sup) sup->StopRestarting();
    registered = c.registered_pids();
  }
  if (sup) sup->Stop(registered);
  rest.Stop();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return rc;
}

}  // namespace cairn
