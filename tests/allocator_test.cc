#include "engine/base/allocator.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace cairn {
namespace {

constexpr size_t kBlock = 8 << 20;  // a checkpoint delta of ~350K entries

// How many mapped blocks (mallinfo2's hblks) a block of kBlock bytes adds while it is allocated
// and written: published through a volatile pointer, so that the compiler may neither drop the
// allocation nor move it past the mallinfo2() that follows.
char* volatile published_block = nullptr;
size_t BlocksMappedForATouchedBlock() {
  const size_t before = mallinfo2().hblks;
  char* p = static_cast<char*>(std::malloc(kBlock));
  std::memset(p, 1, kBlock);
  published_block = p;
  const size_t with_block = mallinfo2().hblks;
  std::free(published_block);
  return with_block - before;
}

// Each case runs in a child process (EXPECT_EXIT forks): the setting is process-wide, and the
// child's exit code says whether its checks held.

TEST(Allocator, KeepsAMultiMegabyteBlockInTheHeapInsteadOfMappingIt) {
  if (kSanitizedAllocator) GTEST_SKIP() << "the sanitizer's allocator ignores mallopt";
  EXPECT_EXIT(
      {
        unsetenv("GLIBC_TUNABLES");
        if (!KeepLargeAllocationsInHeap()) std::_Exit(1);
        // In the heap, not mapped: freed, it stays there, and the next one needs no fresh pages.
        std::_Exit(BlocksMappedForATouchedBlock() == 0 ? 0 : 2);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Allocator, MapsSuchABlockAtGlibcsInitialThreshold) {
  // The contrast, which shows that mallinfo2 sees a mapped block: at glibc's initial threshold
  // of 128 KiB (set here, since an earlier free of a large mapped block in the same process may
  // have raised it) a block of kBlock bytes is mapped afresh.
  if (kSanitizedAllocator) GTEST_SKIP() << "the sanitizer's allocator ignores mallopt";
  EXPECT_EXIT(
      {
        if (mallopt(M_MMAP_THRESHOLD, 128 << 10) != 1) std::_Exit(1);
        std::_Exit(BlocksMappedForATouchedBlock() == 1 ? 0 : 2);
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
  if (kSanitizedAllocator) GTEST_SKIP() << "no death tests under the sanitizers (SanitizerBuildsLeaveMallocAlone)";
  EXPECT_EXIT(ExitWithWhetherItApplies("glibc.rtld.optional_static_tls=512:glibc.malloc.trim_threshold=1048576"),
              ::testing::ExitedWithCode(0), "");
}

TEST(Allocator, AppliesWhenGlibcTunablesNamesNoMallocSetting) {
  if (kSanitizedAllocator) GTEST_SKIP() << "no death tests under the sanitizers (SanitizerBuildsLeaveMallocAlone)";
  EXPECT_EXIT(ExitWithWhetherItApplies("glibc.rtld.optional_static_tls=512"), ::testing::ExitedWithCode(1), "");
}

TEST(Allocator, SanitizerBuildsLeaveMallocAlone) {
  if (!kSanitizedAllocator) GTEST_SKIP() << "only under ASan or TSan, whose allocator ignores mallopt";
  EXPECT_FALSE(KeepLargeAllocationsInHeap());
}

}  // namespace
}  // namespace cairn
