#ifndef CAIRN_ENGINE_BASE_THREAD_PRIORITY_H_
#define CAIRN_ENGINE_BASE_THREAD_PRIORITY_H_

namespace cairn {

// Asks the kernel to run the calling thread soon after it wakes, ahead of threads that have been
// busy on the CPU: a short scheduler slice (sched_setattr's sched_runtime for SCHED_OTHER, which
// Linux honours from 6.12 on; PREEMPT_SHORT lets a waking thread with a shorter slice preempt).
// For threads that mostly sleep and do short bursts of latency-critical work (the checkpoint
// persister between its fsyncs) on a machine whose cores the operator threads keep busy.
// Needs no privilege and changes neither the thread's policy nor its nice value, so it takes no
// CPU share from anything; best effort: on older kernels, or where refused, it does nothing.
// Returns whether the kernel accepted it.
bool RequestShortSchedulerSlice();

}  // namespace cairn

#endif  // CAIRN_ENGINE_BASE_THREAD_PRIORITY_H_
