#include "bench/rebalance_bench.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_results.h"
#include "bench/process_runner.h"
#include "engine/base/file_util.h"

namespace cairn {
namespace {

// The number after `key` in the run summary of `cairn run` (0 when missing).
double NumberAfter(const std::string& out, const std::string& key) {
  size_t at = out.find(key);
  return at == std::string::npos ? 0 : strtod(out.c_str() + at + key.size(), nullptr);
}

double LoadAverage() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : 0;
}

}  // namespace

int RebalanceBenchMain(const std::vector<std::string>& args) {
  int reps = 3;
  int64_t lines = 1000000;
  int64_t slow_us = 20000;
  bool backpressure = false;  // the stage is a throttle: its queue stays full
  std::string cairn = BenchBinaryDir() + "/cairn", data_dir;
  for (size_t i = 0; i < args.size(); ++i) {
    auto next = [&](std::string* v) { return i + 1 < args.size() && (*v = args[++i], true); };
    std::string v;
    if (args[i] == "--reps" && next(&v)) reps = std::max(1, atoi(v.c_str()));
    else if (args[i] == "--lines" && next(&v)) lines = std::max<int64_t>(1000, atoll(v.c_str()));
    else if (args[i] == "--slow-us" && next(&v)) slow_us = std::max<int64_t>(0, atoll(v.c_str()));
    else if (args[i] == "--backpressure") backpressure = true;
    else if (args[i] == "--cairn" && next(&v)) cairn = v;
    else if (args[i] == "--data-dir" && next(&v)) data_dir = v;
    else {
      fprintf(stderr, "cairn-bench: rebalance: unknown or incomplete argument '%s'\n", args[i].c_str());
      return 2;
    }
  }
  std::string scratch, corpus;
  if (Status s = PrepareScratchCorpus(cairn, data_dir, "rebalance", lines, &scratch, &corpus); !s.ok())
    return fprintf(stderr, "cairn-bench: %s\n", s.message().c_str()), 1;
  printf("cairn-bench rebalance: %" PRId64 " lines (%" PRId64 " words); %s; stage[1] sleeps %" PRId64
         " us before each batch (0: no slow subtask); checkpoints every 50 ms; %d runs each, interleaved; load average "
         "%.2f at the start\n",
         lines, lines * 10,
         backpressure ? "source -> stage (throttle, 100000 lines/s per subtask) -> discard, parallelism 3"
                      : "source (parallelism 3) -> stage (tokenize, 3) -> count (2) -> discard (2)",
         slow_us, reps, LoadAverage());
  const std::vector<std::string> configs = {"forward-aligned", "rebalance-aligned", "forward-unaligned",
                                            "rebalance-unaligned"};
  std::map<std::string, std::vector<double>> rate, ckpt;
  int failed = 0;
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < configs.size(); ++k) {
      const std::string& cfg = configs[(k + static_cast<size_t>(rep)) % configs.size()];
      const bool rebalance = cfg.rfind("rebalance", 0) == 0;
      const std::string mode = cfg.find("unaligned") != std::string::npos ? "unaligned" : "aligned";
      const std::string dir = scratch + "/" + cfg;
      RemoveAll(dir).IgnoreError();  // scratch space: best effort
      (void)CreateDirs(dir);
      const std::string input = rebalance ? "{from: source, partition: rebalance}" : "source";
      std::string yaml = "job: bench-" + cfg + "\nparallelism: 3\ncheckpoint: {interval: 50ms, mode: " + mode +
                         ", dir: '" + dir + "/ck', retain: 1000}\noperators:\n"
                         "  - {id: source, type: file_source, path: '" + corpus + "'}\n";
      if (backpressure)
        yaml += "  - {id: stage, type: throttle, rate: 100000, inputs: [" + input + "]}\n"
                "  - {id: sink, type: discard_sink, inputs: [stage]}\n";
      else
        yaml += "  - {id: stage, type: tokenize, inputs: [" + input + "]}\n"
                "  - {id: count, type: count, key_by: word, parallelism: 2, inputs: [stage]}\n"
                "  - {id: sink, type: discard_sink, parallelism: 2, inputs: [count]}\n";
      const std::string job = dir + "/job.yaml";
      if (Status w = WriteFileAtomically(job, yaml); !w.ok())
        return fprintf(stderr, "cairn-bench: %s\n", w.message().c_str()), 1;
      // --slow-us 0: no slow subtask (what the protocol costs at full speed).
      std::vector<std::string> argv = {cairn, "run", job};
      if (slow_us > 0)
        argv.insert(argv.begin(), {"/usr/bin/env", "CAIRN_SLOW_SUBTASK=stage:1:" + std::to_string(slow_us)});
      ChildResult c;
      Status r = RunChild(argv, &c, 1800);
      const double sink = NumberAfter(c.out, "sink records");
      const bool ok = r.ok() && c.ok() && sink == static_cast<double>(backpressure ? lines : lines * 10);
      if (!ok) {
        ++failed;
        fprintf(stderr, "cairn-bench: rebalance rep %d %s FAILED: %s\n", rep + 1, cfg.c_str(),
                !r.ok() ? r.message().c_str() : !c.ok() ? c.Describe().c_str() : c.out.c_str());
        continue;
      }
      rate[cfg].push_back(static_cast<double>(lines) / c.wall_seconds);
      ckpt[cfg].push_back(NumberAfter(c.out, "duration median"));
      fprintf(stderr, "cairn-bench: rebalance rep %d %-20s %.3f s  %.0f lines/s  checkpoint median %.0f ms\n", rep + 1,
              cfg.c_str(), c.wall_seconds, static_cast<double>(lines) / c.wall_seconds, ckpt[cfg].back());
      RemoveAll(dir).IgnoreError();  // scratch space: best effort
    }
  }
  RemoveAll(scratch).IgnoreError();  // scratch space: best effort
  for (const std::string& cfg : configs) {
    if (rate[cfg].empty()) continue;
    Spread r = Spread::Of(rate[cfg]), d = Spread::Of(ckpt[cfg]);
    printf("  %-20s %.0f lines/s [%.0f-%.0f], checkpoint duration median of the runs' medians %.0f ms [%.0f-%.0f]\n",
           cfg.c_str(), r.median, r.min, r.max, d.median, d.min, d.max);
  }
  for (const std::string mode : {"aligned", "unaligned"})
    if (!rate["forward-" + mode].empty() && !rate["rebalance-" + mode].empty())
      printf("  rebalance / forward, %s: %.2f\n", mode.c_str(),
             Spread::Of(rate["rebalance-" + mode]).median / Spread::Of(rate["forward-" + mode]).median);
  return failed > 0 ? 1 : 0;
}

}  // namespace cairn
