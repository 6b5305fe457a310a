#include "envs/deeptool/deeptool_eval.h"

#include <chrono>
#include <cstdio>
#include <memory>

#include "core/progress_bar.h"
#include "envs/deeptool/deeptool_env.h"
#include "envs/runtime/eval_output.h"

namespace allot::envs::deeptool {
namespace {

using Clock = std::chrono::steady_clock;

int64_t InfoInt(const runtime::Trajectory& t, const char* key) {
  auto it = t.info.find(key);
  if (it == t.info.end()) return 0;
  try {
    return std::stoll(it->second);
  } catch (...) {
    return 0;
  }
}

void Tally(DeepToolItemOutcome out, DeepToolMethodResult& r) {
  ++r.episodes;
  r.steps += out.steps;
  r.code_runs += out.code_runs;
  if (!out.failure.empty()) {
    ++r.failed;
    ++r.failures[out.failure];
  } else if (!out.format_error.empty()) {
    ++r.malformed;
  }
  if (out.answered) ++r.answered;
  if (out.correct) ++r.correct;
  r.items.push_back(std::move(out));
}

}  // namespace

nlohmann::json DeepToolItemOutcome::ToJson() const {
  nlohmann::json j = {{"id", id},       {"correct", correct},     {"answered", answered},
                      {"steps", steps}, {"code_runs", code_runs}, {"cost_usd", cost_usd}};
  if (!failure.empty()) j["failure"] = failure;
  if (!format_error.empty()) j["format_error"] = format_error;
  if (!difficulty.empty()) j["difficulty"] = difficulty;
  return j;
}

nlohmann::json DeepToolMethodResult::ToJson() const {
  const double n = episodes > 0 ? static_cast<double>(episodes) : 1.0;
  nlohmann::json items_json = nlohmann::json::array();
  for (const DeepToolItemOutcome& o : items) items_json.push_back(o.ToJson());
  return {{"method", method},
          {"episodes", episodes},
          {"correct", correct},
          {"accuracy", accuracy()},
          {"answered", answered},
          {"failed", failed},
          {"malformed", malformed},
          {"steps_per_problem", static_cast<double>(steps) / n},
          {"code_runs_per_problem", static_cast<double>(code_runs) / n},
          {"llm_calls", llm_calls},
          {"tokens", tokens},
          {"tokens_per_problem", static_cast<double>(tokens) / n},
          {"cost_usd", cost_usd},
          {"mean_cost_usd", cost_usd / n},
          {"energy_j", energy_j},
          {"mean_energy_j", energy_j / n},
          {"mean_latency_s", latency_s / n},
          {"failures", failures},
          {"items", std::move(items_json)}};
}

std::string DeepToolItemJson(const datasets::Example& e) {
  nlohmann::json j = {{"question", e.PromptText()}, {"answer", e.answer}};
  if (e.answer_format != "text") j["answer_format"] = e.answer_format;
  return j.dump();
}

Result<std::vector<DeepToolMethodResult>> RunDeepToolEval(
    const DeepToolEnvConfig& config, const std::vector<datasets::Example>& examples,
    const DeepToolEvalOptions& options) {
  // Inference: whole episodes with the code run, graded on the answer; no expert steps.
  DeepToolEnvConfig c = config;
  c.deeptool.mode = "interleaved";
  c.deeptool.format_errors = "score";
  c.rewards.terms = {{"accuracy", 1.0}};
  std::vector<std::string> methods = options.methods;
  if (methods.empty()) methods = {"tir"};
  for (const std::string& m : methods) {
    if (m != "tir") return InvalidArgument("eval method '" + m + "': expected tir");
  }
  size_t n = examples.size();
  if (options.limit > 0) n = std::min(n, static_cast<size_t>(options.limit));
  if (n == 0) return InvalidArgument("eval: no examples");
  if (options.progress != nullptr) {
    options.progress->AddTotal(static_cast<int64_t>(methods.size() * n));
  }
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<DeepToolEnv> env,
                         DeepToolEnv::Create(std::move(c), nullptr, options.tools));

  std::vector<DeepToolMethodResult> results;
  for (const std::string& method : methods) {
    DeepToolMethodResult r;
    r.method = method;
    for (size_t i = 0; i < n; ++i) {
      DeepToolItemOutcome out;
      out.id = examples[i].id;
      out.difficulty = runtime::ExampleDifficulty(examples[i]);
      runtime::EpisodeInput in;
      in.episode_id = "eval-" + std::to_string(i);
      in.dataset_item = DeepToolItemJson(examples[i]);
      in.sampling.temperature = 0.0;  // greedy at inference
      if (!options.adapter.empty()) {
        auto p = std::make_shared<runtime::PolicySnapshot>();
        p->kind = runtime::PolicySnapshot::Kind::kLoraAdapter;
        p->adapter_name = options.adapter;
        in.policy = p;
      }
      const auto t0 = Clock::now();
      Result<runtime::Trajectory> t = env->Run(in);
      if (!t.ok()) return t.status();
      r.latency_s += std::chrono::duration<double>(Clock::now() - t0).count();
      r.cost_usd += t->usage.total.cost_usd;
      r.energy_j += t->usage.total.energy_j;
      r.llm_calls += t->usage.total.calls;
      r.tokens += t->usage.total.prompt_tokens + t->usage.total.completion_tokens;
      out.cost_usd = t->usage.total.cost_usd;
      out.steps = InfoInt(*t, "steps");
      out.code_runs = static_cast<int64_t>(t->tool_calls);
      out.answered = t->info.count("answer") > 0;
      if (t->failure.failed()) {
        out.failure = runtime::FailureReasonName(t->failure.reason);
      } else {
        if (auto f = t->info.find("failure"); f != t->info.end()) out.format_error = f->second;
        for (const auto& [name, v] : t->rewards) {
          if (name == "accuracy" && v > 0.5) out.correct = true;
        }
      }
      Tally(std::move(out), r);
      if (options.progress != nullptr) options.progress->Advance();
    }
    results.push_back(std::move(r));
  }
  return results;
}

void PrintDeepToolEval(const std::vector<DeepToolMethodResult>& results, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof(line), "%-8s %5s %8s %8s %9s %6s %6s %9s %9s %12s %10s\n", "method",
                "n", "accuracy", "answered", "malformed", "failed", "steps", "code_runs", "tokens",
                "cost_usd", "energy_j");
  out << line;
  for (const DeepToolMethodResult& r : results) {
    const double n = r.episodes > 0 ? static_cast<double>(r.episodes) : 1.0;
    std::snprintf(line, sizeof(line),
                  "%-8s %5lld %8.4f %8lld %9lld %6lld %6.2f %9.2f %9.0f %12.4e %10.4f\n",
                  r.method.c_str(), static_cast<long long>(r.episodes), r.accuracy(),
                  static_cast<long long>(r.answered), static_cast<long long>(r.malformed),
                  static_cast<long long>(r.failed), static_cast<double>(r.steps) / n,
                  static_cast<double>(r.code_runs) / n, static_cast<double>(r.tokens) / n,
                  r.cost_usd / n, r.energy_j / n);
    out << line;
  }
  for (const DeepToolMethodResult& r : results) {
    std::map<std::string, std::pair<int64_t, int64_t>> by_difficulty;  // correct, total
    for (const DeepToolItemOutcome& o : r.items) {
      if (o.difficulty.empty()) continue;
      auto& [correct, total] = by_difficulty[o.difficulty];
      correct += o.correct ? 1 : 0;
      ++total;
    }
    if (!by_difficulty.empty()) {
      out << r.method << " correct by difficulty:";
      for (const auto& [d, ct] : by_difficulty)
        out << " " << d << " " << ct.first << "/" << ct.second;
      out << "\n";
    }
    if (!r.failures.empty()) {
      out << r.method << " failures:";
      for (const auto& [reason, k] : r.failures) out << " " << reason << " " << k;
      out << "\n";
    }
  }
  out << "(steps, code runs, tokens, cost and energy are means per problem)\n";
}

int RunDeepToolEvalCommand(const DeepToolEnvConfig& config, const datasets::DatasetConfig& data,
                           const std::string& method, const std::string& adapter, int64_t limit,
                           const std::string& json_path, std::ostream& out, std::ostream& err) {
  DeepToolEvalOptions options;
  options.limit = limit;
  options.adapter = adapter;
  options.methods = runtime::ParseEvalMethods(method);
  return runtime::RunEvalCommand(
      data, json_path, out, err,
      [&](const std::vector<datasets::Example>& examples) {
        ProgressBar progress(0, "eval deeptool: items", stderr);
        options.progress = &progress;
        auto results = RunDeepToolEval(config, examples, options);
        progress.Finish();
        return results;
      },
      PrintDeepToolEval);
}

namespace {

int RunRecipeEval(const runtime::EvalRequest& r) {
  Result<DeepToolEnvConfig> config =
      runtime::LoadEnvConfig<DeepToolEnvConfig>(r.recipe, DeepToolEnvDescriptor());
  if (!config.ok()) {
    *r.err << "allot eval: " << config.status().message() << "\n";
    return 1;
  }
  return RunDeepToolEvalCommand(*config, r.eval_data, r.method, r.adapter, r.episodes, r.json,
                                *r.out, *r.err);
}

}  // namespace

const runtime::EnvDescriptor& DeepToolEnvDescriptor() {
  static const runtime::EnvDescriptor kDescriptor{"deeptool",
                                                  runtime::EnvKind::kLlmPolicy,
                                                  {"endpoints", "gpu", "rewards", "tools"},
                                                  &RegisterDeepToolEnv,
                                                  &RunRecipeEval};
  return kDescriptor;
}

}  // namespace allot::envs::deeptool
