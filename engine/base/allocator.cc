#include "engine/base/allocator.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cairn {

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

}  // namespace cairn
