// Crash points: named places in the code where a test can make the process kill itself with
// SIGKILL, to prove that a crash at that instant loses and duplicates nothing.
//
// Set CAIRN_CRASH_AT=<name>[:<n>] to crash the n-th time (default 1) the point is reached.
// `cairn debug crash-points` lists every name (kCrashPoints). When the variable is unset a
// point costs one predictable branch. CAIRN_CRASH_SIGNAL=INT|TERM|KILL (default KILL) sends
// that signal instead: INT and TERM are raised in the thread at the point (delivered before it
// goes on), to prove that a cancel arriving at that instant is handled there.
#pragma once

#include <string_view>

namespace cairn {

struct CrashPointInfo {
  const char* name;
  const char* where;
};
// Every crash point, in protocol order.
extern const CrashPointInfo kCrashPoints[];
extern const int kNumCrashPoints;

// Reads CAIRN_CRASH_AT and CAIRN_CRASH_SIGNAL. Returns false (and fills *error) when the first
// names no known point or has a malformed count, or the second names another signal or is set
// without the first. Called once at start-up, before any thread starts.
bool InitCrashPoints(std::string* error);

namespace internal {
extern bool crash_points_armed;
void ReachCrashPoint(std::string_view name);
}  // namespace internal

}  // namespace cairn

#define CAIRN_CRASH_POINT(name)                                                       \
  do {                                                                                \
    if (__builtin_expect(::cairn::internal::crash_points_armed, 0)) ::cairn::internal::ReachCrashPoint(name); \
  } while (0)
