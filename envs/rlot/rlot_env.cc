#include "envs/rlot/rlot_env.h"

#include <cctype>
#include <cstdio>
#include <optional>
#include <random>
#include <span>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "core/text_template.h"
#include "datasets/example_json.h"
#include "envs/rlot/rule_step_verifier.h"
#include "envs/runtime/episode.h"
#include "llm/client.h"
#include "llm/endpoint_json_transport.h"
#include "llm/http_transport.h"
#include "rewards/grader.h"

namespace allot::envs::rlot {
namespace {

using runtime::FailureReason;

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string FormatInstruction(rewards::AnswerFormat f) {
  switch (f) {
    case rewards::AnswerFormat::kBoxed:
      return "Write the final answer inside \\boxed{}.";
    case rewards::AnswerFormat::kNumber:
      return "End with \"The answer is N\", where N is a number.";
    case rewards::AnswerFormat::kChoice:
      return "End with \"The answer is (X)\", where X is the letter of the correct option.";
    case rewards::AnswerFormat::kYesNo:
      return "End with \"The answer is yes\" or \"The answer is no\".";
    case rewards::AnswerFormat::kText:
      return "End with \"The answer is X\", where X is a short answer.";
  }
  return "";
}

struct Item {
  std::string question;
  std::string gold;
  rewards::AnswerFormat format = rewards::AnswerFormat::kBoxed;
};

Result<Item> ParseItem(const std::string& text, const std::string& default_format) {
  ALLOT_ASSIGN_OR_RETURN(datasets::Example e, datasets::ExampleFromJson(text));
  Item item;
  item.question = e.PromptText();
  item.gold = e.answer;
  ALLOT_ASSIGN_OR_RETURN(item.format,
                         rewards::ParseAnswerFormat(datasets::GradingFormat(e, default_format)));
  return item;
}

// One episode's chain, calls and bookkeeping.
class EpisodeRun {
 public:
  EpisodeRun(const RlotEnvConfig& config, const RlotPrompts& prompts,
             const rewards::StepScorer& scorer, runtime::Episode& ep, const Item& item)
      : c_(config), p_(prompts), scorer_(scorer), ep_(ep), item_(item) {}

  // One sub-step call. `strict`: a reply cut at its budget is runaway output.
  Result<std::string> Call(const std::string& tmpl, std::map<std::string, std::string> vars,
                           int64_t max_tokens, bool strict, const char* what) {
    vars["question"] = item_.question;
    vars["steps"] = StepsText();
    vars["last_step"] = chain_.empty() ? "" : chain_.back();
    runtime::GenerateOptions o;
    o.role = runtime::SegmentRole::kOtherModel;
    o.max_tokens = max_tokens;
    o.temperature = c_.temperature;
    ALLOT_ASSIGN_OR_RETURN(std::string prompt,
                           RenderTemplate(tmpl, vars, std::string("the ") + what + "'s prompt"));
    ALLOT_ASSIGN_OR_RETURN(runtime::Turn t, ep_.CompleteText(c_.llm_endpoint, prompt, o));
    if (strict && c_.fail_on_truncation && t.truncated()) {
      return ResourceExhausted(std::string("runaway output: the ") + what + " reached its " +
                               std::to_string(max_tokens) + "-token budget");
    }
    std::string text = Trim(t.text);
    if (strict && text.empty()) {
      return InvalidArgument(std::string("malformed output: the ") + what + " is empty");
    }
    return text;
  }

  // Runs a non-terminal block; the chain grows by one step (Refine rewrites the newest).
  Status Block(LogicBlock b) {
    switch (b) {
      case LogicBlock::kReason: {
        ALLOT_ASSIGN_OR_RETURN(std::string s,
                               Call(p_.reason, {}, c_.max_step_tokens, true, "reasoning step"));
        chain_.push_back(std::move(s));
        return Status::Ok();
      }
      case LogicBlock::kDecompose:
        return Decompose();
      case LogicBlock::kDebate:
        return Debate();
      case LogicBlock::kRefine: {
        ALLOT_ASSIGN_OR_RETURN(std::string s,
                               Call(p_.refine, {}, c_.max_step_tokens, true, "refined step"));
        chain_.back() = std::move(s);
        return Status::Ok();
      }
      case LogicBlock::kTerminate:
        break;
    }
    return Internal("Block: Terminate is not a block");
  }

  Status Decompose() {
    ALLOT_ASSIGN_OR_RETURN(std::string listed,
                           Call(p_.decompose_list, {}, c_.max_step_tokens, true, "subtask list"));
    std::vector<std::string> subtasks =
        ParseNumberedItems(listed, "Subtask", static_cast<size_t>(c_.max_subtasks));
    if (subtasks.empty()) subtasks.push_back(listed);  // unnumbered: one subtask
    std::string listing, results;
    for (size_t i = 0; i < subtasks.size(); ++i) {
      listing += "Subtask" + std::to_string(i + 1) + ": " + subtasks[i] + "\n";
    }
    for (size_t i = 0; i < subtasks.size(); ++i) {
      ALLOT_ASSIGN_OR_RETURN(std::string r,
                             Call(p_.decompose_solve,
                                  {{"subtasks", Trim(listing)},
                                   {"subtask", subtasks[i]},
                                   {"results", results.empty() ? "(none yet)" : Trim(results)}},
                                  c_.max_step_tokens, true, "subtask result"));
      results += "Subtask" + std::to_string(i + 1) + ": " + subtasks[i] + "\nResult: " + r + "\n";
    }
    ALLOT_ASSIGN_OR_RETURN(std::string summary,
                           Call(p_.decompose_summarize, {{"results", Trim(results)}},
                                c_.max_step_tokens, true, "subtask summary"));
    chain_.push_back(std::move(summary));
    return Status::Ok();
  }

  Status Debate() {
    ALLOT_ASSIGN_OR_RETURN(std::string proposed,
                           Call(p_.debate_plans, {{"num_plans", std::to_string(c_.num_plans)}},
                                c_.max_step_tokens, true, "plans"));
    std::vector<std::string> plans =
        ParseNumberedItems(proposed, "Plan", static_cast<size_t>(c_.num_plans));
    if (plans.empty()) plans.push_back(proposed);
    std::string listing;
    for (size_t i = 0; i < plans.size(); ++i) {
      listing += "Plan" + std::to_string(i + 1) + ": " + plans[i] + "\n";
    }
    ALLOT_ASSIGN_OR_RETURN(std::string verdict, Call(p_.debate_compare, {{"plans", Trim(listing)}},
                                                     c_.max_step_tokens, false, "plan comparison"));
    const int chosen = ParseChosenPlan(verdict, static_cast<int>(plans.size()));
    chosen_plans_.push_back(chosen);
    ALLOT_ASSIGN_OR_RETURN(
        std::string step,
        Call(p_.debate_execute, {{"plan", plans[static_cast<size_t>(chosen - 1)]}},
             c_.max_step_tokens, true, "step along the plan"));
    chain_.push_back(std::move(step));
    return Status::Ok();
  }

  Result<bool> FinishCheck() {
    ALLOT_ASSIGN_OR_RETURN(std::string r,
                           Call(p_.finish_check, {}, c_.max_check_tokens, false, "finish check"));
    return ParseYes(r);
  }

  // The answer and its outcome (1 correct, 0 wrong): Terminate's template, or a baseline's.
  Result<double> Answer() { return Answer(p_.terminate, c_.max_answer_tokens); }
  Result<double> Answer(const std::string& tmpl, int64_t max_tokens) {
    ALLOT_ASSIGN_OR_RETURN(std::string text,
                           Call(tmpl, {{"format_instruction", FormatInstruction(item_.format)}},
                                max_tokens, true, "answer"));
    response_ = text;
    const rewards::GradeResult g = rewards::Grade(text, item_.gold, item_.format);
    answer_ = g.pred.found ? g.pred.text : "";
    return g.correct ? 1.0 : 0.0;
  }

  Result<State> Evaluate() {
    ALLOT_ASSIGN_OR_RETURN(
        std::string r, Call(p_.self_evaluate, {}, c_.max_eval_tokens, false, "self-evaluation"));
    const ParsedEvaluation e = ParseSelfEvaluation(r);
    eval_keys_missing_ += kStateDim - e.found;
    return e.state;
  }

  Result<double> StepReward() {
    ++scorer_calls_;
    auto s = scorer_.StepScores(item_.question, chain_);
    if (!s.ok()) return Unavailable("step scorer: " + s.status().ToString());
    if (s->empty()) return DataLoss("step scorer: no scores");
    return s->back();  // RLoT: the score of the chain so far, its last step's
  }

  std::string StepsText() const {
    if (chain_.empty()) return "(none yet)";
    std::string out;
    for (size_t i = 0; i < chain_.size(); ++i) {
      if (i > 0) out += "\n";
      out += "Step " + std::to_string(i + 1) + ": " + chain_[i];
    }
    return out;
  }

  const std::vector<std::string>& chain() const { return chain_; }
  const std::string& answer() const { return answer_; }
  const std::string& response() const { return response_; }
  const std::vector<int>& chosen_plans() const { return chosen_plans_; }
  int eval_keys_missing() const { return eval_keys_missing_; }
  int scorer_calls() const { return scorer_calls_; }

 private:
  const RlotEnvConfig& c_;
  const RlotPrompts& p_;
  const rewards::StepScorer& scorer_;
  runtime::Episode& ep_;
  const Item& item_;
  std::vector<std::string> chain_;
  std::string answer_, response_;
  std::vector<int> chosen_plans_;
  int eval_keys_missing_ = 0;
  int scorer_calls_ = 0;
};

std::string Joined(const std::vector<int>& actions) {
  std::string out;
  for (int a : actions) {
    if (!out.empty()) out += "-";
    out += LogicBlockName(a);
  }
  return out;
}

}  // namespace

RlotEnv::RlotEnv(RlotEnvConfig config, RlotPrompts prompts, std::shared_ptr<llm::Client> client,
                 std::shared_ptr<llm::HttpTransport> http,
                 std::shared_ptr<const rewards::StepScorer> scorer)
    : config_(std::move(config)),
      prompts_(std::move(prompts)),
      http_(std::move(http)),
      client_(std::move(client)),
      scorer_(std::move(scorer)) {}

RlotEnv::~RlotEnv() = default;

Result<std::unique_ptr<RlotEnv>> RlotEnv::Create(
    RlotEnvConfig config, std::shared_ptr<llm::Client> client,
    std::shared_ptr<const rewards::StepScorer> scorer) {
  ALLOT_ASSIGN_OR_RETURN(RlotPrompts prompts, RlotPrompts::Load(config.prompts_dir));
  ALLOT_RETURN_IF_ERROR(rewards::ParseAnswerFormat(config.answer_format).status());
  if (config.step_reward != "score" && config.step_reward != "shaped") {
    return InvalidArgument("env.rlot.step_reward: '" + config.step_reward +
                           "' is not one of score, shaped");
  }
  if (config.step_reward == "shaped" &&
      !(config.shaping_gamma >= 0.0 && config.shaping_gamma <= 1.0)) {
    return InvalidArgument(
        "env.rlot.shaping_gamma: step_reward: shaped needs the learner's "
        "discount in [0, 1] (the recipe fills in dqn.gamma), got " +
        std::to_string(config.shaping_gamma));
  }
  // Keys do not travel in env_config: llm::Client::Create resolves each endpoint's
  // api_key_env in this process (llm::ResolveApiKey).
  if (client == nullptr) {
    if (config.endpoints.empty()) {
      return InvalidArgument("env.rlot.endpoints: no endpoints to call (llm_endpoint '" +
                             config.llm_endpoint + "')");
    }
    ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<llm::Client> c, llm::Client::Create(config.endpoints));
    client = std::move(c);
  }
  if (client->endpoint(config.llm_endpoint) == nullptr) {
    return InvalidArgument("env.rlot.llm_endpoint: no endpoint named '" + config.llm_endpoint +
                           "'");
  }
  std::shared_ptr<llm::HttpTransport> http;
  rewards::PrmRewardConfig prm_config;
  std::optional<llm::EndpointConfig> prm_endpoint;
  if (scorer == nullptr) {
    if (config.step_scorer == "rule") {
      scorer = std::make_shared<RuleStepVerifier>(config.rule);
    } else {
      const llm::EndpointConfig* prm = client->endpoint(config.prm_endpoint);
      if (prm == nullptr) {
        return InvalidArgument("env.rlot.prm_endpoint: no endpoint named '" + config.prm_endpoint +
                               "' (or set step_scorer: rule)");
      }
      ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<llm::HttpTransport> t, llm::HttpTransport::Create({}));
      http = std::move(t);
      prm_config = config.prm;
      if (prm_config.model.empty() || prm_config.model == rewards::PrmRewardConfig{}.model) {
        prm_config.model = prm->model;
      }
      prm_endpoint = *prm;
    }
  }
  auto env =
      std::unique_ptr<RlotEnv>(new RlotEnv(std::move(config), std::move(prompts), std::move(client),
                                           std::move(http), std::move(scorer)));
  env->prm_config_ = std::move(prm_config);
  env->prm_endpoint_ = std::move(prm_endpoint);
  return env;
}

Result<runtime::Trajectory> RlotEnv::Run(const runtime::EpisodeInput& input) {
  auto nav = navigators_.Get(input.policy);
  if (!nav.ok()) {
    runtime::Trajectory t;
    t.policy_version = input.policy_version();
    t.failure = {FailureReason::kEnvError, nav.status().ToString()};
    return t;
  }
  // RLoT Sec. 3.3: epsilon-greedy in training (the learner's epsilon), greedy at inference.
  double epsilon = input.sampling.epsilon.value_or(0.0);
  if (!(epsilon >= 0.0 && epsilon <= 1.0)) {
    runtime::Trajectory t;
    t.policy_version = input.policy_version();
    t.failure = {FailureReason::kEnvError,
                 "epsilon " + std::to_string(epsilon) + " is outside [0, 1]"};
    return t;
  }
  if (*nav == nullptr) epsilon = 1.0;  // no navigator yet: uniform
  auto rng = std::make_shared<std::mt19937_64>(input.seed);
  std::shared_ptr<const models::NavigatorMlp> mlp = *nav;
  return RunWith(input, [rng, mlp, epsilon](const State& s, int) {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    std::uniform_int_distribution<int> any(0, kNumLogicBlocks - 1);
    if (mlp == nullptr || coin(*rng) < epsilon) return any(*rng);
    return mlp->Greedy(s);
  });
}

Result<runtime::Trajectory> RlotEnv::RunWith(const runtime::EpisodeInput& input,
                                             const BlockChooser& choose, bool reads_state) {
  runtime::Trajectory t;
  t.policy_version = input.policy_version();
  auto item = ParseItem(input.dataset_item, config_.answer_format);
  if (!item.ok()) {
    t.failure = {FailureReason::kEnvError, item.status().ToString()};
    return t;
  }
  runtime::Episode ep(client_.get(), config_.limits, input);
  // A PRM endpoint's calls join the episode's per-endpoint accounting: its scorer is built per
  // episode around a transport that reports each call to this episode.
  std::unique_ptr<rewards::PrmReward> prm_scorer;
  if (prm_endpoint_) {
    prm_scorer = std::make_unique<rewards::PrmReward>(
        prm_config_, llm::EndpointJsonTransport(
                         http_, *prm_endpoint_, prm_endpoint_->limits.timeout_s,
                         [&ep](const llm::CallRecord& call) { ep.Account(call); }, client_->gpu(),
                         prm_config_.tokenize_path));
  }
  const rewards::StepScorer& scorer = prm_scorer ? *prm_scorer : *scorer_;
  EpisodeRun run(config_, prompts_, scorer, ep, *item);

  State state{};  // nothing evaluated yet: every aspect "not involved"
  Status status = Status::Ok();
  if (config_.evaluate_problem && reads_state) {
    // RLoT App. J.2: the problem, with no reasoning yet, is self-evaluated before the first block.
    auto first = run.Evaluate();
    if (first.ok()) {
      state = *first;
    } else {
      status = first.status();
    }
  }
  std::vector<int> chosen, applied;
  double prm = 0.0, outcome = 0.0;
  // step_reward: shaped (rlot_config.h): phi is the potential of the state the decision is
  // taken in, the score of the chain last scored (0 before any step).
  const bool shaped = config_.step_reward == "shaped";
  const double gamma = config_.shaping_gamma;
  double phi = 0.0;
  std::string step_scores;
  bool finished_early = false;
  // The decision under way; its transition is recorded once its block has run, or as the
  // failing decision when the block fails by the LLM's own output (below the loop).
  runtime::Transition tr;
  bool deciding = false;
  // Records the decision under way as terminal with `outcome`; the terminal state's potential
  // is 0, so under shaped rewards the decision also gives back phi.
  auto record_terminal = [&](double final_outcome) {
    outcome = final_outcome;
    const double reward = shaped ? outcome - phi : outcome;
    if (shaped) prm -= phi;
    tr.reward = static_cast<float>(reward);
    tr.next_state = tr.state;
    tr.done = true;
    t.step_rewards.push_back(reward);
    t.transitions.push_back(std::move(tr));
  };
  for (int decision = 1; status.ok(); ++decision) {
    if (status = ep.Check(); !status.ok()) break;
    const int a = choose(state, decision);
    if (a < 0 || a >= kNumLogicBlocks) {
      status = Internal("navigator chose action " + std::to_string(a));
      break;
    }
    int block = a;
    if (decision > config_.max_blocks) {
      block = static_cast<int>(LogicBlock::kTerminate);  // RLoT Sec. 3.2: forced Terminate
    } else if (block == static_cast<int>(LogicBlock::kRefine) && run.chain().empty()) {
      block = static_cast<int>(LogicBlock::kReason);  // nothing to refine yet
    }
    chosen.push_back(a);
    applied.push_back(block);
    tr = runtime::Transition{};
    deciding = true;
    tr.state.assign(state.begin(), state.end());
    tr.action = static_cast<uint32_t>(a);
    tr.num_actions = kNumLogicBlocks;
    bool done = block == static_cast<int>(LogicBlock::kTerminate);
    if (!done) {
      if (status = run.Block(static_cast<LogicBlock>(block)); !status.ok()) break;
      auto finished = run.FinishCheck();
      if (!finished.ok()) {
        status = finished.status();
        break;
      }
      done = finished_early = *finished;
    }
    if (done) {
      auto o = run.Answer();
      if (!o.ok()) {
        status = o.status();
        break;
      }
      record_terminal(*o);
      deciding = false;
      break;
    }
    auto r = run.StepReward();
    if (!r.ok()) {
      status = r.status();
      break;
    }
    auto next = run.Evaluate();
    if (!next.ok()) {
      status = next.status();
      break;
    }
    // RLoT: the score itself; shaped: gamma * Phi(new chain) - Phi(old chain).
    const double reward = shaped ? gamma * *r - phi : *r;
    phi = *r;
    char score_text[32];
    std::snprintf(score_text, sizeof(score_text), "%.6g", *r);
    step_scores += (step_scores.empty() ? "" : ",") + std::string(score_text);
    prm += reward;
    tr.reward = static_cast<float>(reward);
    tr.next_state.assign(next->begin(), next->end());
    tr.done = false;
    t.step_rewards.push_back(reward);
    t.transitions.push_back(std::move(tr));
    deciding = false;
    state = *next;
  }
  if (!status.ok()) {
    t.failure = runtime::Episode::FailureFrom(status, status.code() == StatusCode::kInvalidArgument
                                                          ? FailureReason::kFormatError
                                                          : FailureReason::kEnvError);
  }
  // A decision whose block failed by the LLM's own output (format error: runaway or malformed
  // output, a limit) ends the episode with failure_reward, terminal, like an answer. The
  // episode keeps its failure reason and the transitions before it, and the learner trains on
  // them: dropping the episode would hide where this choice leads. Infrastructure failures
  // (endpoint, scorer, timeout) record nothing for the decision: the learner drops them.
  if (deciding && t.failure.reason == FailureReason::kFormatError) {
    record_terminal(config_.failure_reward);
    t.info["failed_block"] = LogicBlockName(applied.back());
  }
  // "prm" is the sum of the transition rewards other than the outcome: the scores under
  // step_reward: score, the shaping terms under shaped (their undiscounted sum, -(1 - gamma) x
  // the scores' sum). Either way t.reward is the episode's undiscounted return, and the raw
  // scores are in info["step_scores"].
  t.SetReward("outcome", outcome);
  t.SetReward("prm", prm);
  t.reward = outcome + prm;
  t.info["step_reward"] = config_.step_reward;
  t.info["step_scores"] = step_scores;
  t.info["blocks"] = Joined(applied);
  t.info["chosen"] = Joined(chosen);
  t.info["pattern"] = BlockPattern(applied);
  t.info["answer"] = run.answer();
  t.info["finished_early"] = finished_early ? "true" : "false";
  t.info["steps"] = std::to_string(run.chain().size());
  t.info["scorer_calls"] = std::to_string(run.scorer_calls());
  t.info["eval_keys_missing"] = std::to_string(run.eval_keys_missing());
  std::string plans;
  for (int p : run.chosen_plans()) plans += (plans.empty() ? "" : ",") + std::to_string(p);
  if (!plans.empty()) t.info["debate_plans"] = plans;
  const std::string response = run.response().substr(0, 3000);
  if (!response.empty()) t.info["response"] = response;
  ep.Finish(t);
  return t;
}

Result<runtime::Trajectory> RlotEnv::RunChainOfThought(const runtime::EpisodeInput& input) {
  if (prompts_.zero_shot_cot.empty()) {
    return NotFound(config_.prompts_dir +
                    "/zero_shot_cot.txt: the cot baselines need this template");
  }
  runtime::Trajectory t;
  t.policy_version = input.policy_version();
  auto item = ParseItem(input.dataset_item, config_.answer_format);
  if (!item.ok()) {
    t.failure = {FailureReason::kEnvError, item.status().ToString()};
    return t;
  }
  runtime::Episode ep(client_.get(), config_.limits, input);
  EpisodeRun run(config_, prompts_, *scorer_, ep, *item);
  Result<double> outcome = run.Answer(prompts_.zero_shot_cot, config_.max_cot_tokens);
  t.SetReward("outcome", outcome.ok() ? *outcome : 0.0);
  t.reward = outcome.ok() ? *outcome : 0.0;
  t.info["blocks"] = "";
  t.info["answer"] = run.answer();
  const std::string response = run.response().substr(0, 3000);
  if (!response.empty()) t.info["response"] = response;
  ep.Finish(t);
  if (!outcome.ok()) {
    const Status& status = outcome.status();
    t.failure = runtime::Episode::FailureFrom(status, status.code() == StatusCode::kInvalidArgument
                                                          ? FailureReason::kFormatError
                                                          : FailureReason::kEnvError);
  }
  return t;
}

void RegisterRlotEnv(runtime::EnvRegistrar& registrar) {
  registrar.Register(
      "rlot", [](const std::string& env_config) -> Result<std::unique_ptr<runtime::Env>> {
        RlotEnvConfig config;
        if (!env_config.empty()) {
          ALLOT_ASSIGN_OR_RETURN(config::ConfigNode node,
                                 config::ParseYaml(env_config, "env_config"));
          ALLOT_RETURN_IF_ERROR(config::Load(node, config));
        }
        ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<RlotEnv> env, RlotEnv::Create(std::move(config)));
        return std::unique_ptr<runtime::Env>(std::move(env));
      });
}

const runtime::EnvDescriptor& RlotEnvDescriptor() {
  static const runtime::EnvDescriptor kDescriptor{
      "rlot", runtime::EnvKind::kNavigator, {"endpoints", "rewards"}, &RegisterRlotEnv, nullptr};
  return kDescriptor;
}

}  // namespace allot::envs::rlot
