#include "rollout/worker.h"

#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "core/atomic_file.h"
#include "rollout/security.h"

namespace allot::rollout {
namespace {

volatile sig_atomic_t g_stop_signal = 0;

void OnStopSignal(int sig) { g_stop_signal = sig; }

// "host:port" -> (host, port); host may be "[v6]".
Result<std::pair<std::string, int>> SplitHostPort(const std::string& address, const char* field) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    return InvalidArgument(std::string(field) + ": '" + address + "' is not host:port");
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  try {
    size_t used = 0;
    port = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    return InvalidArgument(std::string(field) + ": '" + address + "' has no numeric port");
  }
  if (port < 0 || port > 65535) return InvalidArgument(std::string(field) + ": port out of range");
  return std::make_pair(host, port);
}

}  // namespace

Result<std::unique_ptr<WorkerServer>> WorkerServer::Start(const WorkerConfig& config,
                                                          const EnvRegistry* registry,
                                                          bool in_process) {
  if (config.chunk_bytes * 2 > config.max_message_bytes) {
    return InvalidArgument("rollout.worker.chunk_bytes: must be at most max_message_bytes / 2");
  }
  if (!in_process) ALLOT_RETURN_IF_ERROR(CheckBindPolicy(config.listen, config.auth));
  std::unique_ptr<WorkerServer> w(new WorkerServer());
  w->config_ = config;
  w->service_ = std::make_unique<WorkerService>(config, registry);

  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config.max_message_bytes));
  int port = 0;
  if (!in_process) {
    ALLOT_ASSIGN_OR_RETURN(auto creds, MakeServerCredentials(config.auth));
    builder.AddListeningPort(config.listen, creds, &port);
  }
  builder.RegisterService(w->service_.get());
  w->server_ = builder.BuildAndStart();
  if (w->server_ == nullptr || (!in_process && port == 0)) {
    return Unavailable("rollout.worker.listen: cannot bind '" + config.listen + "'");
  }
  if (!in_process) {
    ALLOT_ASSIGN_OR_RETURN(auto hp, SplitHostPort(config.listen, "rollout.worker.listen"));
    const std::string host = config.listen.front() == '[' ? "[" + hp.first + "]" : hp.first;
    w->address_ = host + ":" + std::to_string(port);
  }

  if (!config.metrics_listen.empty()) {
    ALLOT_ASSIGN_OR_RETURN(auto hp,
                           SplitHostPort(config.metrics_listen, "rollout.worker.metrics_listen"));
    w->http_ = std::make_unique<httplib::Server>();
    WorkerService* service = w->service_.get();
    w->http_->Get("/metrics", [service](const httplib::Request&, httplib::Response& res) {
      res.set_content(service->RenderMetrics(), "text/plain; version=0.0.4");
    });
    int mport = hp.second;
    if (mport == 0) {
      mport = w->http_->bind_to_any_port(hp.first);
    } else if (!w->http_->bind_to_port(hp.first, mport)) {
      mport = -1;
    }
    if (mport <= 0) {
      w->server_->Shutdown();
      return Unavailable("rollout.worker.metrics_listen: cannot bind '" + config.metrics_listen +
                         "'");
    }
    w->metrics_port_ = mport;
    httplib::Server* http = w->http_.get();
    w->http_thread_ = std::thread([http] { http->listen_after_bind(); });
  }
  if (!config.port_file.empty() && !in_process) {
    if (Status s = WriteFileAtomic(config.port_file, w->address_ + "\n"); !s.ok()) {
      return Unavailable("rollout.worker.port_file: " + s.message());
    }
  }
  return w;
}

WorkerServer::~WorkerServer() { Shutdown(); }

std::shared_ptr<grpc::Channel> WorkerServer::InProcessChannel() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes));
  return server_->InProcessChannel(args);
}

void WorkerServer::Drain(std::chrono::milliseconds timeout) {
  service_->BeginDrain(timeout);
  const auto give_up = std::chrono::steady_clock::now() + timeout + std::chrono::seconds(2);
  while (!service_->Drained() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void WorkerServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (http_) {
    http_->stop();
    if (http_thread_.joinable()) http_thread_.join();
  }
  // A Start that failed half-way (unreadable PEM, bind error) leaves parts unset.
  if (service_) service_->Shutdown();
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
  }
}

Status RunRolloutWorker(const WorkerConfig& config) {
  return RunRolloutWorker(config, EnvRegistry::Global());
}

Status RunRolloutWorker(const WorkerConfig& config, const EnvRegistry& registry) {
  g_stop_signal = 0;
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_term = {};
  struct sigaction old_int = {};
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGINT, &sa, &old_int);
  signal(SIGPIPE, SIG_IGN);

  auto started = WorkerServer::Start(config, &registry);
  if (!started.ok()) {
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGINT, &old_int, nullptr);
    return started.status();
  }
  std::unique_ptr<WorkerServer> worker = std::move(started).value();
  std::fprintf(stderr, "allot rollout-worker %s listening on %s, metrics port %d\n",
               worker->service().worker_id().c_str(), worker->address().c_str(),
               worker->metrics_port());
  while (g_stop_signal == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::fprintf(stderr, "allot rollout-worker: signal %d, draining\n",
               static_cast<int>(g_stop_signal));
  worker->Drain(std::chrono::milliseconds(static_cast<int64_t>(config.drain_timeout_s * 1000)));
  worker->Shutdown();
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  return Status::Ok();
}

}  // namespace allot::rollout
