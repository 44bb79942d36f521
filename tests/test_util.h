// Test helpers: scratch directories and running the cairn binary as a child process.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace cairn {
class OperatorStateStore;
}  // namespace cairn

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

// Closes the durability log (CAIRN_DURABILITY_LOG) that a test opened in this process, directly
// or through InitStorageFaults (which opens it only once), and unsets the variable: a later test
// in the same process (a gtest filter of several) then opens its own.
void StopDurabilityLog();

struct RunResult {
  int exit_code = -1;     // -1 when killed by a signal
  int signal = 0;         // the signal that ended it, if any
  std::string out;        // stdout
  std::string err;        // stderr
};

// Runs `cairn args...` to completion, capturing stdout and stderr. `env` entries
// ("NAME=VALUE") are added to the child's environment (e.g. CAIRN_CRASH_AT=...).
RunResult RunCairn(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
// The same as another user (the test must run as root). Beware: that user must be able to
// reach the binary and every path, which fails (exit 127) when the checkout lives under a
// directory only root may enter (mktemp -d is 0700); prefer RunCairnObeyingPermissions.
RunResult RunCairnAsUser(unsigned uid, unsigned gid, const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {});
// The same as the caller's user, but with permission bits enforced: when run as root, the child
// drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (from its bounding set too, so that exec does
// not give them back) and stays root, so a file or directory that its owner cannot read stops
// the read, wherever the checkout and the scratch directories live. exit_code 125 means the
// capabilities could not be dropped (no CAP_SETPCAP).
RunResult RunCairnObeyingPermissions(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

// The ids of the completed checkpoints in `ckdir` (chk-<id> directories holding a _metadata
// file), read from the directory as written, not through the engine; none when it is missing.
std::set<uint64_t> CompletedCheckpointIds(const std::string& ckdir);

// A new, empty operator list-state store, as the runtime gives every operator instance one, for
// an OperatorContext built by hand (kept until the test binary exits: contexts are copied).
OperatorStateStore* FreshListStates();

// Writes `text` to `path`.
void WriteText(const std::string& path, const std::string& text);
std::string ReadText(const std::string& path);

// Polls `cond` (every 20 ms) until it holds; false after two minutes: a guard against a hang,
// not a timing expectation.
template <typename F>
bool PollUntil(F cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

}  // namespace cairn::testing

namespace cairn::testing {

// A `cairn` child process whose stdout and stderr go to files.
class CairnProcess {
 public:
  // `binary`: the program to run; empty: the cairn binary.
  CairnProcess(const std::vector<std::string>& args, const std::string& out_file, const std::string& err_file,
               const std::vector<std::string>& env = {}, const std::string& binary = "");
  ~CairnProcess();
  // Waits up to `timeout_ms` for the exit; false on timeout.
  bool Wait(int timeout_ms, RunResult* result);
  void Kill();  // SIGKILL
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  bool reaped_ = false;
};

// Every committed output line of a file sink directory: files whose names start with neither
// '.' nor '_'.
std::vector<std::string> CommittedLines(const std::string& dir);

// The committed part files (`part-*`) of a file sink directory: name -> contents.
std::map<std::string, std::string> PartFiles(const std::string& dir);

}  // namespace cairn::testing
