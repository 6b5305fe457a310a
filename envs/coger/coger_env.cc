#include "envs/coger/coger_env.h"

#include <cstdio>
#include <utility>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "datasets/example_json.h"
#include "envs/runtime/prompt_template.h"
#include "llm/client.h"
#include "rewards/grader.h"

namespace allot::envs::coger {
namespace {

using runtime::FailureReason;
using runtime::SegmentRole;

constexpr size_t kInfoChars = 4000;

// The L_min oracle's usage for the episode whose rewards are being computed on this thread.
// The solver runs inside ComposedReward::Compute (synchronously, on the episode's thread) and
// adds its calls here. They are the reward's own calls, reported apart (info oracle_cost_usd),
// never the episode's: which episode misses the level-outcome cache is an accident of order.
thread_local llm::UsageReport* t_oracle_usage = nullptr;

class OracleUsageScope {
 public:
  explicit OracleUsageScope(llm::UsageReport* sink) : previous_(t_oracle_usage) {
    t_oracle_usage = sink;
  }
  ~OracleUsageScope() { t_oracle_usage = previous_; }
  OracleUsageScope(const OracleUsageScope&) = delete;
  OracleUsageScope& operator=(const OracleUsageScope&) = delete;

 private:
  llm::UsageReport* previous_;
};

std::string Cut(const std::string& s) {
  return s.size() <= kInfoChars ? s : s.substr(0, kInfoChars - 3) + "...";
}

struct PromptSlot {
  const char* name;
  std::string CogerPrompts::*text;
  std::vector<std::string> vars;
};

const std::vector<PromptSlot>& PromptSlots() {
  static const std::vector<PromptSlot> slots = {
      {"router", &CogerPrompts::router, {"question"}},
      {"l1_direct", &CogerPrompts::l1_direct, {"question"}},
      {"l2_cot", &CogerPrompts::l2_cot, {"question"}},
      {"l3_reasoning", &CogerPrompts::l3_reasoning, {"question"}},
      {"cotool", &CogerPrompts::cotool, {"question", "max_tool_calls"}},
      {"reason_in_tool",
       &CogerPrompts::reason_in_tool,
       {"question", "tool_query", "prev_reasoning", "tool_output"}},
      {"tool_selection", &CogerPrompts::tool_selection, {"tool_list", "tool_query"}},
  };
  return slots;
}

Status CheckEndpoint(const llm::Client& client, const std::string& name, const char* field) {
  if (client.endpoint(name) == nullptr) {
    return InvalidArgument(std::string(field) + ": endpoint '" + name +
                           "' is not in the endpoint pool");
  }
  return Status::Ok();
}

}  // namespace

Status ResolvePrompts(CogerPrompts& p) {
  std::vector<runtime::PromptSlotRef> refs;
  for (const PromptSlot& slot : PromptSlots())
    refs.push_back({slot.name, &(p.*slot.text), slot.vars});
  return runtime::ResolvePromptSlots(p.dir, "coger.prompts", refs);
}

Result<CogerItem> ParseCogerItem(const std::string& text, rewards::AnswerFormat default_format) {
  ALLOT_ASSIGN_OR_RETURN(datasets::Example e, datasets::ExampleFromJson(text));
  CogerItem item;
  item.question = e.PromptText();
  item.reference = e.answer;
  ALLOT_ASSIGN_OR_RETURN(item.format, rewards::ParseAnswerFormat(datasets::GradingFormat(
                                          e, rewards::AnswerFormatName(default_format))));
  // At the top level (allot eval) or under "extra" (the grpo engine's items): both land in extra.
  if (auto it = e.extra.find("min_level"); it != e.extra.end()) {
    if (!it->is_number_integer()) {
      return InvalidArgument(e.source + ": field 'min_level': not an integer");
    }
    item.min_level = it->get<int>();
  }
  return item;
}

CogerEnv::~CogerEnv() = default;

Result<std::unique_ptr<CogerEnv>> CogerEnv::Create(CogerEnvConfig config,
                                                   std::shared_ptr<llm::Client> client) {
  auto env = std::unique_ptr<CogerEnv>(new CogerEnv(std::move(config)));
  CogerEnvConfig& c = env->config_;
  ALLOT_RETURN_IF_ERROR(ResolvePrompts(c.coger.prompts));
  if (client == nullptr) {
    llm::ClientOptions options;
    options.gpu = c.gpu;
    ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<llm::Client> made,
                           llm::Client::Create(c.endpoints, options));
    client = std::move(made);
  }
  env->client_ = std::move(client);
  const llm::Client& cl = *env->client_;
  ALLOT_RETURN_IF_ERROR(CheckEndpoint(cl, c.coger.router_endpoint, "coger.router_endpoint"));
  ALLOT_RETURN_IF_ERROR(CheckEndpoint(cl, c.coger.l2.endpoint, "coger.l2.endpoint"));
  ALLOT_RETURN_IF_ERROR(CheckEndpoint(cl, c.coger.l3.endpoint, "coger.l3.endpoint"));
  ALLOT_RETURN_IF_ERROR(
      CheckEndpoint(cl, c.coger.cotool.model.endpoint, "coger.cotool.model.endpoint"));
  if (c.coger.cotool.selector == "llm") {
    ALLOT_RETURN_IF_ERROR(CheckEndpoint(cl, c.coger.cotool.selector_model.endpoint,
                                        "coger.cotool.selector_model.endpoint"));
  }
  Result<rewards::AnswerFormat> format = rewards::ParseAnswerFormat(c.coger.answer_format);
  if (!format.ok()) return format.status().Annotate("coger.answer_format");
  env->default_format_ = *format;

  ALLOT_ASSIGN_OR_RETURN(env->tools_, tools::BuildRstKit(c.tools));
  ALLOT_ASSIGN_OR_RETURN(env->selector_, MakeToolSelector(c.coger.cotool, env->tools_.get(),
                                                          c.coger.prompts.tool_selection));
  env->cotool_ = std::make_unique<CoTool>(c.coger.cotool, env->tools_.get(), env->selector_.get(),
                                          c.coger.prompts.cotool, c.coger.prompts.reason_in_tool);
  ALLOT_ASSIGN_OR_RETURN(env->cache_, LevelOutcomeCache::Open(c.coger.lmin.cache_path));

  // The hierarchy term's L_min comes from coger.lmin (CogER Eq. 6-8, notes.md). With no
  // oracle a hierarchy term is a configuration error, never a silent 0.
  bool hierarchy = false;
  for (const auto& t : c.rewards.terms) hierarchy |= t.name == "hierarchy";
  rewards::RewardDeps deps;
  const std::string& oracle = c.coger.lmin.oracle;
  // rewards.hierarchy.oracle names the same choice for the rewards library; left at its default
  // (outcomes) the env fills it in, and a recipe that sets it otherwise must agree.
  if (hierarchy && c.rewards.hierarchy.oracle != "outcomes" &&
      c.rewards.hierarchy.oracle != oracle) {
    return InvalidArgument("rewards.hierarchy.oracle: '" + c.rewards.hierarchy.oracle +
                           "' disagrees with coger.lmin.oracle: '" + oracle +
                           "'; the CogER env takes L_min from coger.lmin.oracle (drop "
                           "rewards.hierarchy.oracle or make the two agree)");
  }
  if (oracle == "solver") {
    ALLOT_RETURN_IF_ERROR(CheckEndpoint(cl, c.coger.lmin.l1_endpoint, "coger.lmin.l1_endpoint"));
    c.rewards.hierarchy.oracle = "solver";
    const CogerEnv* self = env.get();
    deps.level_solver = [self](const rewards::RewardInput& in, int level) {
      return self->SolvedAtLevel(in, level);
    };
  } else if (oracle == "dataset") {
    c.rewards.hierarchy.oracle = "dataset";
  } else if (oracle == "none") {
    if (hierarchy) {
      return InvalidArgument(
          "coger.lmin.oracle: 'none', but rewards.terms has a hierarchy term, which needs "
          "L_min (use 'solver' or 'dataset')");
    }
  } else {
    return InvalidArgument("coger.lmin.oracle: unknown '" + oracle + "'");
  }
  ALLOT_ASSIGN_OR_RETURN(env->reward_, rewards::ComposedReward::Create(c.rewards, deps));
  return env;
}

Result<std::unique_ptr<CogerEnv>> CogerEnv::FromConfigText(const std::string& text) {
  ALLOT_ASSIGN_OR_RETURN(CogerEnvConfig config,
                         runtime::LoadEnvConfig<CogerEnvConfig>(text, CogerEnvDescriptor()));
  return Create(std::move(config));
}

Result<std::string> CogerEnvConfigText(CogerEnvConfig config) {
  ALLOT_RETURN_IF_ERROR(ResolvePrompts(config.coger.prompts));
  return config::ToYaml(config);
}

std::string CogerEnv::ConfigText() const {
  CogerEnvConfig copy = config_;
  return config::ToYaml(copy);
}

LevelAnswer CogerEnv::AnswerAtLevel(runtime::Episode& ep, const std::string& question, int level,
                                    uint32_t step) const {
  LevelAnswer out;
  out.level = level;
  const CogerSection& s = config_.coger;
  if (level == 4) {
    // Delegate (Sec. 4.2): CoTool.
    out.endpoint = s.cotool.model.endpoint;
    out.cotool = cotool_->Run(ep, question, step == 0 ? 1 : step);
    out.text = out.cotool.text;
    if (out.cotool.failure.reason == runtime::FailureReason::kFormatError) {
      // A runaway CoTool turn (its token budget spent with neither EOS nor a tool query) is
      // L4's answer cut short, as a truncated L2/L3 answer is: graded (and almost always wrong)
      // and paid for. Failing the episode would drop it from its GRPO group, and the router
      // would never learn what L4's runaways cost it (survivorship bias toward L4).
      out.truncated = true;
      out.runaway = out.cotool.failure.message;
    } else {
      out.failure = out.cotool.failure;
    }
    return out;
  }
  const std::string* tmpl = nullptr;
  LevelModel model;
  switch (level) {
    case 1:
      tmpl = &s.prompts.l1_direct;
      model = {s.lmin.l1_endpoint, 0, 0.0};
      break;
    case 2:
      tmpl = &s.prompts.l2_cot;
      model = s.l2;
      break;
    case 3:
      tmpl = &s.prompts.l3_reasoning;
      model = s.l3;
      break;
    default:
      out.failure = {FailureReason::kEnvError, "level " + std::to_string(level) + " outside 1..4"};
      return out;
  }
  out.endpoint = model.endpoint;
  Result<std::string> prompt =
      runtime::RenderTemplate(*tmpl, {{"question", question}}, "coger.prompts");
  if (!prompt.ok()) {
    out.failure = runtime::Episode::FailureFrom(prompt.status(), FailureReason::kEnvError);
    return out;
  }
  runtime::GenerateOptions o;
  o.role = SegmentRole::kOtherModel;
  o.max_tokens = model.max_tokens;
  o.temperature = model.temperature;
  o.step = step;
  Result<runtime::Turn> turn = ep.CompleteText(model.endpoint, *prompt, o);
  if (!turn.ok()) {
    out.failure = runtime::Episode::FailureFrom(turn.status(), FailureReason::kEndpointError);
    return out;
  }
  out.text = std::move(turn->text);
  out.truncated = turn->truncated();
  return out;
}

Result<bool> CogerEnv::SolvedAtLevel(const rewards::RewardInput& in, int level) const {
  const std::string key = LevelOutcomeCache::Key(in.question, in.reference);
  if (std::optional<bool> cached = cache_->Get(key, level)) return *cached;
  // The oracle's own episode: its limits and its accounting are not the routed episode's; its
  // calls are reported apart (t_oracle_usage).
  runtime::EpisodeInput input;
  runtime::Episode ep(client_.get(), config_.coger.limits, input);
  LevelAnswer a = AnswerAtLevel(ep, in.question, level);
  if (t_oracle_usage != nullptr) t_oracle_usage->Merge(ep.usage());
  if (a.failure.failed()) {
    return Unavailable("L_min solver at L" + std::to_string(level) + ": " + a.failure.message);
  }
  const rewards::AnswerFormat format = in.format.value_or(default_format_);
  const bool correct = rewards::Grade(a.text, in.reference, format).correct;
  ALLOT_RETURN_IF_ERROR(cache_->Put(key, level, correct));
  return correct;
}

Result<runtime::Trajectory> CogerEnv::Run(const runtime::EpisodeInput& input) {
  runtime::Trajectory traj;
  traj.policy_version = input.policy_version();
  Result<CogerItem> item = ParseCogerItem(input.dataset_item, default_format_);
  if (!item.ok()) {
    traj.failure = {FailureReason::kEnvError, item.status().ToString()};
    return traj;
  }
  runtime::Episode ep(client_.get(), config_.coger.limits, input);
  const CogerSection& s = config_.coger;
  runtime::Conversation conv(s.router_endpoint);
  auto finish = [&](const Status& st, FailureReason otherwise) {
    if (!st.ok()) traj.failure = runtime::Episode::FailureFrom(st, otherwise);
    traj.segments = conv.TakeSegments();
    ep.Finish(traj);
    return traj;
  };

  // The router (App. B.1): prompt masked, its output the only trainable segment.
  Result<std::string> prompt =
      runtime::RenderTemplate(s.prompts.router, {{"question", item->question}}, "prompts.router");
  if (!prompt.ok()) return finish(prompt.status(), FailureReason::kEnvError);
  Status st = ep.AppendText(conv, SegmentRole::kPrompt, *prompt);
  if (!st.ok()) return finish(st, FailureReason::kEndpointError);
  runtime::GenerateOptions o;
  o.role = SegmentRole::kPolicy;
  const runtime::SamplingSpec& sp = input.sampling;
  o.max_tokens = sp.max_tokens > 0 ? sp.max_tokens : s.router_max_tokens;
  o.temperature = sp.temperature;
  if (sp.top_p > 0) o.top_p = sp.top_p;
  if (sp.top_k > 0) o.top_k = sp.top_k;
  if (sp.seed != 0) o.seed = static_cast<int64_t>(sp.seed);
  o.stop = sp.stop;
  o.stop.push_back(config_.rewards.format.close_tag);
  if (input.policy != nullptr &&
      input.policy->kind == runtime::PolicySnapshot::Kind::kLoraAdapter) {
    o.model = input.policy->adapter_name;
  }
  o.policy_version = input.policy_version();
  Result<runtime::Turn> routed = ep.Generate(conv, o);
  if (!routed.ok()) return finish(routed.status(), FailureReason::kEndpointError);
  std::string router_text = routed->text;
  // A server that leaves the stop string out of the text still reports it as stop_reason.
  const std::string& close = config_.rewards.format.close_tag;
  if (routed->stop_reason == close && router_text.find(close) == std::string::npos) {
    router_text += close;
  }
  traj.info["router_output"] = Cut(router_text);
  traj.info["router_finish"] = routed->finish_reason;

  // Route (Sec. 4.2). A malformed tag routes nowhere: format, accuracy and hierarchy score it.
  Result<rewards::LevelTag> tag = rewards::ParseLevelTag(router_text, config_.rewards.format);
  std::string final_response;
  if (!tag.ok()) {
    traj.info["level"] = "none";
    traj.info["format_error"] = tag.status().message();
  } else {
    traj.info["level"] = "L" + std::to_string(tag->level);
    if (tag->level == 1) {
      traj.info["answered_by"] = s.router_endpoint;
    } else {
      LevelAnswer a = AnswerAtLevel(ep, item->question, tag->level, 0);
      traj.info["answered_by"] = a.endpoint;
      if (a.truncated) traj.info["answer_truncated"] = "1";
      if (!a.runaway.empty()) traj.info["answer_runaway"] = Cut(a.runaway);
      if (tag->level == 4) {
        traj.info["tool_queries"] = std::to_string(a.cotool.queries.size());
        std::string names;
        for (const std::string& t : a.cotool.tools) names += (names.empty() ? "" : ",") + t;
        traj.info["tools"] = names;
        if (a.cotool.hit_max_turns) traj.info["cotool_max_turns"] = "1";
      }
      traj.info["answer_text"] = Cut(a.text);
      if (a.failure.failed()) {
        traj.failure = a.failure;
        return finish(Status::Ok(), FailureReason::kEnvError);
      }
      final_response = std::move(a.text);
    }
  }

  // Rewards (Eq. 3-8).
  rewards::RewardInput in;
  in.question = item->question;
  in.response = router_text;
  in.final_response = final_response;
  in.reference = item->reference;
  in.format = item->format;
  in.min_level = item->min_level;
  // The cost terms (api_cost, energy, tokens) and the episode's accounting (what the trainer's
  // budget_metric and cost_usd_per_episode read) hold every call the routing decision caused:
  // the router's, the L2/L3 model's, CoTool's turns and its reasoning-in-tool reads. The L_min
  // solver's calls below are the reward's own (CogER Eq. 6-8 needs L_min; notes.md: each level
  // run once per query, cached): reported in info, never charged to the decision, so that the
  // episode that misses the cache and the one that hits it cost the same for the same route.
  in.usage = rewards::CostUsageFrom(ep.usage().total);
  llm::UsageReport oracle_usage;
  Result<rewards::RewardBreakdown> b = [&] {
    OracleUsageScope scope(&oracle_usage);
    return reward_->Compute(in);
  }();
  if (oracle_usage.total.calls > 0) {
    char usd[32];
    std::snprintf(usd, sizeof(usd), "%.9g", oracle_usage.total.cost_usd);
    traj.info["lmin_solver_calls"] = std::to_string(oracle_usage.total.calls);
    traj.info[kOracleCostInfo] = usd;
  }
  if (!b.ok()) return finish(b.status(), FailureReason::kEnvError);
  for (const auto& term : config_.rewards.terms) traj.SetReward(term.name, b->values[term.name]);
  traj.reward = b->total;
  return finish(Status::Ok(), FailureReason::kEnvError);
}

void RegisterCogerEnv(runtime::EnvRegistrar& registry) {
  registry.Register(
      "coger", [](const std::string& env_config) -> Result<std::unique_ptr<runtime::Env>> {
        ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<CogerEnv> env, CogerEnv::FromConfigText(env_config));
        return std::unique_ptr<runtime::Env>(std::move(env));
      });
}

}  // namespace allot::envs::coger
