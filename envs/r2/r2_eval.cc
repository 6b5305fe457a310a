#include "envs/r2/r2_eval.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>

#include "core/progress_bar.h"
#include "envs/r2/r2_env.h"
#include "envs/r2/subtask_plan.h"
#include "envs/runtime/eval_output.h"
#include "envs/runtime/prompt_template.h"
#include "rewards/grader.h"

namespace allot::envs::r2 {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kDecomposedPrefix = "decomposed:";

double InfoNumber(const runtime::Trajectory& t, const char* key) {
  auto it = t.info.find(key);
  if (it == t.info.end()) return 0.0;
  try {
    return std::stod(it->second);
  } catch (...) {
    return 0.0;
  }
}

void Tally(R2ItemOutcome out, R2MethodResult& r) {
  ++r.episodes;
  r.cost_usd += out.cost_usd;
  r.policy_cost_usd += out.policy_cost_usd;
  if (!out.failure.empty()) {
    ++r.failed;
  } else if (!out.format_error.empty()) {
    ++r.malformed;
  } else if (out.correct) {
    ++r.correct;
  }
  r.items.push_back(std::move(out));
}

}  // namespace

Result<std::shared_ptr<runtime::PolicySnapshot>> EvalPolicy(const std::string& adapter) {
  if (adapter.empty()) return std::shared_ptr<runtime::PolicySnapshot>();
  auto p = std::make_shared<runtime::PolicySnapshot>();
  p->kind = runtime::PolicySnapshot::Kind::kLoraAdapter;
  if (adapter.find('=') == std::string::npos) {
    p->adapter_name = adapter;
    return p;
  }
  // One adapter per role (Sec. 4.3; the alternating learner's "<run>-<role>-v<N>").
  std::stringstream ss(adapter);
  for (std::string pair; std::getline(ss, pair, ',');) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
      return InvalidArgument("--adapter '" + adapter + "': '" + pair +
                             "' is not ROLE=NAME (one adapter: NAME; one per role: " +
                             kDecomposerRole + "=NAME," + kAllocatorRole + "=NAME)");
    }
    p->role_adapters.push_back({.role = pair.substr(0, eq),
                                .adapter_name = pair.substr(eq + 1),
                                .version = 0,
                                .adapter_uri = ""});
  }
  for (const char* role : {kDecomposerRole, kAllocatorRole}) {
    if (p->AdapterOf(role) == nullptr) {
      return InvalidArgument("--adapter '" + adapter + "': no adapter for the " + role + " role");
    }
  }
  p->adapter_name = p->AdapterOf(kDecomposerRole)->adapter_name;
  return p;
}

namespace {

// One task decomposed by the policy and every subtask executed on `tier` (no allocator): what
// the pool can do on the decompositions whatever the allocation.
Status RunDecomposed(const R2Env& env, const std::string& item_json, const std::string& tier,
                     const std::string& adapter, R2ItemOutcome& out, R2MethodResult& r) {
  const R2EnvConfig& c = env.config();  // the prompt texts resolved
  ALLOT_ASSIGN_OR_RETURN(R2Item item, ParseR2Item(item_json, env.default_format()));
  ALLOT_ASSIGN_OR_RETURN(std::string prompt, runtime::RenderTemplate(c.r2.prompts.decomposer,
                                                                     {{"question", item.question}},
                                                                     "r2.prompts.decomposer"));
  runtime::EpisodeInput in;
  runtime::Episode ep(&env.client(), c.r2.limits, in);
  runtime::GenerateOptions o;
  o.role = runtime::SegmentRole::kOtherModel;
  o.model = adapter;
  o.max_tokens = c.r2.decomposer_max_tokens;
  o.temperature = 0.0;
  Result<runtime::Turn> turn = ep.CompleteText(c.r2.policy_endpoint, prompt, o);
  auto account = [&] {
    r.energy_j += ep.usage().total.energy_j;
    out.cost_usd = ep.usage().total.cost_usd;
  };
  if (!turn.ok()) {
    account();
    out.failure = runtime::FailureReasonName(
        runtime::Episode::FailureFrom(turn.status(), runtime::FailureReason::kEndpointError)
            .reason);
    return Status::Ok();
  }
  out.policy_cost_usd = ep.usage().total.cost_usd;
  Result<std::vector<std::string>> subtasks = ParseSubtasks(turn->text, c.r2.max_subtasks);
  if (!subtasks.ok() || turn->truncated()) {
    account();
    out.format_error =
        subtasks.ok() ? "decomposition: ran past its budget" : subtasks.status().message();
    return Status::Ok();
  }
  std::vector<Assignment> allocation(subtasks->size(), Assignment{0, tier});
  for (const Assignment& a : allocation) out.models += (out.models.empty() ? "" : ",") + a.model;
  r.subtasks_per_model[tier] += static_cast<int64_t>(subtasks->size());
  Execution ex = env.Execute(ep, item.question, *subtasks, allocation);
  account();
  if (ex.failure.failed()) {
    out.failure = runtime::FailureReasonName(ex.failure.reason);
  } else {
    out.correct = rewards::Grade(ex.final_answer, item.reference, item.format).correct;
  }
  return Status::Ok();
}

}  // namespace

double R2MethodResult::mean_api_cost_usd() const {
  return episodes > 0 ? (cost_usd - policy_cost_usd) / double(episodes) : 0.0;
}

double R2MethodResult::mean_cost_usd() const {
  return episodes > 0 ? cost_usd / double(episodes) : 0.0;
}

nlohmann::json R2ItemOutcome::ToJson() const {
  nlohmann::json j = {{"id", id},
                      {"correct", correct},
                      {"models", models},
                      {"cost_usd", cost_usd},
                      {"policy_cost_usd", policy_cost_usd}};
  if (!failure.empty()) j["failure"] = failure;
  if (!format_error.empty()) j["format_error"] = format_error;
  if (!difficulty.empty()) j["difficulty"] = difficulty;
  if (!decomposition.empty()) j["decomposition"] = decomposition;
  if (!allocation.empty()) j["allocation"] = allocation;
  return j;
}

nlohmann::json R2MethodResult::ToJson() const {
  const double n = episodes > 0 ? static_cast<double>(episodes) : 1.0;
  nlohmann::json items_json = nlohmann::json::array();
  for (const R2ItemOutcome& o : items) items_json.push_back(o.ToJson());
  return {{"method", method},
          {"episodes", episodes},
          {"correct", correct},
          {"accuracy", accuracy()},
          {"failed", failed},
          {"malformed", malformed},
          {"mean_api_cost_usd", mean_api_cost_usd()},
          {"mean_policy_cost_usd", policy_cost_usd / n},
          {"mean_cost_usd", mean_cost_usd()},
          {"mean_energy_j", energy_j / n},
          {"mean_latency_s", latency_s / n},
          {"subtasks_per_model", subtasks_per_model},
          {"items", items_json}};
}

std::string R2ItemJson(const datasets::Example& e) {
  nlohmann::json j = {{"question", e.PromptText()}, {"answer", e.answer}};
  if (e.answer_format != "text") j["answer_format"] = e.answer_format;
  return j.dump();
}

Result<std::vector<R2MethodResult>> RunR2Eval(const R2EnvConfig& config,
                                              const std::vector<datasets::Example>& examples,
                                              const R2EvalOptions& options) {
  R2EnvConfig c = config;
  c.rewards.terms = {{"accuracy", 1.0}};  // graded on final correctness alone (Eq. 1)
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<R2Env> env, R2Env::Create(c));
  ALLOT_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::PolicySnapshot> policy,
                         EvalPolicy(options.adapter));
  std::vector<std::string> methods = options.methods;
  if (methods.empty()) {
    methods = {"allocator"};
    for (const std::string& m : env->pool()) methods.push_back(m);
  }
  for (const std::string& m : methods) {
    const std::string tier =
        m.rfind(kDecomposedPrefix, 0) == 0 ? m.substr(kDecomposedPrefix.size()) : m;
    if (m != "allocator" && env->Rank(tier) < 0) {
      return InvalidArgument("eval method '" + m +
                             "': expected allocator, a model of r2.pool, or decomposed:<model>");
    }
  }
  size_t n = examples.size();
  if (options.limit > 0) n = std::min(n, static_cast<size_t>(options.limit));
  if (n == 0) return InvalidArgument("eval: no examples");
  if (options.progress != nullptr) {
    options.progress->AddTotal(static_cast<int64_t>(methods.size() * n));
  }

  std::vector<R2MethodResult> results;
  for (const std::string& method : methods) {
    R2MethodResult r;
    r.method = method;
    for (size_t i = 0; i < n; ++i) {
      const std::string item_json = R2ItemJson(examples[i]);
      R2ItemOutcome out;
      out.id = examples[i].id;
      out.difficulty = runtime::ExampleDifficulty(examples[i]);
      const auto t0 = Clock::now();
      if (method == "allocator") {
        runtime::EpisodeInput in;
        in.episode_id = "eval-" + std::to_string(i);
        in.dataset_item = item_json;
        in.sampling.temperature = 0.0;  // greedy decomposition and allocation at inference
        in.policy = policy;
        Result<runtime::Trajectory> t = env->Run(in);
        if (!t.ok()) return t.status();
        r.latency_s += std::chrono::duration<double>(Clock::now() - t0).count();
        r.energy_j += t->usage.total.energy_j;
        out.cost_usd = t->usage.total.cost_usd;
        out.policy_cost_usd = InfoNumber(*t, "policy_cost_cents") / 100.0;
        if (auto m = t->info.find("models"); m != t->info.end()) out.models = m->second;
        if (auto d = t->info.find("decomposition"); d != t->info.end()) {
          out.decomposition = d->second;
        }
        if (auto a = t->info.find("allocation"); a != t->info.end()) out.allocation = a->second;
        if (auto f = t->info.find("format_error"); f != t->info.end()) {
          out.format_error = f->second;
          // A malformed plan executes nothing: all it cost is the policy's turns.
          out.policy_cost_usd = out.cost_usd;
        }
        if (t->failure.failed()) {
          out.failure = runtime::FailureReasonName(t->failure.reason);
        } else if (out.format_error.empty()) {
          for (const auto& [name, v] : t->rewards) {
            if (name == "accuracy" && v > 0.5) out.correct = true;
          }
          std::stringstream ss(out.models);
          for (std::string m; std::getline(ss, m, ',');) ++r.subtasks_per_model[m];
        }
      } else if (method.rfind(kDecomposedPrefix, 0) == 0) {
        ALLOT_RETURN_IF_ERROR(RunDecomposed(*env, item_json,
                                            method.substr(kDecomposedPrefix.size()),
                                            policy == nullptr ? "" : policy->adapter_name, out, r));
        r.latency_s += std::chrono::duration<double>(Clock::now() - t0).count();
      } else {
        out.models = method;
        ALLOT_ASSIGN_OR_RETURN(R2Item item, ParseR2Item(item_json, env->default_format()));
        ALLOT_ASSIGN_OR_RETURN(std::string prompt, env->SinglePrompt(item.question));
        runtime::EpisodeInput in;
        runtime::Episode ep(&env->client(), c.r2.limits, in);
        runtime::GenerateOptions o;
        o.role = runtime::SegmentRole::kOtherModel;
        o.max_tokens = c.r2.single_max_tokens;
        o.temperature = c.r2.executor_temperature;
        Result<runtime::Turn> turn = ep.CompleteText(method, prompt, o);
        r.latency_s += std::chrono::duration<double>(Clock::now() - t0).count();
        r.energy_j += ep.usage().total.energy_j;
        out.cost_usd = ep.usage().total.cost_usd;
        if (!turn.ok()) {
          out.failure = runtime::FailureReasonName(
              runtime::Episode::FailureFrom(turn.status(), runtime::FailureReason::kEndpointError)
                  .reason);
        } else {
          out.correct = rewards::Grade(turn->text, item.reference, item.format).correct;
        }
      }
      Tally(std::move(out), r);
      if (options.progress != nullptr) options.progress->Advance();
    }
    results.push_back(std::move(r));
  }
  return results;
}

void PrintR2Eval(const std::vector<R2MethodResult>& results, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof(line), "%-10s %5s %8s %7s %9s %12s %12s %12s %10s\n", "method", "n",
                "accuracy", "failed", "malformed", "api_cost_usd", "policy_usd", "total_usd",
                "energy_j");
  out << line;
  for (const R2MethodResult& r : results) {
    const double n = r.episodes > 0 ? static_cast<double>(r.episodes) : 1.0;
    std::snprintf(line, sizeof(line), "%-10s %5lld %8.4f %7lld %9lld %12.4e %12.4e %12.4e %10.4f\n",
                  r.method.c_str(), static_cast<long long>(r.episodes), r.accuracy(),
                  static_cast<long long>(r.failed), static_cast<long long>(r.malformed),
                  r.mean_api_cost_usd(), r.policy_cost_usd / n, r.mean_cost_usd(), r.energy_j / n);
    out << line;
  }
  for (const R2MethodResult& r : results) {
    if (r.subtasks_per_model.empty()) continue;
    out << r.method << " subtasks per model:";
    for (const auto& [m, k] : r.subtasks_per_model) out << " " << m << " " << k;
    out << "\n";
  }
  out << "(costs and energy are means per task; api_cost = the pool's calls, C_API)\n";
}

int RunR2EvalCommand(const R2EnvConfig& config, const datasets::DatasetConfig& data,
                     const std::string& method, const std::string& adapter, int64_t limit,
                     const std::string& json_path, std::ostream& out, std::ostream& err) {
  R2EvalOptions options;
  options.limit = limit;
  options.adapter = adapter;
  options.methods = runtime::ParseEvalMethods(method);
  return runtime::RunEvalCommand(
      data, json_path, out, err,
      [&](const std::vector<datasets::Example>& examples) {
        ProgressBar progress(0, "eval r2: items", stderr);
        options.progress = &progress;
        auto results = RunR2Eval(config, examples, options);
        progress.Finish();
        return results;
      },
      PrintR2Eval);
}

namespace {

int RunRecipeEval(const runtime::EvalRequest& r) {
  Result<R2EnvConfig> config = runtime::LoadEnvConfig<R2EnvConfig>(r.recipe, R2EnvDescriptor());
  if (!config.ok()) {
    *r.err << "allot eval: " << config.status().message() << "\n";
    return 1;
  }
  return RunR2EvalCommand(*config, r.eval_data, r.method, r.adapter, r.episodes, r.json, *r.out,
                          *r.err);
}

}  // namespace

const runtime::EnvDescriptor& R2EnvDescriptor() {
  static const runtime::EnvDescriptor kDescriptor{"r2",
                                                  runtime::EnvKind::kLlmPolicy,
                                                  {"endpoints", "gpu", "rewards"},
                                                  &RegisterR2Env,
                                                  &RunRecipeEval};
  return kDescriptor;
}

}  // namespace allot::envs::r2
