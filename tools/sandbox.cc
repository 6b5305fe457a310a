#include "tools/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace allot::tools {
namespace {

std::atomic<uint64_t> g_run_counter{0};

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

Result<std::string> ResolveExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (IsExecutable(name)) return name;
    return NotFound("sandbox: '" + name + "' is not executable");
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (end > start && IsExecutable(candidate)) return candidate;
    start = end + 1;
  }
  return NotFound("sandbox: '" + name + "' not found in PATH (install bubblewrap)");
}

// Processes owned by `uid`, for a non-root caller whose RLIMIT_NPROC must leave room for them.
int64_t CountProcessesOf(uid_t uid) {
  int64_t n = 0;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    struct stat st;
    const std::string p = std::string("/proc/") + e->d_name;
    if (::stat(p.c_str(), &st) == 0 && st.st_uid == uid) ++n;
  }
  ::closedir(d);
  return n;
}

void SetLimit(int resource, rlim_t soft, rlim_t hard) {
  struct rlimit rl;
  rl.rlim_cur = soft;
  rl.rlim_max = hard;
  ::setrlimit(resource, &rl);
}

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
  void Close(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

}  // namespace

Sandbox::Sandbox(SandboxConfig config) : config_(std::move(config)) {}

Status Sandbox::SelfTest() const {
  ALLOT_ASSIGN_OR_RETURN(ExecResult r, RunPython("print(6 * 7)"));
  if (!r.ok() || r.stdout_text != "42\n") {
    return Unavailable("sandbox self-test failed (exit " + std::to_string(r.exit_code) +
                       ", signal " + std::to_string(r.term_signal) + "): " + r.stderr_text);
  }
  return Status::Ok();
}

Result<ExecResult> Sandbox::RunPython(std::string_view code, std::string_view stdin_data) const {
  const SandboxConfig& c = config_;
  if (static_cast<int64_t>(code.size()) > c.max_code_bytes) {
    return ResourceExhausted("code is " + std::to_string(code.size()) + " bytes (limit " +
                             std::to_string(c.max_code_bytes) + ")");
  }
  if (code.find('\0') != std::string_view::npos) {
    return InvalidArgument("code contains a NUL byte");
  }
  if (stdin_data.size() > 32768) return ResourceExhausted("stdin data over 32 KiB");
  ALLOT_ASSIGN_OR_RETURN(std::string bwrap, ResolveExecutable(c.bwrap));
  if (!IsExecutable(c.python)) return NotFound("sandbox: python '" + c.python + "' not found");

  // Everything the child needs is prepared before fork(): after it, only async-signal-safe
  // calls are allowed.
  std::vector<std::string> args = {bwrap,           "--unshare-all", "--die-with-parent",
                                   "--new-session", "--cap-drop",    "ALL",
                                   "--hostname",    "sandbox"};
  for (const std::string& dir : c.ro_binds) {
    args.insert(args.end(), {"--ro-bind-try", dir, dir});
  }
  args.insert(args.end(), {"--size", std::to_string(c.tmp_size_mb * 1024 * 1024), "--tmpfs", "/tmp",
                           "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/", "--chdir",
                           "/tmp", c.python, "-I", "-c", std::string(code)});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin",
                                  "HOME=/tmp",
                                  "LANG=C.UTF-8",
                                  "PYTHONDONTWRITEBYTECODE=1",
                                  "PYTHONUNBUFFERED=1",
                                  "OPENBLAS_NUM_THREADS=1",
                                  "OMP_NUM_THREADS=1",
                                  "MPLBACKEND=Agg"};
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  const bool as_root = ::geteuid() == 0;
  const uint64_t run = g_run_counter.fetch_add(1);
  const uid_t uid = static_cast<uid_t>(
      c.uid_base + static_cast<int64_t>((static_cast<uint64_t>(::getpid()) * 7919u + run) %
                                        static_cast<uint64_t>(c.uid_range)));
  const rlim_t nproc = static_cast<rlim_t>(
      as_root ? c.max_processes : CountProcessesOf(::geteuid()) + c.max_processes);
  const rlim_t cpu = static_cast<rlim_t>(c.cpu_limit_s);
  const rlim_t mem = static_cast<rlim_t>(c.memory_limit_mb) * 1024 * 1024;
  const rlim_t fsize = static_cast<rlim_t>(c.max_file_size_mb) * 1024 * 1024;

  Pipe in, out, err, exec_err;
  if (::pipe2(in.fd, O_CLOEXEC) || ::pipe2(out.fd, O_CLOEXEC) || ::pipe2(err.fd, O_CLOEXEC) ||
      ::pipe2(exec_err.fd, O_CLOEXEC)) {
    return Internal(std::string("sandbox: pipe: ") + std::strerror(errno));
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) return Unavailable(std::string("sandbox: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setsid();  // own process group: the parent kills -pid on timeout
    ::dup2(in.fd[0], 0);
    ::dup2(out.fd[1], 1);
    ::dup2(err.fd[1], 2);
    SetLimit(RLIMIT_CPU, cpu, cpu + 1);
    SetLimit(RLIMIT_AS, mem, mem);
    SetLimit(RLIMIT_FSIZE, fsize, fsize);
    SetLimit(RLIMIT_NOFILE, 256, 256);
    SetLimit(RLIMIT_CORE, 0, 0);
    SetLimit(RLIMIT_NPROC, nproc, nproc);
    if (as_root) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) {
        const char msg[] = "sandbox: cannot drop privileges";
        (void)!::write(exec_err.fd[1], msg, sizeof(msg) - 1);
        ::_exit(127);
      }
    }
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "sandbox: cannot exec bwrap";
    (void)!::write(exec_err.fd[1], msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  in.Close(0);
  out.Close(1);
  err.Close(1);
  exec_err.Close(1);
  if (!stdin_data.empty()) {
    (void)!::write(in.fd[1], stdin_data.data(), stdin_data.size());
  }
  in.Close(1);

  ExecResult result;
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(c.wall_timeout_s));
  std::string* sinks[2] = {&result.stdout_text, &result.stderr_text};
  bool* truncated[2] = {&result.stdout_truncated, &result.stderr_truncated};
  int fds[2] = {out.fd[0], err.fd[0]};
  int status = 0;
  bool exited = false;
  char buf[16384];
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    if (exited && now >= deadline) break;  // a pipe still open past the deadline
    if (!exited && now >= deadline) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    pollfd pfds[2];
    int n = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (fds[i] >= 0) {
        pfds[n] = {fds[i], POLLIN, 0};
        which[n++] = i;
      }
    }
    if (n == 0 && exited) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    const int wait_ms =
        result.timed_out ? 20 : static_cast<int>(std::clamp<int64_t>(left.count(), 1, 50));
    if (n > 0) {
      ::poll(pfds, static_cast<nfds_t>(n), wait_ms);
      for (int k = 0; k < n; ++k) {
        if (!(pfds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const int i = which[k];
        const ssize_t got = ::read(fds[i], buf, sizeof(buf));
        if (got <= 0) {
          if (got < 0 && errno == EINTR) continue;
          fds[i] = -1;  // closed by the Pipe destructors
          continue;
        }
        const size_t room = static_cast<size_t>(c.max_output_bytes) -
                            std::min(sinks[i]->size(), static_cast<size_t>(c.max_output_bytes));
        sinks[i]->append(buf, std::min(room, static_cast<size_t>(got)));
        if (static_cast<size_t>(got) > room) *truncated[i] = true;
      }
    } else {
      ::usleep(static_cast<useconds_t>(wait_ms) * 1000);
    }
    if (!exited) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        exited = true;
        // Descendants may still hold the pipes; the group goes with the leader.
        ::kill(-pid, SIGKILL);
      }
    }
    if (result.timed_out && exited) {
      // Drain what is buffered, but never wait on a pipe after the deadline.
      for (int i = 0; i < 2; ++i) {
        if (fds[i] < 0) continue;
        ::fcntl(fds[i], F_SETFL, O_NONBLOCK);
        ssize_t got;
        while ((got = ::read(fds[i], buf, sizeof(buf))) > 0) {
          const size_t room = static_cast<size_t>(c.max_output_bytes) -
                              std::min(sinks[i]->size(), static_cast<size_t>(c.max_output_bytes));
          sinks[i]->append(buf, std::min(room, static_cast<size_t>(got)));
        }
        fds[i] = -1;
      }
      break;
    }
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string exec_msg;
  ssize_t got;
  while ((got = ::read(exec_err.fd[0], buf, sizeof(buf))) > 0)
    exec_msg.append(buf, static_cast<size_t>(got));
  if (!exec_msg.empty()) return Unavailable(exec_msg);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  // bwrap reports a signalled payload as exit 128+N; keep that visible as a signal too.
  if (result.exit_code > 128 && result.exit_code < 160) {
    result.term_signal = result.exit_code - 128;
  }
  return result;
}

}  // namespace allot::tools
