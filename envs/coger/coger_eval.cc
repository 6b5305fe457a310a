#include "envs/coger/coger_eval.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "core/progress_bar.h"
#include "envs/coger/coger_env.h"
#include "envs/runtime/eval_output.h"
#include "rewards/grader.h"

namespace allot::envs::coger {
namespace {

using Clock = std::chrono::steady_clock;

void AddUsage(const llm::UsageReport& u, CogerMethodResult& r) {
  r.cost_usd += u.total.cost_usd;
  r.energy_j += u.total.energy_j;
  r.llm_calls += u.total.calls;
  r.tokens += u.total.prompt_tokens + u.total.completion_tokens;
}

// Counts one example's outcome into the method's totals and keeps it.
void Tally(CogerItemOutcome out, CogerMethodResult& r) {
  ++r.episodes;
  ++r.levels[static_cast<size_t>(out.level)];
  if (!out.failure.empty()) {
    ++r.failed;
    ++r.failures[out.failure];
  } else if (out.correct) {
    ++r.correct;
  }
  r.items.push_back(std::move(out));
}

int LevelOf(const std::string& info_level) {
  if (info_level.size() == 2 && info_level[0] == 'L' && info_level[1] >= '1' &&
      info_level[1] <= '4') {
    return info_level[1] - '0';
  }
  return 0;
}

}  // namespace

nlohmann::json CogerMethodResult::ToJson() const {
  const double n = episodes > 0 ? static_cast<double>(episodes) : 1.0;
  return {{"method", method},
          {"episodes", episodes},
          {"accuracy", accuracy()},
          {"failed", failed},
          {"cost_usd", cost_usd},
          {"mean_cost_usd", cost_usd / n},
          {"oracle_cost_usd", oracle_cost_usd},
          {"energy_j", energy_j},
          {"mean_energy_j", energy_j / n},
          {"mean_latency_s", latency_s / n},
          {"llm_calls", llm_calls},
          {"tokens", tokens},
          {"levels",
           {{"none", levels[0]},
            {"L1", levels[1]},
            {"L2", levels[2]},
            {"L3", levels[3]},
            {"L4", levels[4]}}},
          {"failures", failures},
          {"items", [&] {
             nlohmann::json a = nlohmann::json::array();
             for (const CogerItemOutcome& o : items) a.push_back(o.ToJson());
             return a;
           }()}};
}

nlohmann::json CogerItemOutcome::ToJson() const {
  nlohmann::json j = {{"level", level}, {"correct", correct}, {"cost_usd", cost_usd}};
  if (!failure.empty()) j["failure"] = failure;
  if (!difficulty.empty()) j["difficulty"] = difficulty;
  return j;
}

std::string CogerItemJson(const datasets::Example& e) {
  nlohmann::json j = {{"question", e.PromptText()}, {"answer", e.answer}};
  if (e.answer_format != "text") j["answer_format"] = e.answer_format;
  if (e.extra.contains("min_level")) j["min_level"] = e.extra["min_level"];
  return j.dump();
}

Result<std::vector<CogerMethodResult>> RunCogerEval(const CogerEnvConfig& config,
                                                    const std::vector<datasets::Example>& examples,
                                                    const CogerEvalOptions& options) {
  // Inference needs no L_min: accuracy is graded directly, so the hierarchy term is dropped.
  CogerEnvConfig c = config;
  c.rewards.terms = {{"format", 1.0}, {"accuracy", 1.0}};
  c.coger.lmin.oracle = "none";
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<CogerEnv> env, CogerEnv::Create(c));
  std::vector<std::string> methods = options.methods;
  if (methods.empty()) methods = {"router", "L1", "L2", "L3", "L4", "random"};
  for (const std::string& m : methods) {
    if (m != "router" && m != "random" && LevelOf(m) == 0) {
      return InvalidArgument("eval method '" + m + "': expected router, L1..L4 or random");
    }
  }
  Result<rewards::AnswerFormat> default_format = rewards::ParseAnswerFormat(c.coger.answer_format);
  if (!default_format.ok()) return default_format.status();
  size_t n = examples.size();
  if (options.limit > 0) n = std::min(n, static_cast<size_t>(options.limit));
  if (n == 0) return InvalidArgument("eval: no examples");
  if (options.progress != nullptr) {
    options.progress->AddTotal(static_cast<int64_t>(methods.size() * n));
  }

  std::vector<CogerMethodResult> results;
  for (const std::string& method : methods) {
    CogerMethodResult r;
    r.method = method;
    std::mt19937_64 rng(options.seed);
    std::uniform_int_distribution<int> any_level(1, 4);
    for (size_t i = 0; i < n; ++i) {
      const std::string item_json = CogerItemJson(examples[i]);
      CogerItemOutcome out;
      out.difficulty = runtime::ExampleDifficulty(examples[i]);
      const auto t0 = Clock::now();
      if (method == "router") {
        runtime::EpisodeInput in;
        in.episode_id = "eval-" + std::to_string(i);
        in.dataset_item = item_json;
        in.sampling.temperature = 0.0;  // greedy routing at inference
        if (!options.adapter.empty()) {
          auto p = std::make_shared<runtime::PolicySnapshot>();
          p->kind = runtime::PolicySnapshot::Kind::kLoraAdapter;
          p->adapter_name = options.adapter;
          in.policy = p;
        }
        Result<runtime::Trajectory> t = env->Run(in);
        if (!t.ok()) return t.status();
        r.latency_s += std::chrono::duration<double>(Clock::now() - t0).count();
        AddUsage(t->usage, r);
        out.cost_usd = t->usage.total.cost_usd;
        if (auto oracle = t->info.find(kOracleCostInfo); oracle != t->info.end()) {
          r.oracle_cost_usd += std::strtod(oracle->second.c_str(), nullptr);
        }
        auto level = t->info.find("level");
        out.level = level == t->info.end() ? 0 : LevelOf(level->second);
        if (t->failure.failed()) {
          out.failure = runtime::FailureReasonName(t->failure.reason);
        } else {
          for (const auto& [name, v] : t->rewards) {
            if (name == "accuracy" && v > 0.5) out.correct = true;
          }
        }
      } else {
        out.level = method == "random" ? any_level(rng) : LevelOf(method);
        ALLOT_ASSIGN_OR_RETURN(CogerItem item, ParseCogerItem(item_json, *default_format));
        runtime::EpisodeInput in;
        runtime::Episode ep(&env->client(), c.coger.limits, in);
        LevelAnswer a = env->AnswerAtLevel(ep, item.question, out.level);
        r.latency_s += std::chrono::duration<double>(Clock::now() - t0).count();
        AddUsage(ep.usage(), r);
        out.cost_usd = ep.usage().total.cost_usd;
        if (a.failure.failed()) {
          out.failure = runtime::FailureReasonName(a.failure.reason);
        } else {
          out.correct = rewards::Grade(a.text, item.reference, item.format).correct;
        }
      }
      Tally(std::move(out), r);
      if (options.progress != nullptr) options.progress->Advance();
    }
    results.push_back(std::move(r));
  }
  return results;
}

void PrintCogerEval(const std::vector<CogerMethodResult>& results, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof(line), "%-8s %6s %8s %7s %12s %12s %10s  %s\n", "method", "n",
                "accuracy", "failed", "cost_usd", "energy_j", "latency_s",
                "levels none/L1/L2/L3/L4");
  out << line;
  for (const CogerMethodResult& r : results) {
    const double n = r.episodes > 0 ? static_cast<double>(r.episodes) : 1.0;
    std::snprintf(line, sizeof(line),
                  "%-8s %6lld %8.4f %7lld %12.6f %12.1f %10.3f  %lld/%lld/%lld/%lld/%lld\n",
                  r.method.c_str(), static_cast<long long>(r.episodes), r.accuracy(),
                  static_cast<long long>(r.failed), r.cost_usd / n, r.energy_j / n, r.latency_s / n,
                  static_cast<long long>(r.levels[0]), static_cast<long long>(r.levels[1]),
                  static_cast<long long>(r.levels[2]), static_cast<long long>(r.levels[3]),
                  static_cast<long long>(r.levels[4]));
    out << line;
  }
  for (const CogerMethodResult& r : results) {
    if (r.failures.empty()) continue;
    out << r.method << " failures:";
    for (const auto& [reason, n] : r.failures) out << " " << reason << " " << n;
    out << "\n";
  }
  out << "(cost, energy and latency are means per query)\n";
}

int RunCogerEvalCommand(const CogerEnvConfig& config, const datasets::DatasetConfig& data,
                        const std::string& method, const std::string& adapter, int64_t limit,
                        uint64_t seed, const std::string& json_path, std::ostream& out,
                        std::ostream& err) {
  CogerEvalOptions options;
  options.limit = limit;
  options.seed = seed;
  options.adapter = adapter;
  options.methods = runtime::ParseEvalMethods(method);
  return runtime::RunEvalCommand(
      data, json_path, out, err,
      [&](const std::vector<datasets::Example>& examples) {
        ProgressBar progress(0, "eval coger: items", stderr);
        options.progress = &progress;
        auto results = RunCogerEval(config, examples, options);
        progress.Finish();
        return results;
      },
      PrintCogerEval);
}

namespace {

int RunRecipeEval(const runtime::EvalRequest& r) {
  Result<CogerEnvConfig> config =
      runtime::LoadEnvConfig<CogerEnvConfig>(r.recipe, CogerEnvDescriptor());
  if (!config.ok()) {
    *r.err << "allot eval: " << config.status().message() << "\n";
    return 1;
  }
  return RunCogerEvalCommand(*config, r.eval_data, r.method, r.adapter, r.episodes, r.seed, r.json,
                             *r.out, *r.err);
}

}  // namespace

const runtime::EnvDescriptor& CogerEnvDescriptor() {
  static const runtime::EnvDescriptor kDescriptor{"coger",
                                                  runtime::EnvKind::kLlmPolicy,
                                                  {"endpoints", "gpu", "rewards", "tools"},
                                                  &RegisterCogerEnv,
                                                  &RunRecipeEval,
                                                  /*reads_datasets=*/true,
                                                  /*step_shares=*/{"level"}};
  return kDescriptor;
}

}  // namespace allot::envs::coger
