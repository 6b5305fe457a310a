#include "apps/env_catalog.h"

#include "envs/atlas/atlas_env.h"
#include "envs/coger/coger_env.h"
#include "envs/deeptool/deeptool_env.h"
#include "envs/r2/r2_env.h"
#include "envs/rlot/rlot_env.h"
#include "envs/synthetic/chain_env.h"

namespace allot::apps {

// Add an env here: one line, its descriptor (envs/README.md).
const std::vector<const envs::runtime::EnvDescriptor*>& EnvCatalog() {
  static const std::vector<const envs::runtime::EnvDescriptor*> kAll = {
      &envs::ChainEnvDescriptor(),               // the synthetic logic-block MDP
      &envs::rlot::RlotEnvDescriptor(),          // RLoT
      &envs::coger::CogerEnvDescriptor(),        // CogER
      &envs::deeptool::DeepToolEnvDescriptor(),  // DeepTool
      &envs::r2::R2EnvDescriptor(),              // R2-Reasoner
      &envs::atlas::AtlasEnvDescriptor(),        // ATLAS
  };
  return kAll;
}

const envs::runtime::EnvDescriptor* FindEnv(std::string_view name) {
  for (const envs::runtime::EnvDescriptor* d : EnvCatalog()) {
    if (d->name == name) return d;
  }
  return nullptr;
}

std::optional<EnvKind> FindEnvKind(std::string_view name) {
  const envs::runtime::EnvDescriptor* d = FindEnv(name);
  if (d == nullptr) return std::nullopt;
  return d->kind;
}

std::string EnvNames(EnvKind kind) {
  std::string out;
  for (const envs::runtime::EnvDescriptor* d : EnvCatalog()) {
    if (d->kind != kind) continue;
    if (!out.empty()) out += ", ";
    out += d->name;
  }
  return out;
}

void RegisterAllEnvs(envs::runtime::EnvRegistrar& registrar) {
  for (const envs::runtime::EnvDescriptor* d : EnvCatalog()) d->register_env(registrar);
}

}  // namespace allot::apps
