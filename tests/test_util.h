// Test helpers: scratch directories and running the cairn binary as a child process.
#pragma once

#include <string>
#include <vector>

namespace cairn::testing {

// A fresh empty directory under the system temp dir, removed by the destructor.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The built `cairn` binary and the source tree.
std::string CairnBinary();
std::string SourceDir();

struct RunResult {
  int exit_code = -1;     // -1 when killed by a signal
  int signal = 0;         // the signal that ended it, if any
  std::string out;        // stdout
  std::string err;        // stderr
};

// Runs `cairn args...` to completion, capturing stdout and stderr.
RunResult RunCairn(const std::vector<std::string>& args);

// Writes `text` to `path`.
void WriteText(const std::string& path, const std::string& text);
std::string ReadText(const std::string& path);

}  // namespace cairn::testing
