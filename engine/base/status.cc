#include "engine/base/status.h"

#include <cstring>

namespace cairn {

Status Status::FromErrno(std::string_view what, std::string_view path, int err) {
  std::string m(what);
  m += " ";
  m += path;
  m += ": ";
  m += std::strerror(err);
  if (err == ENOENT) return NotFound(std::move(m));
  return IOError(std::move(m));
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->msg : kEmpty;
}

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code()) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: name = "invalid argument"; break;
    case Code::kNotFound: name = "not found"; break;
    case Code::kCorruption: name = "corruption"; break;
    case Code::kIOError: name = "I/O error"; break;
    case Code::kAborted: name = "aborted"; break;
    case Code::kInternal: name = "internal error"; break;
  }
  return std::string(name) + ": " + rep_->msg;
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(rep_->code, std::string(prefix) + ": " + rep_->msg);
}

int Status::ExitCode() const {
  switch (code()) {
    case Code::kOk: return 0;
    case Code::kInvalidArgument:
    case Code::kNotFound:
    case Code::kCorruption: return 2;
    default: return 1;
  }
}

}  // namespace cairn
