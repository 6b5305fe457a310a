#include "envs/r2/r2_env.h"

#include <map>
#include <utility>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "datasets/example_json.h"
#include "envs/r2/r2_prompts.h"
#include "envs/runtime/prompt_template.h"
#include "llm/client.h"

namespace allot::envs::r2 {
namespace {

using runtime::FailureReason;
using runtime::SegmentRole;

constexpr size_t kInfoChars = 4000;

std::string Cut(const std::string& s) {
  return s.size() <= kInfoChars ? s : s.substr(0, kInfoChars - 3) + "...";
}

Status CheckEndpoint(const llm::Client& client, const std::string& name, const std::string& field) {
  if (client.endpoint(name) == nullptr) {
    return InvalidArgument(field + ": endpoint '" + name + "' is not in the endpoint pool");
  }
  return Status::Ok();
}

}  // namespace

Result<R2Item> ParseR2Item(const std::string& text, rewards::AnswerFormat default_format) {
  ALLOT_ASSIGN_OR_RETURN(datasets::Example e, datasets::ExampleFromJson(text));
  R2Item item;
  item.question = e.PromptText();
  item.reference = e.answer;
  ALLOT_ASSIGN_OR_RETURN(item.format, rewards::ParseAnswerFormat(datasets::GradingFormat(
                                          e, rewards::AnswerFormatName(default_format))));
  return item;
}

R2Env::~R2Env() = default;

Result<std::unique_ptr<R2Env>> R2Env::Create(R2EnvConfig config,
                                             std::shared_ptr<llm::Client> client) {
  auto env = std::unique_ptr<R2Env>(new R2Env(std::move(config)));
  R2EnvConfig& c = env->config_;
  ALLOT_RETURN_IF_ERROR(ResolvePrompts(c.r2.prompts));
  if (c.r2.min_difficulty > c.r2.max_difficulty) {
    return InvalidArgument("r2.min_difficulty: above r2.max_difficulty");
  }
  if (client == nullptr) {
    llm::ClientOptions options;
    options.gpu = c.gpu;
    ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<llm::Client> made,
                           llm::Client::Create(c.endpoints, options));
    client = std::move(made);
  }
  env->client_ = std::move(client);
  const llm::Client& cl = *env->client_;
  ALLOT_RETURN_IF_ERROR(CheckEndpoint(cl, c.r2.policy_endpoint, "r2.policy_endpoint"));
  if (c.r2.pool.empty()) {
    for (const auto& e : c.endpoints) {
      if (e.name != c.r2.policy_endpoint) env->pool_.push_back(e.name);
    }
  } else {
    env->pool_ = c.r2.pool;
  }
  if (env->pool_.empty()) return InvalidArgument("r2.pool: no model to allocate subtasks to");
  for (size_t i = 0; i < env->pool_.size(); ++i) {
    ALLOT_RETURN_IF_ERROR(CheckEndpoint(cl, env->pool_[i], "r2.pool[" + std::to_string(i) + "]"));
  }
  if (c.r2.integrator != "last" && c.r2.integrator != kLastResult) {
    ALLOT_RETURN_IF_ERROR(CheckEndpoint(cl, c.r2.integrator, "r2.integrator"));
  }
  if (c.r2.review.enabled) {
    ALLOT_RETURN_IF_ERROR(CheckEndpoint(cl, c.r2.review.strong_model, "r2.review.strong_model"));
    if (env->Rank(c.r2.review.threshold_model) < 0) {
      return InvalidArgument("r2.review.threshold_model: '" + c.r2.review.threshold_model +
                             "' is not in r2.pool");
    }
  }
  Result<rewards::AnswerFormat> format = rewards::ParseAnswerFormat(c.r2.answer_format);
  if (!format.ok()) return format.status().Annotate("r2.answer_format");
  env->default_format_ = *format;
  for (const auto& t : c.rewards.terms) {
    if (t.name == "hierarchy" || t.name == "format" || t.name == "prm" || t.name == "action") {
      return InvalidArgument("rewards.terms: '" + t.name +
                             "' is not an R2-Reasoner term (accuracy, api_cost, energy, tokens)");
    }
  }
  ALLOT_ASSIGN_OR_RETURN(env->reward_, rewards::ComposedReward::Create(c.rewards));
  return env;
}

Result<std::unique_ptr<R2Env>> R2Env::FromConfigText(const std::string& text) {
  ALLOT_ASSIGN_OR_RETURN(R2EnvConfig config,
                         runtime::LoadEnvConfig<R2EnvConfig>(text, R2EnvDescriptor()));
  return Create(std::move(config));
}

std::string R2Env::ConfigText() const {
  R2EnvConfig copy = config_;
  return config::ToYaml(copy);
}

int R2Env::Rank(const std::string& model) const {
  for (size_t i = 0; i < pool_.size(); ++i) {
    if (pool_[i] == model) return static_cast<int>(i);
  }
  return -1;
}

Result<std::string> R2Env::AllocatorPrompt(size_t k) const {
  std::string pool;
  for (const std::string& name : pool_) {
    const llm::EndpointConfig* e = client_->endpoint(name);
    pool += "- " + name + " (" + (e != nullptr ? e->group : std::string("?")) + ")\n";
  }
  return runtime::RenderTemplate(config_.r2.prompts.allocator,
                                 {{"pool", pool}, {"num_subtasks", std::to_string(k)}},
                                 "r2.prompts.allocator");
}

Result<std::string> R2Env::SubtaskPrompt(const std::string& question,
                                         const std::vector<std::string>& subtasks, size_t i,
                                         const std::vector<std::string>& results) const {
  if (i >= subtasks.size() || results.size() > i) {
    return InvalidArgument("r2: subtask " + std::to_string(i + 1) + " of " +
                           std::to_string(subtasks.size()) + " after " +
                           std::to_string(results.size()) + " results");
  }
  return runtime::RenderTemplate(config_.r2.prompts.subtask,
                                 {{"question", question},
                                  {"previous", StepsText(subtasks, results)},
                                  {"index", std::to_string(i + 1)},
                                  {"subtask", subtasks[i]},
                                  {"subtasks", SubtaskListText(subtasks)},
                                  {"done", DoneText(subtasks, results)},
                                  {"subtask_filled", FillResults(subtasks[i], results,
                                                                 default_format_)}},
                                 "r2.prompts.subtask");
}

Result<std::string> R2Env::SinglePrompt(const std::string& question) const {
  return runtime::RenderTemplate(config_.r2.prompts.single, {{"question", question}},
                                 "r2.prompts.single");
}

Execution R2Env::Execute(runtime::Episode& ep, const std::string& question,
                         const std::vector<std::string>& subtasks,
                         const std::vector<Assignment>& allocation,
                         runtime::Conversation* record) const {
  const R2Section& s = config_.r2;
  Execution out;
  auto fail = [&](const Status& st, FailureReason otherwise) {
    out.failure = runtime::Episode::FailureFrom(st, otherwise);
    return out;
  };
  if (subtasks.size() != allocation.size()) {
    return fail(InvalidArgument("r2: " + std::to_string(subtasks.size()) + " subtasks but " +
                                std::to_string(allocation.size()) + " assignments"),
                FailureReason::kEnvError);
  }
  if (subtasks.empty()) {
    return fail(InvalidArgument("r2: no subtask to execute"), FailureReason::kEnvError);
  }
  const int threshold = s.review.enabled ? Rank(s.review.threshold_model) : -1;
  for (size_t i = 0; i < subtasks.size(); ++i) {
    // Sec. 4.4 (3): t^i runs on M_A(t^i) and sees every earlier result.
    const std::string previous = StepsText(subtasks, out.results);
    Result<std::string> prompt = SubtaskPrompt(question, subtasks, i, out.results);
    if (!prompt.ok()) return fail(prompt.status(), FailureReason::kEnvError);
    runtime::GenerateOptions o;
    o.role = SegmentRole::kOtherModel;
    o.max_tokens = s.subtask_max_tokens;
    o.temperature = s.executor_temperature;
    Result<runtime::Turn> turn = ep.CompleteText(allocation[i].model, *prompt, o);
    if (!turn.ok()) return fail(turn.status(), FailureReason::kEndpointError);
    std::string result = Trimmed(turn->text);
    bool reviewed = false, refined = false;
    if (threshold >= 0 && Rank(allocation[i].model) < threshold) {
      // PRM_Verify(M_strong, r_j): the strong model keeps r_j or gives r'_j.
      Result<std::string> rp = runtime::RenderTemplate(s.prompts.review,
                                                       {{"question", question},
                                                        {"previous", previous},
                                                        {"subtask", subtasks[i]},
                                                        {"answer", result}},
                                                       "r2.prompts.review");
      if (!rp.ok()) return fail(rp.status(), FailureReason::kEnvError);
      runtime::GenerateOptions ro = o;
      ro.max_tokens = s.review.max_tokens;
      Result<runtime::Turn> verdict = ep.CompleteText(s.review.strong_model, *rp, ro);
      if (!verdict.ok()) return fail(verdict.status(), FailureReason::kEndpointError);
      reviewed = true;
      const size_t at = verdict->text.find(s.review.refine_marker);
      if (at != std::string::npos &&
          verdict->text.find(s.review.keep_marker) == std::string::npos) {
        std::string refined_text =
            Trimmed(verdict->text.substr(at + s.review.refine_marker.size()));
        if (!refined_text.empty()) {
          result = std::move(refined_text);
          refined = true;
        }
      }
    }
    if (record != nullptr) {
      Status st = ep.AppendText(*record, SegmentRole::kOtherModel,
                                "\nResult " + std::to_string(i + 1) + ": " + result + "\n", 0,
                                refined ? s.review.strong_model : allocation[i].model);
      if (!st.ok()) return fail(st, FailureReason::kEndpointError);
    }
    out.results.push_back(std::move(result));
    out.reviewed.push_back(reviewed);
    out.refined.push_back(refined);
  }
  // Sec. 4.4 (4): the results are integrated into A_final.
  out.integrator = s.integrator == "last" || s.integrator == kLastResult ? allocation.back().model
                                                                          : s.integrator;
  if (s.integrator == kLastResult) {
    out.final_answer = out.results.empty() ? std::string() : out.results.back();
    return out;
  }
  Result<std::string> prompt =
      runtime::RenderTemplate(s.prompts.integrate,
                              {{"question", question},
                               {"results", StepsText(subtasks, out.results)},
                               {"steps", ResultStepsText(out.results)}},
                              "r2.prompts.integrate");
  if (!prompt.ok()) return fail(prompt.status(), FailureReason::kEnvError);
  runtime::GenerateOptions o;
  o.role = SegmentRole::kOtherModel;
  o.max_tokens = s.integrate_max_tokens;
  o.temperature = s.executor_temperature;
  Result<runtime::Turn> turn = ep.CompleteText(out.integrator, *prompt, o);
  if (!turn.ok()) return fail(turn.status(), FailureReason::kEndpointError);
  out.final_answer = turn->text;
  return out;
}

Result<runtime::Trajectory> R2Env::Run(const runtime::EpisodeInput& input) {
  runtime::Trajectory traj;
  traj.policy_version = input.policy_version();
  Result<R2Item> item = ParseR2Item(input.dataset_item, default_format_);
  if (!item.ok()) {
    traj.failure = {FailureReason::kEnvError, item.status().ToString()};
    return traj;
  }
  const R2Section& s = config_.r2;
  runtime::Episode ep(client_.get(), s.limits, input);
  runtime::Conversation conv(s.policy_endpoint);
  size_t decomposer_seg = SIZE_MAX, allocator_seg = SIZE_MAX;
  std::string format_error;
  auto finish = [&](const Status& st, FailureReason otherwise) {
    if (!st.ok()) traj.failure = runtime::Episode::FailureFrom(st, otherwise);
    traj.segments = conv.TakeSegments();
    // The role tags the alternating learner reads (Sec. 4.3).
    if (decomposer_seg < traj.segments.size()) {
      traj.segments[decomposer_seg].source = std::string(kDecomposerRole) + "@" + s.policy_endpoint;
    }
    if (allocator_seg < traj.segments.size()) {
      traj.segments[allocator_seg].source = std::string(kAllocatorRole) + "@" + s.policy_endpoint;
    }
    ep.Finish(traj);
    traj.info["cost_cents"] = std::to_string(traj.usage.total.cost_usd * 100.0);
    traj.info["energy_j"] = std::to_string(traj.usage.total.energy_j);
    if (!format_error.empty()) traj.info["format_error"] = Cut(format_error);
    return traj;
  };

  // The policy's sampling: the request's, else the role's budget.
  runtime::GenerateOptions po;
  po.role = SegmentRole::kPolicy;
  const runtime::SamplingSpec& sp = input.sampling;
  po.temperature = sp.temperature;
  if (sp.top_p > 0) po.top_p = sp.top_p;
  if (sp.top_k > 0) po.top_k = sp.top_k;
  if (sp.seed != 0) po.seed = static_cast<int64_t>(sp.seed);
  po.stop = sp.stop;
  const bool lora =
      input.policy != nullptr && input.policy->kind == runtime::PolicySnapshot::Kind::kLoraAdapter;
  // Each role samples from its own adapter when the learner trains one per role (Sec. 4.3: two
  // models, one updated while the other stays fixed); else both share the policy's adapter.
  auto sample_as = [&](const char* role) -> Status {
    po.model = lora ? input.policy->adapter_name : std::string();
    po.policy_version = input.policy_version();
    if (!lora || input.policy->role_adapters.empty()) return Status::Ok();
    const runtime::RoleAdapter* a = input.policy->AdapterOf(role);
    if (a == nullptr) {
      return InvalidArgument("r2: policy version " + std::to_string(input.policy_version()) +
                             " has no adapter for the " + role + " role");
    }
    po.model = a->adapter_name;
    po.policy_version = a->version;
    return Status::Ok();
  };

  // (1) Task decomposition (Sec. 4.1).
  Result<std::string> prompt = runtime::RenderTemplate(
      s.prompts.decomposer, {{"question", item->question}}, "r2.prompts.decomposer");
  if (!prompt.ok()) return finish(prompt.status(), FailureReason::kEnvError);
  Status st = ep.AppendText(conv, SegmentRole::kPrompt, *prompt);
  if (!st.ok()) return finish(st, FailureReason::kEndpointError);
  st = sample_as(kDecomposerRole);
  if (!st.ok()) return finish(st, FailureReason::kEnvError);
  po.max_tokens = sp.max_tokens > 0 ? sp.max_tokens : s.decomposer_max_tokens;
  Result<runtime::Turn> decomposed = ep.Generate(conv, po);
  if (!decomposed.ok()) return finish(decomposed.status(), FailureReason::kEndpointError);
  decomposer_seg = conv.segments().size() - 1;
  traj.info["decomposition"] = Cut(decomposed->text);

  rewards::RewardInput in;
  in.question = item->question;
  in.reference = item->reference;
  in.format = item->format;
  auto score = [&]() {
    in.usage = rewards::CostUsageFrom(ep.usage().total);
    Result<rewards::RewardBreakdown> b = reward_->Compute(in);
    if (!b.ok()) return finish(b.status(), FailureReason::kEnvError);
    for (const auto& term : config_.rewards.terms) traj.SetReward(term.name, b->values[term.name]);
    traj.reward = b->total;
    return finish(Status::Ok(), FailureReason::kEnvError);
  };

  // A runaway or malformed decomposition executes nothing and scores 0 (no answer).
  Result<std::vector<std::string>> subtasks =
      decomposed->truncated()
          ? Result<std::vector<std::string>>(InvalidArgument(
                "decomposition: ran past its " + std::to_string(po.max_tokens) + " tokens"))
          : ParseSubtasks(decomposed->text, s.max_subtasks);
  if (!subtasks.ok()) {
    format_error = subtasks.status().message();
    return score();
  }
  traj.info["num_subtasks"] = std::to_string(subtasks->size());

  // (2) Subtask allocation (Sec. 4.2): the allocator reads the decomposition above.
  Result<std::string> alloc_prompt = AllocatorPrompt(subtasks->size());
  if (!alloc_prompt.ok()) return finish(alloc_prompt.status(), FailureReason::kEnvError);
  st = ep.AppendText(conv, SegmentRole::kEnv, *alloc_prompt);
  if (!st.ok()) return finish(st, FailureReason::kEndpointError);
  st = sample_as(kAllocatorRole);
  if (!st.ok()) return finish(st, FailureReason::kEnvError);
  po.max_tokens = sp.max_tokens > 0 ? sp.max_tokens : s.allocator_max_tokens;
  Result<runtime::Turn> allocated = ep.Generate(conv, po);
  if (!allocated.ok()) return finish(allocated.status(), FailureReason::kEndpointError);
  allocator_seg = conv.segments().size() - 1;
  traj.info["allocation"] = Cut(allocated->text);
  Result<std::vector<Assignment>> allocation =
      allocated->truncated()
          ? Result<std::vector<Assignment>>(InvalidArgument(
                "allocation: ran past its " + std::to_string(po.max_tokens) + " tokens"))
          : ParseAllocation(allocated->text, subtasks->size(), pool_, s.min_difficulty,
                            s.max_difficulty);
  if (!allocation.ok()) {
    format_error = allocation.status().message();
    return score();
  }
  std::string models;
  for (const Assignment& a : *allocation) models += (models.empty() ? "" : ",") + a.model;
  traj.info["models"] = models;

  // What the two policy turns cost, apart from the pool's calls (the paper's C_API counts the
  // pool; the decomposer and allocator are a locally deployed model).
  traj.info["policy_cost_cents"] = std::to_string(ep.usage().total.cost_usd * 100.0);

  // (3)-(4) Execution, review and integration.
  Execution ex =
      Execute(ep, item->question, *subtasks, *allocation, s.record_execution ? &conv : nullptr);
  int reviewed = 0, refined = 0;
  for (size_t i = 0; i < ex.reviewed.size(); ++i) {
    reviewed += ex.reviewed[i];
    refined += ex.refined[i];
  }
  if (s.review.enabled) {
    traj.info["reviewed"] = std::to_string(reviewed);
    traj.info["refined"] = std::to_string(refined);
  }
  if (ex.failure.failed()) {
    traj.failure = ex.failure;
    return finish(Status::Ok(), FailureReason::kEnvError);
  }
  traj.info["integrator"] = ex.integrator;
  traj.info["final_answer"] = Cut(ex.final_answer);
  in.response = decomposed->text + allocated->text;
  in.final_response = ex.final_answer.empty() ? std::string(" ") : ex.final_answer;
  return score();
}

void RegisterR2Env(runtime::EnvRegistrar& registry) {
  registry.Register(
      "r2", [](const std::string& env_config) -> Result<std::unique_ptr<runtime::Env>> {
        ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<R2Env> env, R2Env::FromConfigText(env_config));
        return std::unique_ptr<runtime::Env>(std::move(env));
      });
}

}  // namespace allot::envs::r2
