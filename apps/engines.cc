#include "apps/engines.h"

namespace allot::apps {

int RunDqnEngine(RunContext& ctx);
int RunGrpoEngine(RunContext& ctx);

TrainEngine FindTrainEngine(const std::string& algorithm) {
  // sft registers here as its trainer lands.
  if (algorithm == "dqn") return &RunDqnEngine;
  if (algorithm == "grpo") return &RunGrpoEngine;
  return nullptr;
}

}  // namespace allot::apps
