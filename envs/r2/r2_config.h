// Configuration of the R2-Reasoner env (R2-Reasoner Sec. 3-4; notes.md).
//
// The env_config a worker receives is this struct as YAML: the endpoint pool with its prices
// and capability groups, the reward terms, the limits and the prompt texts travel with it, so
// that a worker needs no files.
#pragma once

#include <string>
#include <vector>

#include "core/config/schema.h"
#include "envs/runtime/limits.h"
#include "llm/endpoint_config.h"
#include "rewards/composed_reward.h"

namespace allot::envs::r2 {

// Prompt templates ({{name}} placeholders). Empty text = read `dir`/<name>.txt.
struct R2Prompts {
  std::string dir = "configs/prompts/r2";
  std::string decomposer;  // Sec. 4.1: {{question}}
  std::string allocator;   // Sec. 4.2: {{pool}}, {{num_subtasks}} (after the subtasks)
  // Sec. 4.4 (3): {{question}}, {{previous}} ("Step i: <t^i>\nResult: <r_i>" blocks),
  // {{index}}, {{subtask}}, {{subtasks}} (every "Subtask<i>: <t^i>" line), {{done}}
  // ("Subtask<i>: <t^i>\nResult: <r_i>" lines so far, "(none yet)" before any),
  // {{subtask_filled}} (t^i with each "#k" replaced by the answer of result k: "The output of
  // subtask t^i can serve as input to the subsequent subtask")
  std::string subtask;
  // Sec. 4.4 (4): {{question}}, {{results}} (subtasks with results), {{steps}} ("Step i: <r_i>")
  std::string integrate;
  std::string review;  // Sec. 4.4 PRM_Verify: {{question}}, {{previous}}, {{subtask}},
                       // {{answer}}
  std::string single;  // one pool model asked the whole task (Table 1's baselines):
                       // {{question}}

  void Describe(config::Visitor& v) {
    v.Field("dir", dir, {.doc = "folder of the <name>.txt templates used when a text is empty"});
    v.Field("decomposer", decomposer, {.doc = "task decomposer prompt (Sec. 4.1)"});
    v.Field("allocator", allocator,
            {.doc = "subtask allocator prompt, appended after the decomposition (Sec. 4.2)"});
    v.Field("subtask", subtask, {.doc = "prompt of one subtask's execution (Sec. 4.4 step 3)"});
    v.Field("integrate", integrate, {.doc = "result integration prompt (Sec. 4.4 step 4)"});
    v.Field("review", review, {.doc = "procedural review prompt, PRM_Verify (Sec. 4.4)"});
    v.Field("single", single, {.doc = "one pool model answering the task alone (eval baselines)"});
  }
};

// The optional Procedural Review Mechanism (Sec. 4.4): subtasks whose assigned model ranks
// below `threshold_model` in the pool are checked, and maybe refined, by `strong_model`.
struct ReviewConfig {
  bool enabled = false;
  std::string strong_model;     // M_strong: an endpoint of the pool
  std::string threshold_model;  // M_thresh: models ranked below it are reviewed
  int64_t max_tokens = 1024;
  std::string keep_marker = "VERDICT: CORRECT";
  std::string refine_marker = "REFINED:";

  void Describe(config::Visitor& v) {
    v.Field("enabled", enabled, {.doc = "run the procedural review"});
    v.Field("strong_model", strong_model, {.doc = "M_strong: the reviewing endpoint"});
    v.Field("threshold_model", threshold_model,
            {.doc = "M_thresh: subtasks assigned to a model ranked below it are reviewed"});
    v.Field("max_tokens", max_tokens, {.doc = "review generation budget", .min = 1});
    v.Field("keep_marker", keep_marker, {.doc = "reply marker: the subtask result stands"});
    v.Field("refine_marker", refine_marker,
            {.doc = "reply marker: the text after it replaces the subtask result"});
  }
};

// The recipe's env.r2 section; R2EnvConfig adds the other sections the env reads.
struct R2Section {
  // Both roles are served by this endpoint on one base model, in one conversation: the
  // allocator reads the decomposition it assigns. Each role samples from its own adapter when
  // the policy snapshot names one per role (the alternating learner trains two, Sec. 4.3), else
  // both from the snapshot's adapter. Segments carry their role in `source`
  // ("decomposer@<endpoint>", "allocator@<endpoint>") for the alternating learner.
  std::string policy_endpoint = "router";
  int64_t decomposer_max_tokens = 1024;
  int64_t allocator_max_tokens = 512;
  // M_pool in capability order, smallest first (Sec. 5.1, App. A MAE order); empty = every
  // endpoint except the policy's, in the order of the endpoints section.
  std::vector<std::string> pool;
  int64_t max_subtasks = 12;
  int64_t min_difficulty = 1;  // the allocator's difficulty scale (notes.md: 1..5)
  int64_t max_difficulty = 5;
  int64_t subtask_max_tokens = 1024;
  int64_t integrate_max_tokens = 1024;
  int64_t single_max_tokens = 1024;
  double executor_temperature = 0.0;
  // Who integrates the results (Sec. 4.4 step 4): "last" = the model of the last subtask, or an
  // endpoint name; "last_result" makes no integration call: the last subtask's result is
  // A_final (a decomposition whose last subtask computes the answer).
  std::string integrator = "last";
  // Executor outputs are appended to the policy conversation as masked context (their ids
  // tokenized by the policy endpoint); off saves the tokenize calls and the learner's tokens.
  bool record_execution = true;
  ReviewConfig review;
  std::string answer_format = "boxed";
  R2Prompts prompts;
  runtime::EpisodeLimits limits{.max_turns = 64, .max_tool_calls = 0};

  void Describe(config::Visitor& v) {
    v.Field("policy_endpoint", policy_endpoint,
            {.doc = "the endpoint of the decomposer and allocator policy"});
    v.Field("decomposer_max_tokens", decomposer_max_tokens,
            {.doc = "decomposer budget unless the request sets one", .min = 1});
    v.Field("allocator_max_tokens", allocator_max_tokens,
            {.doc = "allocator budget unless the request sets one", .min = 1});
    v.Field("pool", pool,
            {.doc = "M_pool, smallest model first (empty: every endpoint but the policy's)"});
    v.Field("max_subtasks", max_subtasks,
            {.doc = "more subtasks than this is a malformed decomposition", .min = 1});
    v.Field("min_difficulty", min_difficulty, {.doc = "lowest difficulty label", .min = 0});
    v.Field("max_difficulty", max_difficulty, {.doc = "highest difficulty label", .min = 0});
    v.Field("subtask_max_tokens", subtask_max_tokens,
            {.doc = "generation budget of one subtask", .min = 1});
    v.Field("integrate_max_tokens", integrate_max_tokens,
            {.doc = "generation budget of the integration", .min = 1});
    v.Field("single_max_tokens", single_max_tokens,
            {.doc = "generation budget of a pool model answering the task alone", .min = 1});
    v.Field("executor_temperature", executor_temperature,
            {.doc = "sampling temperature of the pool models", .min = 0.0, .max = 10.0});
    v.Field("integrator", integrator,
            {.doc = "integrating model: 'last' (the last subtask's), an endpoint name, or "
                    "'last_result' (no integration call: the last result is the answer)"});
    v.Field("record_execution", record_execution,
            {.doc = "append executor outputs to the trajectory as masked context"});
    v.Field("review", review, {.doc = "procedural review mechanism (Sec. 4.4)"});
    v.Field("answer_format", answer_format,
            {.doc = "dataset answer format unless the item names one",
             .choices = {"boxed", "number", "choice", "yesno", "text"}});
    v.Field("prompts", prompts);
    v.Field("limits", limits, {.doc = "episode limits: model calls, tokens, wall time"});
  }
};

// What the env is built from: the recipe's sections that concern it.
struct R2EnvConfig {
  R2Section r2;
  std::vector<llm::EndpointConfig> endpoints;
  llm::GpuProfile gpu;
  // Eq. 1: the binary final-correctness reward.
  rewards::RewardConfig rewards{.terms = {{"accuracy", 1.0}}};

  void Describe(config::Visitor& v) {
    v.Field("r2", r2);
    v.Field("endpoints", endpoints, {.doc = "the endpoint pool (prices per 1M tokens, groups)"});
    v.Field("gpu", gpu, {.doc = "GPU profile for energy estimates (Sec. 5.1: A100 SXM)"});
    v.Field("rewards", rewards);
  }
};

}  // namespace allot::envs::r2
