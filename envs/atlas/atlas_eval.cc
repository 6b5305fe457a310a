#include "envs/atlas/atlas_eval.h"

#include <cstdio>
#include <filesystem>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/progress_bar.h"
#include "core/random.h"
#include "envs/atlas/atlas_env.h"
#include "envs/runtime/eval_output.h"

namespace allot::envs::atlas {
namespace {

nlohmann::ordered_json TotalsJson(const llm::UsageTotals& u) {
  return {{"calls", u.calls},
          {"failed_calls", u.failed_calls},
          {"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"cost_usd", u.cost_usd},
          {"energy_j", u.energy_j},
          {"latency_s", u.latency_s}};
}

}  // namespace

std::string AtlasDatasetItem(const datasets::Example& e) {
  nlohmann::json j = {{"question", e.PromptText()}, {"answer", e.answer}, {"id", e.id}};
  if (!e.answer_format.empty()) j["format"] = e.answer_format;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string AtlasEvalReport::ToJson() const {
  nlohmann::ordered_json j;
  j["method"] = method;
  j["problems"] = problems;
  j["accuracy"] = accuracy();
  j["failed"] = failed;
  j["explore_budget"] = budget;
  j["mean_explore_calls"] = mean_explore_calls();
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  for (const auto& [calls, n] : calls_histogram) h[std::to_string(calls)] = n;
  j["explore_calls_histogram"] = h;
  j["stopped"] = stopped;
  j["total"] = TotalsJson(usage.total);
  nlohmann::ordered_json by = nlohmann::ordered_json::object();
  for (const auto& [name, u] : usage.by_endpoint) by[name] = TotalsJson(u);
  j["by_endpoint"] = by;
  nlohmann::ordered_json items_json = nlohmann::ordered_json::array();
  for (const AtlasItemOutcome& o : items) {
    nlohmann::ordered_json item = {{"id", o.id}};
    if (!o.difficulty.empty()) item["difficulty"] = o.difficulty;
    item["correct"] = o.correct;
    item["explore_calls"] = o.explore_calls;
    item[o.failure.empty() ? "stopped" : "failure"] = o.failure.empty() ? o.stopped : o.failure;
    item["cost_usd"] = o.cost_usd;
    items_json.push_back(std::move(item));
  }
  j["items"] = items_json;
  return j.dump(2);
}

Result<AtlasEvalReport> EvaluateAtlas(AtlasEnv& env, const std::vector<datasets::Example>& problems,
                                      uint64_t seed, ProgressBar* progress) {
  AtlasEvalReport r;
  r.method = env.config().atlas.finalize;
  r.budget = env.config().atlas.ExploreBudget();
  uint64_t n = 0;
  for (const datasets::Example& ex : problems) {
    runtime::EpisodeInput in;
    in.episode_id = ex.id;
    in.dataset_item = AtlasDatasetItem(ex);
    in.seed = SplitMix64Draw(seed, n);
    in.sampling.seed =
        SplitMix64Draw(seed, n) | 1;  // greedy orchestrator; the seed only breaks ties
    ++n;
    ALLOT_ASSIGN_OR_RETURN(runtime::Trajectory t, env.Run(in));
    if (progress != nullptr) progress->Advance();
    ++r.problems;
    r.usage.Merge(t.usage);
    AtlasItemOutcome& item = r.items.emplace_back();
    item.id = ex.id;
    item.difficulty = runtime::ExampleDifficulty(ex);
    item.explore_calls = t.tool_calls;
    item.cost_usd = t.usage.total.cost_usd;
    r.explore_calls += item.explore_calls;
    ++r.calls_histogram[item.explore_calls];
    if (t.failure.failed()) {
      ++r.failed;
      item.failure = runtime::FailureReasonName(t.failure.reason);
      ++r.stopped["failure:" + item.failure];
      continue;
    }
    item.stopped = t.info.count("stopped") ? t.info["stopped"] : "unknown";
    ++r.stopped[item.stopped];
    for (const auto& [name, v] : t.rewards) {
      if (name == "accuracy" && v > 0.5) item.correct = true;
    }
    r.correct += item.correct ? 1 : 0;
  }
  return r;
}

int RunAtlasEvalCommand(AtlasEnvConfig config, const datasets::DatasetConfig& data,
                        const std::string& methods, int64_t limit, uint64_t seed,
                        const std::string& recipe_path, const std::string& json_path,
                        std::ostream& out, std::ostream& err) {
  auto fail = [&](const Status& s) {
    err << "allot eval: " << s.ToString() << "\n";
    return 1;
  };
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir(config.atlas.prompts.dir);
  if (dir.is_relative() && !recipe_path.empty()) {
    const fs::path beside = fs::path(recipe_path).parent_path() / dir;
    if (fs::is_directory(beside, ec)) config.atlas.prompts.dir = beside.lexically_normal().string();
  }
  std::vector<std::string> chosen;
  if (methods.empty() || methods == "navigator") {
    chosen.push_back(config.atlas.finalize);
  } else if (methods == "all") {
    chosen = {"orchestrator", "integrator"};
  } else {
    std::stringstream ss(methods);
    for (std::string m; std::getline(ss, m, ',');) {
      if (m != "orchestrator" && m != "integrator") {
        return fail(InvalidArgument("--method " + m +
                                    ": atlas methods are orchestrator, integrator or all"));
      }
      chosen.push_back(m);
    }
  }
  if (data.path.empty()) return fail(InvalidArgument("eval_data.path: empty"));
  Result<datasets::Dataset> ds = datasets::LoadJsonl(data);
  if (!ds.ok()) return fail(ds.status().Annotate("eval_data"));
  std::vector<datasets::Example> problems = ds->examples;
  if (limit > 0 && problems.size() > static_cast<size_t>(limit)) {
    problems.resize(static_cast<size_t>(limit));
  }
  std::vector<AtlasEvalReport> reports;
  ProgressBar progress(static_cast<int64_t>(chosen.size() * problems.size()), "eval atlas: items",
                       stderr);
  for (const std::string& m : chosen) {
    AtlasEnvConfig c = config;
    c.atlas.finalize = m;
    Result<std::unique_ptr<AtlasEnv>> env = AtlasEnv::Create(std::move(c));
    if (!env.ok()) return fail(env.status());
    Result<AtlasEvalReport> r = EvaluateAtlas(**env, problems, seed, &progress);
    if (!r.ok()) return fail(r.status());
    reports.push_back(std::move(r).value());
  }
  char line[256];
  std::snprintf(line, sizeof line, "%-13s %6s %8s %7s %11s %8s %12s %10s\n", "method", "n",
                "accuracy", "failed", "mean_calls", "budget", "cost_usd", "tokens");
  out << line;
  std::string json = "[\n";
  for (const AtlasEvalReport& r : reports) {
    std::snprintf(
        line, sizeof line, "%-13s %6lld %8.4f %7lld %11.2f %8d %12.6f %10lld\n", r.method.c_str(),
        static_cast<long long>(r.problems), r.accuracy(), static_cast<long long>(r.failed),
        r.mean_explore_calls(), r.budget, r.usage.total.cost_usd,
        static_cast<long long>(r.usage.total.prompt_tokens + r.usage.total.completion_tokens));
    out << line;
    json += r.ToJson() + (&r == &reports.back() ? "\n" : ",\n");
  }
  out << "(mean_calls: explore calls per problem; cost_usd and tokens: totals over the run; "
         "--json adds the calls distribution and per-endpoint accounting)\n";
  json += "]\n";
  if (!json_path.empty()) {
    if (Status s = WriteFileAtomic(json_path, json); !s.ok()) return fail(s);
  }
  return 0;
}

namespace {

int RunRecipeEval(const runtime::EvalRequest& r) {
  Result<AtlasEnvConfig> config =
      runtime::LoadEnvConfig<AtlasEnvConfig>(r.recipe, AtlasEnvDescriptor());
  if (!config.ok()) {
    *r.err << "allot eval: " << config.status().message() << "\n";
    return 1;
  }
  return RunAtlasEvalCommand(*config, r.eval_data, r.method, r.episodes, r.seed, r.recipe_path,
                             r.json, *r.out, *r.err);
}

}  // namespace

const runtime::EnvDescriptor& AtlasEnvDescriptor() {
  static const runtime::EnvDescriptor kDescriptor{"atlas",
                                                  runtime::EnvKind::kLlmPolicy,
                                                  {"endpoints", "gpu"},
                                                  &RegisterAtlasEnv,
                                                  &RunRecipeEval};
  return kDescriptor;
}

}  // namespace allot::envs::atlas
