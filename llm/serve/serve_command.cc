#include "llm/serve/serve_command.h"

#include <pthread.h>
#include <signal.h>

#include <thread>

#include "llm/serve/server.h"
#include "models/cpu_threads.h"

namespace allot::llm::serve {

Status RunServe(const ServeConfig& config,
                const std::function<void(const std::string& url)>& ready) {
  // Signals are taken by sigwait below, never by an arbitrary (torch or HTTP) thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (config.threads > 0) models::SetCpuThreads(config.threads);
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(config));
  ALLOT_ASSIGN_OR_RETURN(int port, server->Bind());
  (void)port;
  Status listened;
  std::thread http([&] { listened = server->Listen(); });
  if (ready) ready(server->url());
  int sig = 0;
  sigwait(&signals, &sig);
  server->Stop();
  http.join();
  server->engine().Shutdown();
  return listened;
}

}  // namespace allot::llm::serve
