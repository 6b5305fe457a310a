// The trainer section: which algorithm a run trains with, and for how long.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/schema.h"

namespace allot::trainer {

struct TrainerConfig {
  // dqn: the RLoT navigator (Double-Dueling DQN). grpo: LoRA policies (CogER, R2, DeepTool,
  // ATLAS). sft: cold-start supervised fine-tuning (DeepTool, R2-Reasoner).
  std::string algorithm = "dqn";
  int64_t total_steps = 1000;  // updates for GRPO/SFT, episodes for DQN

  void Describe(config::Visitor& v) {
    v.Field("algorithm", algorithm, {.doc = "dqn | grpo | sft", .choices = {"dqn", "grpo", "sft"}});
    v.Field("total_steps", total_steps,
            {.doc = "optimizer steps (grpo, sft) or episodes (dqn)", .min = 1.0});
  }
};

}  // namespace allot::trainer
