#include "apps/engines.h"

namespace allot::apps {

TrainEngine FindTrainEngine(const std::string& algorithm) {
  // dqn, grpo and sft register here as their trainers land.
  return nullptr;
}

}  // namespace allot::apps
