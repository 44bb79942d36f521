#include "engine/base/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cairn {
namespace {

#if defined(MADV_POPULATE_WRITE)
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // Linux 5.14's value, for older headers
#endif

}  // namespace

bool KeepLargeAllocationsInHeap() {
  if (kSanitizedAllocator) return false;  // the sanitizer's malloc ignores glibc's settings
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return false;
  constexpr int kMmapThreshold = 32 << 20;  // HEAP_MAX_SIZE / 2 on 64 bits: mallopt's limit
  constexpr int kTrimThreshold = 256 << 20;
  // mallopt returns 1 on success.
  return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
#else
  return false;
#endif
}

bool PopulatePages(void* p, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t last = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
  if (last <= first) return true;
  return madvise(reinterpret_cast<void*>(first), last - first, kMadvPopulateWrite) == 0;
}

void* AllocateZeroed(size_t bytes) {
  if (bytes == 0) bytes = 1;
  void* p = std::calloc(1, bytes);
  if (p == nullptr) throw std::bad_alloc();
  if (bytes >= kPopulateMinBytes) PopulatePages(p, bytes);
  return p;
}

}  // namespace cairn
