// Configuration of the ATLAS env (ATLAS review page; notes.md): an orchestrator LLM whose one
// action, explore, dispatches an independent solver on the original problem, and which decides
// when to stop and writes the final answer itself.
//
// The env_config a worker receives is AtlasEnvConfig as YAML: endpoints (keys by api_key_env
// only), limits and the prompt texts travel with it, so a worker needs no files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "envs/runtime/limits.h"
#include "llm/endpoint_config.h"

namespace allot::envs::atlas {

// Prompt templates ({{name}} placeholders). Empty text = read `dir`/<name>.txt.
struct AtlasPrompts {
  std::string dir = "configs/prompts/atlas";
  // The orchestrator's instructions and output format (Thought / Action / Observation):
  // {{question}}, {{budget}}, {{solvers}}, {{effort}}, {{effort_guidance}},
  // {{format_instruction}}.
  std::string orchestrator;
  // The multi-model variant's (cheaper models first, escalate): same placeholders.
  std::string orchestrator_multi;
  // One explore call's independent solver: {{question}}, {{effort}}, {{strategy}},
  // {{format_instruction}}; it answers with Approach / Reasoning / Answer / Confidence.
  std::string solver;
  // The integrator ablation: {{question}}, {{candidates}}, {{format_instruction}}.
  std::string integrator;
  // How eagerly the orchestrator stops, per effort (rendered as {{effort_guidance}}).
  std::string effort_low;
  std::string effort_medium;
  std::string effort_high;

  void Describe(config::Visitor& v) {
    v.Field("dir", dir, {.doc = "folder of the <name>.txt templates used when a text is empty"});
    v.Field("orchestrator", orchestrator, {.doc = "orchestrator instructions (ATLAS)"});
    v.Field("orchestrator_multi", orchestrator_multi,
            {.doc = "orchestrator instructions of the multi-model variant (ATLAS-MM)"});
    v.Field("solver", solver, {.doc = "the independent solver an explore call runs"});
    v.Field("integrator", integrator, {.doc = "separate synthesis step (integrator ablation)"});
    v.Field("effort_low", effort_low, {.doc = "stopping guidance at effort low"});
    v.Field("effort_medium", effort_medium, {.doc = "stopping guidance at effort medium"});
    v.Field("effort_high", effort_high, {.doc = "stopping guidance at effort high"});
  }
};

// Solver generation budget per explore effort (allot's defaults; the page gives none).
struct EffortTokens {
  int64_t low = 1024;
  int64_t medium = 4096;
  int64_t high = 16384;

  void Describe(config::Visitor& v) {
    v.Field("low", low, {.doc = "solver max_tokens at effort low", .min = 1});
    v.Field("medium", medium, {.doc = "solver max_tokens at effort medium", .min = 1});
    v.Field("high", high, {.doc = "solver max_tokens at effort high", .min = 1});
  }
};

// The recipe's env.atlas section; AtlasEnvConfig adds the other sections the env reads.
struct AtlasSection {
  std::string orchestrator_endpoint = "orchestrator";
  // Endpoints an explore call may name, cheapest first: the first is the default solver, and
  // the multi-model variant starts there and escalates.
  std::vector<std::string> solvers = {"solver"};
  // single: one solver model, 8 explore calls; multi_model: solver choice is part of the
  // action, 20 explore calls (notes.md).
  std::string variant = "single";
  int max_explore_calls = 0;  // 0 = the variant's budget: 8 single, 20 multi_model
  // Default explore effort, and how eagerly the orchestrator stops (notes.md: low|medium|high).
  std::string effort = "medium";
  EffortTokens effort_tokens;
  // Who writes the final answer: the orchestrator itself (ATLAS), or a separate integrator
  // step over the candidate pool (the page's ablation).
  std::string finalize = "orchestrator";
  std::string integrator_endpoint;        // empty = the orchestrator's endpoint
  int64_t orchestrator_max_tokens = 512;  // one Thought + Action turn
  int64_t integrator_max_tokens = 1024;
  double solver_temperature = 1.0;  // independent samples need diversity
  double integrator_temperature = 0.0;
  int observation_reasoning_chars = 1500;  // a candidate's reasoning shown to the orchestrator
  int max_malformed_turns = 2;             // turns without a valid action before a format failure
  // The reward of an episode the orchestrator fails by its own output (a runaway turn, more than
  // max_malformed_turns malformed ones): the episode keeps its FORMAT_ERROR reason and reaches
  // the GRPO learner with this reward and accuracy 0. Default 0: scored as a wrong answer (the
  // accuracy term, 1/0, is the env's only one), so that the learner is not blind to what leads
  // there (rollout/failure_kind.h).
  double failure_reward = 0.0;
  std::string answer_format = "text";      // boxed | number | choice | yesno | text
  AtlasPrompts prompts;
  runtime::EpisodeLimits limits{
      .max_turns = 64, .max_tool_calls = 0, .max_total_tokens = 400000, .max_turn_tokens = 512};

  // The explore budget in force.
  int ExploreBudget() const {
    if (max_explore_calls > 0) return max_explore_calls;
    return variant == "multi_model" ? 20 : 8;
  }

  void Describe(config::Visitor& v) {
    v.Field("orchestrator_endpoint", orchestrator_endpoint,
            {.doc = "endpoint of the orchestrator (the policy)"});
    v.Field("solvers", solvers,
            {.doc = "endpoints an explore call may name, cheapest first (the first is the "
                    "default)"});
    v.Field("variant", variant,
            {.doc = "single (8 explore calls) or multi_model (solver choice, 20 calls)",
             .choices = {"single", "multi_model"}});
    v.Field("max_explore_calls", max_explore_calls,
            {.doc = "explore budget; 0 = the variant's (8 or 20)", .min = 0, .max = 1000});
    v.Field("effort", effort,
            {.doc = "default explore effort and stopping eagerness",
             .choices = {"low", "medium", "high"}});
    v.Field("effort_tokens", effort_tokens, {.doc = "solver max_tokens per effort"});
    v.Field("finalize", finalize,
            {.doc = "who writes the final answer: orchestrator, or integrator (ablation)",
             .choices = {"orchestrator", "integrator"}});
    v.Field("integrator_endpoint", integrator_endpoint,
            {.doc = "integrator endpoint (empty: the orchestrator's)"});
    v.Field("orchestrator_max_tokens", orchestrator_max_tokens,
            {.doc = "tokens of one orchestrator turn", .min = 1});
    v.Field("integrator_max_tokens", integrator_max_tokens,
            {.doc = "tokens of the integrator's answer", .min = 1});
    v.Field("solver_temperature", solver_temperature,
            {.doc = "solver sampling temperature", .min = 0.0, .max = 10.0});
    v.Field("integrator_temperature", integrator_temperature,
            {.doc = "integrator sampling temperature", .min = 0.0, .max = 10.0});
    v.Field("observation_reasoning_chars", observation_reasoning_chars,
            {.doc = "characters of a candidate's reasoning in its observation", .min = 0});
    v.Field("max_malformed_turns", max_malformed_turns,
            {.doc = "orchestrator turns without a valid action before a format failure", .min = 0});
    v.Field("failure_reward", failure_reward,
            {.doc = "reward of an episode the orchestrator's own output fails (runaway or "
                    "malformed turns); 0 = as a wrong answer"});
    v.Field("answer_format", answer_format,
            {.doc = "answer format when the item names none",
             .choices = {"boxed", "number", "choice", "yesno", "text"}});
    v.Field("prompts", prompts);
    v.Field("limits", limits, {.doc = "per-episode limits (turns, tokens, deadline)"});
  }
};

// What the env is built from: env.atlas plus the recipe's endpoint pool and GPU profile.
struct AtlasEnvConfig {
  AtlasSection atlas;
  std::vector<llm::EndpointConfig> endpoints;
  llm::GpuProfile gpu;

  void Describe(config::Visitor& v) {
    v.Field("atlas", atlas);
    v.Field("endpoints", endpoints);
    v.Field("gpu", gpu);
  }
};

}  // namespace allot::envs::atlas
