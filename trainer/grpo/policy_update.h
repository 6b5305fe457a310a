// One GRPO update on a batch: `updates` optimizer steps over the whole batch, each accumulating
// the gradients of its micro-batches of `micro_batch_size` rows. The loss denominators are the
// whole batch's (policy_loss.h AggregationTotals), so the step is the same for any micro-batch
// size, up to float rounding: micro-batches bound memory, not the update. The learner passes
// the episodes of grad_accum collected batches here as one batch (grpo_config.h grad_accum).
//
// Log-probs come from CausalLM::TokenLogProbs, which forms logits a chunk of tokens at a time
// (forward and backward), so [B, T, vocab] never exists. The old log-probs of the PPO ratio are
// the learner's own at the start of the batch: computed once without a graph when
// updates > 1, and the detached current log-probs when updates = 1 (the same numbers, one pass
// fewer). The reference pass runs only when kl_coef > 0: the base with the adapter switched off,
// or, given `reference_lora`, the adapter's weights swapped for those (the policy a run started
// from with lora.init_from, as verl's reference is the initial actor) and back.
//
// Data parallel (options.comm with a world of N > 1): `batch` is this rank's shard of the step's
// batch (it may be empty). The aggregation denominators (trainable tokens, sequences) and
// truncated IS's check (every trainable token has its rollout log-prob; InvalidArgument
// otherwise) are those of the union over ranks, so each rank's loss is its share of the union
// batch's loss, and the gradients are summed over ranks (bucketed all-reduce) before clipping:
// N ranks take the optimizer step one rank takes on the union batch, up to float rounding. The
// reported metrics are the union's on every rank.
#pragma once

#include <torch/optim/adamw.h>

#include <cstdint>

#include "core/status.h"
#include "models/causal_lm.h"
#include "trainer/grpo/grpo_metrics.h"
#include "trainer/grpo/policy_loss.h"
#include "trainer/grpo/rollout_batch.h"

namespace allot::trainer::comm {
class Communicator;
}

namespace allot::trainer::grpo {

struct UpdateOptions {
  PolicyLossOptions loss;
  int updates = 1;
  // Rows per forward/backward pass; 0 or more than the batch: the whole batch in one pass (the
  // learner refuses a configured grpo.micro_batch_size above its step's episodes; a batch that
  // dropped groups may be smaller than one micro-batch).
  int64_t micro_batch_size = 0;
  double max_grad_norm = 1.0;  // 0: no clipping (the norm is still reported)
  double temperature = 1.0;    // the rollout's: log-probs are of softmax(logits / T)
  int64_t chunk_tokens = 512;
  double lr = 1e-5;
  // Seeds LibTorch's default generator before the passes, so that LoRA dropout masks are a
  // function of the run seed and the step (exact resume), not of what ran before.
  uint64_t dropout_seed = 0;
  // Data-parallel learner ranks; null or a world of one: this batch is the whole batch.
  comm::Communicator* comm = nullptr;
  // The reference policy's LoRA weights, in LoraParameters() order; null: the base model.
  const std::vector<at::Tensor>* reference_lora = nullptr;
};

// Fills the update part of `metrics` (loss, KL, clip fractions, IS weights, entropy estimate,
// grad norm, fwd/bwd and optimizer time). The reference-pass count goes to `ref_passes` when
// given (tests check that beta = 0 skips it).
Status UpdatePolicy(models::CausalLMImpl& model, torch::optim::AdamW& optimizer,
                    const RolloutBatch& batch, const UpdateOptions& options, StepMetrics* metrics,
                    int64_t* ref_passes = nullptr);

}  // namespace allot::trainer::grpo
