#include "bench/bench_results.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "jobs/cli/state_dump.h"

namespace cairn {

namespace {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string PadLeft(std::string s, size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}

std::string SpreadText(const Spread& s, const char* fmt, double scale = 1.0) {
  if (s.n == 0) return "-";
  return Fmt(fmt, s.median * scale) + " [" + Fmt(fmt, s.min * scale) + "-" + Fmt(fmt, s.max * scale) + "]";
}

const ConfigInfo* FindConfig(const BenchResults& r, const std::string& name) {
  for (const auto& c : r.configs)
    if (c.name == name) return &c;
  return nullptr;
}

// Periodic checkpoints of a configuration's runs (the final one, taken after the input ended,
// is excluded: it is part of every configuration, checkpoints off included).
std::vector<const CheckpointRecord*> PeriodicCheckpoints(const std::vector<const RunRecord*>& runs) {
  std::vector<const CheckpointRecord*> out;
  for (const RunRecord* run : runs)
    for (const CheckpointRecord& c : run->checkpoints)
      if (!c.final) out.push_back(&c);
  return out;
}

// Per-repetition ratios of `config`'s throughput over `base`'s (runs of the same repetition
// ran back to back, so a ratio within a repetition is less exposed to load changes).
std::vector<double> PairedRatios(const BenchResults& r, const std::string& config, const std::string& base) {
  std::vector<double> out;
  for (const RunRecord* a : r.RunsOf(config))
    for (const RunRecord* b : r.RunsOf(base))
      if (a->rep == b->rep && b->words_per_second > 0) out.push_back(a->words_per_second / b->words_per_second);
  return out;
}

std::string JsonString(const std::string& s) { return JsonQuote(s); }

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string JsonSpread(const Spread& s) {
  if (s.n == 0) return "null";
  return "{\"median\":" + JsonNumber(s.median) + ",\"min\":" + JsonNumber(s.min) + ",\"max\":" + JsonNumber(s.max) +
         ",\"n\":" + std::to_string(s.n) + "}";
}

const char* KindName(ConfigInfo::Kind k) {
  switch (k) {
    case ConfigInfo::Kind::kBaseline: return "baseline";
    case ConfigInfo::Kind::kEngine: return "engine";
    case ConfigInfo::Kind::kBackpressure: return "backpressure";
    case ConfigInfo::Kind::kRecovery: return "recovery";
  }
  return "?";
}

double MedianCpu(const BenchResults& r, const std::string& config) {
  std::vector<double> v;
  for (const RunRecord* run : r.RunsOf(config)) v.push_back(run->user_seconds + run->sys_seconds);
  return Spread::Of(v).median;
}

}  // namespace

Spread Spread::Of(std::vector<double> v) {
  Spread s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

std::vector<const RunRecord*> BenchResults::RunsOf(const std::string& config, bool ok_only) const {
  std::vector<const RunRecord*> out;
  for (const RunRecord& run : runs)
    if (run.config == config && (run.ok || !ok_only)) out.push_back(&run);
  return out;
}

double BenchResults::MedianThroughput(const std::string& config) const {
  std::vector<double> v;
  for (const RunRecord* run : RunsOf(config)) v.push_back(run->words_per_second);
  return Spread::Of(v).median;
}

std::string FormatTable(const BenchResults& r) {
  std::string o;
  char line[512];
  const double base = r.MedianThroughput("baseline-changelog");
  const double base_count = r.MedianThroughput("baseline-count");
  snprintf(line, sizeof line,
           "\ncairn-bench%s: %" PRId64 " words (%.1f MB, seeded Zipf), %d run%s per configuration, interleaved\n"
           "machine: %s, %d cores, %.1f GiB; the machine may have been shared (load average before each run is in "
           "the JSON)\n\n",
           r.params.quick ? " --quick" : "", r.params.words, static_cast<double>(r.params.corpus_bytes) / 1e6,
           r.params.reps, r.params.reps == 1 ? "" : "s", r.machine.cpu.c_str(), r.machine.cores,
           static_cast<double>(r.machine.mem_bytes) / (1 << 30));
  o += line;

  o += "Throughput: words per second of process wall time (start to exit); median [min-max]\n";
  o += Pad("configuration", 48) + PadLeft("M words/s", 20) + PadLeft("vs base", 9) + PadLeft("vs count", 9) +
       PadLeft("CPU s", 7) + PadLeft("peak RSS MiB", 14) + PadLeft("ckpts", 7) + PadLeft("ckpt ms med/max", 17) +
       PadLeft("align ms med/max", 18) + PadLeft("final ckpt ms", 15) + "\n";
  for (const ConfigInfo& c : r.configs) {
    if (c.kind == ConfigInfo::Kind::kRecovery) continue;
    auto runs = r.RunsOf(c.name);
    std::vector<double> tput, rss, ncp, cpu;
    for (const RunRecord* run : runs) {
      tput.push_back(run->words_per_second);
      cpu.push_back(run->user_seconds + run->sys_seconds);
      rss.push_back(static_cast<double>(run->max_rss_kb) / 1024.0);
      double n = 0;
      for (const auto& cp : run->checkpoints) n += cp.final ? 0 : 1;
      ncp.push_back(n);
    }
    Spread t = Spread::Of(tput);
    std::vector<double> dur, align, final_ms;
    for (const RunRecord* run : runs)
      for (const CheckpointRecord& cp : run->checkpoints)
        if (cp.final) final_ms.push_back(static_cast<double>(cp.duration_ms));
    for (const CheckpointRecord* cp : PeriodicCheckpoints(runs)) {
      dur.push_back(static_cast<double>(cp->duration_ms));
      align.push_back(static_cast<double>(cp->alignment_ms));
    }
    Spread d = Spread::Of(dur), a = Spread::Of(align);
    std::string failed = runs.size() < r.RunsOf(c.name, false).size()
                             ? " (" + std::to_string(r.RunsOf(c.name, false).size() - runs.size()) + " failed)"
                             : "";
    o += Pad(c.description + failed, 48);
    o += PadLeft(SpreadText(t, "%.1f", 1e-6), 20);
    o += PadLeft(base > 0 && t.n ? Fmt("%.2f", t.median / base) : "-", 9);
    o += PadLeft(base_count > 0 && t.n ? Fmt("%.2f", t.median / base_count) : "-", 9);
    o += PadLeft(cpu.empty() ? "-" : Fmt("%.2f", Spread::Of(cpu).median), 7);
    o += PadLeft(rss.empty() ? "-" : Fmt("%.0f", Spread::Of(rss).max), 14);
    o += PadLeft(ncp.empty() ? "-" : Fmt("%.0f", Spread::Of(ncp).median), 7);
    o += PadLeft(d.n ? Fmt("%.0f", d.median) + "/" + Fmt("%.0f", d.max) : "-", 17);
    o += PadLeft(a.n ? Fmt("%.0f", a.median) + "/" + Fmt("%.0f", a.max) : "-", 18);
    o += PadLeft(final_ms.empty() ? "-" : Fmt("%.0f", Spread::Of(final_ms).median), 15);
    o += "\n";
  }
  o += "  vs base / vs count: median over the baseline's (changelog / count only). CPU s: user+sys of the process,\n"
       "  median. ckpts: periodic checkpoints per run, median (every run also takes a final checkpoint when its input\n"
       "  ends, not counted). ckpt/align ms: of the periodic checkpoints of all runs. final ckpt ms: the final\n"
       "  checkpoint's duration, median (it is part of every engine run's wall time).\n";

  // COST: the engine on 2 threads against one competent thread doing the same job.
  std::string section;
  for (const char* eng : {"engine-changelog-off", "engine-changelog-1s"}) {
    const ConfigInfo* c = FindConfig(r, eng);
    if (c == nullptr || base <= 0) continue;
    double e = r.MedianThroughput(eng);
    Spread paired = Spread::Of(PairedRatios(r, eng, "baseline-changelog"));
    snprintf(line, sizeof line, "  %-48s %.2f of the baseline (per repetition %s): %s\n", c->description.c_str(),
             e / base, SpreadText(paired, "%.2f").c_str(),
             e >= base ? "COST <= 2 cores (met)" : "slower than one thread on 2 cores: COST > 2 (missed)");
    section += line;
    const double cpu = MedianCpu(r, eng), base_cpu = MedianCpu(r, "baseline-changelog");
    if (base_cpu > 0) {
      snprintf(line, sizeof line,
               "  %-48s CPU %.2f s against the baseline's %.2f s: %.1fx the work, so on 2 idle cores at best %.2f of "
               "the baseline\n",
               "", cpu, base_cpu, cpu / base_cpu, 2 * base_cpu / cpu);
      section += line;
    }
  }

  if (!section.empty())
    o += "\nCOST (engine with 2 threads vs the single-threaded baseline doing the same job; target: >= 1.00)\n" + section;
  section.clear();
  for (const ConfigInfo& c : r.configs) {
    if (c.off_config.empty()) continue;
    double on = r.MedianThroughput(c.name), off = r.MedianThroughput(c.off_config);
    if (on <= 0 || off <= 0) continue;
    Spread paired = Spread::Of(PairedRatios(r, c.name, c.off_config));
    double cost = 1 - on / off;
    const double cpu_on = MedianCpu(r, c.name), cpu_off = MedianCpu(r, c.off_config);
    // The verdict goes by the medians; "noisy" when the per-repetition costs fall on both sides.
    const bool noisy = paired.n > 1 && 1 - paired.max <= c.max_overhead && 1 - paired.min > c.max_overhead;
    snprintf(line, sizeof line, "  %-48s %5.1f%% (per repetition %s%%; CPU %+.0f%%) [<= %.0f%%: %s%s]\n",
             c.description.c_str(), 100 * cost,
             paired.n ? (Fmt("%.1f", 100 * (1 - paired.max)) + " to " + Fmt("%.1f", 100 * (1 - paired.min))).c_str()
                      : "-",
             cpu_off > 0 ? 100 * (cpu_on / cpu_off - 1) : 0.0, 100 * c.max_overhead,
             cost <= c.max_overhead ? "met" : "missed", noisy ? ", noisy" : "");
    section += line;
  }

  if (!section.empty())
    o += "\nCheckpoint overhead: throughput lost against the same job without checkpoints (target in brackets)\n" +
         section;

  for (const ConfigInfo& c : r.configs) {
    if (c.kind != ConfigInfo::Kind::kBackpressure) continue;
    auto cps = PeriodicCheckpoints(r.RunsOf(c.name));
    std::vector<double> dur, align, sync, async, flight;
    for (const CheckpointRecord* cp : cps) {
      dur.push_back(static_cast<double>(cp->duration_ms));
      align.push_back(static_cast<double>(cp->alignment_ms));
      sync.push_back(static_cast<double>(cp->sync_ms));
      async.push_back(static_cast<double>(cp->async_ms));
      flight.push_back(static_cast<double>(std::max<int64_t>(0, cp->duration_ms - cp->sync_ms - cp->async_ms)));
    }
    o += "\nCheckpoints under backpressure: " + c.description + " (" + std::to_string(cps.size()) +
         " checkpoints), ms median [min-max]\n";
    o += "  duration " + SpreadText(Spread::Of(dur), "%.0f") + ", alignment " + SpreadText(Spread::Of(align), "%.0f") +
         ", sync " + SpreadText(Spread::Of(sync), "%.0f") + ", async " + SpreadText(Spread::Of(async), "%.0f") + "\n";
    o += "  duration - sync - async (barriers in flight through full channels, alignment, acks): " +
         SpreadText(Spread::Of(flight), "%.0f") + "\n";
  }

  if (FindConfig(r, "backpressure-aligned-100ms") != nullptr && FindConfig(r, "backpressure-unaligned-100ms") == nullptr)
    o += "  unaligned: not measured (--no-unaligned)\n";

  for (const ConfigInfo& c : r.configs) {
    if (c.kind != ConfigInfo::Kind::kRecovery) continue;
    auto runs = r.RunsOf(c.name);
    std::vector<double> restore, wall, rss;
    uint64_t keys = 0;
    for (const RunRecord* run : runs) {
      restore.push_back(run->restore_seconds);
      wall.push_back(run->wall_seconds);
      rss.push_back(static_cast<double>(run->max_rss_kb) / 1024.0);
      keys = run->restored_keys;
    }
    Spread rs = Spread::Of(restore), w = Spread::Of(wall);
    snprintf(line, sizeof line, "\nRecovery: %s (%" PRIu64 " keys restored; %zu runs)\n", c.description.c_str(), keys,
             runs.size());
    o += line;
    o += "  --restore to first record (restore + deploy) s: " + SpreadText(rs, "%.3f") +
         (rs.n ? (rs.median < 0.5 ? "  [< 0.5 s: met]" : "  [< 0.5 s: missed]") : "") + "\n";
    o += "  whole restart, process start to exit (empty remainder) s: " + SpreadText(w, "%.3f") +
         (w.n ? (w.median < 0.5 ? "  [< 0.5 s: met]" : "  [< 0.5 s: missed]") : "") + "\n";
    o += "  peak RSS MiB: " + SpreadText(Spread::Of(rss), "%.0f") + "\n";
    snprintf(line, sizeof line,
             "  building that state (once): %.2f s; its final checkpoint took %" PRId64 " ms (sync %" PRId64
             ", async %" PRId64 "), %.1f MB\n",
             r.state_build_seconds, r.state_checkpoint.duration_ms, r.state_checkpoint.sync_ms,
             r.state_checkpoint.async_ms, static_cast<double>(r.state_checkpoint.state_bytes) / 1e6);
    o += line;
  }
  for (const std::string& n : r.notes) o += "note: " + n + "\n";
  return o;
}

std::string FormatJson(const BenchResults& r) {
  std::string o = "{\n";
  o += "  \"machine\": {\"cpu\":" + JsonString(r.machine.cpu) + ",\"cores\":" + std::to_string(r.machine.cores) +
       ",\"mem_bytes\":" + std::to_string(r.machine.mem_bytes) + ",\"kernel\":" + JsonString(r.machine.kernel) +
       ",\"compiler\":" + JsonString(r.machine.compiler) + "},\n";
  o += "  \"params\": {\"quick\":" + std::string(r.params.quick ? "true" : "false") +
       ",\"reps\":" + std::to_string(r.params.reps) + ",\"words\":" + std::to_string(r.params.words) +
       ",\"corpus_bytes\":" + std::to_string(r.params.corpus_bytes) + ",\"corpus\":" + JsonString(r.params.corpus) +
       ",\"recovery_keys\":" + std::to_string(r.params.recovery_keys) +
       ",\"progress_interval\":" + JsonString(r.params.progress_interval) + "},\n";
  o += "  \"configs\": [\n";
  for (size_t i = 0; i < r.configs.size(); ++i) {
    const ConfigInfo& c = r.configs[i];
    std::vector<double> tput, rss, wall, restore;
    for (const RunRecord* run : r.RunsOf(c.name)) {
      tput.push_back(run->words_per_second);
      rss.push_back(static_cast<double>(run->max_rss_kb));
      wall.push_back(run->wall_seconds);
      restore.push_back(run->restore_seconds);
    }
    o += "    {\"name\":" + JsonString(c.name) + ",\"description\":" + JsonString(c.description) +
         ",\"kind\":" + JsonString(KindName(c.kind)) + ",\"checkpoint_interval\":" + JsonString(c.interval) +
         ",\"words_per_second\":" + JsonSpread(Spread::Of(tput)) + ",\"wall_seconds\":" + JsonSpread(Spread::Of(wall)) +
         ",\"max_rss_kb\":" + JsonSpread(Spread::Of(rss));
    if (c.kind == ConfigInfo::Kind::kRecovery) o += ",\"restore_seconds\":" + JsonSpread(Spread::Of(restore));
    if (!c.off_config.empty()) {
      double on = r.MedianThroughput(c.name), off = r.MedianThroughput(c.off_config);
      o += ",\"overhead_vs\":" + JsonString(c.off_config) + ",\"overhead\":" + JsonNumber(off > 0 ? 1 - on / off : NAN) +
           ",\"overhead_target\":" + JsonNumber(c.max_overhead);
    }
    o += i + 1 < r.configs.size() ? "},\n" : "}\n";
  }
  o += "  ],\n  \"runs\": [\n";
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const RunRecord& run = r.runs[i];
    o += "    {\"config\":" + JsonString(run.config) + ",\"rep\":" + std::to_string(run.rep) +
         ",\"ok\":" + (run.ok ? "true" : "false") + ",\"error\":" + JsonString(run.error) +
         ",\"load_before\":" + JsonNumber(run.load_before) + ",\"wall_seconds\":" + JsonNumber(run.wall_seconds) +
         ",\"engine_seconds\":" + JsonNumber(run.engine_seconds) + ",\"restore_seconds\":" +
         JsonNumber(run.restore_seconds) + ",\"restored_keys\":" + std::to_string(run.restored_keys) +
         ",\"words\":" + std::to_string(run.words) + ",\"words_per_second\":" + JsonNumber(run.words_per_second) +
         ",\"output_bytes\":" + std::to_string(run.output_bytes) + ",\"max_rss_kb\":" + std::to_string(run.max_rss_kb) +
         ",\"user_seconds\":" + JsonNumber(run.user_seconds) + ",\"sys_seconds\":" + JsonNumber(run.sys_seconds) +
         ",\"start_wall_ms\":" + std::to_string(run.start_wall_ms) + ",\n      \"checkpoints\":[";
    for (size_t k = 0; k < run.checkpoints.size(); ++k) {
      const CheckpointRecord& c = run.checkpoints[k];
      o += std::string(k ? "," : "") + "{\"id\":" + std::to_string(c.id) +
           ",\"trigger_time_ms\":" + std::to_string(c.trigger_time_ms) + ",\"duration_ms\":" +
           std::to_string(c.duration_ms) + ",\"alignment_ms\":" + std::to_string(c.alignment_ms) +
           ",\"sync_ms\":" + std::to_string(c.sync_ms) + ",\"async_ms\":" + std::to_string(c.async_ms) +
           ",\"state_bytes\":" + std::to_string(c.state_bytes) + ",\"final\":" + (c.final ? "true" : "false") + "}";
    }
    o += "],\n      \"progress\":[";
    for (size_t k = 0; k < run.progress.size(); ++k)
      o += std::string(k ? "," : "") + "[" + JsonNumber(run.progress[k].seconds) + "," +
           std::to_string(run.progress[k].sink_records) + "]";
    o += i + 1 < r.runs.size() ? "]},\n" : "]}\n";
  }
  o += "  ],\n  \"recovery_state\": {\"build_seconds\":" + JsonNumber(r.state_build_seconds) +
       ",\"final_checkpoint_ms\":" + std::to_string(r.state_checkpoint.duration_ms) +
       ",\"sync_ms\":" + std::to_string(r.state_checkpoint.sync_ms) +
       ",\"async_ms\":" + std::to_string(r.state_checkpoint.async_ms) +
       ",\"state_bytes\":" + std::to_string(r.state_checkpoint.state_bytes) + "},\n";
  o += "  \"notes\": [";
  for (size_t i = 0; i < r.notes.size(); ++i) o += std::string(i ? "," : "") + JsonString(r.notes[i]);
  o += "]\n}\n";
  return o;
}

}  // namespace cairn
