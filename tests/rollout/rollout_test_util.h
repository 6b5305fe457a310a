// Helpers shared by the rollout tests: requests, collecting results, worker processes and a
// TCP proxy whose connections can be cut (to drop streams for real).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rollout/dispatcher.h"

namespace allot::rollout::testing {

v1::EpisodeRequest EchoRequest(const std::string& id, const std::string& env_config = "",
                               const std::string& item = "{\"q\": \"2+2\"}");
std::vector<v1::EpisodeRequest> EchoRequests(const std::string& prefix, int n,
                                             const std::string& env_config = "");

// Pops finished episodes until `n` arrived or the timeout passed.
std::vector<FinishedEpisode> Collect(Dispatcher& d, size_t n, std::chrono::milliseconds timeout);

// A child process running allot_rollout_test_worker with the given YAML config.
class WorkerProcess {
 public:
  // Starts the worker on 127.0.0.1:0 (unless the YAML sets listen) and waits for its port.
  static std::unique_ptr<WorkerProcess> Start(const std::string& extra_yaml);
  ~WorkerProcess();
  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Waits for exit; returns the exit code, or -signal, or -1000 on timeout.
  int Wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::string address_;
  std::string port_file_;
  bool exited_ = false;
};

// Forwards 127.0.0.1:<port()> to a target; DropAll() resets every open connection.
class TcpProxy {
 public:
  explicit TcpProxy(const std::string& target_host_port);
  ~TcpProxy();
  int port() const { return port_; }
  void DropAll();

 private:
  void AcceptLoop();
  void Pump(int a, int b);
  int listen_fd_ = -1;
  int port_ = 0;
  int target_port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> pumps_;
};

}  // namespace allot::rollout::testing
