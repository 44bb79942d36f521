#include "state/savepoint.h"

#include <ctime>
#include <filesystem>

#include "engine/base/file_util.h"
#include "state/checkpoint_format.h"
#include "state/changelog_segment.h"
#include "state/checkpoint_layout.h"
#include "state/rocksdb_state_store.h"
#include "state/shared_files.h"

namespace cairn {

namespace fs = std::filesystem;

std::string SavepointDirName(CheckpointId id, int64_t trigger_time_ms) {
  std::time_t t = static_cast<std::time_t>(trigger_time_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return "savepoint-" + std::to_string(id) + "-" + buf;
}

namespace {

Status CopyFileSynced(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::IOError("cannot copy " + from + " to " + to + ": " + ec.message());
  return FsyncFile(to);
}

// True when the keyed snapshot `dir` (listing `refs`) is a changelog checkpoint's whose files
// are not a database by themselves: it lists changelog segments, or no database at all yet.
bool NeedsRewrite(const std::string& dir, const std::vector<SharedFileRef>& refs) {
  bool current = PathExists(dir + "/CURRENT");
  for (const SharedFileRef& r : refs) {
    if (IsChangelogSegmentName(r.name)) return true;
    current |= r.name == "CURRENT";
  }
  return !current;
}

// Copies the tree `from` into `to` (which exists), but not _metadata; a directory holding a
// SHARED list gets copies of the files it lists instead of the list, or, when those are a
// materialization and changelog segments, a full database with the segments applied, so that
// a savepoint's keyed snapshot is always a whole RocksDB database.
Status CopyTree(const std::string& from, const std::string& to) {
  if (PathExists(from + "/" + kSharedListFileName)) {
    std::vector<SharedFileRef> refs;
    bool incremental = false;
    CAIRN_RETURN_IF_ERROR(ReadSharedList(from, &refs, &incremental));
    if (NeedsRewrite(from, refs)) {
      CAIRN_RETURN_IF_ERROR(RemoveAll(to));
      CAIRN_RETURN_IF_ERROR(RocksDbStateStore::WriteFullSnapshot(from, to));
      return FsyncDir(fs::path(to).parent_path().string());
    }
  }
  std::vector<std::string> names;
  CAIRN_RETURN_IF_ERROR(ListDir(from, &names));
  bool has_shared = false;
  for (const std::string& name : names) {
    const std::string src = from + "/" + name, dst = to + "/" + name;
    if (name == kMetadataFileName) continue;
    if (name == kSharedListFileName) {
      has_shared = true;
      continue;
    }
    if (IsDirectory(src)) {
      CAIRN_RETURN_IF_ERROR(CreateDirs(dst));
      CAIRN_RETURN_IF_ERROR(CopyTree(src, dst));
    } else {
      CAIRN_RETURN_IF_ERROR(CopyFileSynced(src, dst));
    }
  }
  if (has_shared) {
    std::vector<SharedFileRef> refs;
    bool incremental = false;
    CAIRN_RETURN_IF_ERROR(ReadSharedList(from, &refs, &incremental));
    for (const SharedFileRef& r : refs) {
      if (!PathExists(r.path))
        return Status::Corruption("keyed state snapshot " + from + " references the missing shared file " + r.path);
      CAIRN_RETURN_IF_ERROR(CopyFileSynced(r.path, to + "/" + r.name));
    }
  }
  return FsyncDir(to);
}

}  // namespace

Status WriteSavepoint(const std::string& chk_dir, const CheckpointMetadata& m, const std::string& target_dir,
                      std::string* path) {
  CAIRN_RETURN_IF_ERROR(CreateDirs(target_dir));
  const std::string dir = target_dir + "/" + SavepointDirName(m.id, m.trigger_time_ms);
  if (PathExists(dir)) return Status::InvalidArgument("savepoint directory " + dir + " already exists");
  CAIRN_RETURN_IF_ERROR(CreateDirs(dir));
  CheckpointMetadata sm = m;
  sm.kind = "savepoint";
  Status s = CopyTree(chk_dir, dir);
  if (s.ok()) s = WriteMetadata(dir, sm);
  if (!s.ok()) {
    RemoveAll(dir).IgnoreError();
    return s.WithContext("savepoint " + dir);
  }
  *path = dir;
  return Status::OK();
}

}  // namespace cairn
