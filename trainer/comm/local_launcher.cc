#include "trainer/comm/local_launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <thread>

extern char** environ;

namespace allot::trainer::comm {
namespace {

// The ranks that the signal handler forwards to (async-signal-safe: a fixed array).
constexpr int kMaxRanks = 1024;
pid_t g_ranks[kMaxRanks];
std::atomic<int> g_num_ranks{0};
volatile std::sig_atomic_t g_forwarded_signal = 0;

void ForwardSignal(int sig) {
  g_forwarded_signal = sig;
  const int n = g_num_ranks.load();
  for (int i = 0; i < n; ++i) {
    if (g_ranks[i] > 0) kill(g_ranks[i], sig);
  }
}

bool IsDistVariable(const char* entry) {
  for (const char* name : {"RANK=", "LOCAL_RANK=", "WORLD_SIZE=", "LOCAL_WORLD_SIZE=",
                           "MASTER_ADDR=", "MASTER_PORT=", "GROUP_RANK="}) {
    if (std::strncmp(entry, name, std::strlen(name)) == 0) return true;
  }
  return false;
}

std::vector<std::string> RankEnvironment(int rank, const LaunchOptions& options, int port) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!IsDistVariable(*e)) env.emplace_back(*e);
  }
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("GROUP_RANK=0");
  env.push_back("WORLD_SIZE=" + std::to_string(options.nproc));
  env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(options.nproc));
  env.push_back("MASTER_ADDR=" + options.master_addr);
  env.push_back("MASTER_PORT=" + std::to_string(port));
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

std::string Describe(int rank, int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return "rank " + std::to_string(rank) + " was killed by signal " +
           std::to_string(WTERMSIG(wait_status)) + " (" + strsignal(WTERMSIG(wait_status)) + ")";
  }
  return "rank " + std::to_string(rank) + " exited with status " +
         std::to_string(ExitCodeOf(wait_status));
}

}  // namespace

Result<int> FreeTcpPort(const std::string& addr) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Internal(std::string("socket: ") + std::strerror(errno));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    close(fd);
    return InvalidArgument("MASTER_ADDR '" + addr + "': not an IPv4 address");
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    const std::string err = std::strerror(errno);
    close(fd);
    return Unavailable("bind " + addr + ":0: " + err);
  }
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  close(fd);
  return static_cast<int>(ntohs(sa.sin_port));
}

std::vector<std::string> WithoutOption(const std::vector<std::string>& argv,
                                       const std::string& name) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0 && argv[i] == name) {
      ++i;  // and its value
      continue;
    }
    if (i > 0 && argv[i].rfind(name + "=", 0) == 0) continue;
    out.push_back(argv[i]);
  }
  return out;
}

namespace {

// One attempt: every rank started, waited for, the others stopped after the first failure.
Result<LaunchResult> LaunchOnce(const std::vector<std::string>& argv,
                                const LaunchOptions& options) {
  if (argv.empty()) return InvalidArgument("launch: empty command");
  int port = options.master_port;
  if (port == 0) {
    ALLOT_ASSIGN_OR_RETURN(port, FreeTcpPort(options.master_addr));
  }
  // Everything exec needs is built before fork: the child only calls async-signal-safe functions.
  std::vector<std::string> args = argv;
  std::vector<char*> c_args = CStrings(args);
  std::vector<std::vector<std::string>> envs;
  std::vector<std::vector<char*>> c_envs;
  for (int r = 0; r < options.nproc; ++r) envs.push_back(RankEnvironment(r, options, port));
  for (auto& e : envs) c_envs.push_back(CStrings(e));

  struct sigaction forward {
  }, old_int{}, old_term{}, old_hup{};
  forward.sa_handler = ForwardSignal;
  sigemptyset(&forward.sa_mask);
  g_forwarded_signal = 0;
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);
  auto restore = [&] {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    g_num_ranks.store(0);
  };

  std::vector<pid_t> pids;
  for (int r = 0; r < options.nproc; ++r) {
    const pid_t parent = getpid();
    // Signals stay blocked across fork: a SIGTERM sent to a rank before it has exec'd must not
    // run the launcher's forwarding handler in the child (which would then exec and live on);
    // the child restores the default actions first and only then unblocks.
    sigset_t forwarded, saved_mask;
    sigemptyset(&forwarded);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&forwarded, sig);
    pthread_sigmask(SIG_BLOCK, &forwarded, &saved_mask);
    const pid_t pid = fork();
    if (pid != 0) pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
    if (pid < 0) {
      const std::string err = std::strerror(errno);
      for (pid_t p : pids) kill(p, SIGKILL);
      for (pid_t p : pids) waitpid(p, nullptr, 0);
      restore();
      return Internal("fork rank " + std::to_string(r) + ": " + err);
    }
    if (pid == 0) {
      // A rank does not outlive its launcher.
      // Default actions, then an empty mask (blocked and ignored signals survive exec): a rank
      // is stoppable by SIGTERM/SIGINT whatever the launching thread had blocked or ignored.
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      pthread_sigmask(SIG_SETMASK, &none, nullptr);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(128 + SIGTERM);
      execve(c_args[0], c_args.data(), c_envs[r].data());
      const char msg[] = "allot launch: exec failed\n";
      (void)!write(2, msg, sizeof(msg) - 1);
      _exit(127);
    }
    pids.push_back(pid);
    g_ranks[r] = pid;
    g_num_ranks.store(r + 1);
  }

  LaunchResult result;
  std::vector<bool> done(pids.size(), false);
  size_t remaining = pids.size();
  std::chrono::steady_clock::time_point kill_at{};
  bool stopping = false;
  while (remaining > 0) {
    bool reaped = false;
    // The failures of this pass: a rank killed by a signal is the cause rather than a peer that
    // exited with an error because it lost that rank (Gloo's connection reset).
    bool cause_was_signal = false;
    for (size_t r = 0; r < pids.size(); ++r) {
      if (done[r]) continue;
      int status = 0;
      const pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == 0) continue;
      if (got < 0 && errno == EINTR) continue;
      done[r] = true;
      g_ranks[r] = -1;
      --remaining;
      reaped = true;
      const int code = got < 0 ? 1 : ExitCodeOf(status);
      if (code == 0 || stopping) continue;
      const bool signal = got >= 0 && WIFSIGNALED(status);
      if (result.failed_rank < 0 || (signal && !cause_was_signal)) {
        result.failed_rank = static_cast<int>(r);
        result.exit_code = code;
        result.message = got < 0 ? "rank " + std::to_string(r) + ": waitpid failed"
                                 : Describe(static_cast<int>(r), status);
        cause_was_signal = signal;
      }
    }
    if (result.failed_rank >= 0 && !stopping && remaining > 0) {
      stopping = true;
      for (size_t r = 0; r < pids.size(); ++r) {
        if (!done[r]) kill(pids[r], SIGTERM);
      }
      kill_at = std::chrono::steady_clock::now() +
                std::chrono::milliseconds(static_cast<int64_t>(options.stop_grace_s * 1000));
    }
    if (stopping && std::chrono::steady_clock::now() >= kill_at) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (!done[r]) kill(pids[r], SIGKILL);
      }
    }
    if (!reaped && remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  restore();
  return result;
}

}  // namespace

Result<LaunchResult> LaunchLocalRanks(const std::vector<std::string>& argv,
                                      const LaunchOptions& options) {
  if (options.nproc < 1 || options.nproc > kMaxRanks) {
    return InvalidArgument("--nproc " + std::to_string(options.nproc) + ": must be in [1, " +
                           std::to_string(kMaxRanks) + "]");
  }
  if (options.max_restarts < 0) {
    return InvalidArgument("max restarts " + std::to_string(options.max_restarts) +
                           ": must be >= 0");
  }
  if (g_num_ranks.load() != 0) return Internal("launch: a launch is already running");
  std::vector<std::string> command = argv;
  std::vector<LaunchResult> restarted;
  for (int attempt = 0;; ++attempt) {
    ALLOT_ASSIGN_OR_RETURN(LaunchResult result, LaunchOnce(command, options));
    // A stop the launcher was asked for (Ctrl-C, the scheduler's SIGTERM) is not a failure to
    // recover from.
    const bool stopped_by_signal = g_forwarded_signal != 0;
    if (result.exit_code == 0 || stopped_by_signal || attempt >= options.max_restarts) {
      result.restarted = std::move(restarted);
      return result;
    }
    if (options.restart) {
      Result<std::vector<std::string>> next = options.restart(result, attempt + 1);
      if (!next.ok()) {
        result.message += "; not restarted: " + next.status().message();
        result.restarted = std::move(restarted);
        return result;
      }
      command = std::move(*next);
    }
    restarted.push_back(std::move(result));
  }
}

}  // namespace allot::trainer::comm
