#include "jobs/cli/verify.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include "engine/base/file_util.h"
#include "engine/checkpoint/checkpoint_messages.h"
#include "jobs/cli/state_dump.h"
#include "state/checkpoint_format.h"
#include "state/checkpoint_layout.h"
#include "state/checkpoint_metadata.h"
#include "state/operator_list_state.h"
#include "state/shared_files.h"
#include "state/state_backend.h"

namespace cairn {

namespace {

std::string BaseName(const std::string& p) { return std::filesystem::path(p).filename().string(); }
std::string DirName(const std::string& p) {
  std::string d = std::filesystem::path(p).parent_path().string();
  return d.empty() ? "." : d;
}

struct Problem {
  std::string file;
  std::string what;
};

struct Verdict {
  std::string path;
  bool has_metadata = true;  // false: PATH holds no _metadata (not a checkpoint)
  CheckpointMetadata metadata;
  bool metadata_ok = false;
  std::vector<Problem> problems;
};

void VerifyFile(const std::string& file, std::vector<Problem>* problems, std::string* bytes) {
  Status s = ReadChecksummedFile(file, bytes);
  if (!s.ok()) problems->push_back({file, s.message()});
}

Verdict VerifyCheckpoint(const std::string& dir, const StateBackend& backend) {
  Verdict v;
  v.path = dir;
  const std::string meta = MetadataPath(dir);
  if (!PathExists(meta)) {
    v.has_metadata = false;
    return v;
  }
  Status s = ReadMetadata(dir, &v.metadata);
  if (!s.ok()) {
    v.problems.push_back({meta, s.message()});
    return v;
  }
  CheckpointId dir_id;
  if (ParseCheckpointDirName(BaseName(dir), &dir_id) && dir_id != v.metadata.id)
    v.problems.push_back({meta, meta + ": describes checkpoint " + std::to_string(v.metadata.id) +
                                    ", but its directory is " + BaseName(dir)});
  v.metadata_ok = true;
  std::map<std::string, std::vector<KeyGroupRange>> key_groups;  // keyed op -> its subtasks' ranges
  for (const SubtaskStateHandle& h : v.metadata.subtasks) {
    // Operator state is only checked by its checksum; list and channel state are decoded too.
    // State kept inline in _metadata is covered by _metadata's checksum, and a problem with it
    // is reported against _metadata.
    auto check = [&](const std::string& file, const std::string& in_line, const char* what, const char* fails,
                     const std::function<bool(const std::string&)>& parses) {
      if (file.empty() && in_line.empty()) return;
      const std::string f = SubtaskStatePath(dir, file);
      std::string bytes = in_line;
      const size_t before = v.problems.size();
      if (!file.empty()) VerifyFile(f, &v.problems, &bytes);
      if (v.problems.size() != before || !parses || parses(bytes)) return;
      v.problems.push_back({f, SubtaskStateDamaged(dir, h, file, what, fails)});
    };
    check(h.operator_state_file, h.operator_state_inline, "operator state", "", nullptr);
    check(h.list_state_file, h.list_state_inline, "list state", "does not parse", [](const std::string& b) {
      std::vector<ListStateBytes> states;
      return DecodeListStates(b, &states);
    });
    check(h.channel_state_file, h.channel_state_inline, "channel state records", "do not parse", [](const std::string& b) {
      std::vector<RestoredChannel> channels;
      return DecodeChannelState(b, &channels);
    });
    if (!h.keyed_dir.empty()) {
      key_groups[h.operator_id].push_back(h.key_groups);
      const std::string kd = InCheckpoint(dir, h.keyed_dir);
      if (!IsDirectory(kd)) {
        v.problems.push_back({kd, "keyed state " + kd + " is missing"});
        continue;
      }
      std::vector<SharedFileRef> refs;
      bool incremental = false;
      Status rs = ReadSharedList(kd, &refs, &incremental);
      if (!rs.ok()) {
        v.problems.push_back({kd + "/" + kSharedListFileName, rs.message()});
        continue;
      }
      bool missing = false;
      for (const SharedFileRef& r : refs)
        if (!PathExists(r.path)) {
          v.problems.push_back({r.path, "keyed state snapshot " + kd + " references the missing shared file " + r.path});
          missing = true;
        }
      if (missing) continue;
      Status ks = backend.ReadStates(kd, [](const StateEntry&) {});
      if (!ks.ok()) v.problems.push_back({kd, ks.message()});
    }
  }
  // Each keyed operator's key groups: [0, max_parallelism) covered exactly once.
  for (auto& [op, ranges] : key_groups) {
    std::sort(ranges.begin(), ranges.end(),
              [](const KeyGroupRange& a, const KeyGroupRange& b) { return a.first < b.first; });
    uint32_t next = 0;
    std::string why;
    for (const KeyGroupRange& r : ranges) {
      if (r.first > r.last) continue;  // an empty range (more subtasks than key groups)
      if (r.first > next) why += " key groups " + std::to_string(next) + "-" + std::to_string(r.first - 1) + " are not covered;";
      if (r.first < next) why += " key groups from " + std::to_string(r.first) + " are covered twice;";
      next = std::max(next, r.last + 1);
    }
    if (next < v.metadata.max_parallelism)
      why += " key groups " + std::to_string(next) + "-" + std::to_string(v.metadata.max_parallelism - 1) + " are not covered;";
    if (!why.empty()) {
      why.pop_back();
      v.problems.push_back({meta, meta + ": operator '" + op + "':" + why});
    }
  }
  return v;
}

}  // namespace

int CmdVerify(const std::vector<std::string>& args) {
  std::string path;
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a.size() > 1 && a[0] == '-') {
      fprintf(stderr, "cairn: unknown flag '%s'\nusage: cairn verify PATH [--json]\n", a.c_str());
      return 2;
    } else if (path.empty()) {
      path = a;
    } else {
      fprintf(stderr, "cairn: unexpected argument '%s'\nusage: cairn verify PATH [--json]\n", a.c_str());
      return 2;
    }
  }
  if (path.empty()) {
    fprintf(stderr, "cairn: missing PATH\nusage: cairn verify PATH [--json]\n");
    return 2;
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (!PathExists(path)) {
    fprintf(stderr, "cairn: error: %s: no such file or directory\n", path.c_str());
    return 2;
  }
  std::string dir = path;
  if (!IsDirectory(path)) {
    if (BaseName(path) != kMetadataFileName) {
      fprintf(stderr, "cairn: error: %s: not a checkpoint (name a chk-<id> or savepoint directory, its %s, or a checkpoint directory)\n",
              path.c_str(), kMetadataFileName);
      return 2;
    }
    dir = DirName(path);
  }
  // Either backend reads every checkpoint (they share the format).
  const std::unique_ptr<StateBackend> backend = NewStateBackend(StateBackendOptions{});
  std::vector<Verdict> verdicts;
  Verdict one = VerifyCheckpoint(dir, *backend);
  if (one.has_metadata) {
    verdicts.push_back(std::move(one));
  } else {
    std::vector<std::string> names;
    Status s = ListDir(dir, &names);
    if (!s.ok()) {
      fprintf(stderr, "cairn: error: %s\n", s.message().c_str());
      return 2;
    }
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      CheckpointId x, y;
      if (ParseCheckpointDirName(a, &x) && ParseCheckpointDirName(b, &y)) return x < y;
      return a < b;
    });
    for (const std::string& n : names) {
      CheckpointId id;
      const bool chk = ParseCheckpointDirName(n, &id), sp = n.rfind("savepoint-", 0) == 0;
      if (!chk && !sp) continue;
      Verdict v = VerifyCheckpoint(dir + "/" + n, *backend);
      if (!v.has_metadata) {
        fprintf(stderr, "cairn: note: %s/%s has no %s (incomplete: never restored; a job's start removes it)\n",
                dir.c_str(), n.c_str(), kMetadataFileName);
        continue;
      }
      verdicts.push_back(std::move(v));
    }
    if (verdicts.empty()) {
      fprintf(stderr, "cairn: error: %s: not a checkpoint, and holds no completed checkpoint or savepoint\n", path.c_str());
      return 2;
    }
  }
  bool sound = true;
  for (const Verdict& v : verdicts) {
    sound &= v.problems.empty();
    if (json) {
      std::string line = "{\"path\":" + JsonQuote(v.path);
      if (v.metadata_ok)
        line += ",\"id\":" + std::to_string(v.metadata.id) + ",\"kind\":" + JsonQuote(v.metadata.kind) +
                ",\"subtasks\":" + std::to_string(v.metadata.subtasks.size());
      line += ",\"sound\":" + std::string(v.problems.empty() ? "true" : "false") + ",\"problems\":[";
      for (size_t i = 0; i < v.problems.size(); ++i)
        line += std::string(i ? "," : "") + "{\"file\":" + JsonQuote(v.problems[i].file) + ",\"problem\":" +
                JsonQuote(v.problems[i].what) + "}";
      printf("%s]}\n", line.c_str());
    } else {
      for (const Problem& p : v.problems) printf("%s\n", p.what.c_str());
      if (v.problems.empty()) {
        printf("%s: sound (%s %" PRIu64 ", %zu subtasks)\n", v.path.c_str(), v.metadata.kind.c_str(), v.metadata.id,
               v.metadata.subtasks.size());
      } else {
        printf("%s: damaged (%zu problem%s)\n", v.path.c_str(), v.problems.size(), v.problems.size() == 1 ? "" : "s");
      }
    }
  }
  return sound ? 0 : 1;
}

}  // namespace cairn
