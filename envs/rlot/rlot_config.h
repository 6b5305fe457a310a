// Config of the RLoT env (env.rlot in configs/rlot.yaml). Every number RLoT or its reference
// code fixes is a default here (RLoT Sec. 3-4, Table 21; notes.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "envs/rlot/rule_step_verifier.h"
#include "envs/runtime/limits.h"
#include "llm/endpoint_config.h"
#include "rewards/prm_reward.h"

namespace allot::envs::rlot {

struct RlotEnvConfig {
  // The LLM that runs the blocks, evaluates itself and answers (RLoT's "LLM"); not trained.
  std::string llm_endpoint = "policy";
  // Endpoints the env may call (the recipe's `endpoints`, copied in by the trainer so that a
  // remote worker can build its own client). API keys never travel: each endpoint names its
  // variable (api_key_env) and a worker reads the key from its own environment.
  std::vector<llm::EndpointConfig> endpoints;
  // Per-step reward: "prm" (a PRM endpoint, rewards/prm_reward.h) or "rule" (the tiny world's
  // arithmetic checker, rule_step_verifier.h).
  std::string step_scorer = "prm";
  std::string prm_endpoint = "prm";
  rewards::PrmRewardConfig prm;
  RuleStepVerifierConfig rule;
  // The reward of each transition. "score" is RLoT's (notes.md: "each non-terminal step gets
  // the PRM score of the chain so far; the terminal step gets the outcome"). "shaped" is
  // potential-based shaping (Ng, Harada & Russell 1999, "Policy invariance under reward
  // transformations") with the potential Phi = the step scorer's score of the chain so far
  // (0 before any step and at the terminal state): a block earns
  // shaping_gamma * Phi(new chain) - Phi(old chain), the terminal decision
  // outcome - Phi(last chain scored). The shaping terms telescope, so every episode's
  // discounted return is shaping_gamma^(T-1) * outcome whatever the scores, and the best
  // navigator is the outcome's; under "score" a navigator can instead collect a score per block
  // up to max_blocks (each Refine re-earns its step's score) and ignore the outcome.
  std::string step_reward = "score";
  // The discount of the shaping, which must be the learner's: dqn.gamma, filled in by the
  // recipe (CompleteRlotEnvConfig, rlot_recipe.h), which refuses a value set here that differs.
  // -1: not filled in yet (RlotEnv::Create refuses step_reward: shaped without it).
  double shaping_gamma = -1.0;

  // The first decision's state. false: all zero ("not involved"), as the reference code has
  // it (notes.md: the state is the evaluation of the newest step). true: RLoT App. J.2's
  // training and inference processes, which self-evaluate the problem with no reasoning yet
  // before the first block, so that the first decision can depend on the problem; one more
  // call per episode, made only for a navigator (a fixed block sequence reads no state).
  bool evaluate_problem = false;
  int max_blocks = 5;             // RLoT: 5 blocks; Terminate is forced on the 6th decision
  double temperature = 1.0;       // notes.md: every LLM call used temperature 1.0
  int64_t max_step_tokens = 512;  // one block's sub-step output
  int64_t max_answer_tokens = 256;
  int64_t max_check_tokens = 8;  // the finish check's yes/no
  int64_t max_eval_tokens = 256;
  int max_subtasks = 4;  // Decompose: subtasks solved (more are ignored)
  int num_plans = 3;     // Debate: three plans (RLoT Table 1)
  // Baselines (RLoT Sec. 4.1): zero-shot CoT's one reply, and CoT-SC's samples voted.
  int64_t max_cot_tokens = 1024;
  int cot_sc_samples = 4;  // RLoT Sec. 4.1: "majority voting across four reasoning samples"
  // A sub-step that hits its token budget is runaway output: the episode fails with a format
  // error instead of feeding a cut-off step to the chain.
  bool fail_on_truncation = true;
  // The outcome of a decision whose block fails by the LLM's own output (a runaway or malformed
  // sub-step, a limit the blocks ran into): that decision is the episode's last transition,
  // terminal, with this outcome, and the transitions before it are kept, so that the navigator
  // learns where the choice leads (rollout/failure_kind.h). Default 0: a wrong answer's outcome
  // (notes.md: the terminal step gets 1 correct, 0 wrong). Under step_reward: shaped it is the
  // outcome the potential is subtracted from, as for an answer.
  double failure_reward = 0.0;
  // Answer format when the dataset item names none: boxed | number | choice | yesno.
  std::string answer_format = "boxed";
  std::string prompts_dir = "configs/prompts/rlot";
  runtime::EpisodeLimits limits{
      .max_turns = 64, .max_tool_calls = 0, .max_total_tokens = 200000, .max_turn_tokens = 512};

  void Describe(config::Visitor& v) {
    v.Field("llm_endpoint", llm_endpoint, {.doc = "endpoint that runs the logic blocks"});
    v.Field("endpoints", endpoints, {.doc = "endpoints the env calls (default: the recipe's)"});
    v.Field("step_scorer", step_scorer,
            {.doc = "per-step reward: prm (endpoint) or rule (arithmetic checker)",
             .choices = {"prm", "rule"}});
    v.Field("prm_endpoint", prm_endpoint, {.doc = "endpoint of the PRM (step_scorer: prm)"});
    v.Field("prm", prm, {.doc = "the PRM request (RLoT: Math-Shepherd, last step's P(+))"});
    v.Field("rule", rule, {.doc = "the rule-based step verifier's scores"});
    v.Field("step_reward", step_reward,
            {.doc = "transition reward: score (RLoT: the step scorer's score per block, the "
                    "outcome at the end) or shaped (potential-based shaping with that score as "
                    "the potential: the discounted return is the outcome's)",
             .choices = {"score", "shaped"}});
    v.Field("shaping_gamma", shaping_gamma,
            {.doc = "discount of the shaping under step_reward: shaped; the recipe fills in "
                    "dqn.gamma and refuses any other value (-1: not filled in)",
             .min = -1.0,
             .max = 1.0});
    v.Field("evaluate_problem", evaluate_problem,
            {.doc = "the first decision sees the LLM's self-evaluation of the problem (RLoT "
                    "App. J.2's training process) instead of the zero state"});
    v.Field("max_blocks", max_blocks,
            {.doc = "logic blocks before Terminate is forced (RLoT: 5)", .min = 1, .max = 64});
    v.Field("temperature", temperature, {.doc = "LLM sampling temperature", .min = 0.0});
    v.Field("max_step_tokens", max_step_tokens, {.doc = "tokens of one sub-step", .min = 1});
    v.Field("max_answer_tokens", max_answer_tokens, {.doc = "tokens of the answer", .min = 1});
    v.Field("max_check_tokens", max_check_tokens, {.doc = "tokens of the finish check", .min = 1});
    v.Field("max_eval_tokens", max_eval_tokens, {.doc = "tokens of the self-evaluation", .min = 1});
    v.Field("max_subtasks", max_subtasks, {.doc = "Decompose: subtasks solved", .min = 1});
    v.Field("num_plans", num_plans, {.doc = "Debate: plans proposed (RLoT: 3)", .min = 2});
    v.Field("max_cot_tokens", max_cot_tokens,
            {.doc = "eval baselines cot / cot-sc: tokens of the reasoning and answer", .min = 1});
    v.Field("cot_sc_samples", cot_sc_samples,
            {.doc = "eval baseline cot-sc: samples voted (RLoT: 4)", .min = 1});
    v.Field("fail_on_truncation", fail_on_truncation,
            {.doc = "a sub-step cut at its token budget fails the episode (format error)"});
    v.Field("failure_reward", failure_reward,
            {.doc = "outcome of a decision whose block fails by the LLM's own output (runaway "
                    "or malformed sub-step, a limit): its transition is terminal; 0 = as a wrong "
                    "answer"});
    v.Field("answer_format", answer_format,
            {.doc = "answer format when the item names none",
             .choices = {"boxed", "number", "choice", "yesno", "text"}});
    v.Field("prompts_dir", prompts_dir, {.doc = "directory of the block prompt templates"});
    v.Field("limits", limits, {.doc = "per-episode limits"});
  }
};

}  // namespace allot::envs::rlot
