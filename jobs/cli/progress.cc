#include "jobs/cli/progress.h"

#include <cinttypes>
#include <cstdio>

namespace cairn {

std::string FormatProgress(const RunProgress& p) {
  char buf[256];
  snprintf(buf, sizeof buf,
           "cairn: %6.1fs  source records %12" PRIu64 "  sink records %12" PRIu64 "  (%.2fM/s)  checkpoints %" PRIu64
           " (last %" PRId64 " ms)\n",
           p.seconds, p.source_records, p.sink_records,
           static_cast<double>(p.sink_records_in_interval) / 1e6 / p.interval_seconds, p.checkpoints.completed,
           p.checkpoints.last_duration_ms);
  return buf;
}

void PrintProgress(const RunProgress& p) { fputs(FormatProgress(p).c_str(), stderr); }

}  // namespace cairn
