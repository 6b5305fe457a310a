// The navigator an episode acts with, decoded once per policy version from the Q-net weights
// the host publishes. Shared by the envs a DQN navigator drives (the chain MDP, RLoT's LLM env);
// a library of its own beside the runtime (allot_envs_runtime_navigator), as the navigator's
// decoder lives in allot_models, which the rest of the runtime does not link.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "envs/runtime/env.h"
#include "models/navigator_mlp.h"

namespace allot::envs::runtime {

// Thread-safe: episodes of one env share it.
class NavigatorCache {
 public:
  // `env_name` names the env in errors; a navigator must map state_dim -> num_actions.
  NavigatorCache(std::string env_name, int64_t state_dim, int64_t num_actions)
      : env_name_(std::move(env_name)), state_dim_(state_dim), num_actions_(num_actions) {}

  // Null when no weights were published yet (the caller explores or acts by default).
  Result<std::shared_ptr<const models::NavigatorMlp>> Get(
      const std::shared_ptr<const runtime::PolicySnapshot>& policy);

 private:
  const std::string env_name_;
  const int64_t state_dim_;
  const int64_t num_actions_;
  std::mutex mu_;
  uint64_t cached_version_ = 0;
  std::shared_ptr<const models::NavigatorMlp> cached_;
};

}  // namespace allot::envs::runtime
