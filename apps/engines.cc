#include "apps/engines.h"

namespace allot::apps {

int RunDqnEngine(RunContext& ctx);

TrainEngine FindTrainEngine(const std::string& algorithm) {
  // grpo and sft register here as their trainers land.
  if (algorithm == "dqn") return &RunDqnEngine;
  return nullptr;
}

}  // namespace allot::apps
