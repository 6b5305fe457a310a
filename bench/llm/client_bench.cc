// Closed-loop load driver for allot::llm::Client: keeps --concurrency completions in flight
// against --url until --requests have finished, then prints one JSON line with requests/s,
// client CPU per request (user + sys of this process) and peak RSS.
//
//   allot_llm_bench --url http://127.0.0.1:PORT --requests 100000 --concurrency 64 --threads 1
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "llm/client.h"

namespace {

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double MaxRssMb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url = "http://127.0.0.1:8000";
  long total = 100000;
  int concurrency = 64;
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--url")) url = argv[i + 1];
    if (!std::strcmp(argv[i], "--requests")) total = std::atol(argv[i + 1]);
    if (!std::strcmp(argv[i], "--concurrency")) concurrency = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  allot::llm::EndpointConfig ep;
  ep.name = "bench";
  ep.base_url = url;
  ep.model = "bench";
  ep.params_b = 7;
  ep.limits.max_concurrency = concurrency;
  allot::llm::ClientOptions options;
  options.threads = threads;
  auto client = allot::llm::Client::Create({ep}, options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  allot::llm::CompletionRequest req;
  req.prompt = "Question: what is 2 + 2? Think step by step, then answer.";
  req.params.max_tokens = 16;
  req.params.temperature = 0.0;

  std::atomic<long> started{0}, finished{0}, errors{0};
  std::mutex mu;
  std::condition_variable cv;
  std::string first_error;
  std::function<void()> launch;
  launch = [&] {
    if (started.fetch_add(1) >= total) return;
    (*client)->Complete("bench", req, [&](allot::Result<allot::llm::Completion> r) {
      if (!r.ok() || r->choices.empty()) {
        if (errors.fetch_add(1) == 0) {
          std::lock_guard<std::mutex> lock(mu);
          first_error = r.ok() ? "no choices" : r.status().ToString();
        }
      }
      if (finished.fetch_add(1) + 1 == total) {
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_all();
      } else {
        launch();
      }
    });
  };
  // Warm up connections, then measure.
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < concurrency; ++i) launch();
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished.load() >= total; });
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  const auto usage = (*client)->usage();
  std::printf(
      "{\"client\":\"allot\",\"requests\":%ld,\"concurrency\":%d,\"threads\":%d,\"errors\":%ld,"
      "\"wall_s\":%.3f,\"cpu_s\":%.3f,\"req_per_s\":%.0f,\"req_per_cpu_s\":%.0f,"
      "\"cpu_us_per_req\":%.2f,\"max_rss_mb\":%.1f,\"energy_j\":%.4f}\n",
      total, concurrency, threads, errors.load(), wall, cpu, total / wall, total / cpu,
      cpu / total * 1e6, MaxRssMb(), usage.total.energy_j);
  if (errors.load() > 0) std::fprintf(stderr, "first error: %s\n", first_error.c_str());
  return errors.load() > 0 ? 1 : 0;
}
