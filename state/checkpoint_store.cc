#include "state/checkpoint_store.h"

#include "state/shared_files.h"

#include <algorithm>
#include <string_view>

#include "engine/base/crash_points.h"
#include "engine/base/file_util.h"
#include "state/checkpoint_format.h"
#include "state/checkpoint_layout.h"

namespace cairn {

namespace {


std::string StripTrailingSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string BaseName(const std::string& p) {
  size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string DirName(const std::string& p) {
  size_t slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

// Reads the metadata of `chk_dir` and, when the directory is named chk-<id>, checks that the
// metadata is that of checkpoint <id> (a copied or renamed directory must not pass for another).
Status ReadCheckpoint(const std::string& chk_dir, CompletedCheckpoint* out) {
  CheckpointMetadata m;
  CAIRN_RETURN_IF_ERROR(ReadMetadata(chk_dir, &m));
  CheckpointId dir_id;
  if (ParseCheckpointDirName(BaseName(chk_dir), &dir_id) && dir_id != m.id) {
    return Status::Corruption(MetadataPath(chk_dir) + ": damaged (it describes checkpoint " +
                              std::to_string(m.id) + ", but its directory is " + BaseName(chk_dir) + ")");
  }
  out->path = chk_dir;
  out->metadata = std::move(m);
  return Status::OK();
}

// Whether chk_dir has no _metadata file. Only a definite "no such file" counts: a file that
// cannot be read for another reason (permissions, I/O) is an error, never a reason to delete.
Status MetadataMissing(const std::string& chk_dir, bool* missing) {
  std::string bytes;
  Status s = ReadFile(MetadataPath(chk_dir), &bytes);
  *missing = s.IsNotFound();
  return *missing ? Status::OK() : s;
}

// Removes a completed checkpoint so that a crash half-way leaves an incomplete one (which
// RemoveIncomplete cleans up), never a complete-looking one with missing state: the commit
// point _metadata goes first.
Status RemoveCheckpoint(const std::string& chk_dir) {
  CAIRN_RETURN_IF_ERROR(RemoveAll(MetadataPath(chk_dir)));
  CAIRN_RETURN_IF_ERROR(FsyncDir(chk_dir));
  CAIRN_CRASH_POINT("retention.cleanup");
  return RemoveAll(chk_dir);
}

}  // namespace

std::string CheckpointStore::CheckpointPath(CheckpointId id) const {
  return cairn::CheckpointPath(dir_, id);
}

Status CheckpointStore::ReadSuperseded(std::vector<SupersededRange>* out) const {
  out->clear();
  const std::string path = SupersededPath(dir_);
  std::string text;
  Status s = ReadFile(path, &text);
  if (s.IsNotFound()) return Status::OK();
  CAIRN_RETURN_IF_ERROR(s);
  size_t line_no = 0;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) return Status::Corruption(path + ": damaged (truncated last line)");
    std::string_view line(text.data() + start, nl - start);
    start = nl + 1;
    ++line_no;
    size_t sp1 = line.find(' ');
    size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    SupersededRange r;
    if (sp2 == std::string_view::npos ||
        !ParseCheckpointDirName(std::string(kCheckpointDirPrefix) + std::string(line.substr(0, sp1)), &r.first) ||
        !ParseCheckpointDirName(std::string(kCheckpointDirPrefix) + std::string(line.substr(sp1 + 1, sp2 - sp1 - 1)),
                                &r.last) ||
        r.first > r.last)
      return Status::Corruption(path + ": damaged (line " + std::to_string(line_no) + ")");
    r.reason = std::string(line.substr(sp2 + 1));
    out->push_back(std::move(r));
  }
  return Status::OK();
}

Status CheckpointStore::IsSuperseded(CheckpointId id, bool* superseded, std::string* reason) const {
  std::vector<SupersededRange> ranges;
  CAIRN_RETURN_IF_ERROR(ReadSuperseded(&ranges));
  *superseded = false;
  for (const SupersededRange& r : ranges)
    if (id >= r.first && id <= r.last) {
      *superseded = true;
      if (reason != nullptr) *reason = r.reason;
    }
  return Status::OK();
}

Status CheckpointStore::Supersede(CheckpointId first, CheckpointId last, const std::string& reason) const {
  if (first > last) return Status::OK();
  const std::string path = SupersededPath(dir_);
  std::vector<SupersededRange> ranges;
  CAIRN_RETURN_IF_ERROR(ReadSuperseded(&ranges));
  std::string text;
  Status s = ReadFile(path, &text);
  if (!s.ok() && !s.IsNotFound()) return s;
  std::string line = reason;
  for (char& c : line)
    if (c == '\n') c = ' ';
  text += std::to_string(first) + " " + std::to_string(last) + " " + line + "\n";
  return WriteFileAtomically(path, text);
}

namespace {

std::string FailureLine(const FailedCheckpoint& f) {
  std::string reason = f.reason;
  for (char& c : reason)
    if (c == '\n' || c == '\t') c = ' ';
  return std::to_string(f.id) + "\t" + f.kind + "\t" + std::to_string(f.trigger_time_ms) + "\t" +
         std::to_string(f.duration_ms) + "\t" + reason + "\n";
}

bool ParseFailureLine(std::string_view line, FailedCheckpoint* f) {
  std::string_view parts[5];
  for (int i = 0; i < 4; ++i) {
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos) return false;
    parts[i] = line.substr(0, tab);
    line.remove_prefix(tab + 1);
  }
  parts[4] = line;
  auto num = [](std::string_view v, int64_t* out) {
    if (v.empty() || v.size() > 19) return false;
    int64_t n = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return false;
      n = n * 10 + (c - '0');
    }
    *out = n;
    return true;
  };
  int64_t id;
  if (!num(parts[0], &id) || id == 0 || !num(parts[2], &f->trigger_time_ms) || !num(parts[3], &f->duration_ms) ||
      (parts[1] != "checkpoint" && parts[1] != "savepoint"))
    return false;
  f->id = static_cast<CheckpointId>(id);
  f->kind = std::string(parts[1]);
  f->reason = std::string(parts[4]);
  return true;
}

}  // namespace

Status CheckpointStore::RecordFailure(const FailedCheckpoint& f) const {
  garbage_possible_.store(true);  // the failed checkpoint's shared files, if it uploaded any
  const std::string path = FailedPath(dir_);
  std::string text;
  Status s = ReadFile(path, &text);
  if (!s.ok() && !s.IsNotFound()) return s;
  // Keep the newest kFailedHistory - 1 lines and the new one.
  size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), pos = 0;
  for (; lines >= kFailedHistory; --lines) pos = text.find('\n', pos) + 1;
  return WriteFileAtomically(path, text.substr(pos) + FailureLine(f));
}

Status CheckpointStore::ListFailed(std::vector<FailedCheckpoint>* out) const {
  out->clear();
  std::string text;
  Status s = ReadFile(FailedPath(dir_), &text);
  if (s.IsNotFound()) return Status::OK();
  CAIRN_RETURN_IF_ERROR(s);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a torn last line
    FailedCheckpoint f;
    if (ParseFailureLine(std::string_view(text).substr(pos, nl - pos), &f)) out->push_back(std::move(f));
    pos = nl + 1;
  }
  return Status::OK();
}

Status CheckpointStore::ListCompleted(std::vector<CompletedCheckpoint>* out, std::vector<Status>* skipped,
                                      std::vector<Status>* superseded) const {
  out->clear();
  std::vector<std::string> names;
  Status s = ListDir(dir_, &names);
  if (s.IsNotFound()) return Status::OK();
  CAIRN_RETURN_IF_ERROR(s);
  std::vector<SupersededRange> ranges;
  CAIRN_RETURN_IF_ERROR(ReadSuperseded(&ranges));
  std::vector<CompletedCheckpoint> result;
  for (const std::string& name : names) {
    CheckpointId id;
    if (!ParseCheckpointDirName(name, &id)) continue;
    const std::string path = dir_ + "/" + name;
    if (!IsDirectory(path)) continue;
    const SupersededRange* sup = nullptr;
    for (const SupersededRange& r : ranges)
      if (id >= r.first && id <= r.last) sup = &r;
    if (sup != nullptr) {
      bool missing = false;
      CAIRN_RETURN_IF_ERROR(MetadataMissing(path, &missing));
      if (!missing && superseded != nullptr)
        superseded->push_back(Status::InvalidArgument(path + ": superseded (" + sup->reason + ")"));
      continue;
    }
    CompletedCheckpoint c;
    s = ReadCheckpoint(path, &c);
    if (s.IsNotFound()) continue;  // incomplete: _metadata was never committed
    if (s.IsCorruption()) {
      if (skipped != nullptr) skipped->push_back(std::move(s));
      continue;
    }
    CAIRN_RETURN_IF_ERROR(s);  // the file system failed: do not guess which checkpoint is newest
    result.push_back(std::move(c));
  }
  std::sort(result.begin(), result.end(),
            [](const CompletedCheckpoint& a, const CompletedCheckpoint& b) { return a.metadata.id < b.metadata.id; });
  *out = std::move(result);
  return Status::OK();
}

Status CheckpointStore::Latest(CompletedCheckpoint* out) const {
  std::vector<CompletedCheckpoint> all;
  CAIRN_RETURN_IF_ERROR(ListCompleted(&all));
  if (all.empty()) return Status::NotFound("no completed checkpoint in " + dir_);
  *out = std::move(all.back());
  return Status::OK();
}

CheckpointId CheckpointStore::MaxId() const {
  std::vector<std::string> names;
  if (!ListDir(dir_, &names).ok()) return 0;
  CheckpointId max_id = 0;
  for (const std::string& name : names) {
    CheckpointId id;
    if (ParseCheckpointDirName(name, &id)) max_id = std::max(max_id, id);
  }
  std::vector<SupersededRange> ranges;
  if (ReadSuperseded(&ranges).ok())
    for (const SupersededRange& r : ranges) max_id = std::max(max_id, r.last);
  return max_id;
}

Status CheckpointStore::Resolve(const std::string& path, CompletedCheckpoint* out) {
  const std::string p = StripTrailingSlashes(path);
  if (p.empty() || !PathExists(p)) return Status::NotFound(path + ": no such file or directory");
  std::string chk_dir;
  if (IsDirectory(p)) {
    chk_dir = p;
  } else if (BaseName(p) == kMetadataFileName) {
    chk_dir = DirName(p);
  } else {
    return Status::InvalidArgument(path + ": not a checkpoint; name a chk-<id> directory or its " +
                                   kMetadataFileName + " file");
  }
  Status s = ReadCheckpoint(chk_dir, out);
  if (s.IsNotFound()) {
    return Status::NotFound(path + ": not a completed checkpoint (no " + kMetadataFileName +
                            " file); name a chk-<id> directory");
  }
  return s;
}

Status CheckpointStore::RemoveIncomplete() const {
  std::vector<std::string> names;
  Status s = ListDir(dir_, &names);
  if (s.IsNotFound()) return Status::OK();
  CAIRN_RETURN_IF_ERROR(s);
  bool removed = false;
  for (const std::string& name : names) {
    CheckpointId id;
    const std::string path = dir_ + "/" + name;
    if (name == kWorkDirName) {
      CAIRN_RETURN_IF_ERROR(RemoveAll(path));
      removed = true;
    } else if (ParseCheckpointDirName(name, &id) && IsDirectory(path)) {
      bool missing;
      CAIRN_RETURN_IF_ERROR(MetadataMissing(path, &missing));
      if (missing) {
        CAIRN_RETURN_IF_ERROR(RemoveAll(path));
        removed = true;
      }
    }
  }
  if (removed) CAIRN_RETURN_IF_ERROR(FsyncDir(dir_));
  // Shared files that no checkpoint left on disk references (a run killed between an upload
  // and its checkpoint's commit, or between a removal and the collection).
  return CollectSharedGarbage(dir_);
}

Status CheckpointStore::Retain(uint32_t retain, CheckpointId newest) const {
  if (retain == 0) return Status::InvalidArgument("checkpoint retention must keep at least 1 checkpoint");
  std::vector<SupersededRange> ranges;
  CAIRN_RETURN_IF_ERROR(ReadSuperseded(&ranges));
  std::vector<std::string> names;
  Status listed = ListDir(dir_, &names);
  if (listed.IsNotFound()) return Status::OK();  // no checkpoint to keep or remove
  CAIRN_RETURN_IF_ERROR(listed);
  // At most `retain` checkpoints of any kind and none superseded: nothing to remove, so no
  // _metadata needs reading (a job keeping many checkpoints would otherwise read every one of
  // them at every completion).
  const size_t dirs = static_cast<size_t>(std::count_if(names.begin(), names.end(), [newest](const std::string& n) {
    CheckpointId id;
    return ParseCheckpointDirName(n, &id) && id <= newest;
  }));
  bool removed = false;
  Status s;
  if (dirs > retain || !ranges.empty()) s = RemoveBeyond(retain, newest, ranges, names, &removed);
  if (removed) garbage_possible_.store(true);
  CAIRN_RETURN_IF_ERROR(s);
  if (removed) CAIRN_RETURN_IF_ERROR(FsyncDir(dir_));
  // Only now, with the older checkpoints gone, can their shared files go. Nothing loses its
  // last reference otherwise: new checkpoints only add references, and the files of a failed
  // one are collected after its failure was recorded (RecordFailure).
  if (!garbage_possible_.exchange(false)) return Status::OK();
  s = CollectSharedGarbage(dir_);
  if (!s.ok()) garbage_possible_.store(true);
  return s;
}

Status CheckpointStore::RemoveBeyond(uint32_t retain, CheckpointId newest, const std::vector<SupersededRange>& ranges,
                                     const std::vector<std::string>& names, bool* removed) const {
  std::vector<CompletedCheckpoint> all;
  CAIRN_RETURN_IF_ERROR(ListCompleted(&all));
  std::erase_if(all, [newest](const CompletedCheckpoint& c) { return c.metadata.id > newest; });
  if (!ranges.empty()) {
    for (const std::string& name : names) {
      CheckpointId id;
      if (!ParseCheckpointDirName(name, &id) || id > newest || !IsDirectory(dir_ + "/" + name)) continue;
      // Kept while fewer than `retain` completed checkpoints are newer than it.
      const size_t newer = static_cast<size_t>(std::count_if(
          all.begin(), all.end(), [id](const CompletedCheckpoint& c) { return c.metadata.id > id; }));
      if (newer < retain) continue;
      CompletedCheckpoint c;
      if (ReadCheckpoint(dir_ + "/" + name, &c).IsCorruption()) continue;  // damaged: left for a human
      for (const SupersededRange& r : ranges)
        if (id >= r.first && id <= r.last) {
          *removed = true;  // before the removal: one that fails half-way leaves garbage too
          CAIRN_RETURN_IF_ERROR(RemoveCheckpoint(dir_ + "/" + name));
          break;
        }
    }
  }
  if (all.size() > retain) {
    const size_t remove = all.size() - retain;
    for (size_t i = 0; i < remove; i++) {
      *removed = true;
      CAIRN_RETURN_IF_ERROR(RemoveCheckpoint(all[i].path));
    }
  }
  return Status::OK();
}

}  // namespace cairn
