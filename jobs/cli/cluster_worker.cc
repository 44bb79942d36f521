// `cairn worker`: registers with the coordinator, runs the tasks of each deploy it is given
// (the same steps as RunJob's deploy, for its own tasks only: engine/runtime/deploy.h), and
// forwards the checkpoint protocol between its tasks and the coordinator.
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <thread>

#include "engine/base/file_util.h"
#include "engine/base/mutex.h"
#include "engine/base/parker.h"
#include "engine/checkpoint/snapshot_persister.h"
#include "engine/dataflow/operator_capabilities.h"
#include "engine/net/acceptor.h"
#include "engine/net/transport.h"
#include "engine/runtime/deploy.h"
#include "engine/runtime/execution_plan.h"
#include "engine/runtime/job_runner.h"
#include "engine/runtime/remote_channels.h"
#include "engine/runtime/restore.h"
#include "engine/runtime/test_hooks.h"
#include "engine/runtime/worker_assignment.h"
#include "jobs/cli/cluster.h"
#include "jobs/cli/control_link.h"
#include "jobs/job_loader.h"
#include "state/checkpoint_layout.h"
#include "state/state_backend.h"

namespace cairn {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
constexpr size_t kPersisterThreads = 2;

void Log(const std::string& s) { fprintf(stderr, "cairn worker %d: %s\n", static_cast<int>(getpid()), s.c_str()); }

// One deploy: the worker's tasks, their channels and transport, running.
class Generation : public TaskListener, public BacklogListener {
 public:
  Generation(uint64_t gen, ControlLink* link) : gen_(gen), link_(link) {}
  ~Generation() override { Stop(); }

  Status Deploy(const json& m, const net::Endpoint& data) {
    const std::vector<std::string> sets = m.at("sets").get<std::vector<std::string>>();
    CAIRN_RETURN_IF_ERROR(LoadJobFromString(m.at("yaml").get<std::string>(), m.at("name").get<std::string>(), sets, &spec_));
    plan_ = ExecutionPlan::Build(spec_);
    const uint32_t me = m.at("worker").get<uint32_t>();
    std::map<uint32_t, net::Endpoint> peers;
    const auto addrs = m.at("workers").get<std::vector<std::string>>();
    for (uint32_t i = 0; i < addrs.size(); ++i)
      CAIRN_RETURN_IF_ERROR(net::ParseEndpoint(addrs[i], "worker address", &peers[i]));
    CAIRN_RETURN_IF_ERROR(AssignWorkers(plan_, static_cast<uint32_t>(addrs.size()), &assignment_));
    CAIRN_RETURN_IF_ERROR(CheckRebalanceEdges(spec_, plan_, assignment_));
    // Test-only hooks (docs/faults.md), from this process's environment (`--local-workers`
    // hands the coordinator's on); the coordinator checked its own before anything started.
    TestHooks hooks;
    CAIRN_RETURN_IF_ERROR(ParseTestHooks(spec_, &hooks));
    std::vector<bool> local(assignment_.worker_of_task.size());
    for (size_t t = 0; t < local.size(); ++t) local[t] = assignment_.worker_of_task[t] == me;

    StateBackendOptions state_options = spec_.state;
    state_options.shared_dir = std::filesystem::path(SharedDir(spec_.checkpoint.dir)).lexically_normal().string();
    backend_ = NewStateBackend(state_options);
    RestorePlan restore;
    CAIRN_RETURN_IF_ERROR(PrepareRestore(spec_, plan_, m.at("restore").get<std::string>(), *backend_, &restore));
    std::vector<SubtaskChain> subtasks;
    CAIRN_RETURN_IF_ERROR(InstantiateOperators(spec_, plan_, restore, &subtasks, &local));
    work_dir_ = WorkDir(spec_.checkpoint.dir, getpid());
    CAIRN_RETURN_IF_ERROR(CreateDirs(work_dir_));
    CAIRN_RETURN_IF_ERROR(OpenSubtasks(spec_, *backend_, restore, work_dir_, &subtasks));

    persister_ = std::make_unique<SnapshotPersister>(kPersisterThreads, [this](TaskAck ack) {
      json a = AckToJson(ack);
      a["type"] = "ack";
      a["gen"] = gen_;
      link_->Send(a).IgnoreError();  // a lost connection is the reader's to report
    }, spec_.checkpoint.inline_state_threshold);
    transport_ = std::make_unique<net::Transport>(me);
    CAIRN_RETURN_IF_ERROR(transport_->Listen(data));
    transport_->SetFailureListener([this](const Status& s) { Fail(s); });
    channels_ = std::make_unique<RemoteChannels>(&assignment_, std::map<uint32_t, net::Transport*>{{me, transport_.get()}});
    BuildTasks(spec_, plan_, std::move(subtasks), &restore, persister_.get(), this, this, &job_, channels_->maker());
    tasks_ = job_.task_ptrs();
    ApplyTestHooks(hooks, m.value("attempt", 0u), tasks_);
    // A bound on a failure (a peer that never connects), not a timing check.
    CAIRN_RETURN_IF_ERROR(transport_->Start(peers, Clock::now() + std::chrono::seconds(60)));
    for (Task* t : tasks_)
      threads_.emplace_back([this, t] {
        t->Run();
        // The largest keys of its keyed operators, for the job's summary (as RunJob's).
        std::vector<std::pair<std::string, int64_t>> top;
        for (auto& c : t->chain())
          if (const auto* keyed = dynamic_cast<const KeyedSummary*>(c.op.get())) keyed->TopKeys(RunSummary::kTopKeys, &top);
        json e{{"type", "task_ended"}, {"top", top}, {"gen", gen_}, {"task", t->index()}, {"records_in", t->records_in()},
               {"records_out", t->records_out()}, {"source", t->is_source()},
               {"sink", !t->output_gate()->has_outputs()}};
        link_->Send(e).IgnoreError();
      });
    return Status::OK();
  }

  // Every task's counters (relaxed reads, as the REST API's in one process), for the heartbeat:
  // [{task, records_in, records_out, blocked_ns, watermark (null: none yet), source, sink}].
  json TaskMetrics() const {
    json a = json::array();
    for (Task* t : tasks_) {
      const int64_t wm = t->watermark();
      const bool has_wm = wm != kMinWatermark && wm != kMaxWatermark;
      a.push_back({{"task", t->index()}, {"records_in", t->records_in()}, {"records_out", t->records_out()},
                   {"blocked_ns", t->blocked_ns()}, {"watermark", has_wm ? json(wm) : json(nullptr)},
                   {"source", t->is_source()}, {"sink", !t->output_gate()->has_outputs()}});
    }
    return a;
  }

  Task* task(int index) {
    return index >= 0 && static_cast<size_t>(index) < job_.tasks.size() ? job_.tasks[static_cast<size_t>(index)].get()
                                                                        : nullptr;
  }
  SnapshotPersister* persister() { return persister_.get(); }

  // Cancels every task (and channel) of this generation; idempotent.
  void Cancel() {
    if (cancelled_.exchange(true)) return;
    for (Channel* c : job_.channel_ptrs()) c->Cancel();
    for (Task* t : tasks_) t->Cancel();
  }
  // Cancels, then joins the threads and stops the transport and the persister.
  void Stop() {
    Cancel();
    for (auto& t : threads_) t.join();
    threads_.clear();
    if (persister_) persister_->Stop();
    if (transport_) transport_->Stop();
    if (!work_dir_.empty()) RemoveAll(work_dir_).IgnoreError();  // best effort: the next start removes it
    work_dir_.clear();
  }

  void SourceFinished(int task) override {
    link_->Send({{"type", "source_finished"}, {"gen", gen_}, {"task", task}}).IgnoreError();
  }
  void TaskFailed(int task, const Status& s) override { Fail(s); }
  void BacklogExceeded(const Status& s) override { Fail(s); }
  void Fail(const Status& s) {
    json f = StatusToJson(s);
    f["type"] = "failed";
    f["gen"] = gen_;
    link_->Send(f).IgnoreError();
    Cancel();
  }

 private:
  const uint64_t gen_;
  ControlLink* const link_;
  JobSpec spec_;
  ExecutionPlan plan_;
  WorkerAssignment assignment_;
  std::unique_ptr<StateBackend> backend_;
  std::string work_dir_;
  std::unique_ptr<SnapshotPersister> persister_;
  // Declared after the persister: the channels and tasks go before the transport.
  std::unique_ptr<net::Transport> transport_;
  std::unique_ptr<RemoteChannels> channels_;
  Deployment job_;
  std::vector<Task*> tasks_;
  std::vector<std::thread> threads_;
  std::atomic<bool> cancelled_{false};
};

// What the reader thread hands to the main thread.
struct Inbox {
  Mutex mu;
  CondVar cv;
  std::deque<json> messages GUARDED_BY(mu);
  bool lost GUARDED_BY(mu) = false;
  Status why GUARDED_BY(mu);
};

}  // namespace

int RunWorker(const WorkerOptions& opt) {
  net::Endpoint coord;
  Status s = net::ParseEndpoint(opt.coordinator, "--coordinator", &coord);
  net::Endpoint data;
  if (s.ok() && !opt.listen.empty()) s = net::ParseEndpoint(opt.listen, "--listen", &data);
  if (!s.ok()) {
    fprintf(stderr, "cairn: error: %s\n", s.message().c_str());
    return 2;
  }
  std::unique_ptr<ControlLink> link;
  s = ControlLink::Connect(coord, Clock::now() + opt.connect_timeout, &link);
  if (!s.ok()) {
    Log(s.message());
    return 1;
  }
  if (opt.listen.empty()) data = net::Endpoint{link->local_host(), 0};
  // The data plane's port, held for every generation (each one listens on it anew) from now
  // until this process ends, so that no other socket takes it in between.
  net::PortReservation data_port;
  s = data_port.Reserve(data);
  if (!s.ok()) {
    Log(s.message());
    return 1;
  }
  data.port = data_port.port();
  s = link->Send({{"type", "register"}, {"gen", 0}, {"addr", data.ToString()}, {"pid", getpid()}});
  if (!s.ok()) {
    Log(s.message());
    return 1;
  }

  Inbox inbox;
  // The fence: when the heartbeat whose reply came last was sent (ms since `epoch`). A reply
  // counts with its request's send time, not its arrival, so that replies buffered while this
  // process was stopped (SIGSTOP) or cut off do not make it look alive.
  std::atomic<int64_t> last_reply_ms{0};
  constexpr size_t kSent = 64;
  std::array<std::atomic<int64_t>, kSent> sent_ms{};  // heartbeat seq % kSent -> its send time
  std::atomic<uint64_t> next_seq{0};
  const auto epoch = Clock::now();
  auto now_ms = [epoch] { return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - epoch).count(); };
  std::thread reader([&] {
    for (;;) {
      json m;
      Status r = link->Receive(&m);
      MutexLock l(&inbox.mu);
      if (!r.ok()) {
        inbox.lost = true;
        inbox.why = r;
        inbox.cv.SignalAll();
        return;
      }
      if (m["type"] == "heartbeat") {
        const uint64_t seq = m.value("seq", uint64_t{0});
        if (seq + kSent > next_seq.load()) {
          const int64_t t = sent_ms[seq % kSent].load();
          if (t > last_reply_ms.load()) last_reply_ms.store(t);
        }
      } else {
        inbox.messages.push_back(std::move(m));
        inbox.cv.SignalAll();
      }
    }
  });

  // Heartbeats start with the welcome, which says their interval and timeout.
  std::atomic<bool> stop_heartbeats{false};
  std::atomic<uint64_t> current_gen{0};
  std::chrono::milliseconds interval{500}, timeout{5000};
  Parker heartbeat_parker;
  std::thread heartbeats;
  // The generation whose tasks run, for the heartbeat's metrics; cleared before it stops.
  Mutex live_mu;
  Generation* live = nullptr;  // GUARDED_BY(live_mu)
  auto set_live = [&](Generation* g) {
    MutexLock l(&live_mu);
    live = g;
  };

  std::unique_ptr<Generation> gen;
  int rc = 0;
  for (;;) {
    json m;
    {
      MutexLock l(&inbox.mu);
      while (inbox.messages.empty() && !inbox.lost) inbox.cv.Wait(&inbox.mu);
      if (inbox.messages.empty()) {
        // The coordinator is gone: stop everything (nothing commits without its word).
        Log("stopping: " + inbox.why.message());
        rc = 1;
        break;
      }
      m = std::move(inbox.messages.front());
      inbox.messages.pop_front();
    }
    const std::string type = m["type"];
    const uint64_t g = m["gen"];
    // Fenced: no word from the coordinator for `timeout` (this process was stopped, or the link
    // is cut). Whatever comes now may be stale: stop the tasks, commit nothing, and leave.
    if (heartbeats.joinable() && now_ms() - last_reply_ms.load() > timeout.count()) {
      Log("no heartbeat reply from the coordinator for more than " + std::to_string(timeout.count()) +
          " ms: stopping the tasks of generation " + std::to_string(current_gen.load()));
      rc = 1;
      break;
    }
    if (type == "welcome") {
      interval = std::chrono::milliseconds(m.value("heartbeat_interval_ms", 500));
      timeout = std::chrono::milliseconds(m.value("heartbeat_timeout_ms", 5000));
      last_reply_ms.store(now_ms());
      if (!heartbeats.joinable())
        heartbeats = std::thread([&] {
          while (!stop_heartbeats.load()) {
            const uint64_t seq = next_seq.load();
            sent_ms[seq % kSent].store(now_ms());
            next_seq.store(seq + 1);
            json hb{{"type", "heartbeat"}, {"gen", current_gen.load()}, {"seq", seq}};
            {
              MutexLock l(&live_mu);
              if (live != nullptr) hb["tasks"] = live->TaskMetrics();
            }
            link->Send(hb).IgnoreError();
            // Cut off: stop the tasks at once, from this thread (the main thread may be waiting).
            if (now_ms() - last_reply_ms.load() > timeout.count()) {
              MutexLock l(&inbox.mu);
              inbox.lost = true;
              inbox.why = Status::IOError("no heartbeat reply from the coordinator for more than " +
                                          std::to_string(timeout.count()) + " ms");
              inbox.messages.clear();
              inbox.cv.SignalAll();
              return;
            }
            uint32_t t = heartbeat_parker.Prepare();
            if (stop_heartbeats.load()) break;
            heartbeat_parker.Park(t, Clock::now() + interval);
          }
        });
      continue;
    }
    if (type == "shutdown") break;
    if (type == "deploy") {
      if (g <= current_gen.load()) continue;  // an older generation's (generations only grow)
      set_live(nullptr);
      if (gen) gen->Stop();
      gen.reset();
      current_gen.store(g);
      gen = std::make_unique<Generation>(g, link.get());
      Status d = gen->Deploy(m, data);
      if (!d.ok()) {
        Log("deploy of generation " + std::to_string(g) + " failed: " + d.message());
        gen->Fail(d);
      } else {
        set_live(gen.get());
        link->Send({{"type", "started"}, {"gen", g}}).IgnoreError();
      }
      continue;
    }
    if (g != current_gen.load() || !gen) continue;  // another generation's: ignored
    if (type == "cancel") {
      set_live(nullptr);
      gen->Stop();
      gen.reset();
      link->Send({{"type", "cancelled"}, {"gen", g}}).IgnoreError();
    } else if (type == "trigger" || type == "notify" || type == "terminate" || type == "drain") {
      Task* t = gen->task(m.value("task", -1));
      if (t == nullptr) continue;
      if (type == "trigger") t->TriggerCheckpoint(BarrierFromJson(m.at("barrier")));
      else if (type == "notify") t->NotifyCheckpointComplete(m.value("id", CheckpointId{0}));
      else if (type == "terminate") t->Terminate();
      else t->Drain();
    } else if (type == "abort") {
      gen->persister()->Abort(m.value("id", CheckpointId{0}));
    }
  }
  set_live(nullptr);
  if (gen) gen->Stop();
  gen.reset();
  link->Flush(Clock::now() + timeout);  // the last task_ended and cancelled messages
  stop_heartbeats.store(true);
  heartbeat_parker.Unpark();
  link->Close();
  if (heartbeats.joinable()) heartbeats.join();
  reader.join();
  return rc;
}

}  // namespace cairn
