// A window of event time as `window` and the window join store it: [start, end), encoded as a
// user key of 16 bytes (start, then end, each big-endian with the sign bit flipped), so that a
// key's windows are in start order in its map state (docs/state.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cairn {

struct Window {
  int64_t start = 0;
  int64_t end = 0;  // exclusive
};

inline std::string EncodeWindow(const Window& w) {
  std::string s(16, '\0');
  auto put = [&](size_t at, int64_t v) {
    uint64_t u = static_cast<uint64_t>(v) ^ (uint64_t{1} << 63);
    for (int i = 0; i < 8; ++i) s[at + i] = static_cast<char>((u >> (8 * (7 - i))) & 0xff);
  };
  put(0, w.start);
  put(8, w.end);
  return s;
}

inline bool DecodeWindow(std::string_view s, Window* w) {
  if (s.size() != 16) return false;
  auto get = [&](size_t at) {
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<unsigned char>(s[at + i]);
    return static_cast<int64_t>(u ^ (uint64_t{1} << 63));
  };
  w->start = get(0);
  w->end = get(8);
  return true;
}

inline int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

}  // namespace cairn
