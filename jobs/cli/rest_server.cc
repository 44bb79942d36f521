#include "jobs/cli/rest_server.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <algorithm>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "jobs/cli/web_page.h"

namespace cairn {

using nlohmann::json;

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// "chain[3]" -> ("chain", 3)
std::pair<std::string, uint32_t> SplitTaskName(const std::string& name) {
  size_t b = name.rfind('[');
  if (b == std::string::npos || name.back() != ']') return {name, 0};
  return {name.substr(0, b), static_cast<uint32_t>(std::strtoul(name.c_str() + b + 1, nullptr, 10))};
}

json RecordJson(const CheckpointRecord& r, bool with_subtasks) {
  json j = {{"id", r.id},
            {"kind", r.kind},
            {"status", r.status},
            {"path", r.path},
            {"trigger_time_ms", r.trigger_time_ms},
            {"duration_ms", r.duration_ms},
            {"mode", r.mode},
            {"final", r.final_checkpoint},
            {"state_bytes", r.state_bytes},
            {"channel_state_bytes", r.channel_state_bytes},
            {"alignment_ms", r.alignment_ms},
            {"sync_ms", r.sync_ms},
            {"async_ms", r.async_ms},
            {"acknowledged", r.acknowledged},
            {"tasks", r.tasks}};
  j["failure"] = r.failure.empty() ? json(nullptr) : json(r.failure);
  if (with_subtasks) {
    json subs = json::array();
    for (const SubtaskStateHandle& h : r.subtasks)
      subs.push_back({{"operator", h.operator_id},
                      {"subtask", h.subtask},
                      {"parallelism", h.parallelism},
                      {"key_groups", h.key_groups.ToString()},
                      {"state_bytes", h.state_bytes},
                      {"channel_state_bytes", h.channel_state_bytes},
                      {"alignment_ms", h.alignment_ms},
                      {"sync_ms", h.sync_ms},
                      {"async_ms", h.async_ms}});
    j["subtasks"] = subs;
  }
  return j;
}

std::string PromLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

struct RestServer::Impl {
  httplib::Server http;
  std::thread http_thread;
  std::thread sampler;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  RunningJob* job = nullptr;  // while attached
  // The last sample of each task's counters and the rates between the last two samples.
  struct Rates {
    double in = 0, out = 0, backpressured_ms = 0;  // per second, over the last sample
  };
  std::map<std::string, Rates> rates;  // by task
  std::vector<TaskView> last_tasks;
  std::chrono::steady_clock::time_point last_sample;
  json throughput = json::array();  // [{t, records_in_per_second, records_out_per_second}], the last 600 s
  // Once detached: the final answers.
  std::string final_job, final_checkpoints, final_metrics;
  std::map<CheckpointId, std::string> final_details;
  std::string job_state;

  void Sample() {
    // Under mu, with job attached.
    auto now = std::chrono::steady_clock::now();
    std::vector<TaskView> tasks = job->Tasks();
    if (!last_tasks.empty()) {
      double dt = std::chrono::duration<double>(now - last_sample).count();
      double src = 0, sink = 0;
      for (size_t i = 0; i < tasks.size() && i < last_tasks.size(); ++i) {
        double in = (tasks[i].records_in - last_tasks[i].records_in) / dt;
        double out = (tasks[i].records_out - last_tasks[i].records_out) / dt;
        double bp = std::min(1000.0, (tasks[i].blocked_ns - last_tasks[i].blocked_ns) / 1e6 / dt);
        rates[tasks[i].name] = {in, out, bp};
        if (tasks[i].source) src += in;
        sink += out;
      }
      throughput.push_back({{"t", NowMs()}, {"source_records_per_second", src}, {"records_out_per_second", sink}});
      if (throughput.size() > 600) throughput.erase(throughput.begin());
    }
    last_tasks = std::move(tasks);
    last_sample = now;
  }

  json JobJson() {
    json j;
    const JobSpec& spec = job->spec();
    j["name"] = spec.name;
    j["state"] = job->state();
    j["start_time_ms"] = job->start_time_ms();
    j["restarts"] = job->restarts();
    j["restored_from"] = job->restored_from() == 0 ? json(nullptr) : json(job->restored_from());
    j["restored_path"] = job->restored_path().empty() ? json(nullptr) : json(job->restored_path());
    std::map<std::string, json> ops;
    std::vector<std::string> order;
    uint64_t total_in = 0, total_out = 0;
    for (const TaskView& t : job->Tasks()) {
      auto [chain, subtask] = SplitTaskName(t.name);
      if (!ops.count(chain)) {
        order.push_back(chain);
        ops[chain] = {{"id", chain}, {"source", t.source}, {"parallelism", 0}, {"subtasks", json::array()}};
      }
      Rates r = rates.count(t.name) ? rates[t.name] : Rates{};
      json& o = ops[chain];
      o["parallelism"] = o["parallelism"].get<int>() + 1;
      o["subtasks"].push_back({{"subtask", subtask},
                               {"records_in", t.records_in},
                               {"records_out", t.records_out},
                               {"records_in_per_second", r.in},
                               {"records_out_per_second", r.out},
                               {"backpressured_time_ms_per_second", r.backpressured_ms},
                               {"watermark", t.has_watermark ? json(t.watermark) : json(nullptr)}});
      total_in += t.records_in;
      total_out += t.records_out;
    }
    j["operators"] = json::array();
    for (const std::string& c : order) j["operators"].push_back(ops[c]);
    j["throughput"] = throughput;
    return j;
  }

  json CheckpointsJson(std::map<CheckpointId, std::string>* details) {
    std::vector<CheckpointRecord> hist = job->checkpoint_history();
    CheckpointStats st = job->checkpoint_stats();
    json j;
    j["counts"] = {{"completed", st.completed}, {"failed", st.failed}, {"in_progress", job->checkpoints_in_progress()}};
    j["latest_completed"] = nullptr;
    json h = json::array();
    for (const CheckpointRecord& r : hist) {
      h.push_back(RecordJson(r, false));
      if (r.status == "completed") j["latest_completed"] = RecordJson(r, false);
      if (details != nullptr) (*details)[r.id] = RecordJson(r, true).dump();
    }
    j["history"] = h;
    // The newest savepoint, also once the history no longer holds it (then its detail too).
    j["latest_savepoint"] = nullptr;
    if (std::optional<CheckpointRecord> sp = job->latest_savepoint()) {
      j["latest_savepoint"] = RecordJson(*sp, false);
      if (details != nullptr && details->count(sp->id) == 0) (*details)[sp->id] = RecordJson(*sp, true).dump();
    }
    return j;
  }

  std::string Metrics() {
    std::string out;
    auto line = [&out](const std::string& s) { out += s + "\n"; };
    std::vector<TaskView> tasks = job->Tasks();
    line("# HELP cairn_records_in_total Records a subtask read.");
    line("# TYPE cairn_records_in_total counter");
    for (const TaskView& t : tasks) {
      auto [chain, subtask] = SplitTaskName(t.name);
      line("cairn_records_in_total{operator=\"" + PromLabel(chain) + "\",subtask=\"" + std::to_string(subtask) + "\"} " +
           std::to_string(t.records_in));
    }
    line("# HELP cairn_records_out_total Records a subtask emitted (a sink: wrote).");
    line("# TYPE cairn_records_out_total counter");
    for (const TaskView& t : tasks) {
      auto [chain, subtask] = SplitTaskName(t.name);
      line("cairn_records_out_total{operator=\"" + PromLabel(chain) + "\",subtask=\"" + std::to_string(subtask) +
           "\"} " + std::to_string(t.records_out));
    }
    line("# HELP cairn_backpressured_seconds_total Time a subtask was blocked on full output channels.");
    line("# TYPE cairn_backpressured_seconds_total counter");
    for (const TaskView& t : tasks) {
      auto [chain, subtask] = SplitTaskName(t.name);
      char v[64];
      snprintf(v, sizeof v, "%.6f", t.blocked_ns / 1e9);
      line("cairn_backpressured_seconds_total{operator=\"" + PromLabel(chain) + "\",subtask=\"" +
           std::to_string(subtask) + "\"} " + v);
    }
    line("# HELP cairn_watermark_milliseconds The last watermark a subtask sent downstream (event time).");
    line("# TYPE cairn_watermark_milliseconds gauge");
    for (const TaskView& t : tasks) {
      if (!t.has_watermark) continue;
      auto [chain, subtask] = SplitTaskName(t.name);
      line("cairn_watermark_milliseconds{operator=\"" + PromLabel(chain) + "\",subtask=\"" + std::to_string(subtask) +
           "\"} " + std::to_string(t.watermark));
    }
    CheckpointStats st = job->checkpoint_stats();
    line("# HELP cairn_checkpoints_completed_total Checkpoints completed by this run.");
    line("# TYPE cairn_checkpoints_completed_total counter");
    line("cairn_checkpoints_completed_total " + std::to_string(st.completed));
    line("# HELP cairn_checkpoints_failed_total Checkpoints that failed in this run.");
    line("# TYPE cairn_checkpoints_failed_total counter");
    line("cairn_checkpoints_failed_total " + std::to_string(st.failed));
    line("# HELP cairn_checkpoints_in_progress Checkpoints pending now.");
    line("# TYPE cairn_checkpoints_in_progress gauge");
    line("cairn_checkpoints_in_progress " + std::to_string(job->checkpoints_in_progress()));
    line("# HELP cairn_checkpoint_duration_seconds Trigger to commit of completed checkpoints.");
    line("# TYPE cairn_checkpoint_duration_seconds histogram");
    for (size_t i = 0; i < std::size(CheckpointStats::kDurationBucketsMs); ++i) {
      char le[32];
      snprintf(le, sizeof le, "%g", CheckpointStats::kDurationBucketsMs[i] / 1000.0);
      line(std::string("cairn_checkpoint_duration_seconds_bucket{le=\"") + le + "\"} " +
           std::to_string(st.duration_buckets[i]));
    }
    line("cairn_checkpoint_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(st.completed));
    char sum[64];
    snprintf(sum, sizeof sum, "%.3f", st.total_duration_ms / 1000.0);
    line(std::string("cairn_checkpoint_duration_seconds_sum ") + sum);
    line("cairn_checkpoint_duration_seconds_count " + std::to_string(st.completed));
    line("# HELP cairn_last_checkpoint_size_bytes State and channel state of the latest completed checkpoint.");
    line("# TYPE cairn_last_checkpoint_size_bytes gauge");
    line("cairn_last_checkpoint_size_bytes " + std::to_string(st.last_state_bytes + st.last_channel_state_bytes));
    line("# HELP cairn_state_size_bytes Operator and keyed state in the latest completed checkpoint.");
    line("# TYPE cairn_state_size_bytes gauge");
    line("cairn_state_size_bytes " + std::to_string(st.last_state_bytes));
    line("# HELP cairn_restores_total Restores from a checkpoint or savepoint by this process.");
    line("# TYPE cairn_restores_total counter");
    line("cairn_restores_total " + std::to_string(job->restores()));
    line("# HELP cairn_restarts_total In-process restarts after a task failure (restart:).");
    line("# TYPE cairn_restarts_total counter");
    line("cairn_restarts_total " + std::to_string(job->restarts()));
    return out;
  }
};

namespace {

void JsonReply(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}
void ErrorReply(httplib::Response& res, int status, const std::string& msg) { JsonReply(res, status, {{"error", msg}}); }

}  // namespace

RestServer::RestServer() : impl_(std::make_unique<Impl>()) {}
RestServer::~RestServer() { Stop(); }

Status RestServer::Start(const std::string& address, std::string* url) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    return Status::InvalidArgument("--http " + address + ": expected HOST:PORT, e.g. 127.0.0.1:8081 (port 0: any free port)");
  const std::string host = address.substr(0, colon);
  char* end = nullptr;
  long port = std::strtol(address.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535)
    return Status::InvalidArgument("--http " + address + ": the port must be a number from 0 to 65535");
  Impl* im = impl_.get();
  auto& svr = im->http;
  svr.new_task_queue = [] { return new httplib::ThreadPool(4); };

  // Each handler reads under im->mu: a request's worth of work, never on a record's path.
  auto with_job = [im](httplib::Response& res, const std::function<void()>& live, const std::string& final_answer) {
    std::lock_guard<std::mutex> l(im->mu);
    if (im->job != nullptr) {
      live();
    } else if (!final_answer.empty()) {
      res.set_content(final_answer, "application/json");
    } else {
      ErrorReply(res, 503, "the job is not running");
    }
  };
  svr.Get("/api/job", [im, with_job](const httplib::Request&, httplib::Response& res) {
    with_job(res, [&] { JsonReply(res, 200, im->JobJson()); }, im->final_job);
  });
  svr.Get("/api/checkpoints", [im, with_job](const httplib::Request&, httplib::Response& res) {
    with_job(res, [&] { JsonReply(res, 200, im->CheckpointsJson(nullptr)); }, im->final_checkpoints);
  });
  svr.Get(R"(/api/checkpoints/(\d+))", [im](const httplib::Request& req, httplib::Response& res) {
    const CheckpointId id = std::strtoull(req.matches[1].str().c_str(), nullptr, 10);
    std::lock_guard<std::mutex> l(im->mu);
    std::map<CheckpointId, std::string> details;
    if (im->job != nullptr) {
      im->CheckpointsJson(&details);
    } else {
      details = im->final_details;
    }
    auto it = details.find(id);
    if (it == details.end())
      return ErrorReply(res, 404, "checkpoint " + std::to_string(id) + " is not in the history (GET /api/checkpoints)");
    res.set_content(it->second, "application/json");
  });
  svr.Get("/metrics", [im](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> l(im->mu);
    if (im->job == nullptr) {
      if (im->final_metrics.empty()) return ErrorReply(res, 503, "the job is not running");
      return res.set_content(im->final_metrics, "text/plain; version=0.0.4");
    }
    res.set_content(im->Metrics(), "text/plain; version=0.0.4");
  });
  svr.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kWebPage, "text/html; charset=utf-8"); });

  // POST /api/savepoints and /api/stop: answered once the savepoint is committed (or failed).
  auto savepoint = [im](const httplib::Request& req, httplib::Response& res, bool stop) {
    json body = json::object();
    if (!req.body.empty()) {
      body = json::parse(req.body, nullptr, false);
      if (body.is_discarded() || !body.is_object())
        return ErrorReply(res, 400, "the request body must be a JSON object");
    }
    const char* dir_key = stop ? "savepoint_dir" : "dir";
    for (auto it = body.begin(); it != body.end(); ++it)
      if (it.key() != dir_key && !(stop && it.key() == "drain"))
        return ErrorReply(res, 400, "unknown field \"" + it.key() + "\" (expected: " + dir_key + (stop ? ", drain)" : ")"));
    if (body.contains(dir_key) && !(body[dir_key].is_string() && !body[dir_key].get<std::string>().empty()))
      return ErrorReply(res, 400, std::string(dir_key) + " must be a non-empty string");
    if (body.contains("drain") && !body["drain"].is_boolean()) return ErrorReply(res, 400, "drain must be true or false");
    auto promise = std::make_shared<std::promise<json>>();
    std::future<json> answer = promise->get_future();
    {
      std::lock_guard<std::mutex> l(im->mu);
      if (im->job == nullptr) return ErrorReply(res, 409, "the job is not running");
      SavepointRequest r;
      r.dir = body.contains(dir_key) ? body[dir_key].get<std::string>() : im->job->default_savepoint_dir();
      r.then = !stop ? SavepointRequest::Then::kContinue
                     : body.value("drain", false) ? SavepointRequest::Then::kDrain : SavepointRequest::Then::kStop;
      r.done = [promise](const Status& s, CheckpointId id, const std::string& path) {
        if (s.ok()) {
          promise->set_value({{"id", id}, {"path", path}});
        } else {
          promise->set_value({{"error", s.message()}});
        }
      };
      im->job->RequestSavepoint(std::move(r));
    }
    json j = answer.get();  // the coordinator answers every request, at the latest when it stops
    JsonReply(res, j.contains("error") ? 500 : 200, j);
  };
  svr.Post("/api/savepoints", [savepoint](const httplib::Request& req, httplib::Response& res) { savepoint(req, res, false); });
  svr.Post("/api/stop", [savepoint](const httplib::Request& req, httplib::Response& res) { savepoint(req, res, true); });
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty())
      ErrorReply(res, res.status, "no such resource: " + req.method + " " + req.path + " (see docs/rest.md)");
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    ErrorReply(res, 500, "internal error");
  });

  int bound = static_cast<int>(port);
  if (port == 0) {
    bound = svr.bind_to_any_port(host);
    if (bound <= 0) return Status::InvalidArgument("--http " + address + ": cannot bind " + host);
  } else if (!svr.bind_to_port(host, bound)) {
    return Status::InvalidArgument("--http " + address + ": cannot bind " + host + ":" + std::to_string(port) +
                           " (in use, or not an address of this machine)");
  }
  *url = "http://" + host + ":" + std::to_string(bound) + "/";
  im->http_thread = std::thread([im] { im->http.listen_after_bind(); });
  im->sampler = std::thread([im] {
    std::unique_lock<std::mutex> l(im->mu);
    while (!im->stopping) {
      if (im->job != nullptr) im->Sample();
      im->cv.wait_for(l, std::chrono::seconds(1), [im] { return im->stopping; });
    }
  });
  return Status::OK();
}

void RestServer::Attach(RunningJob* job) {
  std::lock_guard<std::mutex> l(impl_->mu);
  impl_->job = job;
  impl_->last_tasks.clear();
  impl_->Sample();
}

void RestServer::Detach(RunningJob* job) {
  std::lock_guard<std::mutex> l(impl_->mu);
  if (impl_->job != job) return;
  impl_->final_job = impl_->JobJson().dump();
  impl_->final_checkpoints = impl_->CheckpointsJson(&impl_->final_details).dump();
  impl_->final_metrics = impl_->Metrics();
  impl_->job = nullptr;
}

void RestServer::Stop() {
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->http.stop();
  if (impl_->http_thread.joinable()) impl_->http_thread.join();
  if (impl_->sampler.joinable()) impl_->sampler.join();
}

}  // namespace cairn
