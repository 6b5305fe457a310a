// TagEnv: a test env for the GRPO learner, run by real rollout workers against a real
// `allot serve` endpoint. The policy continues the prompt "<question_level>L" (CogER's level
// tag, Eq. 4's format); a rule reward scores what it writes:
//   tag_alphabet: share of the completion's bytes drawn from the tag's own characters
//                 ("<question_level>/L1234"); dense, so that a random tiny model starts near
//                 20/260 and GRPO has signal in nearly every group;
//   accuracy:     1 when the completion starts with "2</question_level>"' first byte, '2'.
// reward = tag_alphabet. Dataset items may set "flat": true (reward 0 for every episode) and
// "step_reward": true (the completion is step 1, with tag_alphabet as its step reward). The
// policy segment records the adapter version the endpoint answered with (its versioned model
// name), as the learner's proof of delivery expects, and the max_tokens it was sampled under.
//
// env_config (JSON): {"base_url": "...", "base_model": "...", "prefix": "policy"}, and with
// "roles": ["decomposer", "allocator"] one turn per role instead, each from the role's own
// adapter (PolicySnapshot::role_adapters), tagged "<role>@policy" as envs/r2 tags its turns,
// rewarded with the tag_alphabet share of both turns (alternating GRPO tests).
#pragma once

#include <memory>
#include <string>

#include "envs/runtime/env.h"

namespace allot::trainer::testing {

inline constexpr char kTagEnvName[] = "grpo_tag";

// Registers the env under kTagEnvName in `registry`.
void RegisterTagEnv(envs::runtime::EnvRegistrar& registry);

// The env_config text for an endpoint.
std::string TagEnvConfig(const std::string& base_url, const std::string& base_model);

}  // namespace allot::trainer::testing
