// Running a rollout worker: the gRPC server around WorkerService, /metrics over HTTP, and the
// `allot rollout-worker` entry point with graceful drain on SIGTERM.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "rollout/config.h"
#include "rollout/env_registry.h"
#include "rollout/worker_service.h"

namespace httplib {
class Server;
}

namespace allot::rollout {

// Owns a started worker. Thread-safe to query; Shutdown() once.
class WorkerServer {
 public:
  // Binds config.listen (after the bind-policy check) and config.metrics_listen. With
  // `in_process`, no network port is opened: connect through InProcessChannel(). `registry`
  // must outlive the server.
  static Result<std::unique_ptr<WorkerServer>> Start(const WorkerConfig& config,
                                                     const EnvRegistry* registry,
                                                     bool in_process = false);
  ~WorkerServer();
  WorkerServer(const WorkerServer&) = delete;
  WorkerServer& operator=(const WorkerServer&) = delete;

  // The gRPC address actually bound ("127.0.0.1:50123"); empty in-process.
  const std::string& address() const { return address_; }
  // The /metrics port, or 0 when disabled.
  int metrics_port() const { return metrics_port_; }
  std::shared_ptr<grpc::Channel> InProcessChannel();
  WorkerService& service() { return *service_; }

  // Stops accepting, waits until the learner acknowledged everything or `timeout` passed (then
  // unfinished episodes are returned), and a short grace period for the last messages.
  void Drain(std::chrono::milliseconds timeout);
  void Shutdown();

 private:
  WorkerServer() = default;
  WorkerConfig config_;
  std::unique_ptr<WorkerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<httplib::Server> http_;
  std::thread http_thread_;
  std::string address_;
  int metrics_port_ = 0;
  bool shut_down_ = false;
};

// `allot rollout-worker`: serves until SIGTERM or SIGINT, then drains (finishes in-flight
// episodes within drain_timeout_s, returns the rest) and exits. Uses EnvRegistry::Global()
// unless a registry is given.
Status RunRolloutWorker(const WorkerConfig& config);
Status RunRolloutWorker(const WorkerConfig& config, const EnvRegistry& registry);

}  // namespace allot::rollout
