#include "engine/base/thread_priority.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace cairn {

namespace {

// struct sched_attr of sched_setattr(2); glibc 2.36 declares no wrapper.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
};

// The kernel clamps a custom slice to [0.1 ms, 100 ms]; its default is 0.7-3 ms.
constexpr uint64_t kShortSliceNs = 100 * 1000;

}  // namespace

bool RequestShortSchedulerSlice() {
#ifdef SYS_sched_setattr
  // The thread's nice value stays what it is (SCHED_FLAG_KEEP_PARAMS would skip the slice too).
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  if (nice == -1 && errno != 0) return false;
  SchedAttr attr{};
  attr.size = sizeof(attr);
  attr.sched_policy = SCHED_OTHER;
  attr.sched_nice = nice;
  attr.sched_runtime = kShortSliceNs;
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
#else
  return false;
#endif
}

}  // namespace cairn
