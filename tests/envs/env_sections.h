// The top-level sections an env's config struct reads, for the test that its descriptor declares
// exactly those (env_descriptor_test.cc, deeptool_env_test.cc).
#pragma once

#include <set>
#include <string>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "envs/runtime/env_descriptor.h"

namespace allot::envs::testing {

// The keys of `Config`'s top level, as its Describe names them.
template <typename Config>
std::set<std::string> ConfigSections() {
  Config config;
  auto node = config::ParseYaml(config::ToYaml(config), "config");
  std::set<std::string> out;
  if (!node.ok()) return out;
  for (const auto& [key, value] : node->entries()) out.insert(key);
  return out;
}

// env.<name> (loaded as <name>) and the sections the descriptor declares.
inline std::set<std::string> DeclaredSections(const runtime::EnvDescriptor& d) {
  std::set<std::string> out(d.sections.begin(), d.sections.end());
  out.insert(d.name);
  return out;
}

}  // namespace allot::envs::testing
