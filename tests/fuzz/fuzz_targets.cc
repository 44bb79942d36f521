#include "tests/fuzz/fuzz_targets.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/base/file_util.h"
#include "jobs/job_loader.h"
#include "state/checkpoint_metadata.h"

namespace cairn::fuzz {

void JobLoaderInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  size_t pos = 0;
  while (text.compare(pos, 6, "--set ") == 0) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;
    overrides.push_back(text.substr(pos + 6, nl - pos - 6));
    pos = nl + 1;
  }
  JobSpec spec;
  Status s = LoadJobFromString(text.substr(pos), "fuzz.yaml", overrides, &spec);
  if (!s.ok() && s.message().empty()) abort();  // every rejection says why
}

namespace {

void CheckRoundTrip(const std::string& bytes) {
  CheckpointMetadata m;
  Status s = DecodeMetadata("fuzz/_metadata", bytes, &m);
  if (!s.ok()) {
    if (!s.IsCorruption() || s.message().rfind("fuzz/_metadata: ", 0) != 0) abort();  // names the file
    return;
  }
  const std::string again = EncodeMetadata(m);
  CheckpointMetadata m2;
  if (!DecodeMetadata("fuzz/_metadata", again, &m2).ok()) abort();
  if (EncodeMetadata(m2) != again) abort();
}

}  // namespace

void CheckpointMetadataInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  CheckRoundTrip(bytes);
  // The same body with a valid checksum line.
  std::string body = bytes;
  size_t crc_line = body.rfind("\ncrc32c ");
  if (crc_line != std::string::npos) body.resize(crc_line + 1);
  if (!body.empty() && body.back() != '\n') body += '\n';
  char crc[32];
  std::snprintf(crc, sizeof crc, "crc32c %08" PRIx32 "\n", Crc32c(body));
  CheckRoundTrip(body + crc);
}

}  // namespace cairn::fuzz
