// file_sink: the exactly-once file sink, a two-phase commit driven by checkpoints (as Flink's
// FileSink does).
//
// Files, in the sink's `path`:
//   .part-<run>-<subtask>-<seq>.inprogress   being written, or closed but not yet committed
//   part-<run>-<subtask>-<seq>                committed: covered by a completed checkpoint
//   _superseded/part-...                      committed output set aside by a restore of an
//                                             older checkpoint or by `--fresh` (never deleted)
// <run> is chosen at a fresh start and kept across restores. At a checkpoint's synchronous
// snapshot the current file is closed and becomes pending for that checkpoint; the async part
// fsyncs every pending file (also those of earlier checkpoints that failed before their own
// fsync ran); NotifyCheckpointComplete renames the pending files of completed checkpoints,
// never over an existing file (RENAME_NOREPLACE). A failed write or rename is returned by the
// call that met it; a failed write leaves the unwritten bytes buffered, so that a snapshot
// that failed on one can be retried by the next. The operator state lists the pending files and
// the next sequence number, so a restore commits what the restored checkpoint owes, deletes
// in-progress files written after it, and sets aside committed files written after it (output
// of a newer checkpoint that the restore abandons, which the job now produces again). Sequence
// numbers are never reused: a restore continues above every committed or set-aside file.
//
// Formats (engine/format/record_writer.h): `lines` (fields joined by TAB, the default), `csv`
// (with a header record at the start of every part file when `header`), `jsonl`. The format
// only decides the bytes buffered by Process; the files and their commits are the same.
//
// Rescaling (split list state, docs/state.md): the items are the old subtasks' writers (run,
// subtask, next sequence number, pending files). A subtask restored at another parallelism gets
// a writer list: it restores each writer as that old subtask would have (commit what it owes,
// delete what it wrote after the checkpoint), then writes under a new run id. Every run id of
// the lineage is kept in the union list state "runs" (state/operator_list_state.h), so that a
// restore of a checkpoint taken before a rescale also sets aside the output of the writers the
// rescale started (runs the checkpoint does not know); subtask 0 does it. Checkpoints taken
// before this state existed have no "runs", and such writers' output stays.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>

#include "engine/base/coding.h"
#include "engine/base/crash_points.h"
#include "engine/base/file_util.h"
#include "engine/base/storage_faults.h"
#include "engine/dataflow/record_codec.h"
#include "engine/format/record_writer.h"
#include "jobs/registry.h"
#include "operators/text_params.h"
#include "state/operator_list_state.h"

namespace cairn {
namespace {

// The state of a sink subtask restored at another parallelism: magic, count, then per old
// writer (length-prefixed): run, old subtask, and the rest of that subtask's own state.
constexpr uint64_t kWriterListMagic = 0x3143535277736b73ull;

bool IsWriterList(std::string_view bytes) {
  uint64_t magic = 0;
  return bytes.size() >= 16 && Decoder(bytes).GetFixed64(&magic) && magic == kWriterListMagic;
}

bool DecodeWriterList(std::string_view bytes, std::vector<std::string>* items) {
  Decoder d(bytes);
  uint64_t magic, n;
  if (!d.GetFixed64(&magic) || magic != kWriterListMagic || !d.GetFixed64(&n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    std::string item;
    if (!d.GetLengthPrefixed(&item)) return false;
    items->push_back(std::move(item));
  }
  return d.done();
}

// Writer item <-> (old subtask, that subtask's own state bytes).
std::string EncodeWriter(uint32_t subtask, std::string_view state) {
  std::string item;
  PutFixed64(&item, subtask);
  item.append(state.data(), state.size());
  return item;
}

bool DecodeWriter(std::string_view item, uint32_t* subtask, std::string* state) {
  Decoder d(item);
  uint64_t sub;
  if (!d.GetFixed64(&sub) || sub > UINT32_MAX) return false;
  *subtask = static_cast<uint32_t>(sub);
  state->assign(item.substr(8));
  return true;
}

// One writer's own state, for `cairn state dump`: "run=R next_seq=N pending=SEQ@CHECKPOINT,..."
// (the part files written but not yet committed, each with the checkpoint that commits it).
bool DescribeWriterState(std::string_view state, std::string* text) {
  Decoder d(state);
  std::string run;
  uint64_t next_seq, npending;
  if (!d.GetLengthPrefixed(&run) || !d.GetFixed64(&next_seq) || !d.GetFixed64(&npending)) return false;
  *text = "run=" + run + " next_seq=" + std::to_string(next_seq) + " pending=";
  for (uint64_t i = 0; i < npending; ++i) {
    uint64_t seq, chk;
    if (!d.GetFixed64(&seq) || !d.GetFixed64(&chk)) return false;
    *text += (i ? "," : "") + std::to_string(seq) + "@" + std::to_string(chk);
  }
  if (npending == 0) *text += "none";
  return d.done();
}

// The subtask's state, or the writers a rescale gave it: "writer S: <its state>; ...".
bool DescribeFileSinkState(std::string_view bytes, std::string* text) {
  if (!IsWriterList(bytes)) return DescribeWriterState(bytes, text);
  std::vector<std::string> items;
  if (!DecodeWriterList(bytes, &items)) return false;
  text->clear();
  for (const std::string& item : items) {
    uint32_t subtask;
    std::string state, one;
    if (!DecodeWriter(item, &subtask, &state) || !DescribeWriterState(state, &one)) return false;
    *text += (text->empty() ? "" : "; ") + std::string("writer ") + std::to_string(subtask) + ": " + one;
  }
  return true;
}

constexpr const char* kSupersededDir = "_superseded";
// The union list state of every run id the sink's lineage has written under.
constexpr const char* kRunsState = "runs";

class FileSink final : public Operator {
 public:
  explicit FileSink(const OperatorConfig& c) : dir_(c.GetString("path")) {
    (void)ParseTextFormat(c.GetString("format"), &writer_.format);
    writer_.delimiter = c.GetString("delimiter").empty() ? ',' : c.GetString("delimiter")[0];
    header_ = writer_.format == TextFormat::kCsv && c.GetBool("header");
  }
  explicit FileSink(std::string dir) : dir_(std::move(dir)) {}
  ~FileSink() override {
    if (fd_ >= 0) close(fd_);
  }

  Status Open(OperatorContext& ctx) override {
    id_ = ctx.operator_id;
    subtask_ = ctx.subtask;
    CAIRN_RETURN_IF_ERROR(CreateDirs(dir_).WithContext("operator " + id_));
    // Every run id the restored checkpoint's lineage has written under (union list state: each
    // subtask gets them all); empty on a fresh start and for checkpoints older than this state.
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetUnionListState(kRunsState, &runs_));
    std::set<std::string> known(runs_->items().begin(), runs_->items().end());
    if (!ctx.restored_operator_state) {
      CAIRN_RETURN_IF_ERROR(StartRun());
    } else if (IsWriterList(*ctx.restored_operator_state)) {
      CAIRN_RETURN_IF_ERROR(OpenRescaled(ctx));
    } else {
      CAIRN_RETURN_IF_ERROR(RestoreWriter(*ctx.restored_operator_state, *ctx.restored_checkpoint));
    }
    // Runs the checkpoint does not know were started after it (by a restore at another
    // parallelism that a restore of this older checkpoint now abandons): subtask 0 sets their
    // committed output aside and deletes their uncommitted files, as each writer does for its own.
    if (ctx.restored_operator_state && subtask_ == 0 && !known.empty())
      CAIRN_RETURN_IF_ERROR(SetAsideUnknownRuns(known, *ctx.restored_checkpoint));
    known.insert(run_);
    runs_->Update(std::vector<std::string>(known.begin(), known.end()));
    return Status::OK();
  }


  Status Process(int, const RecordBatch& in, RecordBatch*) override {
    if (in.empty()) return Status::OK();
    // A new part file starts with the csv header.
    if (header_ && fd_ < 0 && buf_.empty()) AppendCsvHeader(*in.schema(), writer_.delimiter, &buf_);
    AppendRecords(writer_, in, &scratch_, &buf_);
    if (buf_.size() >= kFlushBytes) return Flush(/*start_writeback=*/true);
    return Status::OK();
  }

  Status SnapshotState(CheckpointId id, OperatorSnapshot* snap) override {
    if (fd_ >= 0 || !buf_.empty()) {
      CAIRN_RETURN_IF_ERROR(Flush());
      close(fd_);
      fd_ = -1;
      pending_.push_back({next_seq_, id});
      ++next_seq_;
    }
    PutLengthPrefixed(&snap->operator_state, run_);
    PutFixed64(&snap->operator_state, next_seq_);
    PutFixed64(&snap->operator_state, pending_.size());
    for (const Pending& p : pending_) {
      PutFixed64(&snap->operator_state, p.seq);
      PutFixed64(&snap->operator_state, p.checkpoint);
    }
    // Every pending file, not just the one closed now: an earlier checkpoint may have failed
    // before its async part ran (or its fsync failed), and this checkpoint commits its files.
    // With concurrent checkpoints an earlier one may complete and commit a file before this
    // async part runs: then the committed file is fsynced (its checkpoint's async part did it
    // already; this is cheap).
    std::vector<std::pair<std::string, std::string>> to_sync;
    for (const Pending& p : pending_) to_sync.emplace_back(InProgressPath(p.seq), CommittedPath(p.seq));
    if (!to_sync.empty()) {
      std::string dir = dir_;
      snap->async_part = [to_sync = std::move(to_sync), dir]() -> Status {
        for (const auto& [in_progress, committed] : to_sync) {
          CAIRN_RETURN_IF_ERROR(InjectStorageFault(in_progress));
          Status s = FsyncFile(in_progress);
          if (s.IsNotFound()) s = FsyncFile(committed);
          CAIRN_RETURN_IF_ERROR(s);
        }
        return FsyncDir(dir);
      };
    }
    return Status::OK();
  }

  Status NotifyCheckpointComplete(CheckpointId id) override {
    // In order; a file that cannot be committed stops the commits and stays pending.
    Status s;
    size_t done = 0;
    for (; done < pending_.size() && pending_[done].checkpoint <= id; ++done) {
      s = Commit(InProgressPath(pending_[done].seq), CommittedPath(pending_[done].seq));
      if (!s.ok()) break;
      if (done == 0) CAIRN_CRASH_POINT("sink.commit");
    }
    if (done == 0) return s;
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<long>(done));
    Status synced = FsyncDir(dir_);
    return s.ok() ? synced : s;
  }

  Status Close() override {
    if (fd_ >= 0) {
      close(fd_);
      fd_ = -1;
    }
    return Status::OK();
  }

 private:
  struct Pending {
    uint64_t seq;
    CheckpointId checkpoint;
  };

  // A fresh writer: a run id no file in the directory uses yet, so that no name is ever reused.
  Status StartRun() {
    std::vector<std::string> names;
    CAIRN_RETURN_IF_ERROR(ListDir(dir_, &names));
    std::random_device rd;
    for (;;) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%08x", rd());
      run_ = buf;
      bool used = false;
      for (const std::string& n : names) used |= n.find("-" + run_ + "-") != std::string::npos;
      if (!used) break;
    }
    next_seq_ = 0;
    pending_.clear();
    return Status::OK();
  }

  // Restores this subtask's own writer from its state bytes, taken by checkpoint `restored`.
  Status RestoreWriter(std::string_view state, CheckpointId restored) {
    Decoder d(state);
    uint64_t next_seq, npending;
    if (!d.GetLengthPrefixed(&run_) || !d.GetFixed64(&next_seq) || !d.GetFixed64(&npending))
      return Status::Corruption("operator " + id_ + ": damaged sink state in the checkpoint");
    next_seq_ = next_seq;
    for (uint64_t i = 0; i < npending; ++i) {
      uint64_t seq, chk;
      if (!d.GetFixed64(&seq) || !d.GetFixed64(&chk))
        return Status::Corruption("operator " + id_ + ": damaged sink state in the checkpoint");
      pending_.push_back({seq, chk});
    }
    // Commit what the restored checkpoint owes. A pending file that is neither in progress nor
    // committed is lost output: fail rather than silently drop it.
    for (const Pending& p : pending_) {
      std::string from = InProgressPath(p.seq), to = CommittedPath(p.seq);
      if (PathExists(from)) {
        CAIRN_RETURN_IF_ERROR(Commit(from, to));
      } else if (!PathExists(to)) {
        return Status::Corruption("operator " + id_ + ": output file " + from +
                                  " owed by the checkpoint is missing; the output directory changed");
      }
    }
    pending_.clear();
    // Roll back everything this subtask wrote after the checkpoint: in-progress files are
    // deleted; committed ones (output of newer checkpoints, which this run produces again) are
    // set aside in _superseded/. The sequence continues above every committed or set-aside file.
    const std::string in_progress = ".part-" + run_ + "-" + std::to_string(subtask_) + "-";
    const std::string committed = "part-" + run_ + "-" + std::to_string(subtask_) + "-";
    const std::string aside = dir_ + "/" + kSupersededDir;
    uint64_t above = next_seq_;
    std::vector<std::string> names;
    CAIRN_RETURN_IF_ERROR(ListDir(dir_, &names));
    bool set_aside = false;
    for (const std::string& n : names) {
      uint64_t seq = 0;
      if (ParseSeq(n, in_progress, ".inprogress", &seq)) {
        if (seq >= next_seq_) CAIRN_RETURN_IF_ERROR(RemoveAll(dir_ + "/" + n));
      } else if (ParseSeq(n, committed, "", &seq)) {
        above = std::max(above, seq + 1);
        if (seq < next_seq_) continue;
        CAIRN_RETURN_IF_ERROR(CreateDirs(aside));
        CAIRN_RETURN_IF_ERROR(RenameNoReplace(dir_ + "/" + n, aside + "/" + n).WithContext("operator " + id_));
        set_aside = true;
      }
    }
    if (IsDirectory(aside)) {
      CAIRN_RETURN_IF_ERROR(ListDir(aside, &names));
      for (const std::string& n : names) {
        uint64_t seq = 0;
        if (ParseSeq(n, committed, "", &seq)) above = std::max(above, seq + 1);
      }
    }
    if (set_aside) {
      fprintf(stderr, "cairn: operator %s[%u]: set aside the output committed after checkpoint %" PRIu64 " in %s\n",
              id_.c_str(), subtask_, restored, aside.c_str());
      CAIRN_RETURN_IF_ERROR(FsyncDir(aside));
    }
    next_seq_ = above;
    return FsyncDir(dir_);
  }

  // Sets aside the committed files of every run not in `known`, and deletes their in-progress
  // files: all of it was written after checkpoint `restored`.
  Status SetAsideUnknownRuns(const std::set<std::string>& known, CheckpointId restored) {
    const std::string aside = dir_ + "/" + kSupersededDir;
    std::vector<std::string> names;
    CAIRN_RETURN_IF_ERROR(ListDir(dir_, &names));
    bool set_aside = false;
    for (const std::string& n : names) {
      const bool in_progress = n.rfind(".part-", 0) == 0;
      if (!in_progress && n.rfind("part-", 0) != 0) continue;
      const size_t start = in_progress ? 6 : 5, dash = n.find('-', start);
      if (dash == std::string::npos || known.count(n.substr(start, dash - start)) != 0) continue;
      if (in_progress) {
        CAIRN_RETURN_IF_ERROR(RemoveAll(dir_ + "/" + n));
        continue;
      }
      CAIRN_RETURN_IF_ERROR(CreateDirs(aside));
      CAIRN_RETURN_IF_ERROR(RenameNoReplace(dir_ + "/" + n, aside + "/" + n).WithContext("operator " + id_));
      set_aside = true;
    }
    if (set_aside) {
      fprintf(stderr, "cairn: operator %s: set aside the output of writers started after checkpoint %" PRIu64 " in %s\n",
              id_.c_str(), restored, aside.c_str());
      CAIRN_RETURN_IF_ERROR(FsyncDir(aside));
    }
    return FsyncDir(dir_);
  }

  // Restored at another parallelism (the state is a writer list): restore every old writer as
  // its own subtask would have, then start as a fresh writer under a run id no file uses yet.
  Status OpenRescaled(OperatorContext& ctx) {
    std::vector<std::string> items;
    if (!DecodeWriterList(*ctx.restored_operator_state, &items))
      return Status::Corruption("operator " + id_ + ": damaged sink state in the checkpoint");
    for (const std::string& item : items) {
      FileSink writer(dir_);
      writer.id_ = id_;
      std::string state;
      if (!DecodeWriter(item, &writer.subtask_, &state))
        return Status::Corruption("operator " + id_ + ": damaged sink state in the checkpoint");
      CAIRN_RETURN_IF_ERROR(writer.RestoreWriter(state, *ctx.restored_checkpoint));
      CAIRN_RETURN_IF_ERROR(writer.Close());
    }
    return StartRun();
  }

  // Renames an in-progress file to its committed name, never over an existing file: a
  // collision means the output directory holds output this job does not own, and fails loudly.
  Status Commit(const std::string& from, const std::string& to) {
    LogDurabilityEvent("commit", from + " " + to);
    return RenameNoReplace(from, to).WithContext("operator " + id_ + ": cannot commit output");
  }
  // `name` is <prefix><decimal seq><suffix>.
  static bool ParseSeq(const std::string& name, const std::string& prefix, const std::string& suffix, uint64_t* seq) {
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      return false;
    const char* b = name.data() + prefix.size();
    const char* e = name.data() + name.size() - suffix.size();
    auto [ptr, ec] = std::from_chars(b, e, *seq);
    return ec == std::errc() && ptr == e;
  }

  std::string Name(uint64_t seq) const { return run_ + "-" + std::to_string(subtask_) + "-" + std::to_string(seq); }
  std::string InProgressPath(uint64_t seq) const { return dir_ + "/.part-" + Name(seq) + ".inprogress"; }
  std::string CommittedPath(uint64_t seq) const { return dir_ + "/part-" + Name(seq); }

  // Writes the buffer to the current in-progress file (created when there is none). On an
  // error the bytes not written stay buffered, so that a later Flush continues the file.
  // `start_writeback`: the disk starts on these bytes now (sync_file_range, a hint that does
  // not wait) rather than all at the checkpoint's fsync, which then has only the last ones left
  // to write: at ~100 MB/s of output and 100 ms checkpoints, ~10 MB each, which ext4's ordered
  // mode also makes the journal commits of the checkpoint's own files wait for.
  Status Flush(bool start_writeback = false) {
    if (buf_.empty()) return Status::OK();
    if (fd_ < 0) {
      std::string p = InProgressPath(next_seq_);
      fd_ = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd_ < 0) return Status::FromErrno("operator " + id_ + ": cannot create", p, errno);
    }
    size_t written = 0;
    while (written < buf_.size()) {
      ssize_t w = write(fd_, buf_.data() + written, buf_.size() - written);
      if (w < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        buf_.erase(0, written);
        return Status::FromErrno("operator " + id_ + ": cannot write", InProgressPath(next_seq_), err);
      }
      written += static_cast<size_t>(w);
    }
    // The file's dirty pages are these bytes (earlier ones are already under writeback).
    if (start_writeback) (void)sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
    buf_.clear();
    return Status::OK();
  }

  static constexpr size_t kFlushBytes = 1 << 20;
  const std::string dir_;
  std::string id_;
  uint32_t subtask_ = 0;
  std::string run_;
  OperatorListState<std::string>* runs_ = nullptr;  // the lineage's run ids (Open)
  uint64_t next_seq_ = 0;
  int fd_ = -1;
  std::string buf_;
  std::vector<Pending> pending_;
  RecordWriterOptions writer_;
  bool header_ = false;
  std::string scratch_;
};

}  // namespace

static OperatorStateRule FileSinkStateRule() {
  OperatorStateRule r;
  // Split: every old writer is finished (its pending files committed, its later in-progress
  // files removed) by exactly one new subtask, so no file is committed twice or by two tasks.
  r.mode = StateRedistribution::kSplit;
  r.to_items = [](std::string_view bytes, uint32_t subtask, uint32_t, std::vector<std::string>* items) {
    if (!IsWriterList(bytes)) {
      items->push_back(EncodeWriter(subtask, bytes));
      return Status::OK();
    }
    // A writer list is finished at Open, before any checkpoint, so a checkpoint never holds
    // one; keep its writers as they are anyway.
    if (!DecodeWriterList(bytes, items)) return Status::Corruption("damaged sink writer list");
    return Status::OK();
  };
  r.from_items = [](const std::vector<std::string>& items) {
    std::string s;
    PutFixed64(&s, kWriterListMagic);
    PutFixed64(&s, items.size());
    for (const std::string& it : items) PutLengthPrefixed(&s, it);
    return s;
  };
  return r;
}

static Status FileSinkPreflight(const OperatorConfig& c) {
  const std::string& dir = c.GetString("path");
  return CheckUsableDir(dir, "operator '" + c.id + "': path " + dir);
}

static Status FileSinkCommittedOutput(const OperatorConfig& c, std::vector<std::string>* files) {
  files->clear();
  const std::string& dir = c.GetString("path");
  std::vector<std::string> names;
  Status s = ListDir(dir, &names);
  if (s.IsNotFound()) return Status::OK();
  CAIRN_RETURN_IF_ERROR(s);
  for (const std::string& n : names)
    if (n.rfind("part-", 0) == 0) files->push_back(dir + "/" + n);
  return Status::OK();
}

static Status FileSinkSetAsideOutput(const OperatorConfig& c, size_t* moved) {
  *moved = 0;
  const std::string& dir = c.GetString("path");
  const std::string aside = dir + "/" + kSupersededDir;
  std::vector<std::string> names;
  Status s = ListDir(dir, &names);
  if (s.IsNotFound()) return Status::OK();
  CAIRN_RETURN_IF_ERROR(s);
  for (const std::string& n : names) {
    const bool committed = n.rfind("part-", 0) == 0;
    const bool in_progress = n.rfind(".part-", 0) == 0;
    if (!committed && !in_progress) continue;
    if (in_progress) {
      CAIRN_RETURN_IF_ERROR(RemoveAll(dir + "/" + n));  // never output: nothing to keep
      continue;
    }
    CAIRN_RETURN_IF_ERROR(CreateDirs(aside));
    CAIRN_RETURN_IF_ERROR(RenameNoReplace(dir + "/" + n, aside + "/" + n).WithContext("operator '" + c.id + "'"));
    ++*moved;
  }
  if (*moved > 0) CAIRN_RETURN_IF_ERROR(FsyncDir(aside));
  return FsyncDir(dir);
}

// Load time (exit 2): the format and its parameters. A sink emits nothing.
static Status FileSinkSchema(const OperatorConfig& c, const std::vector<SchemaRef>&, SchemaRef* out) {
  *out = nullptr;
  const std::string what = "operator '" + c.id + "' (type file_sink)";
  TextFormat format;
  return CheckTextFormatParams(c, what, &format);
}

CAIRN_REGISTER_OPERATOR({
    .name = "file_sink",
    .role = OperatorRole::kSink,
    .output_schema = FileSinkSchema,
    .params = {
        {.name = "path", .type = ParamType::kString, .required = true, .doc = "output directory"},
        {.name = "format", .type = ParamType::kString, .default_value = "lines",
         .doc = "`lines` (fields as text joined by TAB), `csv` (RFC 4180) or `jsonl` (one JSON object per line)"},
        {.name = "header", .type = ParamType::kBool, .default_value = "false",
         .doc = "csv: every part file starts with a header record of the field names"},
        {.name = "delimiter", .type = ParamType::kString, .default_value = ",",
         .doc = "csv: the field delimiter, one character"},
    },
    .doc = "Exactly-once file sink: writes records (`key<TAB>value` lines for the word count; see Formats) into "
           "in-progress files (names start with `.`) that become visible only when the checkpoint covering them "
           "completes.",
    .create = MakeOperator<FileSink>,
    .state = FileSinkStateRule(),
    .preflight = FileSinkPreflight,
    .committed_output = FileSinkCommittedOutput,
    .set_aside_output = FileSinkSetAsideOutput,
    .describe_state = DescribeFileSinkState,
});

}  // namespace cairn
