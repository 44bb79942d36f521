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

#include <cstddef>
#include <cstdlib>
#include <type_traits>
#include <utility>

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

// Zeroed memory for an array that is about to be written all over (a hash table's slots, its
// key arena): `bytes` of zero bytes from calloc, never null (std::bad_alloc when there is no
// memory); free it with std::free. From kPopulateMinBytes on, the block's whole pages that are
// not yet in place (fresh memory, not a block malloc recycles) are then filled in with one
// madvise(MADV_POPULATE_WRITE) call, instead of taking a page fault at each 4 KiB first
// written: on this project's 2-core VMs a fault costs ~10 us, so 32 MiB written page by page
// took 88 ms and populated 6 ms (docs/benchmarks.md, twelfth round).
inline constexpr size_t kPopulateMinBytes = size_t{1} << 20;
void* AllocateZeroed(size_t bytes);

// Fills in the whole pages within [p, p + bytes) that are not yet in place, writable, in one
// call (madvise(MADV_POPULATE_WRITE), Linux 5.14 and later); their contents do not change.
// False when the kernel refuses (an older kernel, or no memory): they then fault in when
// first touched, as they would have anyway.
bool PopulatePages(void* p, size_t bytes);

// A fixed-size array of `size` T from AllocateZeroed, move-only. For element types that are
// trivially copyable and destructible (checked) and whose value-initialized state is all zero
// bytes (the owner's to ensure: every default member initializer zero), so that the elements
// start value-initialized without being constructed.
template <typename T>
class ZeroedArray {
 public:
  ZeroedArray() = default;
  // (T may be incomplete where a ZeroedArray<T> member is declared; it is checked here.)
  explicit ZeroedArray(size_t size) : data_(static_cast<T*>(AllocateZeroed(size * sizeof(T)))), size_(size) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  }
  ~ZeroedArray() { Release(); }
  ZeroedArray(ZeroedArray&& o) noexcept { swap(o); }
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    ZeroedArray(std::move(o)).swap(*this);
    return *this;
  }
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  void swap(ZeroedArray& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }

  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  void Release() {
    std::free(data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cairn

#endif  // CAIRN_ENGINE_BASE_ALLOCATOR_H_
