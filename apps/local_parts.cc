#include "apps/local_parts.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "apps/allot_config.h"
#include "core/config/binder.h"

namespace allot::apps {
namespace fs = std::filesystem;

namespace {

// The loader's view of the local keys: `endpoints[i].serve` (every item, so that paths in errors
// keep their index) and `rollout.local_workers`.
struct ServeItem {
  LocalServe serve;
  void Describe(config::Visitor& v) { v.Field("serve", serve); }
};
struct LocalRollout {
  int local_workers = 0;
  double local_worker_start_timeout_s = 120.0;
  void Describe(config::Visitor& v) {
    v.Field("local_workers", local_workers,
            {.doc = "rollout workers started as `allot rollout-worker` processes",
             .min = 0,
             .max = 256});
    v.Field("local_worker_start_timeout_s", local_worker_start_timeout_s,
            {.doc = "seconds until a local worker must be serving", .min = 1.0});
  }
};
struct LocalKeys {
  std::vector<ServeItem> endpoints;
  LocalRollout rollout;
  void Describe(config::Visitor& v) {
    v.Field("endpoints", endpoints);
    v.Field("rollout", rollout);
  }
};

std::string Scalar(const config::ConfigNode& map, const char* key) {
  const config::ConfigNode* n = map.Find(key);
  return n != nullptr && n->is_scalar() ? n->scalar() : "";
}

// A relative model path: beside the recipe file that sets it when it is there (the recipes'
// convention for their prompt folders), else as given (the working directory).
std::string ResolveModelPath(const std::string& path, const config::Origin& origin) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  std::error_code ec;
  if (!origin.file.empty() && origin.file != "--set") {
    const fs::path beside = fs::path(origin.file).parent_path() / path;
    if (fs::is_directory(beside, ec)) return fs::absolute(beside, ec).lexically_normal().string();
  }
  return path;
}

// --- the signal handler's view of the children (async-signal-safe: a fixed array) ------------
constexpr int kMaxChildren = 512;
pid_t g_children[kMaxChildren];
std::atomic<int> g_num_children{0};
struct sigaction g_old_int {
}, g_old_term{};
bool g_handlers_installed = false;

void SleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

// SIGTERM to every child, SIGKILL to those alive after `grace_ms`, each reaped. Only
// async-signal-safe calls: the signal handler runs it too.
void StopChildren(long grace_ms) {
  const int n = g_num_children.load();
  for (int i = 0; i < n; ++i) {
    if (g_children[i] > 0) kill(g_children[i], SIGTERM);
  }
  for (long waited = 0;; waited += 20) {
    bool alive = false;
    for (int i = 0; i < n; ++i) {
      if (g_children[i] <= 0) continue;
      const pid_t got = waitpid(g_children[i], nullptr, WNOHANG);
      if (got == g_children[i] || (got < 0 && errno == ECHILD)) {
        g_children[i] = -1;
      } else {
        alive = true;
      }
    }
    if (!alive) return;
    if (waited >= grace_ms) break;
    SleepMs(20);
  }
  for (int i = 0; i < n; ++i) {
    if (g_children[i] <= 0) continue;
    kill(g_children[i], SIGKILL);
    waitpid(g_children[i], nullptr, 0);
    g_children[i] = -1;
  }
}

constexpr long kStopGraceMs = 5000;

// SIGINT / SIGTERM while local parts run: stop them, then die of the signal as before.
void OnSignal(int sig) {
  const char msg[] = "allot: stopping the run's local servers and workers\n";
  (void)!write(2, msg, sizeof(msg) - 1);
  StopChildren(kStopGraceMs);
  signal(sig, SIG_DFL);
  raise(sig);
}

void InstallHandlers() {
  if (g_handlers_installed) return;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  g_handlers_installed = true;
}

void RestoreHandlers() {
  if (!g_handlers_installed) return;
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  g_handlers_installed = false;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string LogTail(const std::string& path, int lines) {
  const std::string text = ReadFile(path);
  std::vector<std::string> all;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0; i < all.size();
       ++i) {
    out += "\n    " + all[i];
  }
  return out;
}

// GET http://127.0.0.1:PORT/health answers 200.
bool Healthy(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
    const std::string req = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[64] = {0};
      const ssize_t got = recv(fd, buf, sizeof(buf) - 1, 0);
      ok = got > 12 && std::strncmp(buf, "HTTP/1.", 7) == 0 && std::strncmp(buf + 9, "200", 3) == 0;
    }
  }
  close(fd);
  return ok;
}

std::string ExitDescription(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

}  // namespace

Result<LocalPartsConfig> ExtractLocalParts(config::ConfigNode& root) {
  LocalPartsConfig out;
  if (!root.is_map()) return out;
  config::ConfigNode view = config::ConfigNode::Map(root.origin());
  std::string errors;
  config::ConfigNode* endpoints = root.Find("endpoints");
  std::vector<size_t> served;
  if (endpoints != nullptr && endpoints->is_sequence()) {
    config::ConfigNode list = config::ConfigNode::Sequence(endpoints->origin());
    for (size_t i = 0; i < endpoints->items().size(); ++i) {
      config::ConfigNode& e = endpoints->items()[i];
      config::ConfigNode item = config::ConfigNode::Map(e.origin());
      const config::ConfigNode* serve = e.is_map() ? e.Find("serve") : nullptr;
      if (serve != nullptr) {
        const std::string at = "endpoints[" + std::to_string(i) + "]";
        item.Set("serve", *serve);
        served.push_back(i);
        // Keys a served endpoint would ignore, or that would break it, are errors.
        for (const char* key : {"base_url", "api_key", "api_key_env", "ca_file"}) {
          // An empty value is the default a resolved config prints (a run's config.yaml).
          if (const config::ConfigNode* n = e.Find(key);
              n != nullptr && !(n->is_scalar() && n->scalar().empty())) {
            errors += "\n  " + n->origin().ToString() + ": " + at + "." + key +
                      " has no effect with " + at + ".serve (" + serve->origin().ToString() +
                      "): the run serves this endpoint itself on a free loopback port, without a "
                      "key; remove one of them";
          }
        }
        const config::ConfigNode* name =
            serve->is_map() ? serve->Find("served_model_name") : nullptr;
        const std::string model = Scalar(e, "model");
        if (name != nullptr && name->is_scalar() && !model.empty() && name->scalar() != model) {
          errors += "\n  " + name->origin().ToString() + ": " + at + ".serve.served_model_name '" +
                    name->scalar() + "' differs from " + at + ".model '" + model +
                    "', the name requests send";
        }
      }
      list.items().push_back(std::move(item));
    }
    view.Set("endpoints", std::move(list));
  }
  config::ConfigNode* rollout = root.Find("rollout");
  if (rollout != nullptr && rollout->is_map()) {
    config::ConfigNode r = config::ConfigNode::Map(rollout->origin());
    for (const char* key : {"local_workers", "local_worker_start_timeout_s"}) {
      if (const config::ConfigNode* n = rollout->Find(key); n != nullptr) r.Set(key, *n);
    }
    view.Set("rollout", std::move(r));
  }
  if (!errors.empty()) return InvalidArgument("local endpoints:" + errors);
  LocalKeys keys;
  ALLOT_RETURN_IF_ERROR(config::Load(view, keys));
  for (size_t i : served) {
    config::ConfigNode& e = endpoints->items()[i];
    const config::ConfigNode* serve = e.Find("serve");
    LocalEndpoint le{i, Scalar(e, "name"), keys.endpoints[i].serve};
    const config::ConfigNode* model = serve->is_map() ? serve->Find("model") : nullptr;
    if (le.serve.model.empty()) {
      return InvalidArgument(serve->origin().ToString() + ": endpoints[" + std::to_string(i) +
                             "].serve.model: required (the model directory to serve)");
    }
    le.serve.model = ResolveModelPath(le.serve.model, model->origin());
    const std::string served_model = Scalar(e, "model");
    if (le.serve.served_model_name.empty()) {
      le.serve.served_model_name = served_model.empty() ? le.name : served_model;
    }
    out.endpoints.push_back(std::move(le));
    e.Erase("serve");
  }
  out.workers = keys.rollout.local_workers;
  out.worker_start_timeout_s = keys.rollout.local_worker_start_timeout_s;
  if (rollout != nullptr && rollout->is_map()) {
    rollout->Erase("local_workers");
    rollout->Erase("local_worker_start_timeout_s");
  }
  return out;
}

Result<std::string> WithLocalParts(const std::string& yaml, const LocalPartsConfig& local) {
  if (local.empty()) return yaml;
  try {
    YAML::Node root = YAML::Load(yaml);
    for (const LocalEndpoint& e : local.endpoints) {
      YAML::Node item = root["endpoints"][e.index];
      item.remove("base_url");
      LocalServe serve = e.serve;
      item["serve"] = YAML::Load(config::ToYaml(serve));
    }
    if (local.workers > 0) {
      root["rollout"]["local_workers"] = local.workers;
      root["rollout"]["local_worker_start_timeout_s"] = local.worker_start_timeout_s;
    }
    YAML::Emitter emit;
    emit << root;
    return std::string(emit.c_str()) + "\n";
  } catch (const YAML::Exception& e) {
    return Internal(std::string("writing the local parts into the resolved config: ") + e.what());
  }
}

Result<size_t> LocalParts::Spawn(const std::vector<std::string>& argv, const std::string& what,
                                 const std::string& log) {
  if (g_num_children.load() >= kMaxChildren) return Internal("too many local processes");
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable(log + ": " + std::strerror(errno));
  std::vector<std::string> args = argv;
  std::vector<char*> c_args = CStrings(args);
  const pid_t parent = getpid();
  // Signals stay blocked across fork, so that the child never runs this process's handler.
  sigset_t stop, saved;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, &saved);
  const pid_t pid = fork();
  if (pid == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlives the run, even a SIGKILLed one
    if (getppid() != parent) _exit(128 + SIGTERM);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(c_args[0], c_args.data());
    const char msg[] = "allot: exec failed\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
  }
  const int fork_errno = errno;
  if (pid > 0) {
    const int k = g_num_children.load();
    g_children[k] = pid;
    g_num_children.store(k + 1);
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  close(fd);
  if (pid < 0) return Internal("fork for " + what + ": " + std::strerror(fork_errno));
  children_.push_back({pid, what, log});
  return children_.size() - 1;
}

Result<std::unique_ptr<LocalParts>> LocalParts::Start(const LocalPartsConfig& local,
                                                      const Options& options, AllotConfig& cfg) {
  if (g_num_children.load() != 0) return Internal("local parts are already running");
  std::unique_ptr<LocalParts> parts(new LocalParts());
  std::error_code ec;
  const std::string exe = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) return Internal("cannot find this executable (/proc/self/exe)");
  fs::create_directories(options.log_dir, ec);
  if (ec) return Unavailable(options.log_dir + ": " + ec.message());
  InstallHandlers();
  using Clock = std::chrono::steady_clock;

  // Every server loads at once; then each is waited for.
  std::vector<size_t> servers;
  for (const LocalEndpoint& e : local.endpoints) {
    const LocalServe& s = e.serve;
    std::vector<std::string> argv = {exe,
                                     "serve",
                                     "--model",
                                     s.model,
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     "0",
                                     "--served-model-name",
                                     s.served_model_name,
                                     "--dtype",
                                     s.dtype,
                                     "--device",
                                     s.device,
                                     "--threads",
                                     std::to_string(s.threads),
                                     "--max-batch",
                                     std::to_string(s.max_batch),
                                     "--batch-wait-ms",
                                     std::to_string(s.batch_wait_ms),
                                     "--chat-template",
                                     s.chat_template};
    if (s.deterministic) argv.push_back("--deterministic");
    for (const std::string& a : s.adapters) {
      argv.push_back("--adapter");
      argv.push_back(a);
    }
    const std::string log = options.log_dir + "/" + options.log_prefix + "serve-" + e.name + ".log";
    ALLOT_ASSIGN_OR_RETURN(size_t k,
                           parts->Spawn(argv, "endpoint '" + e.name + "' (allot serve)", log));
    servers.push_back(k);
  }
  std::vector<size_t> workers;
  std::vector<std::string> addr_files;
  if (options.workers) {
    for (int w = 0; w < local.workers; ++w) {
      const std::string base =
          options.log_dir + "/" + options.log_prefix + "worker-" + std::to_string(w);
      fs::remove(base + ".addr", ec);
      std::vector<std::string> argv = {exe, "rollout-worker", "-c", options.recipe};
      for (const std::string& o : options.overrides) {
        argv.push_back("--set");
        argv.push_back(o);
      }
      // Its only learner is this process: when it stops, nothing waits for a drain.
      for (const std::string& o : {std::string("rollout.worker.metrics_listen=127.0.0.1:0"),
                                   "rollout.worker.port_file=" + base + ".addr",
                                   std::string("rollout.worker.drain_timeout_s=1")}) {
        argv.push_back("--set");
        argv.push_back(o);
      }
      argv.push_back("--listen");
      argv.push_back("127.0.0.1:0");
      ALLOT_ASSIGN_OR_RETURN(
          size_t k, parts->Spawn(argv, "local rollout worker " + std::to_string(w), base + ".log"));
      workers.push_back(k);
      addr_files.push_back(base + ".addr");
    }
  }

  // Fails naming the part and its log, with the log's last lines.
  auto failed = [&](const Child& c, const std::string& what) {
    return Unavailable(c.what + " " + what + "; its log " + c.log + " ends:" + LogTail(c.log, 8));
  };
  auto exited = [&](const Child& c) -> std::string {
    int status = 0;
    const pid_t got = waitpid(c.pid, &status, WNOHANG);
    return got == c.pid ? ExitDescription(status) : "";
  };
  static const std::regex kListening("allot serve: listening on http://127\\.0\\.0\\.1:(\\d+)");
  for (size_t i = 0; i < servers.size(); ++i) {
    const LocalEndpoint& e = local.endpoints[i];
    const Child& c = parts->children_[servers[i]];
    const auto deadline = Clock::now() + std::chrono::milliseconds(
                                             static_cast<int64_t>(e.serve.start_timeout_s * 1e3));
    int port = 0;
    while (true) {
      if (port == 0) {
        std::smatch m;
        const std::string text = ReadFile(c.log);
        if (std::regex_search(text, m, kListening)) port = std::stoi(m[1].str());
      }
      if (port != 0 && Healthy(port)) break;
      if (const std::string how = exited(c); !how.empty()) {
        return failed(c, how + " before it answered /health");
      }
      if (Clock::now() >= deadline) {
        return failed(c, "did not answer /health within " +
                             std::to_string(static_cast<int>(e.serve.start_timeout_s)) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    llm::EndpointConfig& endpoint = cfg.endpoints[e.index];
    endpoint.base_url = "http://127.0.0.1:" + std::to_string(port);
    if (endpoint.model.empty()) endpoint.model = e.serve.served_model_name;
  }
  for (size_t w = 0; w < workers.size(); ++w) {
    const Child& c = parts->children_[workers[w]];
    const auto deadline =
        Clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(local.worker_start_timeout_s * 1e3));
    std::string addr;
    while (true) {
      addr = ReadFile(addr_files[w]);
      while (!addr.empty() && (addr.back() == '\n' || addr.back() == ' ')) addr.pop_back();
      if (!addr.empty()) break;
      if (const std::string how = exited(c); !how.empty()) {
        return failed(c, how + " before it was serving");
      }
      if (Clock::now() >= deadline) {
        return failed(c, "was not serving within " +
                             std::to_string(static_cast<int>(local.worker_start_timeout_s)) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    cfg.rollout.dispatcher.workers.push_back(addr);
  }
  return parts;
}

void LocalParts::Stop() {
  if (!children_.empty()) {
    StopChildren(kStopGraceMs);
    g_num_children.store(0);
    children_.clear();
  }
  RestoreHandlers();
}

LocalParts::~LocalParts() { Stop(); }

}  // namespace allot::apps
