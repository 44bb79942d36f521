// Copies and compares of short byte strings (words, keys) inline, without a call into libc.
//
// The word count moves and compares millions of strings of a few bytes each; for those,
// memcpy's and memcmp's call and size dispatch cost more than the bytes. These read and write
// exactly [p, p + n) (overlapping 8- and 4-byte accesses, never past the end), so they are safe
// on any memory that memcpy and memcmp are safe on; beyond 16 bytes they are memcpy and memcmp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cairn {

// memcpy(dst, src, n) for non-overlapping ranges.
__attribute__((always_inline)) inline void CopyShortBytes(char* dst, const char* src, size_t n) {
  if (n >= 8) {
    if (n > 16) {
      std::memcpy(dst, src, n);
      return;
    }
    uint64_t a, b;
    std::memcpy(&a, src, 8);
    std::memcpy(&b, src + n - 8, 8);
    std::memcpy(dst, &a, 8);
    std::memcpy(dst + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, src, 4);
    std::memcpy(&b, src + n - 4, 4);
    std::memcpy(dst, &a, 4);
    std::memcpy(dst + n - 4, &b, 4);
  } else if (n > 0) {
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

// memcmp(a, b, n) == 0.
__attribute__((always_inline)) inline bool EqualShortBytes(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    if (n > 16) return std::memcmp(a, b, n) == 0;
    uint64_t a0, a1, b0, b1;
    std::memcpy(&a0, a, 8);
    std::memcpy(&b0, b, 8);
    std::memcpy(&a1, a + n - 8, 8);
    std::memcpy(&b1, b + n - 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  if (n >= 4) {
    uint32_t a0, a1, b0, b1;
    std::memcpy(&a0, a, 4);
    std::memcpy(&b0, b, 4);
    std::memcpy(&a1, a + n - 4, 4);
    std::memcpy(&b1, b + n - 4, 4);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  if (n == 0) return true;
  return a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1];
}

}  // namespace cairn
