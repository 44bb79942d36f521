// The click generator behind `cairn generate --format clicks` (and jobs/clicks.yaml's input):
// deterministic, seeded jsonl click events, one JSON object per line,
//
//   {"user":"u123","url":"/api/items/42","bytes":1834,"ts":"2026-12-01T00:00:00.037Z"}
//
// with skew: a few users and urls account for most clicks (the rank of each is drawn as
// n * r^3 for r uniform in [0, 1)), about two in three urls are under /api/ and the rest are
// pages, `bytes` is mostly a few hundred with a long tail past 1000, and `ts` rises by a few ms
// per event from 2026-12-01T00:00:00Z (as an ISO-8601 string, or integer ms with ts_ms).
// Event n depends only on the parameters and n.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace cairn {

struct ClickParams {
  int64_t events = 1000000;
  int64_t users = 10000;
  int64_t urls = 1000;
  int64_t seed = 42;
  bool ts_ms = false;                      // ts as integer ms rather than ISO-8601
  int64_t start_ms = 1796083200000;        // 2026-12-01T00:00:00Z
};

class ClickGenerator {
 public:
  explicit ClickGenerator(const ClickParams& p) : p_(p) {}
  // Appends event `n` as one JSON object (without newline) to `out`.
  void Event(int64_t n, std::string* out) const;
  // Writes every event, each followed by '\n', to `f` (the caller checks ferror/fclose).
  void WriteJsonl(FILE* f) const;

 private:
  ClickParams p_;
};

}  // namespace cairn
