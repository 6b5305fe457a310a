#include "rollout/runtime_env_adapter.h"

#include <utility>

#include "rollout/trajectory_convert.h"

namespace allot::rollout {

std::shared_ptr<const envs::runtime::PolicySnapshot> RuntimeEnvAdapter::Policy(
    const std::shared_ptr<const PolicySnapshot>& policy) {
  if (policy == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (last_source_ != policy) {
    last_ = ToRuntimePolicy(*policy);
    last_source_ = policy;
  }
  return last_;
}

Result<v1::Trajectory> RuntimeEnvAdapter::RunEpisode(const EpisodeContext& ctx) {
  envs::runtime::EpisodeInput input = ToEpisodeInput(ctx, Policy(ctx.policy));
  ALLOT_ASSIGN_OR_RETURN(envs::runtime::Trajectory t, env_->Run(input));
  return ToProto(t);
}

EnvFactory AdaptEnvFactory(envs::runtime::EnvFactory factory) {
  return [factory =
              std::move(factory)](const std::string& env_config) -> Result<std::unique_ptr<Env>> {
    ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<envs::runtime::Env> env, factory(env_config));
    if (env == nullptr) return Internal("env factory returned null");
    return std::unique_ptr<Env>(
        std::make_unique<RuntimeEnvAdapter>(std::shared_ptr<envs::runtime::Env>(std::move(env))));
  };
}

}  // namespace allot::rollout
