// Test-only envs for the rollout tests: "echo" produces a deterministic trajectory from the
// episode input (token segments, a transition, reward components, usage), optionally slowly.
#pragma once

#include <cstdint>
#include <string>

#include "envs/runtime/env.h"

namespace allot::rollout::testing {

// env_config (YAML): {delay_ms: 0, tokens: 8, fail: false}
//  delay_ms  wall time of an episode (sleeps in slices, honouring cancellation)
//  tokens    length of the trainable segment
//  fail      return a non-OK Status (the worker turns it into an ENV_ERROR trajectory)
void RegisterEchoEnv(envs::runtime::EnvRegistrar& registry);

// The policy segment "echo" produces for an episode id: deterministic, for assertions.
uint32_t EchoToken(const std::string& episode_id, int i);

}  // namespace allot::rollout::testing
