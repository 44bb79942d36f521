#include "engine/base/allocator.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace cairn {
namespace {

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CAIRN_SANITIZED_ALLOCATOR 1  // clang's ASan or TSan
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CAIRN_SANITIZED_ALLOCATOR 1  // GCC's
#endif
#if defined(CAIRN_SANITIZED_ALLOCATOR)
constexpr bool kSanitizer = true;  // the sanitizer's allocator: mallopt does nothing
#else
constexpr bool kSanitizer = false;
#endif

constexpr size_t kBlock = 8 << 20;  // a checkpoint delta of ~350K entries

// A block of kBlock bytes, written to and published through a volatile pointer: the compiler
// may neither drop the allocation nor move it past the mallinfo2() that follows.
char* volatile published_block = nullptr;
char* TouchedBlock() {
  char* p = static_cast<char*>(std::malloc(kBlock));
  std::memset(p, 1, kBlock);
  published_block = p;
  return published_block;
}

// Each case runs in a child process (EXPECT_EXIT forks): the setting is process-wide, and the
// child's exit code says whether its checks held.

TEST(Allocator, KeepsAMultiMegabyteBlockInTheHeapInsteadOfMappingIt) {
  if (kSanitizer) GTEST_SKIP() << "the sanitizer's allocator ignores mallopt";
  EXPECT_EXIT(
      {
        unsetenv("GLIBC_TUNABLES");
        if (!KeepLargeAllocationsInHeap()) std::_Exit(1);
        const size_t mapped_before = mallinfo2().hblks;
        char* p = TouchedBlock();
        const size_t mapped_with_block = mallinfo2().hblks;
        std::free(p);
        // Freed, it stays in the heap: the next block of that size needs no fresh pages.
        std::_Exit(mapped_with_block == mapped_before ? 0 : 2);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Allocator, MapsSuchABlockAtGlibcsInitialThreshold) {
  // The contrast, which shows that mallinfo2 sees a mapped block: at glibc's initial threshold
  // of 128 KiB (set here, since an earlier free of a large mapped block in the same process may
  // have raised it) a block of kBlock bytes is mapped afresh.
  if (kSanitizer) GTEST_SKIP() << "the sanitizer's allocator ignores mallopt";
  EXPECT_EXIT(
      {
        if (mallopt(M_MMAP_THRESHOLD, 128 << 10) != 1) std::_Exit(1);
        const size_t mapped_before = mallinfo2().hblks;
        char* p = TouchedBlock();
        const size_t mapped_with_block = mallinfo2().hblks;
        std::free(p);
        std::_Exit(mapped_with_block == mapped_before + 1 ? 0 : 2);
      },
      ::testing::ExitedWithCode(0), "");
}

// Exits 1 when KeepLargeAllocationsInHeap applies with GLIBC_TUNABLES set to `tunables`, 0
// when it leaves malloc alone (run in a child: EXPECT_EXIT).
[[noreturn]] void ExitWithWhetherItApplies(const char* tunables) {
  setenv("GLIBC_TUNABLES", tunables, 1);
  std::_Exit(KeepLargeAllocationsInHeap() ? 1 : 0);
}

TEST(Allocator, LeavesMallocAloneWhenGlibcTunablesNamesAMallocSetting) {
  if (kSanitizer) GTEST_SKIP() << "no death tests under the sanitizers (SanitizerBuildsLeaveMallocAlone)";
  EXPECT_EXIT(ExitWithWhetherItApplies("glibc.rtld.optional_static_tls=512:glibc.malloc.trim_threshold=1048576"),
              ::testing::ExitedWithCode(0), "");
}

TEST(Allocator, AppliesWhenGlibcTunablesNamesNoMallocSetting) {
  if (kSanitizer) GTEST_SKIP() << "no death tests under the sanitizers (SanitizerBuildsLeaveMallocAlone)";
  EXPECT_EXIT(ExitWithWhetherItApplies("glibc.rtld.optional_static_tls=512"), ::testing::ExitedWithCode(1), "");
}

TEST(Allocator, SanitizerBuildsLeaveMallocAlone) {
  if (!kSanitizer) GTEST_SKIP() << "only under ASan or TSan, whose allocator ignores mallopt";
  EXPECT_FALSE(KeepLargeAllocationsInHeap());
}

}  // namespace
}  // namespace cairn
