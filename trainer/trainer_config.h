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
  // ZeRO (trainer/optim/zero_adamw.h): 1 shards AdamW's state over the learner ranks, 2 the
  // gradients too. Full-parameter sft only; one rank keeps everything.
  int64_t zero_stage = 0;

  void Describe(config::Visitor& v) {
    v.Field("algorithm", algorithm, {.doc = "dqn | grpo | sft", .choices = {"dqn", "grpo", "sft"}});
    v.Field("total_steps", total_steps,
            {.doc = "optimizer steps (grpo, sft) or episodes (dqn)", .min = 1.0});
    v.Field("zero_stage", zero_stage,
            {.doc = "ZeRO over the learner ranks: 0 off, 1 shard AdamW's state, 2 and the "
                    "gradients (full-parameter sft)",
             .min = 0.0,
             .max = 2.0});
  }
};

}  // namespace allot::trainer
