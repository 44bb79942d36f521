#include "bench/process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "engine/base/file_util.h"

namespace cairn {

namespace {

int64_t WallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; }

}  // namespace

std::string ChildResult::Describe() const {
  std::string s = timed_out           ? "killed after the timeout"
                  : term_signal != 0 ? "killed by signal " + std::to_string(term_signal)
                                     : "exit " + std::to_string(exit_code);
  size_t from = err_lines.size() > 5 ? err_lines.size() - 5 : 0;
  for (size_t i = from; i < err_lines.size(); ++i) s += "\n    " + err_lines[i].text;
  return s;
}

Status RunChild(const std::vector<std::string>& argv, ChildResult* r, double timeout_seconds) {
  *r = ChildResult();
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status::FromErrno("cannot create pipe for", argv[0], errno);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Status::FromErrno("cannot create pipe for", argv[0], errno);
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  fflush(nullptr);
  const auto start = std::chrono::steady_clock::now();
  r->start_wall_ms = WallMillis();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return Status::FromErrno("cannot fork for", argv[0], err);
  }
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    execv(args[0], args.data());
    const char msg[] = "cairn-bench: exec failed\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);

  std::string err_partial;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(timeout_seconds));
  while (open_fds > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (!r->timed_out && now >= deadline) {
      kill(pid, SIGKILL);  // the pipes close when it dies
      r->timed_out = true;
    }
    const int wait_ms = r->timed_out ? -1
                                     : static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                            deadline - now).count()) + 1;
    int n = poll(fds, 2, wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      ssize_t got = read(fds[k].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
        continue;
      }
      if (k == 0) {
        r->out.append(buf, static_cast<size_t>(got));
        continue;
      }
      const int64_t now_ms = WallMillis();
      const double now_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      err_partial.append(buf, static_cast<size_t>(got));
      size_t pos = 0, nl;
      while ((nl = err_partial.find('\n', pos)) != std::string::npos) {
        r->err_lines.push_back(TimedLine{now_ms, now_s, err_partial.substr(pos, nl - pos)});
        pos = nl + 1;
      }
      err_partial.erase(0, pos);
    }
  }
  for (const pollfd& p : fds)
    if (p.fd >= 0) close(p.fd);
  int status = 0;
  rusage ru{};
  pid_t w;
  while ((w = wait4(pid, &status, 0, &ru)) < 0 && errno == EINTR) {
  }
  r->wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (w < 0) return Status::FromErrno("cannot wait for", argv[0], errno);
  if (!err_partial.empty()) r->err_lines.push_back(TimedLine{WallMillis(), r->wall_seconds, err_partial});
  r->max_rss_kb = ru.ru_maxrss;
  r->user_seconds = Seconds(ru.ru_utime);
  r->sys_seconds = Seconds(ru.ru_stime);
  if (WIFEXITED(status)) {
    r->exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r->exit_code = -1;
    r->term_signal = WTERMSIG(status);
  }
  return Status::OK();
}

std::string BenchBinaryDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  const std::string self = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("cairn-bench");
  const size_t slash = self.rfind('/');
  return slash == std::string::npos ? "." : self.substr(0, slash);
}

Status PrepareScratchCorpus(const std::string& cairn, std::string data_dir, const std::string& name, int64_t lines,
                            std::string* scratch, std::string* corpus) {
  if (data_dir.empty()) data_dir = BenchBinaryDir() + "/bench-data";
  *scratch = data_dir + "/" + name + "-scratch";
  RemoveAll(*scratch).IgnoreError();  // scratch space: best effort
  CAIRN_RETURN_IF_ERROR(CreateDirs(*scratch));
  *corpus = *scratch + "/lines.txt";
  ChildResult g;
  CAIRN_RETURN_IF_ERROR(RunChild({cairn, "generate", "--out", *corpus, "--words", std::to_string(lines * 10),
                                  "--words-per-line", "10", "--seed", "42"},
                                 &g));
  if (!g.ok()) return Status::Internal("generating the corpus " + *corpus + " failed: " + g.Describe());
  return Status::OK();
}

}  // namespace cairn
