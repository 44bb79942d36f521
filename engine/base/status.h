// Status is the result of an operation that can fail in an expected way.
//
// Contract: OK is cheap (no allocation); an error carries a code and a message meant for a
// user ("what and where"). Expected failures (bad input, I/O errors, corrupt files) are
// Status values, never exceptions. Status is a value type and is not thread-safe to mutate.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace cairn {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // bad input from a user: YAML, flags, paths (exit code 2)
    kNotFound,         // a file or checkpoint that should exist does not (exit code 2)
    kCorruption,       // a stored file is damaged or has a foreign format (exit code 2)
    kIOError,          // the file system failed (exit code 1)
    kAborted,          // a checkpoint or job was aborted (exit code 1)
    kInternal,         // a bug or an unexpected state (exit code 1)
  };

  Status() = default;
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(Code::kInvalidArgument, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status Aborted(std::string msg) { return Status(Code::kAborted, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }
  // An I/O error for `path` with errno's text appended.
  static Status FromErrno(std::string_view what, std::string_view path, int err);

  bool ok() const { return rep_ == nullptr; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  bool IsInvalidArgument() const { return code() == Code::kInvalidArgument; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsCorruption() const { return code() == Code::kCorruption; }
  bool IsIOError() const { return code() == Code::kIOError; }
  bool IsAborted() const { return code() == Code::kAborted; }

  // The message alone, without a code prefix.
  const std::string& message() const;
  // "<code name>: <message>", or "OK".
  std::string ToString() const;
  // A copy whose message is "<prefix>: <message>".
  Status WithContext(std::string_view prefix) const;
  // The process exit code for a run that ended with this status: 0, 1 or 2.
  int ExitCode() const;
  // Drops the status on purpose: a best-effort step whose failure changes nothing (the call
  // site says why in a comment).
  void IgnoreError() const {}

  Status(const Status& o) : rep_(o.rep_ ? std::make_unique<Rep>(*o.rep_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) rep_ = o.rep_ ? std::make_unique<Rep>(*o.rep_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

 private:
  struct Rep {
    Code code;
    std::string msg;
  };
  Status(Code c, std::string msg) : rep_(std::make_unique<Rep>(Rep{c, std::move(msg)})) {}
  std::unique_ptr<Rep> rep_;  // null means OK
};

}  // namespace cairn

// Returns early from the enclosing function when `expr` is not OK.
#define CAIRN_RETURN_IF_ERROR(expr)          \
  do {                                       \
    ::cairn::Status _cairn_s = (expr);       \
    if (!_cairn_s.ok()) return _cairn_s;     \
  } while (0)
