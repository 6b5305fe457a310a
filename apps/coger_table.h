// `allot eval RUN` of a trained CogER run: the before/after table (CogER Sec. 5, Table 4) of
// every fixed level L1..L4, random routing (its expectation and one seeded draw), the untrained
// router and the trained one (the run's newest adapter): accuracy, failures, cost and energy per
// query and the calls per level, then the same per item difficulty. What scripts/quickstart.sh
// prints for the tiny world, for any pool a recipe names.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "apps/allot_config.h"

namespace allot::apps {

// The trained router of the run in `run_dir`: "<run name>-v<N>" for its newest adapters/v<N>
// ("" when it has none). When the recipe serves the router's endpoint itself (`serve`), the
// adapter is added to what that server loads at start; otherwise the endpoint must still serve
// what the run published.
std::string PrepareTrainedRouter(LoadedConfig& loaded, const std::string& run_dir);

struct CogerTableOptions {
  std::string trained_adapter;  // "" = no trained row
  int64_t limit = 0;            // first N eval items; 0 = all
  uint64_t seed = 1;            // random routing's draw
  std::string json_path;        // every row's result, with its label and phase
};

// Evaluates every row at once (each method over interleaved shards of the items, so that the
// servers batch their requests) and prints the table. Returns the exit code.
int RunCogerTable(const AllotConfig& cfg, const CogerTableOptions& options, std::ostream& out,
                  std::ostream& err);

}  // namespace allot::apps
