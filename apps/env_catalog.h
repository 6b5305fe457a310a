// The envs this build can run, by name, and which engine consumes each one's trajectories.
// One list serves every host: `allot rollout-worker`, the in-process workers of `allot train`,
// and the engines' checks that a recipe's env.name exists.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envs/runtime/env.h"

namespace allot::apps {

// What an env's trajectories train.
enum class EnvKind {
  kNavigator,  // DQN transitions (trainer.algorithm: dqn)
  kLlmPolicy,  // token segments with log-probs (trainer.algorithm: grpo)
};

struct EnvCatalogEntry {
  std::string name;
  EnvKind kind;
};

// Every env of this build, in registration order.
const std::vector<EnvCatalogEntry>& EnvCatalog();

// The kind of the named env, or nullopt when no env has that name.
std::optional<EnvKind> FindEnvKind(std::string_view name);

// Names of the envs of one kind, comma-separated, for error messages.
std::string EnvNames(EnvKind kind);

// Registers every env of the catalog with `registrar`.
void RegisterAllEnvs(envs::runtime::EnvRegistrar& registrar);

}  // namespace allot::apps
