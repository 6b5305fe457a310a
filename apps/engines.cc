#include "apps/engines.h"

namespace allot::apps {

int RunDqnEngine(RunContext& ctx);
int RunSftEngine(RunContext& ctx);
int RunGrpoEngine(RunContext& ctx);

TrainEngine FindTrainEngine(const std::string& algorithm) {
  // One engine per trainer.algorithm; anything else is refused before a run directory exists.
  if (algorithm == "dqn") return &RunDqnEngine;
  if (algorithm == "sft") return &RunSftEngine;
  if (algorithm == "grpo") return &RunGrpoEngine;
  return nullptr;
}

}  // namespace allot::apps
