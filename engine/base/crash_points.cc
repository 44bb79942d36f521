#include "engine/base/crash_points.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace cairn {

const CrashPointInfo kCrashPoints[] = {
    {"source.barrier_injected", "a source forwarded a checkpoint barrier"},
    {"task.sync_snapshot", "a task took the synchronous part of its snapshot"},
    {"persist.keyed", "asynchronous persist: before keyed state is written to RocksDB"},
    {"persist.changelog_written", "asynchronous persist (state.changelog): the delta's changelog segment written, not yet listed"},
    {"persist.shared_listed", "asynchronous persist: a keyed snapshot's SHARED list written, its new shared files not yet"},
    {"persist.operator_state", "asynchronous persist: keyed state written, operator state not yet"},
    {"rebalance.recording_closed", "a consumer's record of a load-balanced edge for a checkpoint closed (Mattern's counts matched), its persist not yet handed over"},
    {"persist.channel_state", "asynchronous persist: before the channel state of an unaligned checkpoint is written"},
    {"metadata.before_commit", "all tasks acknowledged; _metadata not yet written"},
    {"metadata.tmp_written", "_metadata.tmp written and fsynced; not yet renamed to _metadata"},
    {"metadata.renamed", "_metadata.tmp renamed to _metadata; the directory not yet fsynced"},
    {"checkpoint.committed", "_metadata committed; operators not yet notified"},
    {"sink.commit", "the file sink renamed its first pending file of a completed checkpoint, not yet the rest"},
    {"retention.cleanup", "retention removed an old checkpoint's _metadata, not yet its state files"},
    {"retention.shared", "the collection of shared files deleted one unreferenced file, not yet the others"},
    {"materialize.compacted", "state.changelog: a background materialization's segments applied and its table files merged (when due), not yet staged"},
    {"materialize.staged", "state.changelog: a background materialization staged, no checkpoint lists it yet"},
    {"restore.midway", "restore rebuilt the first keyed subtask's working state, not yet the others"},
};
const int kNumCrashPoints = sizeof(kCrashPoints) / sizeof(kCrashPoints[0]);

namespace internal {
bool crash_points_armed = false;
static std::string armed_name;
static long armed_count = 1;
static int armed_signal = SIGKILL;
static std::atomic<long> hits{0};

void ReachCrashPoint(std::string_view name) {
  if (name != armed_name) return;
  if (hits.fetch_add(1) + 1 != armed_count) return;
  if (armed_signal == SIGKILL) {
    kill(getpid(), SIGKILL);
  } else {
    raise(armed_signal);  // this thread's handler runs before raise returns
  }
}
}  // namespace internal

bool InitCrashPoints(std::string* error) {
  const char* v = std::getenv("CAIRN_CRASH_AT");
  const char* sig = std::getenv("CAIRN_CRASH_SIGNAL");
  if (sig != nullptr && *sig != '\0') {
    const std::string s(sig);
    if (s == "INT") {
      internal::armed_signal = SIGINT;
    } else if (s == "TERM") {
      internal::armed_signal = SIGTERM;
    } else if (s != "KILL") {
      *error = "CAIRN_CRASH_SIGNAL=" + s + ": expected INT, TERM or KILL";
      return false;
    }
    if (v == nullptr || *v == '\0') {
      *error = "CAIRN_CRASH_SIGNAL=" + s + " is set without CAIRN_CRASH_AT (the point to send it at)";
      return false;
    }
  }
  if (v == nullptr || *v == '\0') return true;
  std::string s(v);
  std::string name = s;
  long count = 1;
  size_t colon = s.find(':');
  if (colon != std::string::npos) {
    name = s.substr(0, colon);
    char* end = nullptr;
    count = std::strtol(s.c_str() + colon + 1, &end, 10);
    if (end == s.c_str() + colon + 1 || *end != '\0' || count < 1) {
      *error = "CAIRN_CRASH_AT=" + s + ": the count after ':' must be a positive integer";
      return false;
    }
  }
  for (int i = 0; i < kNumCrashPoints; ++i) {
    if (name == kCrashPoints[i].name) {
      internal::armed_name = name;
      internal::armed_count = count;
      internal::crash_points_armed = true;
      return true;
    }
  }
  *error = "CAIRN_CRASH_AT=" + s + ": no crash point named '" + name + "' (see `cairn debug crash-points`)";
  return false;
}

}  // namespace cairn
