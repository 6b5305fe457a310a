// Rollout transport benchmark: trajectory ingest at the learner from 4 worker processes over
// loopback (small ~1 KB and 8k-token trajectories), and the time from a worker's death to the
// re-dispatch of its episodes.
//
//   allot_rollout_bench [--workers 4] [--small 200000] [--large 20000] [--trials 3]
//                       [--redispatch <trials>] [--warmup 1] [--unacked-mb <MiB>]
//
// --small 0 / --large 0 / --redispatch 0 skip a part (e.g. to count instructions per
// trajectory under callgrind from the difference of two runs).
//
// Targets: >= 50k small trajectories/s, >= 1 GB/s for large ones, re-dispatch < 2 s.
// The workers run a "blob" env that returns a prebuilt trajectory, so the figures measure the
// worker's conversion to the wire message, the transport, chunking, validation and ledger, not
// an env.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "rollout/dispatcher.h"
#include "rollout/malloc_tuning.h"
#include "rollout/worker.h"

namespace allot::rollout {
namespace {

using Clock = std::chrono::steady_clock;

struct BlobConfig {
  int tokens = 100;
  void Describe(config::Visitor& v) { v.Field("tokens", tokens, {.min = 0, .max = 1 << 22}); }
};

// Returns a fixed trajectory: a short masked prompt and a trainable segment of `tokens` ids.
class BlobEnv : public envs::runtime::Env {
 public:
  explicit BlobEnv(const BlobConfig& cfg) {
    envs::runtime::Segment prompt;
    prompt.role = envs::runtime::SegmentRole::kPrompt;
    for (int i = 0; i < 16; ++i) prompt.ids.push_back(1000 + i);
    envs::runtime::Segment policy;
    policy.role = envs::runtime::SegmentRole::kPolicy;
    policy.trainable = true;
    for (int i = 0; i < cfg.tokens; ++i) {
      policy.ids.push_back((i * 7919) % 151000);
      policy.logprobs.push_back(-0.01f * static_cast<float>(i % 100));
    }
    trajectory_.segments = {std::move(prompt), std::move(policy)};
    trajectory_.SetReward("accuracy", 1.0);
    trajectory_.reward = 1.0;
    trajectory_.usage.total.completion_tokens = cfg.tokens;
  }
  Result<envs::runtime::Trajectory> Run(const envs::runtime::EpisodeInput& in) override {
    if (in.dataset_item == "sleep") {
      while (!in.Cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return trajectory_;
  }

 private:
  envs::runtime::Trajectory trajectory_;
};

int RunWorker(const char* yaml) {
  auto node = config::ParseYaml(yaml, "<argv>");
  WorkerConfig cfg;
  Status s = node.ok() ? config::Load(*node, cfg) : node.status();
  EnvRegistry registry;
  registry.Register("blob",
                    [](const std::string& text) -> Result<std::unique_ptr<envs::runtime::Env>> {
                      BlobConfig c;
                      if (!text.empty()) {
                        ALLOT_ASSIGN_OR_RETURN(auto n, config::ParseYaml(text, "<env_config>"));
                        ALLOT_RETURN_IF_ERROR(config::Load(n, c));
                      }
                      return std::unique_ptr<envs::runtime::Env>(new BlobEnv(c));
                    });
  if (s.ok()) s = RunRolloutWorker(cfg, registry);
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return s.ok() ? 0 : 1;
}

struct Worker {
  pid_t pid = -1;
  std::string address;
};

std::string
    g_self;  // this executable, resolved once (valgrind-safe, unlike exec of /proc/self/exe)

int g_unacked_mb = 0;  // worker max_unacked_bytes in MiB (0: the worker's default)

Worker Spawn(int index) {
  const std::string port_file =
      "/tmp/allot_rollout_bench_" + std::to_string(getpid()) + "_" + std::to_string(index);
  unlink(port_file.c_str());
  const std::string yaml =
      "{listen: \"127.0.0.1:0\", metrics_listen: \"\", capacity: 4096, "
      "threads: 2, drain_timeout_s: 0, port_file: \"" +
      port_file + "\"" +
      (g_unacked_mb > 0 ? ", max_unacked_bytes: " + std::to_string(int64_t{g_unacked_mb} << 20)
                        : std::string()) +
      "}";
  Worker w;
  w.pid = fork();
  if (w.pid == 0) {
    execl(g_self.c_str(), "allot_rollout_bench", "--worker", yaml.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 12000 && w.address.empty(); ++i) {
    std::ifstream in(port_file);
    std::getline(in, w.address);
    if (w.address.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  unlink(port_file.c_str());
  return w;
}

std::vector<v1::EpisodeRequest> Requests(const std::string& prefix, int n, int tokens,
                                         const std::string& item = "") {
  std::vector<v1::EpisodeRequest> reqs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto& r = reqs[static_cast<size_t>(i)];
    r.set_episode_id(prefix + std::to_string(i));
    r.set_env("blob");
    r.set_env_config("{tokens: " + std::to_string(tokens) + "}");
    r.set_dataset_item(item);
  }
  return reqs;
}

// CPU seconds (user + system) a process has used so far; pid 0: this process.
double CpuSeconds(pid_t pid) {
  if (pid == 0) {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  }
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(f.c_str());  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double WorkersCpuSeconds(const std::vector<Worker>& workers) {
  double s = 0;
  for (const auto& w : workers) s += CpuSeconds(w.pid);
  return s;
}

void Ingest(Dispatcher& d, const std::vector<Worker>& workers, const char* label, int n, int tokens,
            int trial) {
  auto reqs = Requests(std::string(label) + std::to_string(trial) + "-", n, tokens);
  const int64_t bytes0 = d.stats().bytes_received;
  const double learner0 = CpuSeconds(0);
  const double workers0 = WorkersCpuSeconds(workers);
  const auto t0 = Clock::now();
  if (!d.Submit(std::move(reqs)).ok()) std::abort();
  int got = 0;
  size_t traj_bytes = 0;
  while (got < n) {
    auto f = d.Next(std::chrono::seconds(120));
    if (!f) {
      std::fprintf(stderr, "timed out after %d of %d\n", got, n);
      std::exit(1);
    }
    if (got == 0) traj_bytes = f->trajectory.ByteSizeLong();
    ++got;
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double bytes = static_cast<double>(d.stats().bytes_received - bytes0);
  // CPU per trajectory on each side (the learner's includes this loop, i.e. the trainer's
  // Next(); requests are built before the clock starts).
  const double learner_us = (CpuSeconds(0) - learner0) * 1e6 / n;
  const double workers_us = (WorkersCpuSeconds(workers) - workers0) * 1e6 / n;
  std::printf(
      "ingest %-5s trial %d: %d trajectories of %zu B in %.2f s: %.0f traj/s, %.1f MB/s; CPU per "
      "trajectory: learner %.1f us, workers %.1f us\n",
      label, trial, n, traj_bytes, s, n / s, bytes / s / 1e6, learner_us, workers_us);
}

int RunBench(int argc, char** argv) {
  int n_workers = 4;
  int small = 200000;
  int large = 20000;
  int trials = 3;
  int redispatch = -1;
  int warmup = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--workers") n_workers = value;
    if (flag == "--small") small = value;
    if (flag == "--large") large = value;
    if (flag == "--trials") trials = value;
    if (flag == "--redispatch") redispatch = value;
    if (flag == "--unacked-mb") g_unacked_mb = value;
    if (flag == "--warmup") warmup = value;
  }
  if (redispatch < 0) redispatch = trials;
  char self[4096] = {0};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  g_self = len > 0 ? std::string(self, static_cast<size_t>(len)) : std::string(argv[0]);
  std::printf("allot rollout bench: %d worker processes on loopback, %u hardware threads\n",
              n_workers, std::thread::hardware_concurrency());
  std::vector<Worker> workers;
  DispatcherConfig dc;
  dc.heartbeat_interval_ms = 250;
  dc.missed_heartbeats = 3;
  dc.max_buffered = 1 << 16;
  for (int i = 0; i < n_workers; ++i) {
    workers.push_back(Spawn(i));
    dc.workers.push_back(workers.back().address);
  }
  auto d = Dispatcher::Create(dc);
  if (!d.ok() || !(*d)->WaitForWorkers(n_workers, std::chrono::seconds(60))) {
    std::fprintf(stderr, "workers did not come up\n");
    return 1;
  }
  // Warm-up rounds (printed as trial -1) pay the processes' first touch of their buffers.
  for (int t = -warmup; t < trials && small > 0; ++t) Ingest(**d, workers, "1KB", small, 120, t);
  for (int t = -warmup; t < trials && large > 0; ++t) Ingest(**d, workers, "8k", large, 8192, t);

  // Worker death -> re-dispatch: fill every worker with episodes that never finish, SIGKILL
  // one, and time until the dispatcher has sent its episodes elsewhere.
  for (int t = 0; t < redispatch; ++t) {
    auto reqs = Requests("sleep" + std::to_string(t) + "-", 8 * n_workers, 1, "sleep");
    const int64_t before = (*d)->stats().redispatched;
    if (!(*d)->Submit(reqs).ok()) return 1;
    while ((*d)->stats().in_flight < 8 * n_workers) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Worker& victim = workers[static_cast<size_t>(t % n_workers)];
    const auto t0 = Clock::now();
    kill(victim.pid, SIGKILL);
    while ((*d)->stats().redispatched == before)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    waitpid(victim.pid, nullptr, 0);
    std::printf("re-dispatch trial %d: kill -9 -> episodes re-dispatched in %.1f ms\n", t, ms);
    victim = Spawn(100 + t);
    (*d)->AddWorker(victim.address);
  }
  (*d)->Shutdown();
  // SIGTERM: the workers drain and exit normally (so that profilers write their data).
  for (auto& w : workers) {
    if (w.pid > 0) kill(w.pid, SIGTERM);
  }
  for (auto& w : workers) {
    if (w.pid > 0) waitpid(w.pid, nullptr, 0);
  }
  return 0;
}

}  // namespace
}  // namespace allot::rollout

int main(int argc, char** argv) {
  // The same process-wide allocator settings as `allot rollout-worker` and a learner that only
  // streams (the library no longer sets them; rollout/malloc_tuning.h).
  if (argc == 3 && std::strcmp(argv[1], "--worker") == 0) {
    allot::rollout::KeepFreedMemoryForReuse(/*max_arenas=*/1);
    return allot::rollout::RunWorker(argv[2]);
  }
  allot::rollout::KeepFreedMemoryForReuse(/*max_arenas=*/2);
  signal(SIGPIPE, SIG_IGN);
  return allot::rollout::RunBench(argc, argv);
}
