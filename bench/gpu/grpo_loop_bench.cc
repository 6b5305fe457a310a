// The whole GRPO loop on one machine: sample, score, update, publish, sample again. The learner
// (this process) trains a LoRA adapter on --model-dir with GrpoTrainer; its in-process rollout
// workers run the tag env (tests/trainer/tag_env.h: a rule reward on what the policy writes)
// against an `allot serve` already running at --url on the same model, which loads each
// published adapter and samples the next step's groups from it. bench/gpu/grpo_loop_gpu.sh
// starts the server, runs this, and runs the same loop in Python (grpo_loop_hf.py) for the ratio.
//
//   allot_grpo_loop_bench --model-dir DIR --url http://127.0.0.1:PORT --served-name NAME
//       --run-dir DIR [--device cuda] [--dtype bfloat16] [--steps 4] [--warmup 1]
//       [--prompts-per-step 4] [--group 8] [--prompt-len 256] [--max-tokens 1024]
//       [--micro-batch 8] [--grad-checkpointing 0|1] [--lora-r 16] [--seed 1]
//       [--warmup-max-tokens N]      (the warm-up steps' budget; default --max-tokens)
//   allot_grpo_loop_bench --write-tokenizer DIR
//
// The second form gives a model directory that has only weights (a random model written by
// transformers) a byte-level tokenizer.json of the model's whole vocabulary: ids 0-255 are the
// bytes, as the tag env's byte tokenizer encodes its prompts, and every later id spells a
// distinct two- or three-byte string, so that whatever a random model samples decodes.
//
// Prints one JSON object: per step the trainer's own metrics (metrics.jsonl: time/rollout_wait_s,
// time/fwd_bwd_s, time/optimizer_s, time/sync_s, time/step_s, episodes, trained_tokens, ...),
// and over the steps after the warm-up ones the medians of: step seconds, episodes/s,
// generated tokens/s (completion tokens over the step's wall time), update tokens/s (trained
// tokens over forward/backward + optimizer time) and the share of the step each part took.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/metrics_writer.h"
#include "core/status.h"
#include "models/tokenizer/byte_tokenizer.h"
#include "rollout/env_registry.h"
#include "tests/trainer/tag_env.h"
#include "trainer/grpo/grpo_trainer.h"

namespace allot::bench {
namespace {

struct Args {
  std::string model_dir, url, served_name, run_dir;
  std::string device = "cuda";
  std::string dtype = "bfloat16";
  int64_t steps = 4;
  int64_t warmup = 1;
  int prompts_per_step = 4;
  int group = 8;
  int prompt_len = 256;
  int max_tokens = 1024;
  int warmup_max_tokens = 0;  // 0: max_tokens
  int micro_batch = 8;
  int grad_checkpointing = 0;
  int64_t lora_r = 16;
  uint64_t seed = 1;
};

Result<Args> ParseArgs(int argc, char** argv) {
  Args a;
  const auto num = [](int64_t* dst) {
    return [dst](const std::string& v) { *dst = std::stoll(v); };
  };
  const auto small = [](int* dst) { return [dst](const std::string& v) { *dst = std::stoi(v); }; };
  const std::map<std::string, std::function<void(const std::string&)>> flags = {
      {"--model-dir", [&](const std::string& v) { a.model_dir = v; }},
      {"--url", [&](const std::string& v) { a.url = v; }},
      {"--served-name", [&](const std::string& v) { a.served_name = v; }},
      {"--run-dir", [&](const std::string& v) { a.run_dir = v; }},
      {"--device", [&](const std::string& v) { a.device = v; }},
      {"--dtype", [&](const std::string& v) { a.dtype = v; }},
      {"--steps", num(&a.steps)},
      {"--warmup", num(&a.warmup)},
      {"--prompts-per-step", small(&a.prompts_per_step)},
      {"--group", small(&a.group)},
      {"--prompt-len", small(&a.prompt_len)},
      {"--max-tokens", small(&a.max_tokens)},
      {"--warmup-max-tokens", small(&a.warmup_max_tokens)},
      {"--micro-batch", small(&a.micro_batch)},
      {"--grad-checkpointing", small(&a.grad_checkpointing)},
      {"--lora-r", num(&a.lora_r)},
      {"--seed", [&](const std::string& v) { a.seed = std::stoull(v); }},
  };
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    auto it = flags.find(k);
    if (it == flags.end()) return InvalidArgument("unknown flag " + k);
    if (i + 1 >= argc) return InvalidArgument(k + " needs a value");
    try {
      it->second(argv[i + 1]);
    } catch (const std::exception&) {
      return InvalidArgument(k + ": '" + argv[i + 1] + "' is not a number");
    }
  }
  for (const auto& [name, value] : {std::pair{"--model-dir", &a.model_dir},
                                    {"--url", &a.url},
                                    {"--served-name", &a.served_name},
                                    {"--run-dir", &a.run_dir}}) {
    if (value->empty()) return InvalidArgument(std::string(name) + " is required");
  }
  if (a.steps <= a.warmup) return InvalidArgument("--steps must exceed --warmup");
  if (a.prompt_len < 32) return InvalidArgument("--prompt-len must be at least 32");
  return a;
}

// Prompt k: a question of prompt_len bytes (the tag env's byte tokenizer: one token per byte)
// ending in CogER's level tag, the continuation the rule reward scores.
std::string Prompt(int k, int prompt_len) {
  static const std::string kTail = "<question_level>L";
  std::string text = "Query " + std::to_string(k) +
                     ": decide which solver answers this at the lowest cost, then say so. ";
  while (static_cast<int>(text.size() + kTail.size()) < prompt_len) text += text;
  text.resize(static_cast<size_t>(prompt_len) - kTail.size());
  return text + kTail;
}

// tokenizer.json for DIR/config.json's vocab_size (the second form above), and a
// tokenizer_config.json with a ChatML template.
Status WriteTokenizer(const std::string& dir) {
  std::ifstream in(dir + "/config.json");
  const auto config = nlohmann::json::parse(in, nullptr, false);
  if (!config.is_object() || !config.contains("vocab_size")) {
    return InvalidArgument(dir + "/config.json: no vocab_size");
  }
  const int64_t vocab_size = config["vocab_size"].get<int64_t>();
  if (vocab_size < 256 || vocab_size > 256 + (1 << 24)) {
    return InvalidArgument(dir + "/config.json: vocab_size " + std::to_string(vocab_size) +
                           " is outside [256, 2^24 + 256]");
  }
  std::vector<std::pair<std::string, int32_t>> vocab;
  for (int64_t id = 0; id < vocab_size; ++id) {
    std::string bytes;
    if (id < 256) {
      bytes.push_back(static_cast<char>(id));
    } else {
      const int64_t k = id - 256;
      if (k >= (1 << 16)) bytes.push_back(static_cast<char>((k >> 16) & 255));
      bytes.push_back(static_cast<char>((k >> 8) & 255));
      bytes.push_back(static_cast<char>(k & 255));
    }
    vocab.emplace_back(std::move(bytes), static_cast<int32_t>(id));
  }
  ALLOT_RETURN_IF_ERROR(
      WriteFileAtomic(dir + "/tokenizer.json", models::ByteLevelBpeJson(vocab, {})));
  const nlohmann::json tokenizer_config = {
      {"chat_template",
       "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"}};
  return WriteFileAtomic(dir + "/tokenizer_config.json", tokenizer_config.dump());
}

double Median(std::vector<double> xs) {
  if (xs.empty()) return 0.0;
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

int Main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write-tokenizer") {
    const Status s = WriteTokenizer(argv[2]);
    if (!s.ok()) std::fprintf(stderr, "allot_grpo_loop_bench: %s\n", s.message().c_str());
    return s.ok() ? 0 : 1;
  }
  Result<Args> parsed = ParseArgs(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "allot_grpo_loop_bench: %s\n", parsed.status().message().c_str());
    return 2;
  }
  const Args& a = *parsed;
  trainer::testing::RegisterTagEnv(rollout::EnvRegistry::Global());

  trainer::grpo::GrpoRunOptions o;
  o.grpo.group_size = a.group;
  o.grpo.prompts_per_step = a.prompts_per_step;
  o.grpo.micro_batch_size = a.micro_batch;
  o.grpo.lr = 1e-5;
  o.grpo.temperature = 1.0;
  // Every group is trained, as TRL trains them: a random model's rule reward is often flat
  // within a group, and dynamic sampling would drop and refill those.
  o.grpo.dynamic_sampling = false;
  o.grpo.max_tokens = a.max_tokens;
  o.grpo.lora.r = a.lora_r;
  o.grpo.lora.lora_alpha = 2.0 * static_cast<double>(a.lora_r);
  o.grpo.lora.lora_dropout = 0.0;
  // The delivery probe runs after every publish and its differences are reported per step; the
  // bench measures them (to set the dtype's tolerance from data) rather than failing on them.
  o.grpo.delivery_probe.tolerance = 100.0;
  o.grpo.sync_timeout_s = 300;
  o.grpo.rollout_timeout_s = 1800;
  o.total_steps = a.steps;
  o.seed = a.seed;
  o.model_dir = a.model_dir;
  o.load.device = a.device;
  o.load.dtype = a.dtype;
  o.load.gradient_checkpointing = a.grad_checkpointing != 0;
  o.env = trainer::testing::kTagEnvName;
  o.env_config = trainer::testing::TagEnvConfig(a.url, a.served_name);
  // Items are drawn in order, one per group: the warm-up steps' groups first, under their own
  // budget, then every timed step's.
  for (int64_t step = 0; step < a.steps; ++step) {
    const int budget =
        step < a.warmup && a.warmup_max_tokens > 0 ? a.warmup_max_tokens : a.max_tokens;
    for (int k = 0; k < a.prompts_per_step; ++k) {
      o.prompts.push_back(
          nlohmann::json{{"prompt", Prompt(k, a.prompt_len)}, {"max_tokens", budget}}.dump());
    }
  }
  o.run_dir = a.run_dir;
  // Every episode of a step in flight at once: one worker thread per episode.
  const int episodes = a.prompts_per_step * a.group;
  o.rollout.in_process_workers = 2;
  o.rollout.worker.capacity = episodes;
  o.rollout.worker.threads = std::max(1, (episodes + 1) / 2);
  llm::EndpointConfig ep;
  ep.name = "policy";
  ep.base_url = a.url;
  ep.model = a.served_name;
  ep.limits.deadline_s = 1800;
  o.endpoints = {ep};

  auto trainer = trainer::grpo::GrpoTrainer::Create(o);
  if (!trainer.ok()) {
    std::fprintf(stderr, "allot_grpo_loop_bench: %s\n", trainer.status().message().c_str());
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(a.run_dir, ec);
  const std::string jsonl = a.run_dir + "/metrics.jsonl";
  auto metrics = MetricsWriter::Open(jsonl, "");
  if (!metrics.ok()) {
    std::fprintf(stderr, "allot_grpo_loop_bench: %s\n", metrics.status().message().c_str());
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto summary = (*trainer)->Run(metrics->get(), nullptr);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  metrics->reset();
  nlohmann::json out = {{"bench", "grpo_loop"},
                        {"side", "allot"},
                        {"model_dir", a.model_dir},
                        {"device", a.device},
                        {"dtype", a.dtype},
                        {"steps", a.steps},
                        {"warmup", a.warmup},
                        {"prompts_per_step", a.prompts_per_step},
                        {"group", a.group},
                        {"prompt_len", a.prompt_len},
                        {"max_tokens", a.max_tokens},
                        {"warmup_max_tokens", a.warmup_max_tokens},
                        {"micro_batch", a.micro_batch},
                        {"lora_r", a.lora_r},
                        {"grad_checkpointing", a.grad_checkpointing},
                        {"wall_s", wall_s}};
  if (!summary.ok()) out["error"] = summary.status().message();

  std::vector<nlohmann::json> rows;
  std::ifstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) rows.push_back(std::move(j));
  }
  std::map<std::string, std::vector<double>> timed;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const double step_s = r.value("time/step_s", 0.0);
    const double n = r.value("episodes", 0.0);
    const double generated = n * (r.value("tokens_per_episode", 0.0) - a.prompt_len);
    const double update_s = r.value("time/fwd_bwd_s", 0.0) + r.value("time/optimizer_s", 0.0);
    nlohmann::json s = {{"step", i + 1},
                        {"step_s", step_s},
                        {"episodes", n},
                        {"generated_tokens", generated},
                        {"trained_tokens", r.value("trained_tokens", 0.0)},
                        {"update_tokens_per_s", r.value("tokens_per_s", 0.0)},
                        {"reward", r.value("reward/mean", 0.0)}};
    for (const char* k :
         {"time/rollout_wait_s", "time/fwd_bwd_s", "time/optimizer_s", "time/sync_s"}) {
      s[k] = r.value(k, 0.0);
    }
    // Whatever the delivery check reports (delivery/...), as logged.
    for (const auto& [k, v] : r.items()) {
      if (k.rfind("delivery/", 0) == 0) s[k] = v;
    }
    out["per_step"].push_back(s);
    if (static_cast<int64_t>(i) < a.warmup || step_s <= 0) continue;
    timed["step_s"].push_back(step_s);
    timed["episodes_per_s"].push_back(n / step_s);
    timed["generated_tokens_per_s"].push_back(generated / step_s);
    if (update_s > 0)
      timed["update_tokens_per_s"].push_back(r.value("trained_tokens", 0.0) / update_s);
    for (const char* k :
         {"time/rollout_wait_s", "time/fwd_bwd_s", "time/optimizer_s", "time/sync_s"}) {
      timed[std::string("share/") + (k + 5)].push_back(r.value(k, 0.0) / step_s);
    }
  }
  for (const auto& [k, xs] : timed) out["median"][k] = Median(xs);
  std::printf("%s\n", out.dump().c_str());
  return summary.ok() ? 0 : 1;
}

}  // namespace
}  // namespace allot::bench

int main(int argc, char** argv) { return allot::bench::Main(argc, argv); }
