#include "state/checkpoint_layout.h"

#include <cstdint>

#include "state/checkpoint_format.h"

namespace cairn {

std::string LockPath(const std::string& dir) { return dir + "/" + kLockFileName; }
std::string SupersededPath(const std::string& dir) { return dir + "/" + kSupersededFileName; }
std::string FailedPath(const std::string& dir) { return dir + "/" + kFailedFileName; }
std::string WorkRoot(const std::string& dir) { return dir + "/" + kWorkDirName; }
std::string WorkDir(const std::string& dir, int64_t pid) { return WorkRoot(dir) + "/run-" + std::to_string(pid); }
std::string WorkingStatePath(const std::string& work_dir, const std::string& op, uint32_t subtask) {
  return work_dir + "/" + SubtaskStateRelPath(op, subtask);
}

std::string SharedDir(const std::string& dir) { return dir + "/" + kSharedDirName; }
std::string SharedLockPath(const std::string& dir) { return dir + "/" + kSharedLockFileName; }

std::string CheckpointDirName(CheckpointId id) { return kCheckpointDirPrefix + std::to_string(id); }
std::string CheckpointPath(const std::string& dir, CheckpointId id) { return dir + "/" + CheckpointDirName(id); }

bool ParseCheckpointDirName(std::string_view name, CheckpointId* id) {
  const std::string_view prefix = kCheckpointDirPrefix;
  if (name.substr(0, prefix.size()) != prefix) return false;
  std::string_view digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 20 || (digits.size() > 1 && digits[0] == '0')) return false;
  CheckpointId v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    CheckpointId d = static_cast<CheckpointId>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *id = v;
  return true;
}

std::string MetadataPath(const std::string& chk) { return chk + "/" + kMetadataFileName; }

std::string SubtaskStateRelPath(const std::string& op, uint32_t subtask) { return op + "-" + std::to_string(subtask); }
std::string KeyedStateRelPath(const std::string& op, uint32_t subtask) {
  return SubtaskStateRelPath(op, subtask) + "/" + kKeyedStateDirName;
}
std::string OperatorStateRelPath(const std::string& op, uint32_t subtask) {
  return SubtaskStateRelPath(op, subtask) + "/" + kOperatorStateFileName;
}

std::string ListStateRelPath(const std::string& op, uint32_t subtask) {
  return SubtaskStateRelPath(op, subtask) + "/" + kListStateFileName;
}
std::string ChannelStateRelPath(const std::string& op, uint32_t subtask) {
  return SubtaskStateRelPath(op, subtask) + "/" + kChannelStateFileName;
}
std::string InCheckpoint(const std::string& chk, const std::string& rel) { return chk + "/" + rel; }

}  // namespace cairn
