// The grpo section: group-relative policy optimisation of a LoRA policy (CogER, R2-Reasoner,
// DeepTool, ATLAS). The engine lands with the GRPO issue; this is its configuration, so that
// every recipe can state the numbers its paper fixes.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/schema.h"
#include "models/model_config.h"

namespace allot::trainer {

struct GrpoConfig {
  std::string policy_endpoint = "policy";  // endpoints[].name serving the policy being trained
  int group_size = 12;                     // CogER: G = 12
  int prompts_per_step = 1;
  int grad_accum = 4;    // CogER: 4
  double lr = 5e-5;      // CogER: 5e-5
  double kl_coef = 0.0;  // DeepTool: 0
  double clip_eps = 0.2;
  double temperature = 1.0;
  int max_tokens = 8192;    // CogER: 8192
  int max_policy_lag = 1;   // staleness bound for rollouts
  models::LoraConfig lora;  // CogER: r = 16

  void Describe(config::Visitor& v) {
    v.Field("policy_endpoint", policy_endpoint, {.doc = "endpoint that serves the policy"});
    v.Field("group_size", group_size, {.doc = "samples per prompt (G)", .min = 2.0});
    v.Field("prompts_per_step", prompts_per_step, {.min = 1.0});
    v.Field("grad_accum", grad_accum, {.doc = "gradient accumulation steps", .min = 1.0});
    v.Field("lr", lr, {.doc = "learning rate", .min = 0.0});
    v.Field("kl_coef", kl_coef, {.doc = "KL penalty to the reference (base) policy", .min = 0.0});
    v.Field("clip_eps", clip_eps, {.doc = "PPO-style ratio clip", .min = 0.0});
    v.Field("temperature", temperature, {.doc = "sampling temperature", .min = 0.0});
    v.Field("max_tokens", max_tokens, {.doc = "longest completion", .min = 1.0});
    v.Field("max_policy_lag", max_policy_lag,
            {.doc = "policy versions a rollout may lag", .min = 0.0});
    v.Field("lora", lora);
  }
};

}  // namespace allot::trainer
