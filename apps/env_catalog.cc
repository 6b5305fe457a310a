#include "apps/env_catalog.h"

#include "envs/atlas/atlas_env.h"
#include "envs/coger/coger_env.h"
#include "envs/deeptool/deeptool_env.h"
#include "envs/r2/r2_env.h"
#include "envs/rlot/rlot_env.h"
#include "envs/synthetic/chain_env.h"

namespace allot::apps {
namespace {

struct Registration {
  EnvCatalogEntry entry;
  void (*registrar)(envs::runtime::EnvRegistrar&);
};

// Add an env here: its name (the one its Register function uses), its kind, and the
// function that registers it.
const std::vector<Registration>& Registrations() {
  static const std::vector<Registration> kAll = {
      {{"chain", EnvKind::kNavigator}, &envs::RegisterChainEnv},
      {{"rlot", EnvKind::kNavigator}, &envs::rlot::RegisterRlotEnv},
      {{"coger", EnvKind::kLlmPolicy}, &envs::coger::RegisterCogerEnv},
      {{"deeptool", EnvKind::kLlmPolicy}, &envs::deeptool::RegisterDeepToolEnv},
      {{"r2", EnvKind::kLlmPolicy}, &envs::r2::RegisterR2Env},
      {{"atlas", EnvKind::kLlmPolicy}, &envs::atlas::RegisterAtlasEnv},
  };
  return kAll;
}

}  // namespace

const std::vector<EnvCatalogEntry>& EnvCatalog() {
  static const std::vector<EnvCatalogEntry> kEntries = [] {
    std::vector<EnvCatalogEntry> out;
    for (const auto& r : Registrations()) out.push_back(r.entry);
    return out;
  }();
  return kEntries;
}

std::optional<EnvKind> FindEnvKind(std::string_view name) {
  for (const auto& e : EnvCatalog()) {
    if (e.name == name) return e.kind;
  }
  return std::nullopt;
}

std::string EnvNames(EnvKind kind) {
  std::string out;
  for (const auto& e : EnvCatalog()) {
    if (e.kind != kind) continue;
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out;
}

void RegisterAllEnvs(envs::runtime::EnvRegistrar& registrar) {
  for (const auto& r : Registrations()) r.registrar(registrar);
}

}  // namespace allot::apps
