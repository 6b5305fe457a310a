#include "rollout/env_registry.h"

#include <utility>

namespace allot::rollout {

EnvRegistry& EnvRegistry::Global() {
  static EnvRegistry* registry = new EnvRegistry();
  return *registry;
}

void EnvRegistry::Register(const std::string& name, envs::runtime::EnvFactory factory) {
  std::lock_guard<std::mutex> lock(mu_);
  factories_[name] = std::move(factory);
}

bool EnvRegistry::Has(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return factories_.count(name) > 0;
}

std::vector<std::string> EnvRegistry::Names() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

Result<std::unique_ptr<envs::runtime::Env>> EnvRegistry::Create(
    const std::string& name, const std::string& env_config) const {
  envs::runtime::EnvFactory factory;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = factories_.find(name);
    if (it == factories_.end()) return NotFound("env '" + name + "' is not registered");
    factory = it->second;
  }
  auto env = factory(env_config);
  if (!env.ok()) return env.status().Annotate("creating env '" + name + "'");
  if (*env == nullptr) return Internal("env '" + name + "': factory returned null");
  return env;
}

Result<std::shared_ptr<envs::runtime::Env>> EnvCache::Get(const std::string& name,
                                                          const std::string& env_config) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(name, env_config);
  auto it = envs_.find(key);
  if (it != envs_.end()) return it->second;
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<envs::runtime::Env> env,
                         registry_->Create(name, env_config));
  std::shared_ptr<envs::runtime::Env> shared(std::move(env));
  // Bounded: a run uses a handful of configs; a learner sending thousands is a bug we survive.
  if (envs_.size() >= 256) envs_.clear();
  envs_.emplace(std::move(key), shared);
  return shared;
}

}  // namespace allot::rollout
