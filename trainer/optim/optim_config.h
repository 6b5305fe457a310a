// The optimizer section shared by the LLM trainers (SFT, GRPO): AdamW (Loshchilov & Hutter,
// 2019), a learning-rate schedule with warmup, global gradient-norm clipping and gradient
// accumulation. Field names follow transformers' TrainingArguments where one exists.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/schema.h"

namespace allot::trainer {

struct OptimConfig {
  double lr = 1e-4;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // decoupled; never applied to 1-D tensors (norms, biases)
  std::string schedule = "constant";
  int64_t warmup_steps = 0;    // takes precedence over warmup_ratio; setting both is an error
  double warmup_ratio = 0.0;   // of the run's total optimizer steps
  double min_lr_ratio = 0.0;   // linear/cosine decay ends at lr * min_lr_ratio
  double max_grad_norm = 1.0;  // global L2 clipping; 0 = off (the norm is still reported)
  int64_t grad_accum = 1;      // micro-batches per optimizer step

  void Describe(config::Visitor& v) {
    v.Field("lr", lr, {.doc = "peak learning rate", .min = 0.0});
    v.Field("beta1", beta1, {.doc = "AdamW beta1", .min = 0.0, .max = 0.999999});
    v.Field("beta2", beta2, {.doc = "AdamW beta2", .min = 0.0, .max = 0.999999});
    v.Field("eps", eps, {.doc = "AdamW epsilon", .min = 0.0});
    v.Field("weight_decay", weight_decay,
            {.doc = "decoupled weight decay (not on 1-D tensors: norms, biases)", .min = 0.0});
    v.Field("schedule", schedule,
            {.doc = "learning-rate schedule after warmup",
             .choices = {"constant", "linear", "cosine"}});
    v.Field("warmup_steps", warmup_steps,
            {.doc = "linear warmup from 0, in optimizer steps", .min = 0.0});
    v.Field("warmup_ratio", warmup_ratio,
            {.doc = "warmup as a fraction of total steps (when warmup_steps is 0)",
             .min = 0.0,
             .max = 1.0});
    v.Field("min_lr_ratio", min_lr_ratio,
            {.doc = "floor of linear/cosine decay as a fraction of lr", .min = 0.0, .max = 1.0});
    v.Field("max_grad_norm", max_grad_norm,
            {.doc = "clip the global gradient L2 norm to this; 0 = no clipping", .min = 0.0});
    v.Field("grad_accum", grad_accum, {.doc = "micro-batches per optimizer step", .min = 1.0});
  }
};

}  // namespace allot::trainer
