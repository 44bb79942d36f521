// file_source: reads a text file line by line. With parallelism p, subtask i owns the lines
// whose first byte lies in the i-th of p equal byte ranges of the file. Its operator state is
// the offset of the next unread line (and the file size, to detect a changed input on restore).
//
// Rescaling (split list state, docs/state.md): the items of a subtask's state are the byte
// ranges it has still to read, "lines starting in [from, to)" with `from` a line start. A
// subtask restored from a rescaled checkpoint reads its ranges one after another, and its
// state is then the list of what is left of them (the "range list" format below).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <vector>

#include "engine/base/coding.h"
#include "jobs/registry.h"
#include "operators/rate_limiter.h"

namespace cairn {
namespace {

// The range-list state: magic, count, then per range (file size, from, to).
constexpr uint64_t kRangeListMagic = 0x31474e5243727363ull;  // "csrcRNG1"

// Lines starting in [from, to) of a file of `size` bytes. `aligned`: `from` is a line start
// (else the range starts at the first line start at or after `from`).
struct ReadRange {
  uint64_t size, from, to, aligned;
};

void PutRange(std::string* s, const ReadRange& r) {
  PutFixed64(s, r.size);
  PutFixed64(s, r.from);
  PutFixed64(s, r.to);
  PutFixed64(s, r.aligned);
}

bool GetRange(Decoder* d, ReadRange* r) {
  return d->GetFixed64(&r->size) && d->GetFixed64(&r->from) && d->GetFixed64(&r->to) && d->GetFixed64(&r->aligned) &&
         r->aligned <= 1;
}

std::string EncodeRange(const ReadRange& r) {
  std::string s;
  PutRange(&s, r);
  return s;
}

bool DecodeRange(std::string_view bytes, ReadRange* r) {
  Decoder d(bytes);
  return GetRange(&d, r) && d.done();
}

bool IsRangeList(std::string_view bytes) {
  uint64_t magic = 0;
  return Decoder(bytes).GetFixed64(&magic) && magic == kRangeListMagic;
}

bool DecodeRangeList(std::string_view bytes, std::vector<ReadRange>* out) {
  Decoder d(bytes);
  uint64_t magic, n;
  if (!d.GetFixed64(&magic) || magic != kRangeListMagic || !d.GetFixed64(&n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    ReadRange r;
    if (!GetRange(&d, &r)) return false;
    out->push_back(r);
  }
  return d.done();
}

std::string EncodeRangeList(const std::vector<ReadRange>& ranges) {
  std::string s;
  PutFixed64(&s, kRangeListMagic);
  PutFixed64(&s, ranges.size());
  for (const ReadRange& r : ranges) PutRange(&s, r);
  return s;
}

class FileSource final : public SourceOperator {
 public:
  explicit FileSource(const OperatorConfig& c) : path_(c.GetString("path")), limiter_(c.GetInt("rate")) {}
  ~FileSource() override {
    if (fd_ >= 0) close(fd_);
  }

  Status Open(OperatorContext& ctx) override {
    id_ = ctx.operator_id;
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      // A missing or unreadable input is bad input (exit 2), found before the job changes anything.
      Status s = Status::FromErrno("operator " + id_ + ": cannot open input", path_, errno);
      return s.IsNotFound() ? s : Status::InvalidArgument(s.message());
    }
    struct stat st;
    if (fstat(fd_, &st) != 0) return Status::FromErrno("operator " + id_ + ": cannot stat input", path_, errno);
    if (!S_ISREG(st.st_mode))
      return Status::InvalidArgument("operator " + id_ + ": input " + path_ + " is not a regular file");
    size_ = static_cast<uint64_t>(st.st_size);
    uint64_t begin = size_ * ctx.subtask / ctx.parallelism;
    end_ = size_ * (ctx.subtask + 1) / ctx.parallelism;
    if (ctx.restored_operator_state && IsRangeList(*ctx.restored_operator_state)) {
      std::vector<ReadRange> ranges;
      if (!DecodeRangeList(*ctx.restored_operator_state, &ranges))
        return Status::Corruption("operator " + id_ + ": damaged source ranges in the checkpoint");
      for (const ReadRange& r : ranges)
        if (r.size != size_)
          return Status::InvalidArgument("operator " + id_ + ": input " + path_ + " has " + std::to_string(size_) +
                                         " bytes but had " + std::to_string(r.size) +
                                         " when the checkpoint was taken; restore needs the same input");
      range_list_ = true;
      pending_.assign(ranges.begin(), ranges.end());
      pos_ = end_ = 0;
      if (!NextRange() && failed_) return read_status_;
    } else if (ctx.restored_operator_state) {
      Decoder d(*ctx.restored_operator_state);
      uint64_t pos, size;
      if (!d.GetFixed64(&pos) || !d.GetFixed64(&size) || !d.done())
        return Status::Corruption("operator " + id_ + ": damaged source position in the checkpoint");
      if (size != size_)
        return Status::InvalidArgument("operator " + id_ + ": input " + path_ + " has " + std::to_string(size_) +
                                       " bytes but had " + std::to_string(size) +
                                       " when the checkpoint was taken; restore needs the same input");
      pos_ = pos;
    } else if (begin == 0) {
      pos_ = 0;
    } else if (!SeekLineStart(begin)) {
      return read_status_;
    }
    buf_.clear();
    buf_off_ = pos_;
    eof_ = false;
    return Status::OK();
  }

  PollResult Poll(RecordBatch* out, size_t max_records, Clock::time_point* resume_at) override {
    size_t allowed = limiter_.Allowed(max_records, resume_at);
    if (allowed == 0) return PollResult::kWait;
    size_t n = 0;
    while (n < allowed && (pos_ < end_ || NextRange())) {
      size_t rel = pos_ - buf_off_;
      size_t nl = buf_.find('\n', rel);
      if (nl == std::string::npos) {
        if (!eof_) {
          if (!Fill()) {
            failed_ = true;
            return PollResult::kExhausted;
          }
          continue;
        }
        if (rel >= buf_.size()) {
          pos_ = size_;
          break;
        }
        nl = buf_.size();  // last line without a newline
      }
      out->SetString(out->AddRow(), 0, std::string_view(buf_.data() + rel, nl - rel));
      pos_ = buf_off_ + std::min(nl + 1, buf_.size());
      ++n;
    }
    limiter_.Consumed(n);
    if ((pos_ >= end_ || pos_ >= size_) && pending_.empty()) return n > 0 ? PollResult::kMore : PollResult::kExhausted;
    return PollResult::kMore;
  }

  Status SnapshotState(CheckpointId, OperatorSnapshot* snap) override {
    if (failed_) return read_status_;
    if (range_list_) {
      std::vector<ReadRange> left;
      if (pos_ < end_ && pos_ < size_) left.push_back(ReadRange{size_, pos_, end_, 1});
      left.insert(left.end(), pending_.begin(), pending_.end());
      snap->operator_state = EncodeRangeList(left);
      return Status::OK();
    }
    PutFixed64(&snap->operator_state, pos_);
    PutFixed64(&snap->operator_state, size_);
    return Status::OK();
  }

  Status Close() override { return failed_ ? read_status_ : Status::OK(); }

 private:
  // Sets pos_ to the first line start at or after `at` (size_ when there is none): just past
  // the first '\n' at or after at-1. False on a read error (read_status_).
  bool SeekLineStart(uint64_t at) {
    buf_.clear();
    eof_ = false;
    if (at == 0) {
      pos_ = buf_off_ = 0;
      return true;
    }
    pos_ = at - 1;
    buf_off_ = pos_;
    for (;;) {
      if (!Fill()) return false;
      size_t nl = buf_.find('\n', pos_ - buf_off_);
      if (nl != std::string::npos) {
        pos_ = buf_off_ + nl + 1;
        break;
      }
      if (eof_) {
        pos_ = size_;
        break;
      }
      pos_ = buf_off_ + buf_.size();
    }
    buf_.clear();
    buf_off_ = pos_;
    eof_ = false;
    return true;
  }

  // Range list: makes the next non-empty pending range current. False when none is left (or
  // on a read error: failed_ set).
  bool NextRange() {
    while (!pending_.empty()) {
      ReadRange r = pending_.front();
      pending_.pop_front();
      if (r.from >= r.to || r.from >= size_) continue;
      end_ = r.to;
      if (r.aligned) {
        pos_ = r.from;
        buf_.clear();
        buf_off_ = pos_;
        eof_ = false;
      } else if (!SeekLineStart(r.from)) {
        failed_ = true;
        pending_.clear();
        return false;
      }
      if (pos_ < end_ && pos_ < size_) return true;
    }
    return false;
  }

  // Drops consumed bytes before pos_ and reads more. False on a read error (read_status_).
  bool Fill() {
    size_t rel = pos_ - buf_off_;
    if (rel > 0) {
      buf_.erase(0, rel);
      buf_off_ = pos_;
    }
    size_t old = buf_.size();
    buf_.resize(old + kReadSize);
    ssize_t r = pread(fd_, buf_.data() + old, kReadSize, static_cast<off_t>(buf_off_ + old));
    if (r < 0) {
      buf_.resize(old);
      read_status_ = Status::FromErrno("operator " + id_ + ": cannot read input", path_, errno);
      return false;
    }
    buf_.resize(old + static_cast<size_t>(r));
    if (r == 0) eof_ = true;
    return true;
  }

  static constexpr size_t kReadSize = 1 << 20;
  const std::string path_;
  std::string id_;
  RateLimiter limiter_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t end_ = 0;
  uint64_t pos_ = 0;      // offset of the next line to emit
  bool range_list_ = false;          // restored from a rescaled checkpoint: state is a range list
  std::deque<ReadRange> pending_;    // range list: the ranges after [pos_, end_)
  std::string buf_;       // file bytes from buf_off_
  uint64_t buf_off_ = 0;
  bool eof_ = false;
  bool failed_ = false;
  Status read_status_;
};

}  // namespace

static OperatorStateRule FileSourceStateRule() {
  OperatorStateRule r;
  r.mode = StateRedistribution::kSplit;
  r.to_items = [](std::string_view bytes, uint32_t subtask, uint32_t parallelism, std::vector<std::string>* items) {
    if (IsRangeList(bytes)) {
      std::vector<ReadRange> ranges;
      if (!DecodeRangeList(bytes, &ranges)) return Status::Corruption("damaged source ranges");
      for (const ReadRange& rr : ranges)
        if (rr.from < rr.to && rr.from < rr.size) items->push_back(EncodeRange(rr));
      return Status::OK();
    }
    // (next line, file size): what is left of the subtask's own byte range.
    Decoder d(bytes);
    uint64_t pos, size;
    if (!d.GetFixed64(&pos) || !d.GetFixed64(&size) || !d.done()) return Status::Corruption("damaged source position");
    uint64_t end = size * (subtask + 1) / parallelism;
    if (pos < end && pos < size) items->push_back(EncodeRange(ReadRange{size, pos, end, 1}));
    return Status::OK();
  };
  // Scaling up: a range splits at its middle byte; the second half starts at the first line
  // start at or after it, exactly as the byte ranges of a fresh start do.
  r.halve = [](const std::string& item, std::string* first, std::string* second) {
    ReadRange rr{};
    if (!DecodeRange(item, &rr) || rr.to <= rr.from || rr.to - rr.from < 2) return false;
    uint64_t mid = rr.from + (rr.to - rr.from) / 2;
    *first = EncodeRange(ReadRange{rr.size, rr.from, mid, rr.aligned});
    *second = EncodeRange(ReadRange{rr.size, mid, rr.to, 0});
    return true;
  };
  r.from_items = [](const std::vector<std::string>& items) {
    std::vector<ReadRange> ranges;
    for (const std::string& it : items) {
      ReadRange rr{};
      if (DecodeRange(it, &rr)) ranges.push_back(rr);
    }
    return EncodeRangeList(ranges);
  };
  return r;
}

CAIRN_REGISTER_OPERATOR({
    .name = "file_source",
    .role = OperatorRole::kSource,
    .output_schema = FixedSchema({{"line", FieldType::kString}}),
    .params = {
        {.name = "path", .type = ParamType::kString, .required = true, .doc = "text file to read, line by line"},
        {.name = "rate", .type = ParamType::kInt, .default_value = "0",
         .doc = "records (lines) per second per subtask; 0 = unlimited"},
    },
    .doc = "Reads a text file line by line. With parallelism p, subtask i reads the lines that start in the "
           "i-th of p equal byte ranges. Its read position is part of the checkpoint.",
    .create = MakeOperator<FileSource>,
    .state = FileSourceStateRule(),
});

}  // namespace cairn
