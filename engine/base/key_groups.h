// Key groups: the unit in which keyed state is partitioned, stored and later re-distributed.
//
// A key hashes (with a fixed, platform-independent hash) into one of `max_parallelism` key
// groups; subtask i of an operator with parallelism p owns the contiguous KeyGroupRange
// computed as in Flink (KeyGroupRangeAssignment), so a restore may change p as long as
// max_parallelism stays the same. KeyHash is stable across runs and builds: it is part of the
// checkpoint format.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace cairn {

// 64-bit hash of a byte string (wyhash-style multiply-mix). Stable: never change it, since key
// groups in stored checkpoints depend on it.
inline uint64_t KeyHash(std::string_view s) {
  constexpr uint64_t kP0 = 0xa0761d6478bd642full, kP1 = 0xe7037ed1a0b428dbull, kP2 = 0x8ebc6af09c88c6e3ull;
  auto mix = [](uint64_t a, uint64_t b) {
    __uint128_t r = static_cast<__uint128_t>(a) * b;
    return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
  };
  auto load64 = [](const char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; };
  const char* p = s.data();
  size_t n = s.size();
  uint64_t seed = kP0 ^ n;
  while (n > 8) {
    seed = mix(load64(p) ^ kP1, seed ^ kP2);
    p += 8;
    n -= 8;
  }
  // The last n (<= 8) bytes, little-endian and zero-padded, read without a call or a store:
  // a copy into a stack word (memcpy of a variable length) made the word count's hash edge
  // wait on the store-to-load forwarding of that word.
  uint64_t tail = 0;
  if (s.size() > 8) {  // bytes before p are the key's: the 8 ending at its end, shifted down
    tail = load64(p + n - 8) >> (64 - 8 * n);
  } else if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    tail = lo | (static_cast<uint64_t>(hi) << (8 * (n - 4)));
  } else if (n > 0) {  // an empty view may have no data pointer
    const auto byte = [p](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(p[i])); };
    tail = byte(0) | (byte(n / 2) << (8 * (n / 2))) | (byte(n - 1) << (8 * (n - 1)));
  }
  return mix(mix(tail ^ kP1, seed ^ kP2), kP0 ^ s.size());
}

// The key group of a hash: uses the high 32 bits, so one subtask's keys share them; a hash
// table of one subtask's keys must take its slot from all the bits (state/keyed_state.cc).
inline uint32_t KeyGroupOf(uint64_t hash, uint32_t max_parallelism) {
  return static_cast<uint32_t>(((hash >> 32) * max_parallelism) >> 32);
}

// The subtask that owns `key_group` when the operator runs with `parallelism` subtasks.
inline uint32_t SubtaskForKeyGroup(uint32_t key_group, uint32_t max_parallelism, uint32_t parallelism) {
  return static_cast<uint32_t>(static_cast<uint64_t>(key_group) * parallelism / max_parallelism);
}

// The inclusive range [first, last] of key groups owned by one subtask.
struct KeyGroupRange {
  uint32_t first = 0;
  uint32_t last = 0;

  static KeyGroupRange ForSubtask(uint32_t subtask, uint32_t max_parallelism, uint32_t parallelism) {
    uint32_t first = static_cast<uint32_t>((static_cast<uint64_t>(subtask) * max_parallelism + parallelism - 1) / parallelism);
    uint32_t last = static_cast<uint32_t>(((static_cast<uint64_t>(subtask) + 1) * max_parallelism - 1) / parallelism);
    return KeyGroupRange{first, last};
  }
  bool Contains(uint32_t kg) const { return kg >= first && kg <= last; }
  bool Overlaps(const KeyGroupRange& o) const { return first <= o.last && o.first <= last; }
  bool operator==(const KeyGroupRange& o) const { return first == o.first && last == o.last; }
  std::string ToString() const { return std::to_string(first) + "-" + std::to_string(last); }
};

}  // namespace cairn
