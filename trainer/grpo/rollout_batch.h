// Trajectories -> the learner's training tensors.
//
// Tokens in, tokens out (design.md): the concatenated segments of a trajectory are exactly the
// ids the learner trains on. Sequences are left-padded to a common length T, so that
// CausalLM::TokenLogProbs (which scores position t + 1 from the prefix up to t) returns [B, T-1]
// columns aligned with the tensors built here. Only tokens of trainable segments carry loss;
// prompts, tool results and env text are context only.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "proto/allot/v1/rollout.pb.h"
#include "trainer/grpo/overlong_shaping.h"

namespace allot::trainer::grpo {

// One trajectory with its advantages.
struct Sample {
  const v1::Trajectory* trajectory = nullptr;
  double advantage = 0.0;               // outcome advantage, every trainable token
  std::vector<double> step_advantages;  // added to tokens of segments with step k (index k-1)
};

struct RolloutBatch {
  at::Tensor input_ids;       // int64 [B, T], left-padded with pad_id
  at::Tensor attention_mask;  // int64 [B, T]
  at::Tensor loss_mask;       // float32 [B, T-1]: 1 where the target token is trainable
  at::Tensor rollout_logp;    // float32 [B, T-1]: endpoint log-probs (0 where masked)
  at::Tensor advantages;      // float32 [B, T-1]
  int64_t trainable_tokens = 0;
  int64_t total_tokens = 0;
  bool has_rollout_logp = true;  // every trainable token came with a log-prob
};

// Builds the batch of `samples`. A trainable segment whose logprobs count differs from its ids
// (and is not empty) is InvalidArgument naming the episode.
Result<RolloutBatch> BuildRolloutBatch(const std::vector<Sample>& samples, int64_t pad_id = 0);

// Rows [begin, end) of every tensor of `batch` (a micro-batch), trimmed of all-pad columns.
RolloutBatch SliceRows(const RolloutBatch& batch, int64_t begin, int64_t end);

// Number of tokens in trainable segments of `t`.
int64_t TrainableTokens(const v1::Trajectory& t);

// The policy turns of `t` the loss sees (its trainable segments, one per generated turn), with
// the budget each was sampled under (TokenSegment.max_tokens; 0 where the env recorded none).
std::vector<PolicyTurn> PolicyTurns(const v1::Trajectory& t);

}  // namespace allot::trainer::grpo
