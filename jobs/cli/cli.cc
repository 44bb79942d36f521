#include "jobs/cli/cli.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "engine/base/allocator.h"
#include "engine/base/crash_points.h"
#include "engine/runtime/execution_plan.h"
#include "engine/base/file_util.h"
#include "engine/runtime/job_runner.h"
#include "jobs/cli/cluster.h"
#include "jobs/cli/kafka_mock.h"
#include "jobs/cli/progress.h"
#include "jobs/cli/rest_client.h"
#include "jobs/cli/rest_server.h"
#include "jobs/cli/run_summary.h"
#include "engine/base/storage_faults.h"
#include "jobs/job_graph.h"
#include "jobs/job_loader.h"
#include "jobs/cli/state_dump.h"
#include "jobs/cli/verify.h"
#include "operators/click_generator.h"
#include "operators/generator_source.h"
#include "operators/nexmark_generator.h"
#include "jobs/registry.h"
#include "state/checkpoint_store.h"

namespace cairn {
namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  cairn run JOB.yaml [--restore latest|PATH | --fresh] [--set KEY=VALUE]... [--quiet]\n"
    "            [--progress-interval DURATION]   (progress lines on stderr; default 1s)\n"
    "            [--http HOST:PORT]               (REST API and web page; default off; port 0: any)\n"
    "            [--local-workers N]              (a coordinator and N worker processes on loopback)\n"
    "            [--heartbeat-interval DURATION] [--heartbeat-timeout DURATION]  (default 500ms, 5s)\n"
    "  cairn coordinator JOB.yaml --listen HOST:PORT --workers N [--restore latest|PATH | --fresh]\n"
    "            [--set KEY=VALUE]... [--quiet] [--progress-interval DURATION] [--http HOST:PORT]\n"
    "            [--heartbeat-interval DURATION] [--heartbeat-timeout DURATION]\n"
    "  cairn worker --coordinator HOST:PORT [--listen HOST:PORT]\n"
    "  cairn savepoint JOB_URL [--dir DIR]\n"
    "  cairn stop JOB_URL [--savepoint DIR] [--drain]\n"
    "  cairn validate JOB.yaml [--set KEY=VALUE]...\n"
    "  cairn checkpoints DIR [--json] [--all]\n"
    "  cairn state dump CHECKPOINT [--operator ID] [--json]\n"
    "  cairn verify PATH [--json]                 (exit 0 sound, 1 damaged, 2 not a checkpoint)\n"
    "  cairn generate --out FILE [--words N] [--words-per-line N] [--vocabulary N] [--zipf S] [--seed N]\n"
    "  cairn generate --format clicks --out FILE [--events N] [--users N] [--urls N] [--ts iso|ms] [--seed N]\n"
    "  cairn generate nexmark --out FILE [--events N] [--seed N] [--event-rate R] [--person-proportion N]\n"
    "            [--auction-proportion N] [--bid-proportion N] [--base-time MS]\n"
    "  cairn kafka mock [--brokers N] [--topic NAME:PARTITIONS]...\n"
    "  cairn debug crash-points\n"
    "  cairn help\n"
    "exit codes: 0 success, 1 job failed, 2 bad input\n";

int UsageError(const std::string& msg) {
  fprintf(stderr, "cairn: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

int Report(const Status& s) {
  fprintf(stderr, "cairn: error: %s\n", s.message().c_str());
  return s.ExitCode();
}

// Parses "--flag VALUE" and "--flag=VALUE"; returns false on a missing value.
bool TakeValue(const std::vector<std::string>& args, size_t* i, const std::string& flag, std::string* value) {
  const std::string& a = args[*i];
  if (a.size() > flag.size() && a.compare(0, flag.size() + 1, flag + "=") == 0) {
    *value = a.substr(flag.size() + 1);
    return true;
  }
  if (*i + 1 >= args.size()) return false;
  *value = args[++*i];
  return true;
}

// "--flag DURATION" (> 0); false when missing or malformed.
bool TakeDuration(const std::vector<std::string>& args, size_t* i, const std::string& flag, Millis* out) {
  std::string v;
  return TakeValue(args, i, flag, &v) && ParseDuration(v, out) && out->count() > 0;
}

bool IsFlag(const std::string& a, const std::string& flag) {
  return a == flag || (a.size() > flag.size() && a.compare(0, flag.size() + 1, flag + "=") == 0);
}

struct JobArgs {
  std::string file;
  std::vector<std::string> sets;
  std::string restore;
  bool fresh = false;
  bool quiet = false;
  Millis progress_interval{1000};
  std::string http;  // --http HOST:PORT; "" off
  // Processes (jobs/cli/cluster.h): `run --local-workers`, `coordinator`.
  uint32_t local_workers = 0;
  std::string listen;
  uint32_t workers = 0;
  Millis heartbeat_interval{500};
  Millis heartbeat_timeout{5000};
};

// A count in 1..64 for `flag`; false when malformed.
bool ParseCount(const std::string& v, uint32_t* out) {
  char* end = nullptr;
  const unsigned long x = std::strtoul(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end != '\0' || x < 1 || x > 64) return false;
  *out = static_cast<uint32_t>(x);
  return true;
}

// Parses JOB.yaml and the flags of `run` (allow_run_flags) or `validate`.
enum class JobCommand { kValidate, kRun, kCoordinator };

int ParseJobArgs(const std::vector<std::string>& args, JobCommand cmd, JobArgs* out) {
  const bool allow_run_flags = cmd != JobCommand::kValidate;
  const bool processes = cmd != JobCommand::kValidate;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    if (cmd == JobCommand::kRun && IsFlag(a, "--local-workers")) {
      if (!TakeValue(args, &i, "--local-workers", &v) || !ParseCount(v, &out->local_workers))
        return UsageError("--local-workers needs a number of worker processes in 1..64");
    } else if (cmd == JobCommand::kCoordinator && IsFlag(a, "--workers")) {
      if (!TakeValue(args, &i, "--workers", &v) || !ParseCount(v, &out->workers))
        return UsageError("--workers needs a number of workers in 1..64");
    } else if (cmd == JobCommand::kCoordinator && IsFlag(a, "--listen")) {
      if (!TakeValue(args, &i, "--listen", &v) || v.empty()) return UsageError("--listen needs HOST:PORT, e.g. 127.0.0.1:6123");
      out->listen = v;
    } else if (processes && IsFlag(a, "--heartbeat-interval")) {
      if (!TakeDuration(args, &i, "--heartbeat-interval", &out->heartbeat_interval))
        return UsageError("--heartbeat-interval needs a duration > 0 (e.g. 500ms)");
    } else if (processes && IsFlag(a, "--heartbeat-timeout")) {
      if (!TakeDuration(args, &i, "--heartbeat-timeout", &out->heartbeat_timeout))
        return UsageError("--heartbeat-timeout needs a duration > 0 (e.g. 5s)");
    } else if (IsFlag(a, "--set")) {
      if (!TakeValue(args, &i, "--set", &v)) return UsageError("--set needs KEY=VALUE");
      out->sets.push_back(v);
    } else if (allow_run_flags && IsFlag(a, "--restore")) {
      if (!TakeValue(args, &i, "--restore", &v) || v.empty()) return UsageError("--restore needs 'latest' or a checkpoint path");
      if (!out->restore.empty()) return UsageError("--restore given twice");
      out->restore = v;
    } else if (allow_run_flags && IsFlag(a, "--progress-interval")) {
      if (!TakeDuration(args, &i, "--progress-interval", &out->progress_interval))
        return UsageError("--progress-interval needs a duration > 0 (e.g. 100ms, 1s)");
    } else if (allow_run_flags && IsFlag(a, "--http")) {
      if (!TakeValue(args, &i, "--http", &v) || v.empty()) return UsageError("--http needs HOST:PORT, e.g. 127.0.0.1:8081");
      out->http = v;
    } else if (allow_run_flags && a == "--fresh") {
      out->fresh = true;
    } else if (allow_run_flags && a == "--quiet") {
      out->quiet = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return UsageError("unknown flag '" + a + "'");
    } else if (out->file.empty()) {
      out->file = a;
    } else {
      return UsageError("unexpected argument '" + a + "'");
    }
  }
  if (out->file.empty()) return UsageError("missing JOB.yaml");
  if (out->fresh && !out->restore.empty())
    return UsageError("--fresh (start over) and --restore (resume) exclude each other");
  if (out->heartbeat_timeout <= out->heartbeat_interval)
    return UsageError("--heartbeat-timeout must be longer than --heartbeat-interval");
  if (cmd == JobCommand::kCoordinator && out->listen.empty()) return UsageError("coordinator: missing --listen HOST:PORT");
  if (cmd == JobCommand::kCoordinator && out->workers == 0) return UsageError("coordinator: missing --workers N");
  return 0;
}

CoordinatorOptions ToCoordinatorOptions(const JobArgs& ja) {
  CoordinatorOptions o;
  o.job_file = ja.file;
  o.sets = ja.sets;
  o.restore = ja.restore;
  o.fresh = ja.fresh;
  o.quiet = ja.quiet;
  if (!ja.listen.empty()) o.listen = ja.listen;
  o.workers = ja.workers > 0 ? ja.workers : ja.local_workers;
  o.local_workers = ja.local_workers;
  o.heartbeat_interval = ja.heartbeat_interval;
  o.heartbeat_timeout = ja.heartbeat_timeout;
  o.http = ja.http;
  o.progress_interval = ja.progress_interval;
  return o;
}

int CmdCoordinator(const std::vector<std::string>& args) {
  JobArgs ja;
  if (int rc = ParseJobArgs(args, JobCommand::kCoordinator, &ja)) return rc;
  return RunCoordinator(ToCoordinatorOptions(ja));
}

int CmdWorker(const std::vector<std::string>& args) {
  WorkerOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    if (IsFlag(a, "--coordinator")) {
      if (!TakeValue(args, &i, "--coordinator", &v) || v.empty()) return UsageError("--coordinator needs HOST:PORT");
      o.coordinator = v;
    } else if (IsFlag(a, "--listen")) {
      if (!TakeValue(args, &i, "--listen", &v) || v.empty()) return UsageError("--listen needs HOST:PORT");
      o.listen = v;
    } else {
      return UsageError("worker: unexpected argument '" + a + "'");
    }
  }
  if (o.coordinator.empty()) return UsageError("worker: missing --coordinator HOST:PORT");
  return RunWorker(o);
}

int CmdRun(const std::vector<std::string>& args) {
  JobArgs ja;
  if (int rc = ParseJobArgs(args, JobCommand::kRun, &ja)) return rc;
  if (ja.local_workers > 0) return RunCoordinator(ToCoordinatorOptions(ja));
  JobSpec spec;
  Status s = LoadJob(ja.file, ja.sets, &spec);
  if (!s.ok()) return Report(s);
  RunOptions opt;
  opt.restore = ja.restore;
  opt.fresh = ja.fresh;
  if (!ja.quiet) opt.progress = PrintProgress;
  if (ja.quiet) opt.info = [](const std::string&) {};  // errors, warnings and the summary only
  opt.progress_interval = ja.progress_interval;
  RestServer server;
  if (!ja.http.empty()) {
    std::string url;
    s = server.Start(ja.http, &url);
    if (!s.ok()) return Report(s);
    // Announced once the job is deployed, so that whoever reads the address finds it running.
    opt.on_start = [&server, url](RunningJob* j) {
      server.Attach(j);
      fprintf(stderr, "cairn: REST API at %s (web page: %s, metrics: %smetrics)\n", url.c_str(), url.c_str(), url.c_str());
    };
    opt.on_end = [&server](RunningJob* j) { server.Detach(j); };
  }
  RunSummary summary;
  s = RunJob(spec, opt, &summary);
  server.Stop();
  if (!s.ok()) return Report(s);
  fputs(FormatSummary(spec, summary).c_str(), stdout);
  return 0;
}

int CmdValidate(const std::vector<std::string>& args) {
  JobArgs ja;
  if (int rc = ParseJobArgs(args, JobCommand::kValidate, &ja)) return rc;
  JobSpec spec;
  Status s = LoadJob(ja.file, ja.sets, &spec);
  if (!s.ok()) return Report(s);
  ExecutionPlan plan = ExecutionPlan::Build(spec);
  printf("%s: valid job '%s' with %zu operators in %zu chains:\n", ja.file.c_str(), spec.name.c_str(),
         spec.operators.size(), plan.chains.size());
  for (size_t c = 0; c < plan.chains.size(); ++c)
    printf("  %s  parallelism %u\n", plan.ChainName(spec, static_cast<int>(c)).c_str(), plan.chains[c].parallelism);
  for (const PlanEdge& e : plan.edges)
    printf("  %s -> %s  %s\n", plan.ChainName(spec, e.from_chain).c_str(), plan.ChainName(spec, e.to_chain).c_str(),
           e.rebalance ? "rebalance" : e.hash ? "hash" : "forward");
  // Every edge carries what its producer emits: one schema per operator says it all.
  size_t width = 0;
  for (const OperatorConfig& op : spec.operators) width = std::max(width, op.id.size());
  printf("  schemas (an edge carries what its producer emits):\n");
  for (size_t i = 0; i < spec.operators.size(); ++i) {
    const OperatorConfig& op = spec.operators[i];
    std::string what = spec.schemas[i] ? spec.schemas[i]->ToString() : "nothing (a sink)";
    if (!op.key_by.empty()) what += "  (reads its inputs keyed by " + op.KeyByText() + ")";
    for (size_t k = 0; k < op.input_key_by.size(); ++k) {
      std::string keys;
      for (const std::string& f : op.input_key_by[k]) keys += (keys.empty() ? "" : ", ") + f;
      what += std::string(k == 0 ? "  (reads " : ", ") + op.inputs[k] + " keyed by " + keys +
              (k + 1 == op.input_key_by.size() ? ")" : "");
    }
    printf("    %-*s  %s\n", static_cast<int>(width), op.id.c_str(), what.c_str());
  }
  // A cycle is legal, but its records circulate until the job ends: if they multiply, the job
  // fails once a feedback channel holds more than checkpoint.max_feedback_backlog records; if
  // they never drain, after checkpoint.max_drain_checkpoints final checkpoints.
  std::vector<std::string> cycle = FindCycle(spec.operators);
  if (!cycle.empty()) {
    std::string path;
    for (const std::string& op : cycle) path += (path.empty() ? "" : " -> ") + op;
    std::string feedback;
    for (const PlanEdge& e : plan.edges)
      if (e.feedback)
        feedback += std::string(feedback.empty() ? "" : ", ") + plan.ChainName(spec, e.from_chain) + " -> " +
                    plan.ChainName(spec, e.to_chain);
    fprintf(stderr,
            "cairn: warning: the job has a cycle (%s; feedback edges: %s): records on it circulate until the job "
            "ends, and a job whose records multiply around it fails once a feedback channel holds more than "
            "checkpoint.max_feedback_backlog = %" PRIu64 " records, one whose records never drain after "
            "checkpoint.max_drain_checkpoints = %u final checkpoints\n",
            path.c_str(), feedback.c_str(), spec.checkpoint.max_feedback_backlog,
            spec.checkpoint.max_drain_checkpoints);
  }
  return 0;
}

std::string IsoTime(int64_t ms) {
  time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

int CmdCheckpoints(const std::vector<std::string>& args) {
  std::string dir;
  bool json = false, all = false;
  for (const auto& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "--all") {
      all = true;
    } else if (a.size() > 1 && a[0] == '-') {
      return UsageError("unknown flag '" + a + "'");
    } else if (dir.empty()) {
      dir = a;
    } else {
      return UsageError("unexpected argument '" + a + "'");
    }
  }
  if (dir.empty()) return UsageError("missing DIR");
  if (!IsDirectory(dir)) return Report(Status::NotFound(dir + ": no such checkpoint directory"));
  CheckpointStore store(dir);
  std::vector<CompletedCheckpoint> all_completed;
  std::vector<Status> skipped, superseded;
  Status s = store.ListCompleted(&all_completed, &skipped, &superseded);
  if (!s.ok()) return Report(s);
  for (const Status& sk : skipped) fprintf(stderr, "cairn: warning: skipping damaged checkpoint: %s\n", sk.message().c_str());
  for (const Status& sk : superseded) fprintf(stderr, "cairn: not listed: %s\n", sk.message().c_str());
  // Failed checkpoints, in id order among the completed ones: in the text listing always, in
  // --json with --all (so that a script reading the JSON lines sees completed checkpoints only).
  std::vector<FailedCheckpoint> failed;
  if (!json || all) {
    s = store.ListFailed(&failed);
    if (!s.ok()) fprintf(stderr, "cairn: warning: cannot read the failed checkpoints: %s\n", s.message().c_str());
  }
  size_t next_failed = 0;
  auto print_failed_before = [&](CheckpointId id) {
    for (; next_failed < failed.size() && failed[next_failed].id < id; ++next_failed) {
      const FailedCheckpoint& f = failed[next_failed];
      if (json)
        printf("{\"id\":%" PRIu64 ",\"status\":\"failed\",\"kind\":%s,\"trigger_time\":%s,\"trigger_time_ms\":%" PRId64
               ",\"duration_ms\":%" PRId64 ",\"reason\":%s}\n",
               f.id, JsonQuote(f.kind).c_str(), JsonQuote(IsoTime(f.trigger_time_ms)).c_str(), f.trigger_time_ms,
               f.duration_ms, JsonQuote(f.reason).c_str());
      else
        printf("id=%" PRIu64 " status=failed kind=%s trigger_time=%s duration_ms=%" PRId64 " reason=%s\n", f.id,
               f.kind.c_str(), IsoTime(f.trigger_time_ms).c_str(), f.duration_ms, f.reason.c_str());
    }
  };
  for (const auto& c : all_completed) {
    print_failed_before(c.metadata.id);
    const CheckpointMetadata& m = c.metadata;
    // Malformed records skipped (file_source on_error: skip), shown only for jobs that skip.
    int64_t skipped_records = -1;
    for (const SubtaskStateHandle& h : m.subtasks)
      if (h.records_skipped >= 0) skipped_records = std::max<int64_t>(skipped_records, 0) + h.records_skipped;
    const std::string skipped_json =
        skipped_records >= 0 ? ",\"records_skipped\":" + std::to_string(skipped_records) : std::string();
    std::string skipped_text =
        skipped_records >= 0 ? " records_skipped=" + std::to_string(skipped_records) : std::string();
    // Late records dropped by windows, shown only for jobs with windows.
    int64_t late_records = -1;
    for (const SubtaskStateHandle& h : m.subtasks)
      if (h.records_late >= 0) late_records = std::max<int64_t>(late_records, 0) + h.records_late;
    std::string skipped_json_all = skipped_json;
    if (late_records >= 0) {
      skipped_json_all += ",\"records_late\":" + std::to_string(late_records);
      skipped_text += " records_late=" + std::to_string(late_records);
    }
    if (json) {
      printf("{\"id\":%" PRIu64 "%s,\"path\":%s,\"trigger_time\":%s,\"trigger_time_ms\":%" PRId64 ",\"duration_ms\":%" PRId64
             ",\"state_bytes\":%" PRIu64 ",\"mode\":%s,\"alignment_ms\":%" PRId64 ",\"sync_ms\":%" PRId64
             ",\"async_ms\":%" PRId64 ",\"channel_state_bytes\":%" PRIu64 "%s,\"final\":%s}\n",
             m.id, all ? ",\"status\":\"completed\"" : "", JsonQuote(c.path).c_str(),
             JsonQuote(IsoTime(m.trigger_time_ms)).c_str(), m.trigger_time_ms,
             m.duration_ms, m.state_bytes, JsonQuote(m.mode).c_str(), m.alignment_ms, m.sync_ms, m.async_ms,
             m.channel_state_bytes, skipped_json_all.c_str(), m.sources_finished && m.channel_state_bytes == 0 ? "true" : "false");
    } else {
      printf("id=%" PRIu64 " path=%s trigger_time=%s duration_ms=%" PRId64 " state_bytes=%" PRIu64
             " mode=%s alignment_ms=%" PRId64 " sync_ms=%" PRId64 " async_ms=%" PRId64 " channel_state_bytes=%" PRIu64
             "%s%s\n",
             m.id, c.path.c_str(), IsoTime(m.trigger_time_ms).c_str(), m.duration_ms, m.state_bytes, m.mode.c_str(),
             m.alignment_ms, m.sync_ms, m.async_ms, m.channel_state_bytes, skipped_text.c_str(),
             m.sources_finished && m.channel_state_bytes == 0 ? " final" : "");
    }
  }
  print_failed_before(std::numeric_limits<CheckpointId>::max());
  if (all_completed.empty()) fprintf(stderr, "cairn: no completed checkpoints in %s\n", dir.c_str());
  return 0;
}

bool ParseInt(const std::string& s, int64_t min, int64_t* out) {
  char* end = nullptr;
  long long v = strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < min) return false;
  *out = v;
  return true;
}

// `cairn generate nexmark`: the events the `nexmark` source emits for the same parameters.
int CmdGenerateNexmark(const std::vector<std::string>& args) {
  NexmarkParams p;
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    int64_t* dst = nullptr;
    int64_t min = 0;
    std::string flag;
    if (IsFlag(a, "--out")) {
      if (!TakeValue(args, &i, "--out", &out) || out.empty()) return UsageError("--out needs a file path");
      continue;
    }
    for (auto [f, d, m] : {std::tuple{"--events", &p.events, 0}, std::tuple{"--seed", &p.seed, 0},
                           std::tuple{"--event-rate", &p.event_rate, 1},
                           std::tuple{"--person-proportion", &p.person_proportion, 1},
                           std::tuple{"--auction-proportion", &p.auction_proportion, 1},
                           std::tuple{"--bid-proportion", &p.bid_proportion, 1},
                           std::tuple{"--base-time", &p.base_time, 0}})
      if (IsFlag(a, f)) flag = f, dst = d, min = m;
    if (dst == nullptr) return UsageError("unknown argument '" + a + "' for generate nexmark");
    if (!TakeValue(args, &i, flag, &v) || !ParseInt(v, min, dst))
      return UsageError(flag + " needs an integer >= " + std::to_string(min));
  }
  if (out.empty()) return UsageError("generate nexmark needs --out FILE");
  const std::string tmp = out + ".tmp";
  FILE* f = fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Report(Status::FromErrno("cannot create", tmp, errno));
  NexmarkGenerator(p).WriteJsonl(f);
  if (fclose(f) != 0) return Report(Status::FromErrno("cannot write", tmp, errno));
  Status s = Rename(tmp, out);
  if (!s.ok()) return Report(s);
  fprintf(stderr, "cairn: wrote %" PRId64 " nexmark events to %s\n", p.events, out.c_str());
  return 0;
}

int CmdGenerate(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "nexmark") return CmdGenerateNexmark({args.begin() + 1, args.end()});
  GeneratorParams p;
  p.words = 10000000;
  ClickParams cp;
  std::string out, format = "words";
  std::vector<std::string> word_flags, click_flags;  // given, to reject those of the other format
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    auto int_flag = [&](const char* flag, int64_t min, int64_t* dst) -> int {
      if (!TakeValue(args, &i, flag, &v) || !ParseInt(v, min, dst))
        return UsageError(std::string(flag) + " needs an integer >= " + std::to_string(min));
      return 0;
    };
    int rc = 0;
    if (IsFlag(a, "--out")) {
      if (!TakeValue(args, &i, "--out", &out) || out.empty()) return UsageError("--out needs a file path");
    } else if (IsFlag(a, "--format")) {
      if (!TakeValue(args, &i, "--format", &format) || (format != "words" && format != "clicks"))
        return UsageError("--format needs words or clicks");
    } else if (IsFlag(a, "--words")) {
      rc = int_flag("--words", 0, &p.words);
      word_flags.push_back("--words");
    } else if (IsFlag(a, "--words-per-line")) {
      rc = int_flag("--words-per-line", 1, &p.words_per_line);
      word_flags.push_back("--words-per-line");
    } else if (IsFlag(a, "--vocabulary")) {
      rc = int_flag("--vocabulary", 1, &p.vocabulary);
      word_flags.push_back("--vocabulary");
    } else if (IsFlag(a, "--seed")) {
      rc = int_flag("--seed", 0, &p.seed);
      cp.seed = p.seed;
    } else if (IsFlag(a, "--zipf")) {
      char* end = nullptr;
      if (!TakeValue(args, &i, "--zipf", &v) || (p.zipf = strtod(v.c_str(), &end), *end != '\0') || p.zipf < 0)
        return UsageError("--zipf needs a number >= 0");
      word_flags.push_back("--zipf");
    } else if (IsFlag(a, "--events")) {
      rc = int_flag("--events", 0, &cp.events);
      click_flags.push_back("--events");
    } else if (IsFlag(a, "--users")) {
      rc = int_flag("--users", 1, &cp.users);
      click_flags.push_back("--users");
    } else if (IsFlag(a, "--urls")) {
      rc = int_flag("--urls", 1, &cp.urls);
      click_flags.push_back("--urls");
    } else if (IsFlag(a, "--ts")) {
      if (!TakeValue(args, &i, "--ts", &v) || (v != "iso" && v != "ms")) return UsageError("--ts needs iso or ms");
      cp.ts_ms = v == "ms";
      click_flags.push_back("--ts");
    } else {
      return UsageError("unknown argument '" + a + "'");
    }
    if (rc) return rc;
  }
  if (out.empty()) return UsageError("generate needs --out FILE");
  const bool clicks = format == "clicks";
  if (clicks && !word_flags.empty()) return UsageError(word_flags[0] + " is for --format words, not clicks");
  if (!clicks && !click_flags.empty()) return UsageError(click_flags[0] + " is for --format clicks");
  WordGenerator gen(p);
  std::string tmp = out + ".tmp";
  FILE* f = fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Report(Status::FromErrno("cannot create", tmp, errno));
  if (clicks) {
    ClickGenerator(cp).WriteJsonl(f);
  } else {
    gen.WriteText(f);
  }
  if (fclose(f) != 0) return Report(Status::FromErrno("cannot write", tmp, errno));
  Status s = Rename(tmp, out);
  if (!s.ok()) return Report(s);
  if (clicks) {
    fprintf(stderr, "cairn: wrote %" PRId64 " click events to %s\n", cp.events, out.c_str());
  } else {
    fprintf(stderr, "cairn: wrote %" PRId64 " words in %" PRId64 " lines to %s\n", p.words, gen.lines(), out.c_str());
  }
  return 0;
}

int CmdState(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "dump") return UsageError("state takes: dump CHECKPOINT [--operator ID] [--json]");
  std::string path, op;
  bool json = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") {
      json = true;
    } else if (IsFlag(a, "--operator")) {
      if (!TakeValue(args, &i, "--operator", &op) || op.empty()) return UsageError("--operator needs an operator id");
    } else if (a.size() > 1 && a[0] == '-') {
      return UsageError("unknown flag '" + a + "'");
    } else if (path.empty()) {
      path = a;
    } else {
      return UsageError("unexpected argument '" + a + "'");
    }
  }
  if (path.empty()) return UsageError("state dump needs a CHECKPOINT (a chk-<id> directory or its _metadata)");
  Status s = DumpCheckpointState(path, op, json, stdout);
  if (!s.ok()) return Report(s);
  return 0;
}

int CmdDebug(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "crash-points") {
    for (int i = 0; i < kNumCrashPoints; ++i) printf("%-26s %s\n", kCrashPoints[i].name, kCrashPoints[i].where);
    return 0;
  }
  return UsageError("debug takes: crash-points");
}

}  // namespace

int CairnMain(int argc, char** argv) {
  KeepLargeAllocationsInHeap();  // best effort; see engine/base/allocator.h
  std::string err;
  if (!InitCrashPoints(&err) || !InitStorageFaults(&err)) {
    fprintf(stderr, "cairn: %s\n", err.c_str());
    return 2;
  }
  if (argc < 2) return UsageError("missing command");
  std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (cmd == "run") return CmdRun(args);
  if (cmd == "coordinator") return CmdCoordinator(args);
  if (cmd == "worker") return CmdWorker(args);
  if (cmd == "validate") return CmdValidate(args);
  if (cmd == "checkpoints") return CmdCheckpoints(args);
  if (cmd == "generate") return CmdGenerate(args);
  if (cmd == "kafka") return CmdKafka(args);
  if (cmd == "debug") return CmdDebug(args);
  if (cmd == "state") return CmdState(args);
  if (cmd == "savepoint") return CmdSavepoint(args);
  if (cmd == "verify") return CmdVerify(args);
  if (cmd == "stop") return CmdStop(args);
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    fputs(kUsage, stdout);
    return 0;
  }
  return UsageError("unknown command '" + cmd + "'");
}

}  // namespace cairn
