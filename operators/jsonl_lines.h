// Writing `n` generated lines to a file a 64 KiB buffer at a time: what `cairn generate` does
// for each of its generators (click_generator, nexmark_generator).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace cairn {

// Calls append(i, &buf) for i = 0 .. n-1 (each appends one line without its newline) and writes
// the lines, each ended by '\n', to `f`. Write errors are left to the caller's ferror(f).
template <class AppendLine>
void WriteLines(FILE* f, int64_t n, AppendLine append) {
  std::string buf;
  for (int64_t i = 0; i < n; ++i) {
    append(i, &buf);
    buf.push_back('\n');
    if (buf.size() >= (1 << 16)) {
      fwrite(buf.data(), 1, buf.size(), f);
      buf.clear();
    }
  }
  fwrite(buf.data(), 1, buf.size(), f);
}

}  // namespace cairn
