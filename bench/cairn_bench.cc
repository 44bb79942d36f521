// cairn-bench: the macro-benchmarks of issue #5. It measures the word count job run by the real
// `cairn` binary (one child process per run, so peak memory is per run and a crash is a failed
// run, not a failed harness) against a hand-written single-threaded baseline doing the same
// job, on a seeded Zipf corpus; with checkpoints off, every 1 s and every 100 ms; with a sink
// that writes the changelog and one that discards it; checkpoint durations under
// backpressure; and recovery of 1M keys. Every configuration runs --reps times, interleaved
// (one run of each per repetition, in an order rotated every repetition), and is reported as
// median [min-max]. Every run's result is checked against the baseline's (word total, top
// words, changelog bytes): a benchmark that computes the wrong answer fails.
//
// Usage: see kUsage, or docs/benchmarks.md.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/baseline_wordcount.h"
#include "bench/bench_results.h"
#include "bench/corpus.h"
#include "bench/kafka_bench.h"
#include "bench/rebalance_bench.h"
#include "bench/process_runner.h"
#include "bench/throughput_plot.h"
#include "engine/base/allocator.h"
#include "engine/base/file_util.h"
#include "state/checkpoint_layout.h"

#ifndef CAIRN_SOURCE_DIR
#define CAIRN_SOURCE_DIR "."
#endif

namespace cairn {
namespace {

constexpr const char* kUsage =
    "usage: cairn-bench [--quick] [--reps N] [--words N] [--seed N] [--keys N] [--json FILE] [--svg FILE]\n"
    "                   [--data-dir DIR] [--cairn PATH] [--source-dir DIR] [--progress-interval DURATION]\n"
    "                   [--only NAME,NAME...] [--list] [--no-unaligned] [--events N]\n"
    "       cairn-bench baseline INPUT (OUTPUT | --count-only)\n"
    "       cairn-bench records [--reps N] [--events N] [--keys N] [--no-aggregate] [--cairn PATH] [--data-dir DIR]\n"
    "       cairn-bench kafka [--reps N] [--lines N] [--cairn PATH] [--data-dir DIR]\n"
    "       cairn-bench rebalance [--reps N] [--lines N] [--slow-us N] [--backpressure] [--cairn PATH] [--data-dir DIR]\n"
    "       cairn-bench large-state [--reps N] [--words N] [--keys N] [--paced-rate N] [--big-keys N] [--big-words N]\n"
    "                   [--no-big] [--svg FILE] [--cairn PATH] [--data-dir DIR]\n"
    "  --quick               a smoke test in under a minute: 1.7M words (~10 MB), 1 run per configuration\n"
    "  --reps N              runs per configuration (default 5; --quick: 1)\n"
    "  --words N             corpus size in words (default 17000000, ~102 MB; --quick: 1700000)\n"
    "  --seed N              corpus seed (default 42)\n"
    "  --keys N              keys of state for the recovery benchmark (default 1000000)\n"
    "  --json FILE           also write every measurement as JSON\n"
    "  --svg FILE            throughput-over-time plot (default BUILD/bench-throughput.svg)\n"
    "  --data-dir DIR        generated inputs (kept and reused) and scratch output (default BUILD/bench-data)\n"
    "  --cairn PATH          the engine binary (default: cairn next to cairn-bench)\n"
    "  --source-dir DIR      where jobs/*.yaml are (default: the source tree this was built from)\n"
    "  --progress-interval D engine progress lines, for the plot (default 100ms)\n"
    "  --only NAMES          run only these configurations (see --list)\n"
    "  --no-unaligned        skip the unaligned backpressure runs (with and without state.changelog; run by default)\n"
    "  --only nexmark        the Nexmark queries of jobs/nexmark/ instead (alone; docs/benchmarks.md, \"Nexmark\")\n"
    "  --events N            --only nexmark: events per run (default 10000000; --quick: 1000000)\n"
    "  baseline ...          run the single-threaded baseline once and print its result (used by the harness)\n"
    "  records ...           jobs/clicks.yaml on heap and rocksdb (--events, default 2000000), and --keys (default\n"
    "                        10000000) distinct keys through aggregate on rocksdb (docs/benchmarks.md)\n"
    "  kafka ...             a pass-through job Kafka -> Kafka (exactly-once sink) through librdkafka's mock cluster\n"
    "                        beside file -> file, checkpoints every 1 s (--lines, default 400000; docs/benchmarks.md)\n"
    "  rebalance ...         one slow tokenize subtask: a load-balanced edge (partition: rebalance) against a forward\n"
    "                        one, aligned and unaligned: lines/s and checkpoint duration (--lines, default 1000000;\n"
    "                        --slow-us, default 20000 per batch, 0: none; --backpressure: a throttle as the stage;\n"
    "                        docs/benchmarks.md)\n"
    "  large-state ...       the word count on a large vocabulary (--keys, default 2200000 distinct words, --words\n"
    "                        30000000) with the RocksDB delta and with state.changelog, at full speed and paced\n"
    "                        (--paced-rate words/s, default 2000000), checkpoints off, 1 s and 100 ms; restores;\n"
    "                        then --big-keys (default 10000000) once; plot in BUILD/bench-large-state.svg\n";

struct Flags {
  bool quick = false;
  int reps = -1;
  int64_t words = -1;
  int64_t seed = 42;
  int64_t keys = 1000000;
  std::string json, svg, data_dir, cairn, source_dir;
  std::string progress_interval = "100ms";
  std::vector<std::string> only;
  bool list = false;
  bool unaligned = true;
  int64_t nexmark_events = -1;  // --only nexmark: events per run
};

int UsageError(const std::string& msg) {
  fprintf(stderr, "cairn-bench: %s\n%s", msg.c_str(), kUsage);
  return 2;
}

std::string Dirname(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? "." : p.substr(0, s);
}

std::string SelfPath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "cairn-bench";
  return std::string(buf, static_cast<size_t>(n));
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

bool ParseFlags(int argc, char** argv, Flags* f, int* rc) {
  std::vector<std::string> a(argv + 1, argv + argc);
  for (size_t i = 0; i < a.size(); ++i) {
    auto value = [&](std::string* v) {
      if (i + 1 >= a.size()) return false;
      *v = a[++i];
      return true;
    };
    auto int_value = [&](int64_t min, int64_t* v) {
      std::string s;
      if (!value(&s)) return false;
      char* end = nullptr;
      long long x = strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || x < min) return false;
      *v = x;
      return true;
    };
    std::string v;
    int64_t n;
    if (a[i] == "--quick") {
      f->quick = true;
    } else if (a[i] == "--list") {
      f->list = true;
    } else if (a[i] == "--no-unaligned") {
      f->unaligned = false;
    } else if (a[i] == "--reps") {
      if (!int_value(1, &n)) return *rc = UsageError("--reps needs an integer >= 1"), false;
      f->reps = static_cast<int>(n);
    } else if (a[i] == "--words") {
      if (!int_value(1000, &f->words)) return *rc = UsageError("--words needs an integer >= 1000"), false;
    } else if (a[i] == "--seed") {
      if (!int_value(0, &f->seed)) return *rc = UsageError("--seed needs an integer >= 0"), false;
    } else if (a[i] == "--events") {
      if (!int_value(1000, &f->nexmark_events)) return *rc = UsageError("--events needs an integer >= 1000"), false;
    } else if (a[i] == "--keys") {
      if (!int_value(1, &f->keys)) return *rc = UsageError("--keys needs an integer >= 1"), false;
    } else if (a[i] == "--json") {
      if (!value(&f->json)) return *rc = UsageError("--json needs a file"), false;
    } else if (a[i] == "--svg") {
      if (!value(&f->svg)) return *rc = UsageError("--svg needs a file"), false;
    } else if (a[i] == "--data-dir") {
      if (!value(&f->data_dir)) return *rc = UsageError("--data-dir needs a directory"), false;
    } else if (a[i] == "--cairn") {
      if (!value(&f->cairn)) return *rc = UsageError("--cairn needs a path"), false;
    } else if (a[i] == "--source-dir") {
      if (!value(&f->source_dir)) return *rc = UsageError("--source-dir needs a directory"), false;
    } else if (a[i] == "--progress-interval") {
      if (!value(&f->progress_interval)) return *rc = UsageError("--progress-interval needs a duration"), false;
    } else if (a[i] == "--only") {
      if (!value(&v)) return *rc = UsageError("--only needs configuration names"), false;
      f->only = Split(v, ',');
    } else if (a[i] == "-h" || a[i] == "--help") {
      fputs(kUsage, stdout);
      return *rc = 0, false;
    } else {
      return *rc = UsageError("unknown argument '" + a[i] + "'"), false;
    }
  }
  if (f->reps < 0) f->reps = f->quick ? 1 : 5;
  if (f->words < 0) f->words = f->quick ? 1700000 : 17000000;
  const std::string build = Dirname(SelfPath());
  if (f->data_dir.empty()) f->data_dir = build + "/bench-data";
  if (f->svg.empty()) f->svg = build + "/bench-throughput.svg";
  if (f->cairn.empty()) f->cairn = build + "/cairn";
  if (f->source_dir.empty()) f->source_dir = CAIRN_SOURCE_DIR;
  return true;
}

// --- The baseline, as a child process mode -------------------------------------------------

int BaselineMain(const std::vector<std::string>& args) {
  if (args.size() != 2) return UsageError("baseline needs INPUT and OUTPUT (or --count-only)");
  const bool count_only = args[1] == "--count-only";
  // The allocator setting the engine's binary runs with (CairnMain): a fair baseline.
  KeepLargeAllocationsInHeap();
  BaselineResult r;
  Status s = RunBaselineWordCount(args[0], count_only ? "" : args[1], count_only, &r);
  if (!s.ok()) {
    fprintf(stderr, "cairn-bench: %s\n", s.message().c_str());
    return 1;
  }
  printf("words %" PRIu64 " distinct %" PRIu64 " output_bytes %" PRIu64 " seconds %.6f\n", r.words, r.distinct,
         r.output_bytes, r.seconds);
  printf("top");
  for (const auto& [w, c] : r.top) printf(" %s %" PRId64, w.c_str(), c);
  printf("\n");
  return 0;
}

// --- Reading what the children print -----------------------------------------------------

std::vector<std::pair<std::string, int64_t>> ParseTop(const std::string& text) {
  std::vector<std::pair<std::string, int64_t>> top;
  std::istringstream in(text);
  std::string w;
  int64_t c;
  while (in >> w >> c) top.emplace_back(w, c);
  return top;
}

// The line of `text` that starts (after spaces) with `prefix`, without the prefix; "" if none.
std::string LineAfter(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t p = line.find_first_not_of(' ');
    if (p != std::string::npos && line.compare(p, prefix.size(), prefix) == 0) return line.substr(p + prefix.size());
  }
  return "";
}

int64_t JsonInt(const std::string& line, const std::string& key) {
  size_t p = line.find("\"" + key + "\":");
  if (p == std::string::npos) return 0;
  return strtoll(line.c_str() + p + key.size() + 3, nullptr, 10);
}

Status ReadCheckpoints(const std::string& cairn, const std::string& dir, std::vector<CheckpointRecord>* out) {
  ChildResult r;
  CAIRN_RETURN_IF_ERROR(RunChild({cairn, "checkpoints", dir, "--json"}, &r));
  if (!r.ok()) return Status::Internal("cairn checkpoints " + dir + " failed: " + r.Describe());
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    CheckpointRecord c;
    c.id = static_cast<uint64_t>(JsonInt(line, "id"));
    c.trigger_time_ms = JsonInt(line, "trigger_time_ms");
    c.duration_ms = JsonInt(line, "duration_ms");
    c.alignment_ms = JsonInt(line, "alignment_ms");
    c.sync_ms = JsonInt(line, "sync_ms");
    c.async_ms = JsonInt(line, "async_ms");
    c.state_bytes = static_cast<uint64_t>(JsonInt(line, "state_bytes"));
    c.final = line.find("\"final\":true") != std::string::npos;
    out->push_back(c);
  }
  return Status::OK();
}

void ParseEngineOutput(const ChildResult& c, RunRecord* run) {
  const std::string done = LineAfter(c.out, "job ");
  size_t p = done.find(" completed in ");
  if (p != std::string::npos) run->engine_seconds = strtod(done.c_str() + p + 14, nullptr);
  run->words = strtoull(LineAfter(c.out, "sink records").c_str(), nullptr, 10);
  run->top = ParseTop(LineAfter(c.out, "top words"));
  for (const TimedLine& l : c.err_lines) {
    double t;
    unsigned long long in, out;
    if (sscanf(l.text.c_str(), "cairn: %lfs source records %llu sink records %llu", &t, &in, &out) == 3) {
      run->progress.push_back(ProgressPoint{l.seconds, out});
      continue;
    }
    unsigned long long id, keys;
    double secs;
    if (sscanf(l.text.c_str(), "cairn: restored checkpoint %llu (%llu keys) in %lf s", &id, &keys, &secs) == 3) {
      run->restore_seconds = secs;
      run->restored_keys = keys;
    }
  }
}

double LoadAverage() {
  std::ifstream f("/proc/loadavg");
  double l = 0;
  f >> l;
  return l;
}

MachineInfo ReadMachine() {
  MachineInfo m;
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, 10, "model name") == 0) {
      size_t p = line.find(':');
      if (p != std::string::npos) m.cpu = line.substr(line.find_first_not_of(' ', p + 1));
      break;
    }
  }
  m.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  m.mem_bytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  utsname u{};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  m.compiler = __VERSION__;
  return m;
}

// Bytes of the committed part files in a file_sink directory; an in-progress file left after
// the job ended is an error (every file is committed by the final checkpoint).
Status SinkOutputBytes(const std::string& dir, uint64_t* bytes) {
  std::vector<std::string> names;
  CAIRN_RETURN_IF_ERROR(ListDir(dir, &names));
  *bytes = 0;
  for (const std::string& n : names) {
    if (n.compare(0, 5, "part-") == 0) {
      *bytes += DiskUsage(dir + "/" + n);
    } else if (n[0] == '.') {
      return Status::Internal("sink file " + dir + "/" + n + " was never committed");
    }
  }
  return Status::OK();
}

void ReadWholeFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (f.read(buf.data(), static_cast<std::streamsize>(buf.size())) || f.gcount() > 0) {
  }
}

// --- Configurations ----------------------------------------------------------------------

struct Bench {
  Flags flags;
  std::string self, corpus, keys_file, job, discard_job, scratch, recovery_dir;
  BenchResults results;
  uint64_t expected_changelog_bytes = 0;  // from the first baseline changelog run
  std::vector<std::pair<std::string, int64_t>> expected_top;

  std::vector<std::string> EngineArgs(const std::string& job_file, const std::string& dir,
                                      const std::string& interval) const {
    std::vector<std::string> a = {flags.cairn,
                                  "run",
                                  job_file,
                                  "--progress-interval",
                                  flags.progress_interval,
                                  "--set",
                                  "operators.source.path=" + corpus,
                                  "--set",
                                  "checkpoint.dir=" + dir + "/checkpoints",
                                  "--set",
                                  "checkpoint.interval=" + interval,
                                  "--set",
                                  "checkpoint.retain=1000"};
    if (job_file == job) {
      a.push_back("--set");
      a.push_back("operators.sink.path=" + dir + "/out");
    }
    return a;
  }

  void RunBaseline(bool count_only, RunRecord* run) {
    const std::string out = scratch + "/baseline-changelog.txt";
    ChildResult c;
    Status s = RunChild({self, "baseline", corpus, count_only ? "--count-only" : out}, &c);
    RemoveAll(out).IgnoreError();  // scratch space: best effort
    Fill(c, s, run);
    if (!run->ok) return;
    std::string first = LineAfter(c.out, "words ");
    run->words = strtoull(first.c_str(), nullptr, 10);
    size_t p = first.find("output_bytes ");
    if (p != std::string::npos) run->output_bytes = strtoull(first.c_str() + p + 13, nullptr, 10);
    run->top = ParseTop(LineAfter(c.out, "top"));
    if (!count_only && expected_changelog_bytes == 0) expected_changelog_bytes = run->output_bytes;
  }

  void RunEngine(const std::string& job_file, const std::string& interval, const std::vector<std::string>& extra,
                 RunRecord* run) {
    const std::string dir = scratch + "/engine";
    RemoveAll(dir).IgnoreError();  // scratch space: best effort
    std::vector<std::string> argv = EngineArgs(job_file, dir, interval);
    argv.insert(argv.end(), extra.begin(), extra.end());
    ChildResult c;
    Status s = RunChild(argv, &c);
    Fill(c, s, run);
    if (run->ok) {
      ParseEngineOutput(c, run);
      Status cs = ReadCheckpoints(flags.cairn, dir + "/checkpoints", &run->checkpoints);
      if (cs.ok() && job_file == job) cs = SinkOutputBytes(dir + "/out", &run->output_bytes);
      if (!cs.ok()) {
        run->ok = false;
        run->error = cs.message();
      }
    }
    RemoveAll(dir).IgnoreError();  // scratch space: best effort
  }

  // Builds (once) the checkpoint holding flags.keys keys that the recovery runs restore.
  Status BuildRecoveryState() {
    RemoveAll(recovery_dir).IgnoreError();  // scratch space: best effort
    std::vector<std::string> argv = {flags.cairn, "run", discard_job, "--quiet",
                                     "--set", "operators.source.path=" + keys_file,
                                     "--set", "checkpoint.dir=" + recovery_dir,
                                     "--set", "checkpoint.interval=0",
                                     "--set", "checkpoint.retain=1000"};
    ChildResult c;
    CAIRN_RETURN_IF_ERROR(RunChild(argv, &c));
    if (!c.ok()) return Status::Internal("building the recovery state failed: " + c.Describe());
    results.state_build_seconds = c.wall_seconds;
    std::vector<CheckpointRecord> cps;
    CAIRN_RETURN_IF_ERROR(ReadCheckpoints(flags.cairn, recovery_dir, &cps));
    if (cps.size() != 1 || !cps[0].final) return Status::Internal("expected one final checkpoint in " + recovery_dir);
    results.state_checkpoint = cps[0];
    return Status::OK();
  }

  void RunRecovery(RunRecord* run) {
    std::vector<std::string> argv = {flags.cairn, "run", discard_job,
                                     "--restore", CheckpointPath(recovery_dir, results.state_checkpoint.id),
                                     "--progress-interval", flags.progress_interval,
                                     "--set", "operators.source.path=" + keys_file,
                                     "--set", "checkpoint.dir=" + recovery_dir,
                                     "--set", "checkpoint.interval=0",
                                     "--set", "checkpoint.retain=1000"};
    ChildResult c;
    Status s = RunChild(argv, &c);
    Fill(c, s, run);
    if (run->ok) ParseEngineOutput(c, run);
    // Keep only the restored checkpoint, so that every repetition starts from the same directory.
    std::vector<std::string> names;
    if (ListDir(recovery_dir, &names).ok())
      for (const std::string& n : names)
        if (CheckpointId id; ParseCheckpointDirName(n, &id) && id != results.state_checkpoint.id)
          RemoveAll(recovery_dir + "/" + n).IgnoreError();  // scratch space: best effort
    if (run->ok && run->restored_keys != static_cast<uint64_t>(flags.keys)) {
      run->ok = false;
      run->error = "restored " + std::to_string(run->restored_keys) + " keys, expected " + std::to_string(flags.keys);
    }
  }

  static void Fill(const ChildResult& c, const Status& s, RunRecord* run) {
    run->wall_seconds = c.wall_seconds;
    run->max_rss_kb = c.max_rss_kb;
    run->user_seconds = c.user_seconds;
    run->sys_seconds = c.sys_seconds;
    run->start_wall_ms = c.start_wall_ms;
    run->ok = s.ok() && c.ok();
    if (!s.ok()) run->error = s.message();
    else if (!c.ok()) run->error = c.Describe();
  }
};

struct Config {
  ConfigInfo info;
  std::function<void(Bench*, RunRecord*)> run;
};

std::vector<Config> AllConfigs(bool unaligned) {
  std::vector<Config> v;
  using K = ConfigInfo::Kind;
  v.push_back({{"baseline-changelog", "baseline, 1 thread, changelog", K::kBaseline, "", "", 0},
               [](Bench* b, RunRecord* r) { b->RunBaseline(false, r); }});
  v.push_back({{"baseline-count", "baseline, 1 thread, count only", K::kBaseline, "", "", 0},
               [](Bench* b, RunRecord* r) { b->RunBaseline(true, r); }});
  struct Engine {
    const char* sink;
    const char* interval;
    const char* label;
    double target;
  };
  for (const char* sink : {"changelog", "discard"}) {
    for (Engine e : {Engine{sink, "0", "no checkpoints", 0}, Engine{sink, "1s", "checkpoint 1 s", 0.03},
                     Engine{sink, "100ms", "checkpoint 100 ms", 0.10}}) {
      std::string name = std::string("engine-") + sink + "-" + (std::string(e.interval) == "0" ? "off" : e.interval);
      std::string off = std::string(e.interval) == "0" ? "" : std::string("engine-") + sink + "-off";
      std::string sink_s = sink, interval = e.interval;
      v.push_back({{name, std::string("engine, 2 threads, ") + sink + ", " + e.label, K::kEngine, interval, off,
                    e.target},
                   [sink_s, interval](Bench* b, RunRecord* r) {
                     b->RunEngine(sink_s == "changelog" ? b->job : b->discard_job, interval, {}, r);
                   }});
    }
  }
  // The 100 ms run with the keyed state's changelog (state.changelog: a checkpoint writes each
  // changed key once to an append-only segment instead of its delta into RocksDB; RocksDB is
  // materialized in the background every state.materialize_interval): issue 15's small-state
  // target, 100 ms checkpoints keeping >= 97% of the throughput.
  v.push_back({{"engine-changelog-state-100ms", "engine, changelog, state.changelog, ckpt 100 ms",
                K::kEngine, "100ms", "engine-changelog-off", 0.03},
               [](Bench* b, RunRecord* r) { b->RunEngine(b->job, "100ms", {"--set", "state.changelog=true"}, r); }});
  // The same word count on 2 worker processes (`cairn run --local-workers 2`: a coordinator and
  // two `cairn worker`s on loopback; the hash edge crosses the processes): against the one
  // process above. CPU seconds include the workers' (the coordinator reaps them).
  for (Engine e : {Engine{"changelog", "0", "no checkpoints", 0}, Engine{"changelog", "100ms", "checkpoint 100 ms", 0}}) {
    const bool off = std::string(e.interval) == "0";
    std::string name = std::string("workers2-changelog-") + (off ? "off" : e.interval);
    std::string interval = e.interval;
    v.push_back({{name, std::string("2 worker processes, changelog, ") + e.label, K::kEngine, interval,
                  off ? "" : "workers2-changelog-off", off ? 0 : 0.10},
                 [interval](Bench* b, RunRecord* r) { b->RunEngine(b->job, interval, {"--local-workers", "2"}, r); }});
  }
  // Backpressure: count and sink at parallelism 1 behind two source subtasks, so the count
  // chain is the bottleneck and the channels in front of it stay full.
  for (std::string mode : {"aligned", "unaligned"}) {
    if (mode == "unaligned" && !unaligned) continue;
    v.push_back({{"backpressure-" + mode + "-100ms", "backpressure, " + mode + ", count 1 subtask, 100 ms",
                  K::kBackpressure, "100ms", "", 0},
                 [mode](Bench* b, RunRecord* r) {
                   b->RunEngine(b->job, "100ms",
                                {"--set", "operators.count.parallelism=1", "--set", "operators.sink.parallelism=1",
                                 "--set", "checkpoint.mode=" + mode},
                                r);
                 }});
  }
  // The same unaligned run with the keyed state's changelog (state.changelog: a checkpoint
  // writes a changelog segment instead of its delta into RocksDB): issue 15's target for
  // unaligned checkpoints under backpressure (median <= 20 ms).
  if (unaligned)
    v.push_back({{"backpressure-unaligned-changelog-100ms", "backpressure, unaligned, changelog state, 100 ms",
                  K::kBackpressure, "100ms", "", 0},
                 [](Bench* b, RunRecord* r) {
                   b->RunEngine(b->job, "100ms",
                                {"--set", "operators.count.parallelism=1", "--set", "operators.sink.parallelism=1",
                                 "--set", "checkpoint.mode=unaligned", "--set", "state.changelog=true"},
                                r);
                 }});
  v.push_back({{"recovery", "restore of the word count's keyed state", K::kRecovery, "0", "", 0},
               [](Bench* b, RunRecord* r) { b->RunRecovery(r); }});
  return v;
}

// --- The run -----------------------------------------------------------------------------

// Checks a run's answer against the baseline's.
void Check(Bench& b, const Config& cfg, RunRecord* run) {
  if (!run->ok || cfg.info.kind == ConfigInfo::Kind::kRecovery) return;
  auto fail = [&](const std::string& why) {
    run->ok = false;
    run->error = why;
  };
  if (run->words != static_cast<uint64_t>(b.flags.words))
    return fail("counted " + std::to_string(run->words) + " words, the corpus has " + std::to_string(b.flags.words));
  if (!b.expected_top.empty() && run->top != b.expected_top) return fail("top words differ from the baseline's");
  if (run->output_bytes != 0 && b.expected_changelog_bytes != 0 && run->output_bytes != b.expected_changelog_bytes)
    return fail("changelog has " + std::to_string(run->output_bytes) + " bytes, the baseline's " +
                std::to_string(b.expected_changelog_bytes));
}

// (time, records/s) between consecutive progress lines.
std::vector<std::pair<double, double>> Rates(const RunRecord& run) {
  std::vector<std::pair<double, double>> pts;
  for (size_t i = 1; i < run.progress.size(); ++i) {
    const ProgressPoint &a = run.progress[i - 1], &b = run.progress[i];
    double dt = b.seconds - a.seconds;
    if (dt <= 0) continue;
    pts.emplace_back((a.seconds + b.seconds) / 2, static_cast<double>(b.sink_records - a.sink_records) / dt);
  }
  return pts;
}

// The successful run of `config` whose throughput is nearest the median.
const RunRecord* MedianRun(const BenchResults& r, const std::string& config) {
  double m = r.MedianThroughput(config);
  const RunRecord* best = nullptr;
  for (const RunRecord* run : r.RunsOf(config))
    if (best == nullptr || std::fabs(run->words_per_second - m) < std::fabs(best->words_per_second - m)) best = run;
  return best;
}

std::string Plot(const BenchResults& r) {
  std::vector<PlotPanel> panels;
  for (const char* sink : {"changelog", "discard"}) {
    for (const char* iv : {"1s", "100ms"}) {
      std::string name = std::string("engine-") + sink + "-" + iv;
      const RunRecord* run = MedianRun(r, name);
      const RunRecord* off = MedianRun(r, std::string("engine-") + sink + "-off");
      if (run == nullptr) continue;
      PlotPanel p;
      char rate[32];
      snprintf(rate, sizeof rate, "%.1f", run->words_per_second / 1e6);
      p.title = std::string(sink == std::string("changelog") ? "file sink writing the changelog" : "discarding sink") +
                ", checkpoints every " + (iv == std::string("1s") ? "1 s" : "100 ms") + " (median run, " + rate +
                " M words/s)";
      if (off != nullptr) p.series.push_back({"same job, no checkpoints (median run)", "#9a9a9a", Rates(*off)});
      p.series.push_back({"with checkpoints", "#1f77b4", Rates(*run)});
      for (const CheckpointRecord& c : run->checkpoints)
        p.checkpoints.push_back({static_cast<double>(c.trigger_time_ms - run->start_wall_ms) / 1000.0,
                                 static_cast<double>(c.duration_ms) / 1000.0, c.final});
      panels.push_back(std::move(p));
    }
  }
  char sub[256];
  snprintf(sub, sizeof sub, "%" PRId64 " words, %.0f MB corpus; %s; progress every %s; red: the final checkpoint",
           r.params.words, static_cast<double>(r.params.corpus_bytes) / 1e6, r.machine.cpu.c_str(),
           r.params.progress_interval.c_str());
  return ThroughputSvg("Cairn word count: throughput over time, checkpoints marked", sub, panels);
}

// --- cairn-bench records: the typed-record jobs of issue 11 ---------------------------------
//
// clicks: jobs/clicks.yaml (jsonl -> filter -> map -> aggregate -> jsonl) on generated click
// events with checkpoints every second, on the heap and the rocksdb backend, interleaved; both
// backends' committed outputs must be identical. aggregate-rocksdb: `keys` distinct words,
// split by flat_map and counted by `aggregate` with state.backend rocksdb and a 64 MB block
// cache per subtask: throughput, checkpoint durations and peak memory.

// A digest of the clicks job's committed output (one update per line), and its line count.
std::string SortedDigest(const std::string& dir, size_t* lines) {
  std::vector<std::string> all, names;
  if (ListDir(dir, &names).ok())
    for (const std::string& n : names) {
      if (n.empty() || n[0] == '.' || n[0] == '_') continue;
      std::ifstream in(dir + "/" + n);
      // The (user, n) of each update: which updates exist does not depend on the order in which
      // the two source subtasks' records interleave, the other aggregates of an update do.
      for (std::string line; std::getline(in, line);) {
        size_t u = line.find("\"user\":"), c = line.find(",\"n\":");
        all.push_back(u == std::string::npos || c == std::string::npos ? line
                                                                        : line.substr(u, line.find(',', u) - u) +
                                                                              line.substr(c, line.find(',', c + 1) - c));
      }
    }
  std::sort(all.begin(), all.end());
  *lines = all.size();
  uint64_t h = 1469598103934665603ull;
  for (const std::string& l : all)
    for (char c : l + "\n") h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return std::to_string(h);
}

uint64_t SinkRecords(const std::string& out) {
  std::string line = LineAfter(out, "sink records");
  return strtoull(line.c_str(), nullptr, 10);
}

int RecordsMain(const std::vector<std::string>& args) {
  int reps = 3;
  int64_t events = 2000000, keys = 10000000;
  std::string cairn = Dirname(SelfPath()) + "/cairn", source_dir = CAIRN_SOURCE_DIR, data_dir;
  bool skip_aggregate = false;
  for (size_t i = 0; i < args.size(); ++i) {
    auto next = [&](std::string* v) { return i + 1 < args.size() && (*v = args[++i], true); };
    std::string v;
    if (args[i] == "--reps" && next(&v)) reps = std::max(1, atoi(v.c_str()));
    else if (args[i] == "--events" && next(&v)) events = std::max<int64_t>(1000, atoll(v.c_str()));
    else if (args[i] == "--keys" && next(&v)) keys = std::max<int64_t>(1000, atoll(v.c_str()));
    else if (args[i] == "--cairn" && next(&v)) cairn = v;
    else if (args[i] == "--source-dir" && next(&v)) source_dir = v;
    else if (args[i] == "--data-dir" && next(&v)) data_dir = v;
    else if (args[i] == "--no-aggregate") skip_aggregate = true;
    else return UsageError("records: unknown or incomplete argument '" + args[i] + "'");
  }
  if (data_dir.empty()) data_dir = Dirname(SelfPath()) + "/bench-data";
  const std::string scratch = data_dir + "/records-scratch";
  if (Status s = CreateDirs(scratch); !s.ok()) return fprintf(stderr, "cairn-bench: %s\n", s.message().c_str()), 1;
  const std::string clicks = data_dir + "/clicks-" + std::to_string(events) + ".jsonl";
  if (!PathExists(clicks)) {
    ChildResult g;
    Status s = RunChild({cairn, "generate", "--format", "clicks", "--out", clicks, "--events", std::to_string(events)}, &g);
    if (!s.ok() || !g.ok()) return fprintf(stderr, "cairn-bench: generating clicks failed\n"), 1;
  }
  ReadWholeFile(clicks);
  printf("cairn-bench records: clicks, %" PRId64 " events, checkpoints every 1 s, %d runs per backend, interleaved\n",
         events, reps);
  std::map<std::string, std::vector<double>> rate, cpu, rss;
  std::map<std::string, std::string> digest;
  for (int rep = 0; rep < reps; ++rep) {
    for (const std::string& backend : rep % 2 == 0 ? std::vector<std::string>{"heap", "rocksdb"}
                                                  : std::vector<std::string>{"rocksdb", "heap"}) {
      const std::string dir = scratch + "/" + backend;
      RemoveAll(dir).IgnoreError();
      ChildResult c;
      Status s = RunChild({cairn, "run", source_dir + "/jobs/clicks.yaml", "--set", "operators.clicks.path=" + clicks,
                           "--set", "operators.sink.path=" + dir + "/out", "--set", "checkpoint.dir=" + dir + "/ck",
                           "--set", "checkpoint.interval=1s", "--set", "state.backend=" + backend},
                          &c, 1800);
      if (!s.ok() || !c.ok()) {
        fprintf(stderr, "cairn-bench: clicks on %s failed: %s\n", backend.c_str(), s.ok() ? c.Describe().c_str() : s.message().c_str());
        return 1;
      }
      size_t lines = 0;
      std::string d = SortedDigest(dir + "/out", &lines);
      if (rep == 0) digest[backend] = d;
      if (d != digest[backend] || lines != SinkRecords(c.out)) {
        fprintf(stderr, "cairn-bench: clicks on %s: the output differs between runs or from the sink's count\n",
                backend.c_str());
        return 1;
      }
      rate[backend].push_back(static_cast<double>(events) / c.wall_seconds);
      cpu[backend].push_back(c.user_seconds + c.sys_seconds);
      rss[backend].push_back(static_cast<double>(c.max_rss_kb) / 1024.0);
      fprintf(stderr, "cairn-bench: records rep %d %-8s %.3f s  %.2f M records/s\n", rep + 1, backend.c_str(),
              c.wall_seconds, static_cast<double>(events) / c.wall_seconds / 1e6);
    }
  }
  if (digest["heap"] != digest["rocksdb"]) {
    fprintf(stderr, "cairn-bench: clicks: the heap and rocksdb backends committed different outputs\n");
    return 1;
  }
  for (const std::string backend : {"heap", "rocksdb"}) {
    Spread r = Spread::Of(rate[backend]), c = Spread::Of(cpu[backend]), m = Spread::Of(rss[backend]);
    printf("  clicks, %-8s %.2f M records/s [%.2f-%.2f], CPU %.2f s, peak RSS %.0f MiB\n", backend.c_str(),
           r.median / 1e6, r.min / 1e6, r.max / 1e6, c.median, m.median);
  }
  printf("  rocksdb / heap: %.2f (outputs identical)\n",
         Spread::Of(rate["rocksdb"]).median / Spread::Of(rate["heap"]).median);
  if (skip_aggregate) return 0;

  std::string words;
  if (Status s = EnsureDistinctWords(data_dir, keys, &words); !s.ok())
    return fprintf(stderr, "cairn-bench: %s\n", s.message().c_str()), 1;
  ReadWholeFile(words);
  const std::string dir = scratch + "/aggregate";
  RemoveAll(dir).IgnoreError();
  if (Status s = CreateDirs(dir); !s.ok()) return fprintf(stderr, "cairn-bench: %s\n", s.message().c_str()), 1;
  const std::string job = dir + "/job.yaml";
  std::string yaml = "job: aggregate-rocksdb\nparallelism: 2\ncheckpoint:\n  interval: 10s\n  dir: " + dir +
                     "/ck\n  retain: 1000\nstate:\n  backend: rocksdb\n  rocksdb: {block_cache: 64MB, write_buffer: 16MB}\n"
                     "operators:\n  - {id: source, type: file_source, path: '" + words + "'}\n"
                     "  - {id: words, type: flat_map, inputs: [source], split: line, into: word}\n"
                     "  - {id: per_word, type: aggregate, inputs: [words], key_by: word, aggregates: {n: 'count(*)'}}\n"
                     "  - {id: sink, type: discard_sink, inputs: [per_word]}\n";
  if (Status s = WriteFileAtomically(job, yaml); !s.ok()) return fprintf(stderr, "cairn-bench: %s\n", s.message().c_str()), 1;
  ChildResult c;
  Status s = RunChild({cairn, "run", job}, &c, 7200);
  if (!s.ok() || !c.ok()) return fprintf(stderr, "cairn-bench: the aggregate job failed: %s\n", s.ok() ? c.Describe().c_str() : s.message().c_str()), 1;
  if (SinkRecords(c.out) != static_cast<uint64_t>(keys))
    return fprintf(stderr, "cairn-bench: the aggregate job emitted %" PRIu64 " records, not %" PRId64 "\n", SinkRecords(c.out), keys), 1;
  std::vector<CheckpointRecord> cps;
  if (Status cs = ReadCheckpoints(cairn, dir + "/ck", &cps); !cs.ok()) return fprintf(stderr, "cairn-bench: %s\n", cs.message().c_str()), 1;
  std::vector<double> durations;
  uint64_t bytes = 0;
  for (const CheckpointRecord& k : cps) {
    durations.push_back(static_cast<double>(k.duration_ms));
    bytes = std::max(bytes, k.state_bytes);
  }
  Spread d = Spread::Of(durations);
  printf("aggregate, %" PRId64 " keys, state.backend rocksdb, block_cache 64MB + write_buffer 16MB per subtask (2):\n", keys);
  printf("  %.3f s, %.2f M records/s; %zu checkpoints, duration median %.0f ms [%.0f-%.0f], largest %.1f MB of new files\n",
         c.wall_seconds, static_cast<double>(keys) / c.wall_seconds / 1e6, cps.size(), d.median, d.min, d.max,
         static_cast<double>(bytes) / 1e6);
  printf("  peak RSS %.0f MiB, CPU %.1f s\n", static_cast<double>(c.max_rss_kb) / 1024.0, c.user_seconds + c.sys_seconds);
  RemoveAll(scratch).IgnoreError();  // scratch space: best effort
  return 0;
}

// --- cairn-bench large-state: checkpoints of a large keyed state (issue 15) -----------------
//
// jobs/wordcount-discard.yaml (2 subtasks; the discarding sink, so that the state is what the
// checkpoints cost) on a corpus of --words words over a vocabulary of --keys (Zipf s = 0.5, so
// that most of the vocabulary occurs and most keys change in every interval), with the heap
// backend's two checkpoint paths: the delta written into RocksDB ("rocksdb delta", the default)
// and changelog segments (state.changelog). Every configuration runs --reps times, interleaved
// (the order rotated each repetition). Checkpoint durations are pooled over the repetitions.

// The nearest-rank percentile q (0..1) of `v`; 0 when empty.
double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

struct LargeRun {
  double wall = 0, cpu = 0, rss_mib = 0;
  uint64_t words = 0;
  std::vector<CheckpointRecord> checkpoints;
  std::vector<ProgressPoint> progress;
  int64_t start_wall_ms = 0;
};

int LargeStateMain(const std::vector<std::string>& args) {
  int reps = 3;
  int64_t words = 30000000, keys = 2200000, paced = 2000000, big_keys = 10000000, big_words = 60000000;
  bool big = true;
  std::string cairn = Dirname(SelfPath()) + "/cairn", source_dir = CAIRN_SOURCE_DIR, data_dir,
              svg = Dirname(SelfPath()) + "/bench-large-state.svg";
  for (size_t i = 0; i < args.size(); ++i) {
    auto next = [&](std::string* v) { return i + 1 < args.size() && (*v = args[++i], true); };
    std::string v;
    if (args[i] == "--reps" && next(&v)) reps = std::max(1, atoi(v.c_str()));
    else if (args[i] == "--words" && next(&v)) words = std::max<int64_t>(1000, atoll(v.c_str()));
    else if (args[i] == "--keys" && next(&v)) keys = std::max<int64_t>(1000, atoll(v.c_str()));
    else if (args[i] == "--paced-rate" && next(&v)) paced = std::max<int64_t>(20, atoll(v.c_str()));
    else if (args[i] == "--big-keys" && next(&v)) big_keys = std::max<int64_t>(1000, atoll(v.c_str()));
    else if (args[i] == "--big-words" && next(&v)) big_words = std::max<int64_t>(1000, atoll(v.c_str()));
    else if (args[i] == "--no-big") big = false;
    else if (args[i] == "--svg" && next(&v)) svg = v;
    else if (args[i] == "--cairn" && next(&v)) cairn = v;
    else if (args[i] == "--source-dir" && next(&v)) source_dir = v;
    else if (args[i] == "--data-dir" && next(&v)) data_dir = v;
    else return UsageError("large-state: unknown or incomplete argument '" + args[i] + "'");
  }
  if (data_dir.empty()) data_dir = Dirname(SelfPath()) + "/bench-data";
  const std::string scratch = data_dir + "/large-state-scratch";
  auto fail = [](const std::string& m) {
    fprintf(stderr, "cairn-bench: %s\n", m.c_str());
    return 1;
  };
  if (Status s = CreateDirs(scratch); !s.ok()) return fail(s.message());
  auto corpus_for = [&](int64_t k, int64_t w, std::string* path) -> Status {
    *path = data_dir + "/large-" + std::to_string(k) + "k-" + std::to_string(w) + "w-zipf0.5.txt";
    if (PathExists(*path)) return Status::OK();
    ChildResult g;
    CAIRN_RETURN_IF_ERROR(RunChild({cairn, "generate", "--out", *path + ".tmp", "--words", std::to_string(w),
                                    "--vocabulary", std::to_string(k), "--zipf", "0.5", "--seed", "42"},
                                   &g, 3600));
    if (!g.ok()) return Status::Internal("generating " + *path + " failed: " + g.Describe());
    return Rename(*path + ".tmp", *path);
  };
  std::string corpus;
  if (Status s = corpus_for(keys, words, &corpus); !s.ok()) return fail(s.message());
  ReadWholeFile(corpus);
  const std::string job = source_dir + "/jobs/wordcount-discard.yaml";
  // operators.source.rate is lines per second per source subtask (10 words a line, 2 subtasks).
  const std::string paced_lines = std::to_string(std::max<int64_t>(1, paced / 20));

  struct Cfg {
    std::string name, interval;
    bool changelog, paced;
  };
  std::vector<Cfg> cfgs;
  for (bool cl : {false, true}) {
    const std::string m = cl ? "changelog" : "rocksdb-delta";
    cfgs.push_back({m + "-full-off", "0", cl, false});
    cfgs.push_back({m + "-full-1s", "1s", cl, false});
    cfgs.push_back({m + "-full-100ms", "100ms", cl, false});
    cfgs.push_back({m + "-paced-1s", "1s", cl, true});
    cfgs.push_back({m + "-paced-100ms", "100ms", cl, true});
  }
  auto run_one = [&](const std::string& input, const std::string& interval, bool cl, bool pace, const std::string& dir,
                     LargeRun* out) -> Status {
    RemoveAll(dir).IgnoreError();  // scratch space: best effort
    std::vector<std::string> argv = {cairn, "run", job, "--progress-interval", "100ms",
                                     "--set", "operators.source.path=" + input,
                                     "--set", "checkpoint.dir=" + dir,
                                     "--set", "checkpoint.interval=" + interval,
                                     "--set", "checkpoint.retain=1000",
                                     "--set", std::string("state.changelog=") + (cl ? "true" : "false")};
    if (pace) argv.insert(argv.end(), {"--set", "operators.source.rate=" + paced_lines});
    ::sync();
    ChildResult c;
    CAIRN_RETURN_IF_ERROR(RunChild(argv, &c, 3600));
    if (!c.ok()) return Status::Internal("run failed: " + c.Describe());
    RunRecord rr;
    ParseEngineOutput(c, &rr);
    out->wall = c.wall_seconds;
    out->cpu = c.user_seconds + c.sys_seconds;
    out->rss_mib = static_cast<double>(c.max_rss_kb) / 1024.0;
    out->words = rr.words;
    out->progress = rr.progress;
    out->start_wall_ms = c.start_wall_ms;
    return ReadCheckpoints(cairn, dir, &out->checkpoints);
  };
  // A restore of the final checkpoint in `dir` (its input is then all read: the run ends).
  auto restore_one = [&](const std::string& input, const std::string& dir, bool cl, double* secs,
                         uint64_t* restored) -> Status {
    std::vector<CheckpointRecord> cps;
    CAIRN_RETURN_IF_ERROR(ReadCheckpoints(cairn, dir, &cps));
    if (cps.empty()) return Status::Internal("no checkpoint in " + dir);
    const uint64_t id = cps.back().id;
    ::sync();
    ChildResult c;
    CAIRN_RETURN_IF_ERROR(RunChild({cairn, "run", job, "--restore", CheckpointPath(dir, id),
                                    "--set", "operators.source.path=" + input, "--set", "checkpoint.dir=" + dir,
                                    "--set", "checkpoint.interval=0", "--set", "checkpoint.retain=1000",
                                    "--set", std::string("state.changelog=") + (cl ? "true" : "false")},
                                   &c, 3600));
    if (!c.ok()) return Status::Internal("restore failed: " + c.Describe());
    RunRecord rr;
    ParseEngineOutput(c, &rr);
    *secs = rr.restore_seconds;
    *restored = rr.restored_keys;
    // Keep only the restored checkpoint.
    std::vector<std::string> names;
    if (ListDir(dir, &names).ok())
      for (const std::string& n : names)
        if (CheckpointId other; ParseCheckpointDirName(n, &other) && other != id)
          RemoveAll(dir + "/" + n).IgnoreError();  // scratch space: best effort
    return Status::OK();
  };

  printf("cairn-bench large-state: %" PRId64 " words over %" PRId64 " words of vocabulary (Zipf 0.5), "
         "jobs/wordcount-discard.yaml, 2 subtasks, %d runs per configuration, interleaved; paced: %" PRId64
         " words/s; load average before: %.2f\n",
         words, keys, reps, paced, LoadAverage());
  std::map<std::string, std::vector<LargeRun>> runs;
  std::map<std::string, std::vector<double>> ratio;  // throughput against the same mode's full-off, per rep
  for (int rep = 0; rep < reps; ++rep) {
    std::map<std::string, double> wall;
    for (size_t k = 0; k < cfgs.size(); ++k) {
      const Cfg& c = cfgs[(k + rep) % cfgs.size()];
      LargeRun r;
      Status s = run_one(corpus, c.interval, c.changelog, c.paced, scratch + "/" + c.name, &r);
      if (!s.ok()) return fail(c.name + ": " + s.message());
      if (r.words != static_cast<uint64_t>(words))
        return fail(c.name + ": counted " + std::to_string(r.words) + " words, the corpus has " + std::to_string(words));
      fprintf(stderr, "cairn-bench: large-state rep %d %-28s %.2f s, %zu checkpoints\n", rep + 1, c.name.c_str(),
              r.wall, r.checkpoints.size());
      wall[c.name] = r.wall;
      runs[c.name].push_back(std::move(r));
      if (c.name.find("-full-1s") == std::string::npos && c.name.find("-paced-100ms") == std::string::npos)
        RemoveAll(scratch + "/" + c.name).IgnoreError();
    }
    for (const Cfg& c : cfgs) {
      const std::string off = c.name.substr(0, c.name.find(c.paced ? "-paced-" : "-full-")) + "-full-off";
      if (!c.paced && c.interval != "0") ratio[c.name].push_back(wall[off] / wall[c.name]);
    }
  }
  printf("| configuration | runs | wall s | M words/s | vs off | CPU s | peak RSS MiB | checkpoints | p50 ms | p90 ms | "
         "p99 ms | max ms | final ms | MB per checkpoint |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Cfg& c : cfgs) {
    std::vector<double> wall, cpu, rss, dur, fin, bytes;
    for (const LargeRun& r : runs[c.name]) {
      wall.push_back(r.wall);
      cpu.push_back(r.cpu);
      rss.push_back(r.rss_mib);
      for (const CheckpointRecord& k : r.checkpoints) {
        (k.final ? fin : dur).push_back(static_cast<double>(k.duration_ms));
        if (!k.final) bytes.push_back(static_cast<double>(k.state_bytes) / 1e6);
      }
    }
    const double w = Spread::Of(wall).median;
    const std::string vs = ratio.count(c.name) ? std::to_string(Spread::Of(ratio[c.name]).median).substr(0, 4) : "";
    printf("| %s | %zu | %.2f | %.2f | %s | %.2f | %.0f | %zu | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f |\n",
           c.name.c_str(), wall.size(), w, static_cast<double>(words) / w / 1e6, vs.c_str(), Spread::Of(cpu).median,
           Spread::Of(rss).median, dur.size(), Percentile(dur, 0.5), Percentile(dur, 0.9), Percentile(dur, 0.99),
           Percentile(dur, 1.0), Spread::Of(fin).median, Spread::Of(bytes).median);
  }
  // The state's size: the first checkpoint of the RocksDB-delta run holds every key once
  // (its new SST files), the changelog run's first segment too.
  for (const std::string m : {"rocksdb-delta", "changelog"}) {
    const auto& rs = runs[m + "-full-1s"];
    if (!rs.empty() && !rs.back().checkpoints.empty())
      printf("  %s: first checkpoint of the full-speed 1 s run (the whole state, once): %.1f MB\n", m.c_str(),
             static_cast<double>(rs.back().checkpoints.front().state_bytes) / 1e6);
  }
  // Restores of the full-speed 1 s runs' final checkpoints, alternating, `reps` each; then of
  // the paced 100 ms runs' (the RocksDB delta's lists more overlapping table files: each of its
  // ~150 checkpoints ingested one, faster than compactions merged them).
  for (const std::string run : {"full-1s", "paced-100ms"}) {
    std::map<std::string, std::vector<double>> restore;
    uint64_t restored_keys = 0;
    for (int rep = 0; rep < reps; ++rep) {
      for (bool cl : rep % 2 == 0 ? std::vector<bool>{false, true} : std::vector<bool>{true, false}) {
        const std::string m = cl ? "changelog" : "rocksdb-delta";
        double secs = 0;
        Status s = restore_one(corpus, scratch + "/" + m + "-" + run, cl, &secs, &restored_keys);
        if (!s.ok()) return fail(m + "-" + run + " restore: " + s.message());
        restore[m].push_back(secs);
      }
    }
    for (const std::string m : {"rocksdb-delta", "changelog"}) {
      Spread r = Spread::Of(restore[m]);
      printf("  restore, %s%s: %" PRIu64 " keys to first record %.3f s [%.3f-%.3f]\n", m.c_str(),
             run == "full-1s" ? "" : (", " + run).c_str(), restored_keys, r.median, r.min, r.max);
    }
  }

  std::vector<PlotPanel> panels;
  for (const std::string pace : {"full", "paced"}) {
    PlotPanel d;
    d.title = "checkpoint duration against time, " + pace + (pace == "full" ? " speed" : "") +
              ", checkpoints every 1 s (last run of each)";
    d.y_label = "checkpoint ms";
    for (const std::string m : {"rocksdb-delta", "changelog"}) {
      const auto& rs = runs[m + "-" + pace + "-1s"];
      if (rs.empty()) continue;
      const LargeRun& r = rs.back();
      PlotPanel t;
      char rate[32];
      snprintf(rate, sizeof rate, "%.1f", static_cast<double>(words) / r.wall / 1e6);
      t.title = m + ", " + pace + (pace == "full" ? " speed" : "") + ", checkpoints every 1 s (" + rate + " M words/s)";
      std::vector<std::pair<double, double>> pts, dur;
      for (size_t i = 1; i < r.progress.size(); ++i) {
        const ProgressPoint &a = r.progress[i - 1], &b = r.progress[i];
        if (b.seconds > a.seconds)
          pts.emplace_back((a.seconds + b.seconds) / 2,
                           static_cast<double>(b.sink_records - a.sink_records) / (b.seconds - a.seconds));
      }
      t.series.push_back({"words/s", m == "changelog" ? "#1f77b4" : "#7f7f7f", pts});
      for (const CheckpointRecord& k : r.checkpoints) {
        const double at = static_cast<double>(k.trigger_time_ms - r.start_wall_ms) / 1000.0;
        t.checkpoints.push_back({at, static_cast<double>(k.duration_ms) / 1000.0, k.final});
        dur.emplace_back(at, static_cast<double>(k.duration_ms));
      }
      d.series.push_back({m, m == "changelog" ? "#1f77b4" : "#7f7f7f", dur});
      panels.push_back(std::move(t));
    }
    panels.push_back(std::move(d));
  }

  if (big) {
    std::string big_corpus;
    if (Status s = corpus_for(big_keys, big_words, &big_corpus); !s.ok()) return fail(s.message());
    ReadWholeFile(big_corpus);
    printf("10M-key case: %" PRId64 " words over %" PRId64 " words of vocabulary, full speed, checkpoints every 1 s, one run each:\n",
           big_words, big_keys);
    for (bool cl : {false, true}) {
      const std::string m = cl ? "changelog" : "rocksdb-delta";
      const std::string dir = scratch + "/big-" + m;
      LargeRun r;
      Status s = run_one(big_corpus, "1s", cl, false, dir, &r);
      if (!s.ok()) return fail("big " + m + ": " + s.message());
      std::vector<double> dur, bytes;
      double fin = 0;
      for (const CheckpointRecord& k : r.checkpoints) {
        if (k.final) fin = static_cast<double>(k.duration_ms);
        else dur.push_back(static_cast<double>(k.duration_ms));
        if (!k.final) bytes.push_back(static_cast<double>(k.state_bytes) / 1e6);
      }
      double secs = 0;
      uint64_t rk = 0;
      s = restore_one(big_corpus, dir, cl, &secs, &rk);
      if (!s.ok()) return fail("big " + m + " restore: " + s.message());
      printf("  %s: %.2f s (%.2f M words/s), CPU %.2f s, peak RSS %.0f MiB; %zu checkpoints p50 %.0f p90 %.0f p99 %.0f "
             "max %.0f ms, final %.0f ms, %.1f MB per checkpoint (median), first %.1f MB; restore of %" PRIu64
             " keys %.3f s\n",
             m.c_str(), r.wall, static_cast<double>(big_words) / r.wall / 1e6, r.cpu, r.rss_mib, dur.size(),
             Percentile(dur, 0.5), Percentile(dur, 0.9), Percentile(dur, 0.99), Percentile(dur, 1.0), fin,
             Spread::Of(bytes).median, r.checkpoints.empty() ? 0.0 : static_cast<double>(r.checkpoints.front().state_bytes) / 1e6,
             rk, secs);
      RemoveAll(dir).IgnoreError();  // scratch space: best effort
    }
  }
  char sub[256];
  snprintf(sub, sizeof sub, "%" PRId64 " words over a %" PRId64 "-word vocabulary; grey: state written into RocksDB at every checkpoint, blue: state.changelog",
           words, keys);
  if (Status s = WriteFileAtomically(svg, ThroughputSvg("Cairn word count, large keyed state", sub, panels)); !s.ok())
    return fail(s.message());
  printf("plot: %s\n", svg.c_str());
  for (const Cfg& c : cfgs) RemoveAll(scratch + "/" + c.name).IgnoreError();  // scratch space: best effort
  return 0;
}

// --- cairn-bench --only nexmark: the Nexmark queries (docs/benchmarks.md, "Nexmark") -----------
//
// Every query of jobs/nexmark/ (q0-q5, q7, q8), at parallelism 1 and 2 with checkpoints
// every second, on `events` generated events, its jsonl sink replaced by a discard_sink (as
// nexmark-flink measures into a blackhole). Runs are interleaved (one of each configuration per
// repetition, the order rotated); each is checked: q0 and q1 emit every bid, and every run of a
// query emits as many records as its first run.

struct NexmarkRun {
  double seconds = 0, cpu = 0;
  uint64_t records = 0;
  std::vector<double> checkpoint_ms;
  uint64_t state_bytes = 0;  // the largest checkpoint's
};

int NexmarkMain(const Flags& f) {
  const std::vector<std::string> queries = {"q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8"};
  const int64_t events = f.nexmark_events > 0 ? f.nexmark_events : f.quick ? 1000000 : 10000000;
  const std::string scratch = f.data_dir + "/nexmark-scratch";
  RemoveAll(scratch).IgnoreError();  // scratch space: best effort
  if (Status s = CreateDirs(scratch); !s.ok()) return fprintf(stderr, "cairn-bench: %s\n", s.message().c_str()), 1;
  // The jobs with a discard_sink: each file's `sink` entry (its last) replaced.
  std::map<std::string, std::string> jobs;
  for (const std::string& q : queries) {
    std::ifstream in(f.source_dir + "/jobs/nexmark/" + q + ".yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    const size_t at = yaml.find("  - id: sink\n");
    const size_t inputs = yaml.find("    inputs: [", at);
    if (at == std::string::npos || inputs == std::string::npos)
      return fprintf(stderr, "cairn-bench: jobs/nexmark/%s.yaml has no sink entry\n", q.c_str()), 1;
    const std::string input = yaml.substr(inputs + 13, yaml.find(']', inputs) - inputs - 13);
    yaml = yaml.substr(0, at) + "  - {id: sink, type: discard_sink, inputs: [" + input + "]}\n";
    jobs[q] = scratch + "/" + q + ".yaml";
    if (Status s = WriteFileAtomically(jobs[q], yaml); !s.ok())
      return fprintf(stderr, "cairn-bench: %s\n", s.message().c_str()), 1;
  }
  uint64_t bids = 0;  // what q0 and q1 emit: the events n with n % 50 >= 1 + 3
  for (int64_t n = 0; n < events; ++n) bids += n % 50 >= 4;
  struct Cfg {
    std::string query;
    int parallelism;
  };
  std::vector<Cfg> cfgs;
  for (const std::string& q : queries)
    for (int p : {1, 2}) cfgs.push_back({q, p});
  std::map<std::string, std::vector<NexmarkRun>> runs;
  std::map<std::string, uint64_t> first_records;
  double load_sum = 0;
  int load_n = 0;
  printf("cairn-bench nexmark: %" PRId64 " events, checkpoints every 1 s, discard sink, %d runs per configuration, "
         "interleaved\n", events, f.reps);
  for (int rep = 0; rep < f.reps; ++rep) {
    for (size_t k = 0; k < cfgs.size(); ++k) {
      const Cfg& c = cfgs[(k + static_cast<size_t>(rep)) % cfgs.size()];
      const std::string name = c.query + "-p" + std::to_string(c.parallelism);
      const std::string dir = scratch + "/" + name;
      RemoveAll(dir).IgnoreError();  // scratch space: best effort
      sync();
      load_sum += LoadAverage();
      ++load_n;
      ChildResult r;
      Status s = RunChild({f.cairn, "run", jobs[c.query], "--quiet", "--set", "operators.events.events=" + std::to_string(events),
                           "--set", "parallelism=" + std::to_string(c.parallelism), "--set", "checkpoint.interval=1s",
                           "--set", "checkpoint.retain=1000", "--set", "checkpoint.dir=" + dir + "/ck"},
                          &r, 3600);
      if (!s.ok() || !r.ok())
        return fprintf(stderr, "cairn-bench: nexmark %s failed: %s\n", name.c_str(),
                       s.ok() ? r.Describe().c_str() : s.message().c_str()), 1;
      NexmarkRun run;
      run.seconds = r.wall_seconds;
      run.cpu = r.user_seconds + r.sys_seconds;
      run.records = SinkRecords(r.out);
      std::vector<CheckpointRecord> cps;
      if (Status cs = ReadCheckpoints(f.cairn, dir + "/ck", &cps); !cs.ok())
        return fprintf(stderr, "cairn-bench: %s\n", cs.message().c_str()), 1;
      for (const CheckpointRecord& cp : cps) {
        run.checkpoint_ms.push_back(static_cast<double>(cp.duration_ms));
        run.state_bytes = std::max(run.state_bytes, cp.state_bytes);
      }
      RemoveAll(dir).IgnoreError();  // scratch space: best effort
      if ((c.query == "q0" || c.query == "q1") && run.records != bids)
        return fprintf(stderr, "cairn-bench: nexmark %s emitted %" PRIu64 " records, expected %" PRIu64 " bids\n",
                       name.c_str(), run.records, bids), 1;
      if (!first_records.count(c.query)) first_records[c.query] = run.records;
      if (run.records != first_records[c.query])
        return fprintf(stderr, "cairn-bench: nexmark %s emitted %" PRIu64 " records, an earlier run %" PRIu64 "\n",
                       name.c_str(), run.records, first_records[c.query]), 1;
      fprintf(stderr, "cairn-bench: nexmark rep %d/%d %-6s %7.3f s  %.2f M events/s  cpu %.2f s  %zu checkpoints\n",
              rep + 1, f.reps, name.c_str(), run.seconds, static_cast<double>(events) / run.seconds / 1e6, run.cpu,
              cps.size());
      runs[name].push_back(std::move(run));
    }
  }
  RemoveAll(scratch).IgnoreError();  // scratch space: best effort
  const std::map<std::string, double> flink = {{"q0", 155e3}, {"q1", 158e3}, {"q2", 175e3}, {"q3", 152e3},
                                               {"q4", 34e3},  {"q5", 22e3},  {"q7", 12e3},  {"q8", 146e3}};
  printf("load average %.2f (mean over the runs' starts); medians [min-max] over %d runs\n",
         load_sum / std::max(load_n, 1), f.reps);
  printf("%-6s %-22s %-14s %-22s %-12s %-18s %-14s %s\n", "config", "events/s", "CPU s", "events per CPU-s",
         "vs Flink", "checkpoint ms", "state bytes", "records");
  for (const Cfg& c : cfgs) {
    const std::string name = c.query + "-p" + std::to_string(c.parallelism);
    std::vector<double> rate, cpu, per_cpu, ck;
    uint64_t state = 0;
    for (const NexmarkRun& r : runs[name]) {
      rate.push_back(static_cast<double>(events) / r.seconds);
      cpu.push_back(r.cpu);
      per_cpu.push_back(static_cast<double>(events) / r.cpu);
      ck.insert(ck.end(), r.checkpoint_ms.begin(), r.checkpoint_ms.end());
      state = std::max(state, r.state_bytes);
    }
    Spread rs = Spread::Of(rate), cs = Spread::Of(cpu), ps = Spread::Of(per_cpu), ks = Spread::Of(ck);
    char a[64], b[64], d[64], e[64], g[64];
    snprintf(a, sizeof a, "%.2fM [%.2f-%.2f]", rs.median / 1e6, rs.min / 1e6, rs.max / 1e6);
    snprintf(b, sizeof b, "%.2f [%.2f-%.2f]", cs.median, cs.min, cs.max);
    snprintf(d, sizeof d, "%.2fM [%.2f-%.2f]", ps.median / 1e6, ps.min / 1e6, ps.max / 1e6);
    snprintf(e, sizeof e, "%.1fx", ps.median / flink.at(c.query));
    snprintf(g, sizeof g, "%.0f [%.0f-%.0f]", ks.median, ks.min, ks.max);
    printf("%-6s %-22s %-14s %-22s %-12s %-18s %-14" PRIu64 " %" PRIu64 "\n", name.c_str(), a, b, d, e, g, state,
           first_records[c.query]);
  }
  printf("vs Flink: events per CPU-second over nexmark-flink's events/s per core (q0 155K, q1 158K, q2 175K, q3 152K, "
         "q4 34K, q5 22K, q7 12K, q8 146K)\n");
  return 0;
}

int Main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "baseline")
    return BaselineMain(std::vector<std::string>(argv + 2, argv + argc));
  if (argc >= 2 && std::string(argv[1]) == "kafka")
    return KafkaBenchMain(std::vector<std::string>(argv + 2, argv + argc));
  if (argc >= 2 && std::string(argv[1]) == "rebalance")
    return RebalanceBenchMain(std::vector<std::string>(argv + 2, argv + argc));
  if (argc >= 2 && std::string(argv[1]) == "large-state")
    return LargeStateMain(std::vector<std::string>(argv + 2, argv + argc));
  if (argc >= 2 && std::string(argv[1]) == "records")
    return RecordsMain(std::vector<std::string>(argv + 2, argv + argc));
  Bench b;
  int rc = 0;
  if (!ParseFlags(argc, argv, &b.flags, &rc)) return rc;
  std::vector<Config> configs = AllConfigs(b.flags.unaligned);
  if (b.flags.list) {
    for (const Config& c : configs) printf("%-28s %s\n", c.info.name.c_str(), c.info.description.c_str());
    printf("%-28s %s\n", "nexmark", "Nexmark q0-q5, q7, q8 at parallelism 1 and 2, checkpoint 1 s (run alone)");
    return 0;
  }
  if (std::find(b.flags.only.begin(), b.flags.only.end(), "nexmark") != b.flags.only.end()) {
    if (b.flags.only.size() != 1) return UsageError("--only nexmark runs alone");
    return NexmarkMain(b.flags);
  }
  if (!b.flags.only.empty()) {
    std::vector<Config> kept;
    for (const Config& c : configs)
      if (std::find(b.flags.only.begin(), b.flags.only.end(), c.info.name) != b.flags.only.end()) kept.push_back(c);
    if (kept.size() != b.flags.only.size()) return UsageError("--only names an unknown configuration (see --list)");
    configs = kept;
  }
  b.self = SelfPath();
  b.job = b.flags.source_dir + "/jobs/wordcount.yaml";
  b.discard_job = b.flags.source_dir + "/jobs/wordcount-discard.yaml";
  b.scratch = b.flags.data_dir + "/scratch";
  b.recovery_dir = b.flags.data_dir + "/recovery-checkpoints";
  for (const std::string& f : {b.flags.cairn, b.job, b.discard_job})
    if (!PathExists(f)) {
      fprintf(stderr, "cairn-bench: %s does not exist (build cairn, or see --cairn and --source-dir)\n", f.c_str());
      return 2;
    }

  BenchResults& res = b.results;
  res.machine = ReadMachine();
  GeneratorParams gp;
  gp.words = b.flags.words;
  gp.seed = b.flags.seed;
  uint64_t bytes = 0;
  Status s = EnsureCorpus(b.flags.data_dir, gp, &b.corpus, &bytes);
  if (s.ok()) s = EnsureDistinctWords(b.flags.data_dir, b.flags.keys, &b.keys_file);
  if (s.ok()) s = CreateDirs(b.scratch);
  if (!s.ok()) {
    fprintf(stderr, "cairn-bench: %s\n", s.message().c_str());
    return 1;
  }
  res.params = BenchParams{b.flags.quick, b.flags.reps, b.flags.words, bytes, b.corpus, b.flags.keys,
                           b.flags.progress_interval};
  for (const Config& c : configs) res.configs.push_back(c.info);
  ReadWholeFile(b.corpus);  // every run reads the corpus from the page cache

  const bool recovery = std::any_of(configs.begin(), configs.end(),
                                    [](const Config& c) { return c.info.kind == ConfigInfo::Kind::kRecovery; });
  if (recovery) {
    fprintf(stderr, "cairn-bench: building a checkpoint of %" PRId64 " keys for the recovery runs\n", b.flags.keys);
    s = b.BuildRecoveryState();
    if (!s.ok()) {
      fprintf(stderr, "cairn-bench: %s\n", s.message().c_str());
      return 1;
    }
  }
  // The baseline's answer is the reference: run it first, once, untimed.
  {
    RunRecord ref;
    b.RunBaseline(false, &ref);
    if (!ref.ok) {
      fprintf(stderr, "cairn-bench: the baseline failed: %s\n", ref.error.c_str());
      return 1;
    }
    b.expected_top = ref.top;
    if (ref.words != static_cast<uint64_t>(b.flags.words)) {
      fprintf(stderr, "cairn-bench: the baseline counted %" PRIu64 " words, expected %" PRId64 "\n", ref.words,
              b.flags.words);
      return 1;
    }
  }

  const size_t n = configs.size();
  for (int rep = 0; rep < b.flags.reps; ++rep) {
    for (size_t k = 0; k < n; ++k) {
      const Config& cfg = configs[(k + static_cast<size_t>(rep)) % n];
      RunRecord run;
      run.config = cfg.info.name;
      run.rep = rep;
      sync();  // leave no writeback of an earlier run to this one
      run.load_before = LoadAverage();
      cfg.run(&b, &run);
      Check(b, cfg, &run);
      if (run.wall_seconds > 0 && run.words > 0) run.words_per_second = static_cast<double>(run.words) / run.wall_seconds;
      fprintf(stderr, "cairn-bench: rep %d/%d %-28s %s %7.3f s  %6.2f M words/s  rss %5" PRId64 " MiB  load %.2f%s%s\n",
              rep + 1, b.flags.reps, cfg.info.name.c_str(), run.ok ? "ok    " : "FAILED", run.wall_seconds,
              run.words_per_second / 1e6, run.max_rss_kb / 1024, run.load_before, run.ok ? "" : ": ",
              run.error.c_str());
      res.runs.push_back(std::move(run));
    }
  }
  RemoveAll(b.scratch).IgnoreError();  // scratch space: best effort

  int failed = 0;
  for (const RunRecord& run : res.runs) failed += run.ok ? 0 : 1;
  if (failed > 0) res.notes.push_back(std::to_string(failed) + " run(s) failed; see the errors above");
  if (res.machine.cores < 2) res.notes.push_back("fewer than 2 cores: the engine's 2 threads share one core");

  fputs(FormatTable(res).c_str(), stdout);
  if (!b.flags.json.empty()) {
    s = WriteFileAtomically(b.flags.json, FormatJson(res));
    if (!s.ok()) fprintf(stderr, "cairn-bench: %s\n", s.message().c_str());
    else printf("JSON: %s\n", b.flags.json.c_str());
  }
  if (!b.flags.svg.empty() && std::any_of(configs.begin(), configs.end(), [](const Config& c) {
        return c.info.kind == ConfigInfo::Kind::kEngine && !c.info.off_config.empty();
      })) {
    s = WriteFileAtomically(b.flags.svg, Plot(res));
    if (!s.ok()) fprintf(stderr, "cairn-bench: %s\n", s.message().c_str());
    else printf("plot: %s\n", b.flags.svg.c_str());
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) { return cairn::Main(argc, argv); }
