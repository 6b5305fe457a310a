// Training engines by algorithm. `allot train` and `allot resume` look the algorithm up here;
// an algorithm without an engine is refused before anything is written to disk.
#pragma once

#include <string>
#include <vector>

#include "apps/allot_config.h"
#include "core/config/node.h"
#include "core/run_directory.h"

namespace allot::apps {

struct RunContext {
  LoadedConfig& loaded;
  const RunDirectory& run;
  bool resume = false;
};

// Returns the process exit code.
using TrainEngine = int (*)(RunContext& ctx);

// nullptr when the algorithm's engine has not landed.
TrainEngine FindTrainEngine(const std::string& algorithm);

// Configs fail loudly: a section or key the algorithm's engine does not read,
// or a knob without effect in the chosen mode, is an error naming it and where it was set (a
// file line, or "--set key"). `overrides` are the user's --set assignments. `allot train` and
// `allot sft` check the recipe file with them; `allot resume` checks its own --set assignments
// against the run's config (the recipe itself was checked when the run started). Run before a
// run directory is created or ranks are launched.
Status CheckRecipe(const LoadedConfig& loaded, const std::vector<std::string>& overrides,
                   bool resume);

// The engines' checks. `written`: what the user wrote (the recipe file and its --set
// assignments, or on resume only the assignments); `cfg`: the resulting config, for the modes
// that decide whether a knob has an effect. `source` names the recipe in messages.
Status CheckDqnRecipe(const config::ConfigNode& written, const AllotConfig& cfg,
                      const std::string& source);
Status CheckGrpoRecipe(const config::ConfigNode& written, const AllotConfig& cfg,
                       const std::string& source);
Status CheckSftRecipe(const config::ConfigNode& written, const AllotConfig& cfg,
                      const std::string& source);

// Error lines (each "\n  <origin>: ...") for the engines' checks, empty when nothing is wrong.
// env.<x> sections of an env other than env.name (`skip`: those the caller names itself).
std::string OtherEnvSections(const config::ConfigNode& written, const std::string& env_name,
                             const std::vector<std::string>& skip = {});
// Top-level sections the engine (`grpo` or `dqn`) does not read with the recipe's env, nor
// `allot eval` for that env (the engines' own sections, which each engine names itself, aside).
std::string UnreadSections(const config::ConfigNode& written, const AllotConfig& cfg,
                           const std::string& engine);
// Every key the user wrote: each leaf of `written` (a scalar, a list of scalars, an empty map or
// list; a list of maps is walked item by item), where it was set, and what reads it under
// `engine` (grpo, dqn or sft) with the recipe's env, or why nothing does (`reader` empty then).
// What reads a key: the engine's and the env's sections as UnreadSections and the engines'
// checks take them, refined leaf by leaf where a sub-section is read only in some modes (a
// rewards sub-section only with its term, tools.sandbox only with tools.code, ...).
struct WrittenKey {
  std::string path;  // "rewards.hierarchy.base_slope", "endpoints[1].name"
  config::Origin origin;
  std::string reader;          // "the grpo engine", "env r2 (its episodes and allot eval)", ...
  std::string unread;          // why nothing reads it, when nothing does
  bool whole_section = false;  // unread because its top-level section is (reported as such)
};
std::vector<WrittenKey> WrittenKeys(const config::ConfigNode& written, const AllotConfig& cfg,
                                    const std::string& engine);
// Error lines for the written keys that nothing reads in a section that is read (a section read
// by nothing is refused whole, once, by the engine's own check).
std::string UnreadKeys(const config::ConfigNode& written, const AllotConfig& cfg,
                       const std::string& engine);

}  // namespace allot::apps
