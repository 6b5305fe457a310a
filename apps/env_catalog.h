// The envs this build can run: one descriptor each (envs/runtime/env_descriptor.h), declared by
// the env. One list serves every host: `allot rollout-worker`, the in-process workers of
// `allot train`, `allot eval`, and the recipe checks (which sections an env reads).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envs/runtime/env.h"
#include "envs/runtime/env_descriptor.h"

namespace allot::apps {

using EnvKind = envs::runtime::EnvKind;

// Every env of this build, in registration order.
const std::vector<const envs::runtime::EnvDescriptor*>& EnvCatalog();

// The named env's descriptor, or null when no env has that name.
const envs::runtime::EnvDescriptor* FindEnv(std::string_view name);

// The kind of the named env, or nullopt when no env has that name.
std::optional<EnvKind> FindEnvKind(std::string_view name);

// Names of the envs of one kind, comma-separated, for error messages.
std::string EnvNames(EnvKind kind);

// Registers every env of the catalog with `registrar`.
void RegisterAllEnvs(envs::runtime::EnvRegistrar& registrar);

}  // namespace allot::apps
