#include "bench/corpus.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "engine/base/file_util.h"

namespace cairn {

namespace {

// Writes `path` through `path.tmp` with fill(FILE*) producing the content.
template <typename Fill>
Status WriteOnce(const std::string& path, Fill&& fill) {
  if (PathExists(path)) return Status::OK();
  std::string tmp = path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status::FromErrno("cannot create", tmp, errno);
  fill(f);
  bool write_failed = ferror(f) != 0;
  if (fclose(f) != 0 || write_failed) {
    RemoveAll(tmp).IgnoreError();  // scratch space: best effort
    return Status::FromErrno("cannot write", tmp, errno);
  }
  return Rename(tmp, path);
}

uint64_t FileBytes(const std::string& path) { return DiskUsage(path); }

}  // namespace

Status EnsureCorpus(const std::string& dir, const GeneratorParams& p, std::string* path, uint64_t* bytes) {
  CAIRN_RETURN_IF_ERROR(CreateDirs(dir));
  char name[160];
  snprintf(name, sizeof name, "/corpus-%" PRId64 "w-%" PRId64 "pl-v%" PRId64 "-zipf%.2f-seed%" PRId64 ".txt", p.words,
           p.words_per_line, p.vocabulary, p.zipf, p.seed);
  *path = dir + name;
  if (!PathExists(*path)) fprintf(stderr, "cairn-bench: generating %s\n", path->c_str());
  CAIRN_RETURN_IF_ERROR(WriteOnce(*path, [&](FILE* f) { WordGenerator(p).WriteText(f); }));
  *bytes = FileBytes(*path);
  return Status::OK();
}

Status EnsureDistinctWords(const std::string& dir, int64_t keys, std::string* path) {
  CAIRN_RETURN_IF_ERROR(CreateDirs(dir));
  *path = dir + "/distinct-" + std::to_string(keys) + ".txt";
  return WriteOnce(*path, [&](FILE* f) {
    std::string line;
    for (int64_t r = 0; r < keys; ++r) {
      if (!line.empty()) line.push_back(' ');
      line += WordForRank(r);
      if (r % 10 == 9 || r + 1 == keys) {
        line.push_back('\n');
        fwrite(line.data(), 1, line.size(), f);
        line.clear();
      }
    }
  });
}

}  // namespace cairn
