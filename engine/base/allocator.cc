#include "engine/base/allocator.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CAIRN_SANITIZED_ALLOCATOR 1  // clang's ASan or TSan
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CAIRN_SANITIZED_ALLOCATOR 1  // GCC's
#endif

namespace cairn {

bool KeepLargeAllocationsInHeap() {
#if defined(CAIRN_SANITIZED_ALLOCATOR)
  return false;  // the sanitizer's allocator replaces malloc; glibc's settings would not apply
#elif defined(__GLIBC__)
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
