#include "tests/test_util.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <chrono>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "engine/base/storage_faults.h"
#include "state/operator_list_state.h"

namespace cairn::testing {

void StopDurabilityLog() {
  if (internal::durability_log_fd >= 0) ::close(internal::durability_log_fd);
  internal::durability_log_fd = -1;
  ::unsetenv("CAIRN_DURABILITY_LOG");
}

OperatorStateStore* FreshListStates() {
  static std::deque<OperatorStateStore> stores;
  return &stores.emplace_back();
}

ScratchDir::ScratchDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "cairn-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string CairnBinary() {
#ifdef CAIRN_BINARY
  return CAIRN_BINARY;
#else
  return "cairn";
#endif
}

std::string SourceDir() { return CAIRN_SOURCE_DIR; }

static std::string Slurp(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

// In a forked child, before exec: adds "NAME=VALUE" entries to the environment.
static void SetChildEnv(const std::vector<std::string>& env) {
  for (const std::string& e : env) putenv(strdup(e.c_str()));
}

// In a forked child, before exec: removes the capabilities that let root ignore permission bits
// from every set. Root gets its bounding set back as permitted capabilities at exec, so the
// bounding set must lose them too; the inheritable and ambient sets are emptied of them.
static bool DropFileAccessOverride() {
  if (geteuid() != 0) return true;  // permission bits already apply
  for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH}) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return false;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, cap, 0, 0);
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH}) {
    const uint32_t bit = 1u << (cap % 32);
    data[cap / 32].effective &= ~bit;
    data[cap / 32].permitted &= ~bit;
    data[cap / 32].inheritable &= ~bit;
  }
  return syscall(SYS_capset, &header, data) == 0;
}

static RunResult RunCairnChild(bool as_user, unsigned uid, unsigned gid, bool obey_permissions,
                               const std::vector<std::string>& args, const std::vector<std::string>& env);

RunResult RunCairn(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  return RunCairnChild(false, 0, 0, false, args, env);
}

RunResult RunCairnObeyingPermissions(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  return RunCairnChild(false, 0, 0, true, args, env);
}

RunResult RunCairnAsUser(unsigned uid, unsigned gid, const std::vector<std::string>& args,
                         const std::vector<std::string>& env) {
  return RunCairnChild(true, uid, gid, false, args, env);
}

static RunResult RunCairnChild(bool as_user, unsigned uid, unsigned gid, bool obey_permissions,
                               const std::vector<std::string>& args, const std::vector<std::string>& env) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    SetChildEnv(env);
    if (as_user && (setgid(gid) != 0 || setuid(uid) != 0)) _exit(126);
    if (obey_permissions && !DropFileAccessOverride()) _exit(125);
    std::vector<char*> argv;
    std::string bin = CairnBinary();
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  RunResult r;
  std::thread err_reader([&] { r.err = Slurp(err_pipe[0]); });
  r.out = Slurp(out_pipe[0]);
  err_reader.join();
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace cairn::testing


namespace cairn::testing {

CairnProcess::CairnProcess(const std::vector<std::string>& args, const std::string& out_file,
                           const std::string& err_file, const std::vector<std::string>& env,
                           const std::string& binary) {
  pid_ = fork();
  if (pid_ == 0) {
    int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(out, 1);
    dup2(err, 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    SetChildEnv(env);
    std::vector<std::string> copy = args;
    std::string bin = binary.empty() ? CairnBinary() : binary;
    std::vector<char*> argv{bin.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
}

CairnProcess::~CairnProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool CairnProcess::Wait(int timeout_ms, RunResult* r) {
  // Sleep until the child exits or the deadline passes: a pidfd becomes readable at exit.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  for (;;) {
    int status = 0;
    pid_t w = waitpid(pid_, &status, WNOHANG);
    if (w == pid_) {
      if (pidfd >= 0) close(pidfd);
      reaped_ = true;
      if (WIFEXITED(status)) r->exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) r->signal = WTERMSIG(status);
      return true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      if (pidfd >= 0) close(pidfd);
      return false;
    }
    int wait_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30));
    if (pidfd < 0) {
      poll(nullptr, 0, std::min(wait_ms, 5));  // no pidfd (kernel < 5.3): look again shortly
      continue;
    }
    struct pollfd p{pidfd, POLLIN, 0};
    poll(&p, 1, wait_ms);
  }
}

void CairnProcess::Kill() {
  if (!reaped_ && pid_ > 0) kill(pid_, SIGKILL);
}

std::map<std::string, std::string> PartFiles(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind("part-", 0) == 0) files[name] = ReadText(e.path().string());
  }
  return files;
}

std::vector<std::string> CommittedLines(const std::string& dir) {
  std::vector<std::string> lines;
  if (!std::filesystem::exists(dir)) return lines;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || name[0] == '_') continue;
    std::string text = ReadText(e.path().string());
    size_t start = 0;
    while (start < text.size()) {
      size_t nl = text.find('\n', start);
      if (nl == std::string::npos) nl = text.size();
      lines.push_back(text.substr(start, nl - start));
      start = nl + 1;
    }
  }
  return lines;
}

std::set<uint64_t> CompletedCheckpointIds(const std::string& ckdir) {
  namespace fs = std::filesystem;
  std::set<uint64_t> ids;
  std::error_code ec;
  for (fs::directory_iterator it(ckdir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("chk-", 0) != 0 || name.size() == 4) continue;
    if (name.find_first_not_of("0123456789", 4) != std::string::npos) continue;
    if (!fs::exists(it->path() / "_metadata", ec)) continue;
    ids.insert(std::stoull(name.substr(4)));
  }
  return ids;
}

}  // namespace cairn::testing
