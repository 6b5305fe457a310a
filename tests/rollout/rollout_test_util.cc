#include "tests/rollout/rollout_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

namespace allot::rollout::testing {

v1::EpisodeRequest EchoRequest(const std::string& id, const std::string& env_config,
                               const std::string& item) {
  v1::EpisodeRequest r;
  r.set_episode_id(id);
  r.set_env("echo");
  r.set_env_config(env_config);
  r.set_dataset_item(item);
  r.mutable_sampling()->set_temperature(1.0f);
  r.mutable_sampling()->set_top_p(1.0f);
  r.mutable_sampling()->set_max_tokens(64);
  return r;
}

std::vector<v1::EpisodeRequest> EchoRequests(const std::string& prefix, int n,
                                             const std::string& env_config) {
  std::vector<v1::EpisodeRequest> out;
  for (int i = 0; i < n; ++i) out.push_back(EchoRequest(prefix + std::to_string(i), env_config));
  return out;
}

std::vector<FinishedEpisode> Collect(Dispatcher& d, size_t n, std::chrono::milliseconds timeout) {
  std::vector<FinishedEpisode> out;
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n && std::chrono::steady_clock::now() < until) {
    auto f = d.Next(std::chrono::milliseconds(50));
    if (f.has_value()) out.push_back(std::move(*f));
  }
  return out;
}

std::unique_ptr<WorkerProcess> WorkerProcess::Start(const std::string& extra_yaml) {
  auto w = std::make_unique<WorkerProcess>();
  char tmpl[] = "/tmp/allot_rollout_port_XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return nullptr;
  close(fd);
  unlink(tmpl);
  w->port_file_ = tmpl;
  std::string yaml = "{port_file: \"" + w->port_file_ + "\"";
  if (!std::regex_search(extra_yaml, std::regex("(^|[ ,{])listen:"))) {
    yaml += ", listen: \"127.0.0.1:0\"";
  }
  if (extra_yaml.find("metrics_listen:") == std::string::npos) yaml += ", metrics_listen: \"\"";
  if (!extra_yaml.empty()) yaml += ", " + extra_yaml;
  yaml += "}";
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test process
    execl(ALLOT_ROLLOUT_TEST_WORKER, ALLOT_ROLLOUT_TEST_WORKER, yaml.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  w->pid_ = pid;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    std::ifstream in(w->port_file_);
    std::string address;
    if (in && std::getline(in, address) && !address.empty()) {
      w->address_ = address;
      return w;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      w->exited_ = true;
      return w;  // address empty: the caller sees it failed
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return w;
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (!port_file_.empty()) unlink(port_file_.c_str());
}

void WorkerProcess::Signal(int sig) {
  if (pid_ > 0 && !exited_) kill(pid_, sig);
}

int WorkerProcess::Wait(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return -WTERMSIG(status);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1000;
}

TcpProxy::TcpProxy(const std::string& target) {
  target_port_ = std::stoi(target.substr(target.rfind(':') + 1));
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  listen(listen_fd_, 16);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  shutdown(listen_fd_, SHUT_RDWR);
  close(listen_fd_);
  accept_thread_.join();
  DropAll();
  std::vector<std::thread> pumps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pumps.swap(pumps_);
  }
  for (auto& t : pumps) t.join();
}

void TcpProxy::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) continue;
    const int upstream = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_port_));
    if (connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(client);
      close(upstream);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(client);
    fds_.push_back(upstream);
    pumps_.emplace_back([this, client, upstream] { Pump(client, upstream); });
  }
}

void TcpProxy::Pump(int a, int b) {
  char buf[1 << 16];
  pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  for (;;) {
    if (poll(p, 2, 100) < 0) break;
    if (stop_) break;
    bool closed = false;
    for (int i = 0; i < 2; ++i) {
      if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t n = read(p[i].fd, buf, sizeof(buf));
        if (n <= 0) {
          closed = true;
          break;
        }
        ssize_t off = 0;
        while (off < n) {
          const ssize_t w =
              send(p[1 - i].fd, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
          if (w <= 0) {
            closed = true;
            break;
          }
          off += w;
        }
      }
    }
    if (closed) break;
  }
  shutdown(a, SHUT_RDWR);
  shutdown(b, SHUT_RDWR);
}

void TcpProxy::DropAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : fds_) {
    // RST rather than FIN: the peers see a broken connection, as with a network fault.
    linger l{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    shutdown(fd, SHUT_RDWR);
  }
  fds_.clear();
}

}  // namespace allot::rollout::testing
