#include "engine/base/storage_faults.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

namespace cairn {

namespace internal {

bool storage_faults_armed = false;
int durability_log_fd = -1;

void LogDurabilityEventSlow(const char* event, const std::string& path) {
  std::string line = std::string(event) + " " + path + "\n";
  ssize_t ignored = ::write(durability_log_fd, line.data(), line.size());
  (void)ignored;
}

namespace {

enum class FaultKind { kEnospc, kEio, kSlow };

struct FaultSpec {
  FaultKind kind = FaultKind::kEio;
  int64_t slow_ms = 0;
  std::string substring;
  uint64_t after = 0;
  uint64_t count = 1;  // max(): every matching write after the first `after`
};

FaultSpec g_spec;
std::atomic<uint64_t> g_matches{0};

bool ParseCount(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

Status InjectStorageFaultSlow(const std::string& path) {
  if (path.find(g_spec.substring) == std::string::npos) return Status::OK();
  uint64_t n = g_matches.fetch_add(1);  // 0-based index of this matching write
  if (n < g_spec.after || n - g_spec.after >= g_spec.count) return Status::OK();
  switch (g_spec.kind) {
    case FaultKind::kSlow:
      std::this_thread::sleep_for(std::chrono::milliseconds(g_spec.slow_ms));
      return Status::OK();
    case FaultKind::kEnospc:
      return Status::IOError("cannot write " + path + ": " + std::strerror(ENOSPC) + " (injected by CAIRN_STORAGE_FAULT)");
    case FaultKind::kEio:
      return Status::IOError("cannot write " + path + ": " + std::strerror(EIO) + " (injected by CAIRN_STORAGE_FAULT)");
  }
  return Status::OK();
}

}  // namespace internal

bool InitStorageFaults(std::string* error) {
  const char* log = std::getenv("CAIRN_DURABILITY_LOG");
  if (log != nullptr && *log != '\0' && internal::durability_log_fd < 0) {
    internal::durability_log_fd = ::open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (internal::durability_log_fd < 0) {
      *error = std::string("CAIRN_DURABILITY_LOG=") + log + ": cannot open: " + std::strerror(errno);
      return false;
    }
  }
  const char* v = std::getenv("CAIRN_STORAGE_FAULT");
  if (v == nullptr || *v == '\0') return true;
  const std::string text(v);
  auto fail = [&](const std::string& why) {
    *error = "CAIRN_STORAGE_FAULT=" + text + ": " + why +
             " (expected <enospc|eio|slow=MS>:<path-substring>:<after-n>[:<count>|all])";
    return false;
  };
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() != 3 && parts.size() != 4) return fail("wrong number of ':'-separated fields");
  internal::FaultSpec spec;
  const std::string& kind = parts[0];
  if (kind == "enospc") {
    spec.kind = internal::FaultKind::kEnospc;
  } else if (kind == "eio") {
    spec.kind = internal::FaultKind::kEio;
  } else if (kind.rfind("slow=", 0) == 0) {
    uint64_t ms = 0;
    if (!internal::ParseCount(kind.substr(5), &ms)) return fail("slow= needs a number of milliseconds");
    spec.kind = internal::FaultKind::kSlow;
    spec.slow_ms = static_cast<int64_t>(ms);
  } else {
    return fail("unknown kind '" + kind + "'");
  }
  if (parts[1].empty()) return fail("empty path substring");
  spec.substring = parts[1];
  if (!internal::ParseCount(parts[2], &spec.after)) return fail("after-n must be a number");
  if (parts.size() == 4) {
    if (parts[3] == "all") {
      spec.count = std::numeric_limits<uint64_t>::max();
    } else if (!internal::ParseCount(parts[3], &spec.count) || spec.count == 0) {
      return fail("count must be a positive number or 'all'");
    }
  }
  internal::g_spec = std::move(spec);
  internal::storage_faults_armed = true;
  return true;
}

}  // namespace cairn
