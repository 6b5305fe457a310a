// Training engines by algorithm. `allot train` and `allot resume` look the algorithm up here;
// an algorithm without an engine is refused before anything is written to disk.
#pragma once

#include <string>

#include "apps/allot_config.h"
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

// The sft engine's config checks (sections it does not read, knobs without effect), for
// `allot sft` to run before a run directory is created.
Status CheckSftRecipe(const LoadedConfig& loaded);

}  // namespace allot::apps
