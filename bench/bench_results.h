// The measurements of one cairn-bench invocation and what is derived from them: per-run
// records, per-configuration summaries (median and spread), the printed table and the JSON.
//
// Contract: plain data, filled by bench/cairn_bench.cc; the formatting functions only read it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cairn {

struct CheckpointRecord {
  uint64_t id = 0;
  int64_t trigger_time_ms = 0;  // wall clock
  int64_t duration_ms = 0;
  int64_t alignment_ms = 0;
  int64_t sync_ms = 0;
  int64_t async_ms = 0;
  uint64_t state_bytes = 0;
  bool final = false;
};

struct ProgressPoint {
  double seconds = 0;        // since the process started
  uint64_t sink_records = 0; // cumulative
};

struct RunRecord {
  std::string config;
  int rep = 0;
  bool ok = false;
  std::string error;           // why the run failed or a check did not hold
  double load_before = 0;      // 1-minute load average when the run started
  double wall_seconds = 0;     // process start to exit
  double engine_seconds = 0;   // the engine's own "completed in" (0 for the baseline)
  double restore_seconds = 0;  // recovery runs: restore + deploy, from the engine's stderr
  uint64_t restored_keys = 0;
  uint64_t words = 0;          // words counted (sink records for the engine)
  double words_per_second = 0; // words / wall_seconds
  uint64_t output_bytes = 0;   // changelog bytes written (0 for discarding configurations)
  int64_t max_rss_kb = 0;
  double user_seconds = 0;
  double sys_seconds = 0;
  int64_t start_wall_ms = 0;
  std::vector<ProgressPoint> progress;
  std::vector<CheckpointRecord> checkpoints;
  std::vector<std::pair<std::string, int64_t>> top;
};

// Median, minimum and maximum of a sample.
struct Spread {
  double median = 0, min = 0, max = 0;
  size_t n = 0;
  static Spread Of(std::vector<double> v);
};

struct ConfigInfo {
  enum class Kind { kBaseline, kEngine, kBackpressure, kRecovery };
  std::string name;         // short id, e.g. "engine-changelog-1s"
  std::string description;  // one line for the table
  Kind kind = Kind::kEngine;
  std::string interval;     // checkpoint.interval ("0" = periodic checkpoints off)
  std::string off_config;   // the same job with checkpoints off (for the overhead), or ""
  double max_overhead = 0;  // the target for that overhead (0.03 = 3%)
};

struct MachineInfo {
  std::string cpu;
  int cores = 0;
  uint64_t mem_bytes = 0;
  std::string kernel;
  std::string compiler;
};

struct BenchParams {
  bool quick = false;
  int reps = 0;
  int64_t words = 0;
  uint64_t corpus_bytes = 0;
  std::string corpus;
  int64_t recovery_keys = 0;
  std::string progress_interval;
};

struct BenchResults {
  MachineInfo machine;
  BenchParams params;
  std::vector<ConfigInfo> configs;  // in table order
  std::vector<RunRecord> runs;      // in the order they ran
  // Building the recovery state (once): the final checkpoint of `recovery_keys` keys.
  double state_build_seconds = 0;
  CheckpointRecord state_checkpoint;
  std::vector<std::string> notes;   // warnings worth printing with the table

  std::vector<const RunRecord*> RunsOf(const std::string& config, bool ok_only = true) const;
  // Median words/s of a configuration's successful runs (0 when none).
  double MedianThroughput(const std::string& config) const;
};

// The human-readable report printed at the end.
std::string FormatTable(const BenchResults& r);
// Everything, as one JSON document.
std::string FormatJson(const BenchResults& r);

}  // namespace cairn
