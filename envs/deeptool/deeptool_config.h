// Configuration of the DeepTool env (DeepTool Sec. 2.2-2.3, App. A.1; notes.md).
//
// The env_config a worker receives is this struct as YAML: the endpoint pool, the reward terms,
// the code sandbox, the limits and the prompt text travel with it, so that a worker needs no
// files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "envs/runtime/limits.h"
#include "llm/endpoint_config.h"
#include "rewards/composed_reward.h"
#include "tools/rstkit.h"

namespace allot::envs::deeptool {

// Prompt templates ({{name}} placeholders). Empty text = read `dir`/<name>.txt.
struct DeepToolPrompts {
  std::string dir = "configs/prompts/deeptool";
  std::string tir;  // the TIR system prompt (Sec. 2.2): {{question}}

  void Describe(config::Visitor& v) {
    v.Field("dir", dir, {.doc = "folder of the <name>.txt templates used when a text is empty"});
    v.Field("tir", tir,
            {.doc = "tool-integrated reasoning prompt with the step schema (Sec. 2.2): "
                    "{{question}}"});
  }
};

// The recipe's env.deeptool section; DeepToolEnvConfig adds the other sections the env reads.
struct DeepToolSection {
  std::string policy_endpoint = "policy";
  // stepwise: one policy step per episode after the ground-truth history (Sec. 2.3.1, Eq. 5),
  // the paper's RL instances; interleaved: think / code / observation steps until the answer
  // step, the code run in the sandbox (inference, evaluation, outcome-supervised RL).
  std::string mode = "stepwise";
  int64_t max_steps = 16;             // policy steps of an interleaved episode
  int64_t step_max_tokens = 6000;     // App. A.1 Table 4: max completion length 6,000
  int64_t max_prompt_tokens = 16000;  // App. A.1 Table 4: max prompt length 16,000
  std::string observation_tag = "observation";
  int64_t max_observation_chars = 4096;
  std::string answer_format = "boxed";
  // score: a malformed step, runaway output or a limit the policy ran into ends the episode
  // scored (gate 0, Eq. 7) and the learner trains on it, the reason in info["failure"];
  // fail: the episode fails with format_error, and the learner drops it.
  std::string format_errors = "score";
  DeepToolPrompts prompts;
  runtime::EpisodeLimits limits{.max_turns = 16, .max_tool_calls = 16, .max_total_tokens = 131072};

  void Describe(config::Visitor& v) {
    v.Field("policy_endpoint", policy_endpoint, {.doc = "endpoint serving the policy"});
    v.Field("mode", mode,
            {.doc = "stepwise: one step after the ground-truth history (Sec. 2.3.1); "
                    "interleaved: whole episodes with code run in the sandbox",
             .choices = {"stepwise", "interleaved"}});
    v.Field("max_steps", max_steps, {.doc = "policy steps of an interleaved episode", .min = 1});
    v.Field("step_max_tokens", step_max_tokens,
            {.doc = "generation budget of one step unless the request sets one (App. A.1: 6,000)",
             .min = 1});
    v.Field("max_prompt_tokens", max_prompt_tokens,
            {.doc = "longest context before a step (App. A.1: 16,000); longer fails the episode",
             .min = 1});
    v.Field("observation_tag", observation_tag,
            {.doc = "tag around the sandbox's output spliced into the context (masked)"});
    v.Field("max_observation_chars", max_observation_chars,
            {.doc = "observation text kept (the rest is cut with a note)", .min = 64});
    v.Field("answer_format", answer_format,
            {.doc = "dataset answer format unless the item names one",
             .choices = {"boxed", "number", "choice", "yesno", "text"}});
    v.Field("format_errors", format_errors,
            {.doc = "score: malformed or runaway steps and policy limits end the episode with "
                    "reward 0 and still train (Eq. 7); fail: they fail the episode",
             .choices = {"score", "fail"}});
    v.Field("prompts", prompts);
    v.Field("limits", limits, {.doc = "episode limits: model calls, code runs, tokens, wall time"});
  }
};

// What the env is built from: the recipe's sections that concern it. rewards.terms may name
// `action` (per-step, into Trajectory::step_rewards) and `accuracy` (the outcome).
struct DeepToolEnvConfig {
  DeepToolSection deeptool;
  std::vector<llm::EndpointConfig> endpoints;
  llm::GpuProfile gpu;
  rewards::RewardConfig rewards{.terms = {{"action", 1.0}, {"accuracy", 1.0}}};
  tools::ToolsConfig tools{.arithmetic = false, .symbolic = false, .statistics = false};

  void Describe(config::Visitor& v) {
    v.Field("deeptool", deeptool);
    v.Field("endpoints", endpoints, {.doc = "the endpoint pool"});
    v.Field("gpu", gpu, {.doc = "GPU profile for energy estimates"});
    v.Field("rewards", rewards);
    v.Field("tools", tools, {.doc = "the code sandbox (tools.code) that runs code steps"});
  }
};

}  // namespace allot::envs::deeptool
