#include "operators/click_generator.h"

#include <charconv>

#include "engine/dataflow/record_codec.h"
#include "operators/jsonl_lines.h"

namespace cairn {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from 53 bits.
double Unit(uint64_t h) { return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0); }

// A skewed rank in [0, n): small ranks are much more likely.
int64_t SkewedRank(uint64_t h, int64_t n) {
  double r = Unit(h);
  int64_t k = static_cast<int64_t>(static_cast<double>(n) * r * r * r);
  return k < n ? k : n - 1;
}

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

}  // namespace

void ClickGenerator::Event(int64_t n, std::string* out) const {
  const uint64_t base = SplitMix(static_cast<uint64_t>(p_.seed) * 0x100000001b3ull ^ static_cast<uint64_t>(n));
  const uint64_t h1 = SplitMix(base + 1), h2 = SplitMix(base + 2), h3 = SplitMix(base + 3), h4 = SplitMix(base + 4);
  const int64_t user = SkewedRank(h1, p_.users < 1 ? 1 : p_.users);
  const int64_t url = SkewedRank(h2, p_.urls < 1 ? 1 : p_.urls);
  out->append("{\"user\":\"u");
  AppendInt(user, out);
  out->append("\",\"url\":\"");
  // The url's kind depends on the url only, so one url is always the same path.
  switch (SplitMix(static_cast<uint64_t>(url) ^ 0x75726cull) % 6) {
    case 0: case 1: case 2: out->append("/api/items/"); break;
    case 3: out->append("/api/users/"); break;
    case 4: out->append("/products/"); break;
    default: out->append("/blog/post-"); break;
  }
  AppendInt(url, out);
  out->append("\",\"bytes\":");
  // Mostly 200..800 bytes; one in four up to ~50 KB.
  const double r = Unit(h3);
  const int64_t bytes = (h3 & 7) < 6 ? 200 + static_cast<int64_t>(r * 600) : 200 + static_cast<int64_t>(r * r * 50000);
  AppendInt(bytes, out);
  out->append(",\"ts\":");
  const int64_t ts = p_.start_ms + n * 5 + static_cast<int64_t>(h4 % 5);
  if (p_.ts_ms) {
    AppendInt(ts, out);
  } else {
    out->push_back('"');
    AppendTimestamp(ts, out);
    out->push_back('"');
  }
  out->push_back('}');
}

void ClickGenerator::WriteJsonl(FILE* f) const {
  WriteLines(f, p_.events, [this](int64_t n, std::string* buf) { Event(n, buf); });
}

}  // namespace cairn
