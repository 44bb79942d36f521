// file_source: reads a text file line by line. With parallelism p, subtask i owns the lines
// whose first byte lies in the i-th of p equal byte ranges of the file. Its operator state is
// the offset of the next unread line (and the file size, to detect a changed input on restore).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "engine/coding.h"
#include "operators/operator_factories.h"
#include "operators/rate_limiter.h"

namespace cairn {
namespace {

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
    if (ctx.restored_operator_state) {
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
    } else {
      // The first line starting at or after `begin`: just past the first '\n' at >= begin-1.
      pos_ = begin - 1;
      buf_off_ = pos_;
      for (;;) {
        if (!Fill()) return read_status_;
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
    while (n < allowed && pos_ < end_) {
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
      out->Add(std::string_view(buf_.data() + rel, nl - rel));
      pos_ = buf_off_ + std::min(nl + 1, buf_.size());
      ++n;
    }
    limiter_.Consumed(n);
    if (pos_ >= end_ || pos_ >= size_) return n > 0 ? PollResult::kMore : PollResult::kExhausted;
    return PollResult::kMore;
  }

  Status SnapshotState(CheckpointId, OperatorSnapshot* snap) override {
    if (failed_) return read_status_;
    PutFixed64(&snap->operator_state, pos_);
    PutFixed64(&snap->operator_state, size_);
    return Status::OK();
  }

  Status Close() override { return failed_ ? read_status_ : Status::OK(); }

 private:
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
  std::string buf_;       // file bytes from buf_off_
  uint64_t buf_off_ = 0;
  bool eof_ = false;
  bool failed_ = false;
  Status read_status_;
};

}  // namespace

std::unique_ptr<Operator> NewFileSource(const OperatorConfig& c) { return std::make_unique<FileSource>(c); }

}  // namespace cairn
