#include "jobs/cli/run_summary.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

namespace cairn {

std::string FormatSummary(const JobSpec& spec, const RunSummary& s) {
  char buf[512];
  std::string out;
  snprintf(buf, sizeof buf, "job %s completed in %.2f s%s\n", spec.name.c_str(), s.seconds,
           s.restored_from ? (" (restored from checkpoint " + std::to_string(s.restored_from) + ")").c_str() : "");
  out += buf;
  if (!s.stopped_with_savepoint.empty()) out += "  stopped with savepoint " + s.stopped_with_savepoint + "\n";
  if (s.restarts > 0) {
    out += "  restarts        " + std::to_string(s.restarts) + " in-process (restart:); the counts below are of the last attempt, " +
           (s.restored_from ? "since checkpoint " + std::to_string(s.restored_from) : std::string("from the beginning")) + "\n";
  } else if (s.restored_from) {
    out += "  counts          since the restore of checkpoint " + std::to_string(s.restored_from) +
           " (this run only)" + (s.counts_skipped || s.counts_late ? "; records skipped and late: since the job first started" : "") +
           "\n";
  }
  if (s.restored_from) {
    snprintf(buf, sizeof buf, "  restore         checkpoint %" PRIu64 ": %zu keys, %.3f s to the first record\n",
             s.restored_from, s.restored_keys, s.restore_seconds);
    out += buf;
  }
  snprintf(buf, sizeof buf, "  source records  %" PRIu64 " (%.0f records/s)\n", s.source_records,
           s.seconds > 0 ? static_cast<double>(s.source_records) / s.seconds : 0.0);
  out += buf;
  snprintf(buf, sizeof buf, "  %s %" PRIu64 " (%.0f records/s)\n", s.has_sinks ? "sink records   " : "records in     ", s.sink_records,
           s.seconds > 0 ? static_cast<double>(s.sink_records) / s.seconds : 0.0);
  out += buf;
  std::vector<int64_t> d = s.checkpoints.durations_ms;
  std::sort(d.begin(), d.end());
  snprintf(buf, sizeof buf, "  checkpoints     %" PRIu64 " completed, %" PRIu64 " failed; duration median %" PRId64
                            " ms, max %" PRId64 " ms\n",
           s.checkpoints.completed, s.checkpoints.failed, d.empty() ? 0 : d[d.size() / 2], d.empty() ? 0 : d.back());
  out += buf;
  if (s.counts_skipped) {
    snprintf(buf, sizeof buf, "  records skipped %" PRIu64 " (malformed input, on_error: skip)\n", s.records_skipped);
    out += buf;
  }
  if (s.counts_late) {
    snprintf(buf, sizeof buf, "  records late    %" PRIu64 " (dropped: past their windows' end + allowed_lateness)\n",
             s.records_late);
    out += buf;
  }
  if (!s.top_keys.empty()) {
    out += "  top words      ";
    for (const auto& [k, v] : s.top_keys) out += " " + k + " " + std::to_string(v);
    out += "\n";
  }
  return out;
}

}  // namespace cairn
