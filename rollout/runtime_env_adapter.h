// RuntimeEnvAdapter: runs a plain-C++ env (envs/runtime/env.h) as the worker's rollout::Env,
// converting the request to an EpisodeInput and the returned trajectory to the wire message.
#pragma once

#include <memory>
#include <mutex>

#include "envs/runtime/env.h"
#include "rollout/env.h"

namespace allot::rollout {

class RuntimeEnvAdapter : public Env {
 public:
  explicit RuntimeEnvAdapter(std::shared_ptr<envs::runtime::Env> env) : env_(std::move(env)) {}

  Result<v1::Trajectory> RunEpisode(const EpisodeContext& ctx) override;
  envs::runtime::Env& env() { return *env_; }

 private:
  // The policy converted once per version: episodes share it.
  std::shared_ptr<const envs::runtime::PolicySnapshot> Policy(
      const std::shared_ptr<const PolicySnapshot>& policy);

  std::shared_ptr<envs::runtime::Env> env_;
  std::mutex mu_;
  std::shared_ptr<const PolicySnapshot> last_source_;
  std::shared_ptr<const envs::runtime::PolicySnapshot> last_;
};

// The rollout EnvFactory that builds `factory`'s env behind a RuntimeEnvAdapter.
EnvFactory AdaptEnvFactory(envs::runtime::EnvFactory factory);

}  // namespace allot::rollout
