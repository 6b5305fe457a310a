// `allot train | sft | resume --nproc 2` as real processes through the CLI: the launcher
// (trainer/comm/local_launcher.h) starts two ranks of the same command line that meet over c10d
// TCPStore + Gloo (the torchrun variables, ProcessCommunicator, the run directory shared by the
// ranks). GRPO: rank 0 runs the in-process rollout workers (the CogER env) against an `allot
// serve` server on loopback with the tiny world's t0 tier, publishes the adapters and writes the
// run's files; rank 1 trains on its shard of every step. The thread-level twins of the comparisons
// with one learner are GrpoDataParallelIntegrationTest and the SFT Gloo test; these prove the CLI
// path.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/safetensors.h"
#include "llm/serve/server.h"
#include "tests/models/tiny_model.h"

extern char** environ;

namespace allot::trainer {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// `allot ARGS > log 2>&1` in the background; the pid is allot's own (sh execs it).
pid_t StartAllot(const std::string& args, const std::string& log) {
  const std::string cmd =
      "exec " + std::string(ALLOT_BINARY_DIR) + "/apps/allot " + args + " > " + log + " 2>&1";
  std::vector<char*> argv = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"),
                             const_cast<char*>(cmd.c_str()), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

// The exit code of `pid`, or -1 after `timeout_s` (the process is then killed).
int Wait(pid_t pid, double timeout_s) {
  const auto until = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    int status = 0;
    const pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (got < 0) return -1;
    if (Clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

struct Outcome {
  int code = -1;
  std::string log;
};

Outcome Allot(const std::string& args, const std::string& log, double timeout_s = 300) {
  Outcome r;
  r.code = Wait(StartAllot(args, log), timeout_s);
  r.log = Slurp(log);
  return r;
}

// All float32 tensors of a safetensors file, by name.
std::map<std::string, std::vector<float>> ReadTensors(const std::string& path) {
  std::map<std::string, std::vector<float>> out;
  auto file = safetensors::File::Open(path);
  EXPECT_TRUE(file.ok()) << path << ": " << file.status().message();
  if (!file.ok()) return out;
  for (const auto& info : (*file)->tensors()) {
    EXPECT_EQ(info.dtype, safetensors::Dtype::kF32) << info.name;
    const auto bytes = (*file)->Data(info);
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    out[info.name] = std::move(v);
  }
  return out;
}

// How far two sets of weights are apart, measured against how far `b` moved from `start`.
struct Agreement {
  double max_diff = 0;
  double moved = 0;  // max |b - start|
  int64_t entries = 0;
  int64_t off_entries = 0;  // entries with |a - b| > 1e-3 * moved
};

Agreement Compare(const std::map<std::string, std::vector<float>>& a,
                  const std::map<std::string, std::vector<float>>& b,
                  const std::map<std::string, std::vector<float>>& start) {
  Agreement g;
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(start.size(), b.size());
  for (const auto& [name, y] : b) {
    auto x = a.find(name);
    auto s0 = start.find(name);
    if (x == a.end() || s0 == start.end() || x->second.size() != y.size() ||
        s0->second.size() != y.size()) {
      ADD_FAILURE() << "tensor " << name << " missing or reshaped";
      g.max_diff = INFINITY;
      return g;
    }
    for (size_t i = 0; i < y.size(); ++i) {
      g.moved = std::max(g.moved, std::abs(static_cast<double>(y[i]) - s0->second[i]));
    }
  }
  for (const auto& [name, y] : b) {
    const std::vector<float>& x = a.at(name);
    for (size_t i = 0; i < y.size(); ++i) {
      const double d = std::abs(static_cast<double>(x[i]) - y[i]);
      g.max_diff = std::max(g.max_diff, d);
      g.off_entries += d > 1e-3 * g.moved ? 1 : 0;
      ++g.entries;
    }
  }
  return g;
}

// N ranks against one learner on the same global batch. Float rounding differs (the batch is
// summed in two parts), and AdamW's update g / (|g| + eps) turns that rounding into a visible
// move for the few entries whose gradient is near eps: a handful of entries may differ, by a
// small part of the move. Without the gradient all-reduce (each rank stepping on its shard)
// nearly every trained entry differs by a learning-rate-sized amount.
void ExpectSameTraining(const Agreement& g, const char* what) {
  std::printf("%s: max |diff| %.3g (moved %.3g), %lld of %lld entries off by > 1e-3 of the move\n",
              what, g.max_diff, g.moved, static_cast<long long>(g.off_entries),
              static_cast<long long>(g.entries));
  EXPECT_GT(g.moved, 1e-3) << what << ": the single learner did not move";
  EXPECT_LE(g.off_entries, g.entries / 1000) << what;
  EXPECT_LT(g.max_diff, 0.1 * g.moved) << what;
}

// A tiny model served by the `allot serve` server (llm/serve/server.h) on loopback. max_batch 1:
// each request is decoded alone, so seeded sampling repeats across runs.
class ServedTinyModel {
 public:
  explicit ServedTinyModel(const std::string& model_dir) {
    llm::serve::ServeConfig c;
    c.model = model_dir;
    c.served_model_name = "tiny";
    c.port = 0;
    c.threads = 1;
    c.max_batch = 1;
    auto s = llm::serve::Server::Create(c);
    EXPECT_TRUE(s.ok()) << s.status().message();
    if (!s.ok()) return;
    server_ = std::move(*s);
    auto port = server_->Start();
    EXPECT_TRUE(port.ok()) << port.status().message();
  }
  ~ServedTinyModel() {
    if (server_) server_->Stop();
  }
  std::string url() const { return server_->url(); }
  // Adapter loads the server accepted (each published version once, from rank 0 alone).
  int64_t adapter_loads() const {
    return server_->metrics().requests("/v1/load_lora_adapter", 200);
  }
  // The adapter names the server has loaded now.
  std::vector<std::string> adapters() const {
    std::vector<std::string> names;
    for (const auto& [name, dir] : server_->engine().Adapters()) names.push_back(name);
    return names;
  }
  int64_t failed_adapter_loads() const {
    int64_t n = 0;
    for (int status : {400, 404, 409, 500}) {
      n += server_->metrics().requests("/v1/load_lora_adapter", status);
    }
    return n;
  }

 private:
  std::unique_ptr<llm::serve::Server> server_;
};

// A CogER recipe on the tiny world's t0 tier with its prompts: every endpoint is the one
// server and the router is the policy (grpo.policy_endpoint). t0 writes a valid level tag now
// and then, so the groups' rewards differ and the adapter moves. No LoRA dropout: dropout masks
// are drawn per rank, so only without it do two ranks equal one learner.
std::string WriteRecipe(const std::string& dir, const std::string& model_dir,
                        const std::string& url, int total_steps) {
  const std::string data = dir + "/train.jsonl";
  std::ofstream(data) << R"({"question": "What is 2+3?", "answer": "5", "min_level": 1})"
                      << "\n"
                      << R"({"question": "What is 17*6?", "answer": "102", "min_level": 2})"
                      << "\n"
                      << R"({"question": "What is 37*46?", "answer": "1702", "min_level": 3})"
                      << "\n";
  const std::string recipe = dir + "/grpo.yaml";
  std::ofstream out(recipe);
  out << "run:\n  output_dir: " << dir << "/runs\n  seed: 5\n"
      << "logging:\n  log_every: 1\n  progress_bar: false\n"
      << "checkpoint:\n  every: 1\n  keep_last: 10\n"
      << "trainer:\n  algorithm: grpo\n  total_steps: " << total_steps << "\n"
      << "model:\n  path: " << model_dir << "\n  dtype: float32\n"
      << R"(grpo:
  policy_endpoint: router
  group_size: 8
  prompts_per_step: 2
  grad_accum: 1
  updates_per_batch: 2
  lr: 2.0e-2
  temperature: 1.0
  loss_aggregation: token_mean
  sync_timeout_s: 10
  rollout_timeout_s: 60
  lora: {r: 8, lora_alpha: 16, lora_dropout: 0.0, seed: 3}
rewards:
  terms:
    - {name: format, weight: 1.0}
    - {name: accuracy, weight: 1.0}
    - {name: hierarchy, weight: 1.0}
  hierarchy: {oracle: dataset}
env:
  name: coger
  coger:
    router_endpoint: router
    router_max_tokens: 48
    l2: {endpoint: medium, max_tokens: 16}
    l3: {endpoint: large, max_tokens: 16}
    cotool:
      model: {endpoint: large, max_tokens: 16}
      selector: rules
    lmin: {oracle: dataset, l1_endpoint: router}
)"
      << "    prompts: {dir: " << ALLOT_SOURCE_DIR << "/configs/prompts/tinyworld/coger}\n"
      << "tools: {code: false}\n"
      << "train_data:\n  path: " << data << "\n  fields: {extra: [min_level]}\n"
      << "rollout:\n  in_process_workers: 1\n  worker: {threads: 4}\n"
      << "endpoints:\n";
  for (const char* name : {"router", "medium", "large"}) {
    out << "  - {name: " << name << ", base_url: \"" << url
        << "\", model: tiny, params_b: 0.001, limits: {deadline_s: 30}}\n";
  }
  return recipe;
}

class NprocCliIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The shipped t0 tier (scripts/make_tiny_world.sh); the quickstart's test skips without it.
    model_dir_ = std::string(ALLOT_SOURCE_DIR) + "/assets/tinyworld/pool/t0";
    if (!fs::exists(model_dir_ + "/model.safetensors")) GTEST_SKIP() << "no tier in " << model_dir_;
    dir_ = models::testing::MakeTempDir("nproc_cli");
  }
  std::string Adapter(const std::string& run, int step) const {
    char name[32];
    std::snprintf(name, sizeof(name), "step-%012d", step);
    return dir_ + "/runs/" + run + "/checkpoints/" + name + "/adapter/adapter_model.safetensors";
  }
  std::string dir_, model_dir_;
};

TEST_F(NprocCliIntegrationTest, GrpoTwoRanksEqualOneRankAndResume) {
  constexpr int kSteps = 2;
  // One long-lived server for both runs, as users keep one vLLM across runs: the adapters are
  // served under each run's name ("one-v<N>", "two-v<N>"), so the second run does not collide
  // with the versions the first left loaded.
  ServedTinyModel served(model_dir_);
  const std::string one_dir = dir_ + "/one", two_dir = dir_ + "/two";
  fs::create_directories(one_dir);
  fs::create_directories(two_dir);
  // Both recipes put their runs under dir_/runs (the names differ).
  const std::string one_recipe = WriteRecipe(one_dir, model_dir_, served.url(), kSteps);
  const std::string two_recipe = WriteRecipe(two_dir, model_dir_, served.url(), kSteps);
  const std::string runs = " --set run.output_dir=" + dir_ + "/runs";

  Outcome one = Allot("train -c " + one_recipe + runs + " --name one", dir_ + "/one.log");
  ASSERT_EQ(one.code, 0) << one.log;
  Outcome two = Allot("train -c " + two_recipe + runs + " --name two --nproc 2", dir_ + "/two.log");
  // Catches: a rank that fails or hangs (store, Gloo, the shared run directory), or a launcher
  // that reports success without both ranks' statuses.
  ASSERT_EQ(two.code, 0) << two.log;

  // Both ranks ran as processes of one world of two, and rank 1 trained every step.
  EXPECT_EQ(Count(two.log, "learner rank 0 of 2"), 1) << two.log;
  EXPECT_EQ(Count(two.log, "learner rank 1 of 2"), 1) << two.log;
  EXPECT_NE(two.log.find("rank 1 of 2: " + std::to_string(kSteps) + " steps"), std::string::npos)
      << two.log;
  EXPECT_EQ(Count(one.log, "learner rank"), 0) << "a single process is not a world: " << one.log;

  // Rank 0 alone owns the run's files and the endpoint. Catches: rank 1 publishing too (every
  // version would be loaded twice, or refused the second time), rank 1 logging metrics (two
  // lines per step) or writing the log file (its start line twice).
  const std::string run_two = dir_ + "/runs/two";
  EXPECT_EQ(served.adapter_loads(), 2 * (kSteps + 1));  // v1 (initial) .. v3 of each run
  EXPECT_EQ(served.failed_adapter_loads(), 0);
  // Each run leaves its versions within max_policy_lag (1) of its last. Catches: runs that share
  // one name (the second refused "already been loaded", or unloading the first's adapters).
  EXPECT_EQ(served.adapters(), (std::vector<std::string>{"one-v2", "one-v3", "two-v2", "two-v3"}));
  for (int v = 1; v <= kSteps + 1; ++v) {
    EXPECT_TRUE(fs::exists(run_two + "/adapters/v" + std::to_string(v) + "/adapter_config.json"))
        << "v" << v;
  }
  EXPECT_FALSE(fs::exists(run_two + "/adapters/v" + std::to_string(kSteps + 2)));
  const std::string metrics = Slurp(run_two + "/metrics.jsonl");
  EXPECT_EQ(Count(metrics, "\"step\""), kSteps) << metrics;
  EXPECT_EQ(Count(Slurp(run_two + "/logs/allot.log"), "starting run 'two'"), 1);
  for (int step = 1; step <= kSteps; ++step) {
    EXPECT_TRUE(fs::exists(Adapter("two", step))) << Adapter("two", step);
  }

  // The checkpoint equals the single learner's on the same global batch. Catches: no gradient
  // all-reduce between the processes (rank 0 would step on half of the episodes), a rank that
  // skips the start broadcast, or a loss normalised by the shard instead of the union batch.
  const auto initial = ReadTensors(run_two + "/adapters/v1/adapter_model.safetensors");
  const auto got = ReadTensors(Adapter("two", kSteps));
  const auto expected = ReadTensors(Adapter("one", kSteps));
  ASSERT_FALSE(expected.empty());
  ExpectSameTraining(Compare(got, expected, initial), "allot train --nproc 2 vs 1 (grpo)");

  // `allot resume RUN --nproc 2` goes on from the last checkpoint against the same endpoint.
  // Catches: a rank that does not resume (it would wait for step 0), or rank 1 refusing the
  // run directory that rank 0 reopened.
  // What a process killed with -9 after step kSteps + 1 leaves behind it: that step's record, and
  // a torn one. Catches: a resume that appends to them (step kSteps + 1 twice).
  {
    std::ofstream killed(run_two + "/metrics.jsonl", std::ios::app);
    killed << "{\"step\":" << kSteps + 1 << ",\"killed_run\":1}\n{\"step\":" << kSteps + 2;
  }
  Outcome resumed =
      Allot("resume two --output-dir " + dir_ +
                "/runs --nproc 2 --set trainer.total_steps=" + std::to_string(kSteps + 1),
            dir_ + "/resume.log");
  ASSERT_EQ(resumed.code, 0) << resumed.log;
  EXPECT_EQ(Count(resumed.log, "resumed at step " + std::to_string(kSteps)), 2) << resumed.log;
  EXPECT_NE(resumed.log.find("rank 1 of 2: " + std::to_string(kSteps + 1) + " steps"),
            std::string::npos)
      << resumed.log;
  EXPECT_TRUE(fs::exists(Adapter("two", kSteps + 1)));
  EXPECT_TRUE(fs::exists(run_two + "/adapters/v" + std::to_string(kSteps + 2)));
  const std::string resumed_metrics = Slurp(run_two + "/metrics.jsonl");
  EXPECT_EQ(Count(resumed_metrics, "\"step\""), kSteps + 1) << resumed_metrics;
  EXPECT_EQ(resumed_metrics.find("killed_run"), std::string::npos) << resumed_metrics;
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

// A rank that dies ends the launch: the launcher names the rank and its signal, stops rank 0,
// and leaves no process behind.
TEST_F(NprocCliIntegrationTest, GrpoKilledRankEndsTheLaunchWithoutOrphans) {
  ServedTinyModel served(model_dir_);
  const std::string recipe = WriteRecipe(dir_, model_dir_, served.url(), 200);
  const std::string log = dir_ + "/kill.log";
  const pid_t launcher = StartAllot("train -c " + recipe + " --name kill --nproc 2", log);
  ASSERT_GT(launcher, 0);
  // Wait until both ranks train (rank 0 published the first update), then kill rank 1.
  const std::regex pid_line("learner rank ([01]) of 2 \\(pid ([0-9]+)\\)");
  pid_t pids[2] = {-1, -1};
  const auto until = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() < until && served.adapter_loads() < 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string text = Slurp(log);
  for (std::sregex_iterator it(text.begin(), text.end(), pid_line), end; it != end; ++it) {
    pids[std::stoi((*it)[1])] = static_cast<pid_t>(std::stol((*it)[2]));
  }
  if (pids[0] <= 0 || pids[1] <= 0 || served.adapter_loads() < 2) {
    kill(launcher, SIGTERM);
    Wait(launcher, 30);
    FAIL() << "the ranks did not start training:\n" << Slurp(log);
  }
  ASSERT_EQ(kill(pids[1], SIGKILL), 0);
  const int code = Wait(launcher, 60);
  const std::string out = Slurp(log);
  // Catches: a launcher that waits forever on rank 0 (blocked in a collective with a dead peer),
  // reports success, or blames the rank that was only stopped.
  EXPECT_EQ(code, 128 + SIGKILL) << out;
  EXPECT_NE(out.find("rank 1 was killed by signal 9"), std::string::npos) << out;
  // Catches: rank 0 left running (or a zombie nobody reaps) after the launcher returned.
  EXPECT_FALSE(Alive(pids[0])) << "rank 0 (pid " << pids[0] << ") outlived the launcher";
  if (Alive(pids[0])) kill(pids[0], SIGKILL);
}

// `allot sft --nproc 2`: each rank trains on its share of every step's examples and rank 0 writes
// the model, which equals a single process's on the same recipe (same global batch).
TEST_F(NprocCliIntegrationTest, SftTwoRanksEqualOneRank) {
  constexpr int kSteps = 4;
  const std::string data = dir_ + "/sft.jsonl";
  {
    std::ofstream out(data);
    for (int i = 0; i < 24; ++i) {
      out << R"({"prompt": "add )" << i << " " << i + 1 << R"(:", "completion": " )" << 2 * i + 1
          << R"("})"
          << "\n";
    }
  }
  const std::string recipe = dir_ + "/sft.yaml";
  std::ofstream(recipe) << "run:\n  output_dir: " << dir_ << "/runs\n  seed: 3\n"
                        << "logging:\n  log_every: 1\n  progress_bar: false\n"
                        << "checkpoint:\n  every: 2\n  keep_last: 5\n"
                        << "trainer:\n  algorithm: sft\n  total_steps: " << kSteps << "\n"
                        << "model:\n  path: " << model_dir_ << "\n  dtype: float32\n"
                        << "sft:\n  data: " << data << "\n  format: prompt_completion\n"
                        << "  max_seq_len: 64\n  batch_size: 6\n  optim:\n    lr: 1.0e-2\n";
  Outcome one = Allot("sft -c " + recipe + " --name sft-one", dir_ + "/sft-one.log");
  ASSERT_EQ(one.code, 0) << one.log;
  Outcome two = Allot("sft -c " + recipe + " --name sft-two --nproc 2", dir_ + "/sft-two.log");
  ASSERT_EQ(two.code, 0) << two.log;
  EXPECT_EQ(Count(two.log, "learner rank 0 of 2"), 1) << two.log;
  EXPECT_EQ(Count(two.log, "learner rank 1 of 2"), 1) << two.log;
  // Rank 0 alone logs metrics (catches: one line per rank and step).
  EXPECT_EQ(Count(Slurp(dir_ + "/runs/sft-two/metrics.jsonl"), "\"step\""), kSteps);
  const auto initial = ReadTensors(model_dir_ + "/model.safetensors");
  const auto expected = ReadTensors(dir_ + "/runs/sft-one/model/model.safetensors");
  const auto got = ReadTensors(dir_ + "/runs/sft-two/model/model.safetensors");
  ASSERT_FALSE(expected.empty());
  // Catches: no gradient all-reduce (each rank steps on its half), or a loss normalised by the
  // rank's own tokens instead of the union batch's.
  ExpectSameTraining(Compare(got, expected, initial), "allot sft --nproc 2 vs 1");
}

// --max-restarts needs a verified checkpoint to restart from: a run that fails before its first
// one (no endpoint) is not started again, and the launcher says why. Catches: restarts that start
// the run over (a second "starting run" into an existing directory, refused), or that resume
// from nothing.
TEST_F(NprocCliIntegrationTest, RestartNeedsAVerifiedCheckpoint) {
  const std::string recipe = WriteRecipe(dir_, model_dir_, "http://127.0.0.1:1", 2);
  Outcome out = Allot(
      "train -c " + recipe + " --name no-ckpt --max-restarts 2 --set " + "grpo.sync_timeout_s=1",
      dir_ + "/no-ckpt.log", 120);
  EXPECT_NE(out.code, 0) << out.log;
  EXPECT_NE(out.log.find("not restarted: no verified checkpoint in " + dir_ + "/runs/no-ckpt"),
            std::string::npos)
      << out.log;
  EXPECT_EQ(Count(out.log, "restart 1 of 2"), 0) << out.log;
  EXPECT_EQ(Count(out.log, "starting run 'no-ckpt'"), 1) << out.log;
}

// Under a launcher that is not allot's (SLURM, Kubernetes: WORLD_SIZE is set), restarts are the
// scheduler's: asking for them is an error naming the option or the key. Catches: ranks that
// each launch a world of their own.
TEST_F(NprocCliIntegrationTest, RestartsRefusedInsideAnotherLaunchersWorld) {
  const std::string recipe = WriteRecipe(dir_, model_dir_, "http://127.0.0.1:1", 2);
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "1", 1);
  Outcome cli = Allot("train -c " + recipe + " --name ext --max-restarts 1", dir_ + "/ext.log", 60);
  Outcome key = Allot("train -c " + recipe + " --name ext --set run.max_restarts=2",
                      dir_ + "/ext-key.log", 60);
  unsetenv("WORLD_SIZE");
  unsetenv("RANK");
  EXPECT_NE(cli.code, 0);
  EXPECT_NE(cli.log.find("--max-restarts 1: this process is a rank of a world another launcher "
                         "started"),
            std::string::npos)
      << cli.log;
  EXPECT_NE(key.code, 0);
  EXPECT_NE(key.log.find("run.max_restarts: 2: this process is a rank"), std::string::npos)
      << key.log;
}

}  // namespace
}  // namespace allot::trainer
