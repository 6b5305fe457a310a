// The GRPO learner's optimiser settings as trainer/optim's OptimConfig. Recipes keep the grpo
// keys the papers fix (CogER: lr 5e-5, grad_accum 4; DeepTool: a linear schedule without
// warmup); AdamW's groups, the warmup schedule, clipping and the checkpointed optimizer state
// then come from trainer/optim/, as for SFT.
#pragma once

#include "trainer/grpo/grpo_config.h"
#include "trainer/optim/optim_config.h"

namespace allot::trainer {

inline OptimConfig GrpoOptimConfig(const GrpoConfig& g) {
  OptimConfig o;  // betas, eps: AdamW's defaults (0.9, 0.999, 1e-8)
  o.lr = g.lr;
  o.weight_decay = g.weight_decay;
  o.schedule = g.lr_schedule;
  o.warmup_ratio = g.warmup_ratio;  // of trainer.total_steps (GRPO steps)
  o.max_grad_norm = g.max_grad_norm;
  o.grad_accum = g.grad_accum;
  return o;
}

}  // namespace allot::trainer
