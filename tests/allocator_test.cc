#include "engine/base/allocator.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

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

struct Cell {
  uint64_t a = 0;
  const char* p = nullptr;
  uint32_t n = 0;
  bool flag = false;
};

// Every element of `v` reads as value-initialized; then every element is written (ASan checks
// the block's bounds) and read back.
void ExpectZeroedAndWritable(ZeroedArray<Cell>& v) {
  for (const Cell& c : v) {
    ASSERT_EQ(c.a, 0u);
    ASSERT_EQ(c.p, nullptr);
    ASSERT_EQ(c.n, 0u);
    ASSERT_FALSE(c.flag);
  }
  for (size_t i = 0; i < v.size(); ++i) v[i].a = i;
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i].a, i);
}

TEST(ZeroedArray, SmallAndLargeArraysStartValueInitialized) {
  for (size_t n : {size_t{1}, size_t{1000}, kPopulateMinBytes / sizeof(Cell) - 1, kPopulateMinBytes / sizeof(Cell),
                   3 * kPopulateMinBytes / sizeof(Cell) + 7}) {
    ZeroedArray<Cell> v(n);
    ASSERT_EQ(v.size(), n);
    ASSERT_EQ(v.end() - v.begin(), static_cast<ptrdiff_t>(n));
    ExpectZeroedAndWritable(v);
  }
  ZeroedArray<Cell> none;
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.begin(), none.end());
}

TEST(ZeroedArray, MovesOwnership) {
  ZeroedArray<Cell> a(4 * kPopulateMinBytes / sizeof(Cell));
  a[5].a = 42;
  const Cell* data = a.begin();
  ZeroedArray<Cell> b(std::move(a));
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.begin(), data);
  EXPECT_EQ(b[5].a, 42u);
  ZeroedArray<Cell> c(10);
  c = std::move(b);  // c's small array is freed, b's large one moves
  EXPECT_EQ(c.begin(), data);
  EXPECT_EQ(c[5].a, 42u);
}

TEST(PopulatePages, FillsInAFreshMappingsPagesWithoutTouchingThem) {
  // What AllocateZeroed relies on for a block of fresh memory: one call puts every page in
  // place (mincore: resident) before anything has written it, and leaves the contents alone.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = 256 * page;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto resident = [&] {
    std::vector<unsigned char> v(bytes / page);
    EXPECT_EQ(mincore(m, bytes, v.data()), 0);
    size_t in = 0;
    for (unsigned char r : v) in += r & 1;
    return in;
  };
  EXPECT_EQ(resident(), 0u);
  // A range that starts and ends inside pages: only the whole pages between are filled in.
  ASSERT_TRUE(PopulatePages(static_cast<char*>(m) + 100, bytes - 200));
  EXPECT_EQ(resident(), bytes / page - 2);
  const auto* bytes_of = static_cast<const unsigned char*>(m);
  for (size_t i = 0; i < bytes; i += 997) ASSERT_EQ(bytes_of[i], 0);
  munmap(m, bytes);
}

}  // namespace
}  // namespace cairn
