// The registry that names the envs a rollout worker runs, and the worker's cache of built envs.
// The env interface itself is envs/runtime/env.h; the worker converts each episode request to
// its EpisodeInput and each returned trajectory to the wire message (trajectory_convert.h).
//
// The envs (coger, rlot, r2, deeptool, atlas) live under envs/ and are registered with
// EnvRegistry::Global() from the app before the worker starts (explicit calls, not static
// initialisers, which static libraries drop).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/runtime/env.h"

namespace allot::rollout {

// Thread-safe name -> factory map.
class EnvRegistry : public envs::runtime::EnvRegistrar {
 public:
  static EnvRegistry& Global();

  // Replaces an existing factory of the same name.
  void Register(const std::string& name, envs::runtime::EnvFactory factory) override;
  bool Has(const std::string& name) const;
  std::vector<std::string> Names() const;
  Result<std::unique_ptr<envs::runtime::Env>> Create(const std::string& name,
                                                     const std::string& env_config) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, envs::runtime::EnvFactory> factories_;
};

// Env instances keyed by (name, env_config), built once and shared by all episodes.
class EnvCache {
 public:
  explicit EnvCache(const EnvRegistry* registry) : registry_(registry) {}
  Result<std::shared_ptr<envs::runtime::Env>> Get(const std::string& name,
                                                  const std::string& env_config);

 private:
  const EnvRegistry* registry_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<envs::runtime::Env>> envs_;
};

}  // namespace allot::rollout
