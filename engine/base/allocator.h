#ifndef CAIRN_ENGINE_BASE_ALLOCATOR_H_
#define CAIRN_ENGINE_BASE_ALLOCATOR_H_

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CAIRN_SANITIZED_ALLOCATOR 1  // clang's ASan or TSan
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CAIRN_SANITIZED_ALLOCATOR 1  // GCC's
#endif

namespace cairn {

// Whether this build's malloc is a sanitizer's (ASan or TSan, under GCC or clang), which
// replaces glibc's and ignores its settings.
#if defined(CAIRN_SANITIZED_ALLOCATOR)
inline constexpr bool kSanitizedAllocator = true;
#else
inline constexpr bool kSanitizedAllocator = false;
#endif

// Process-wide: has glibc's malloc keep the large buffers a job allocates and frees over and
// over (a checkpoint's delta and segment buffer, a growing table's old slots) in its
// heaps instead of mapping each one afresh and unmapping it when freed. A fresh mapping costs a
// page fault and a zero-fill per 4 KiB touched; on a 2.2M-key word count the defaults spent
// about a fifth of the run's page faults that way (docs/benchmarks.md, eleventh round).
//
// Sets M_MMAP_THRESHOLD to 32 MiB (glibc's largest on 64 bits: blocks below it come from the
// heaps) and M_TRIM_THRESHOLD to 256 MiB (free memory at the top of a heap is returned to the
// kernel only beyond it), which also turns off glibc's own adjustment of the two. The price is
// memory: the process keeps up to that much free heap mapped (+10-25% peak RSS on that job).
//
// Call it once, early in main() and before threads start; CairnMain does (the `cairn` binary,
// and the programs built on the C++ API that hand it their main()). It leaves malloc alone, and
// returns false, when the environment's GLIBC_TUNABLES already names a glibc.malloc setting
// (the user's choice wins), in ASan and TSan builds (their allocator replaces malloc), and
// where mallopt refuses or the C library is not glibc.
bool KeepLargeAllocationsInHeap();

}  // namespace cairn

#endif  // CAIRN_ENGINE_BASE_ALLOCATOR_H_
