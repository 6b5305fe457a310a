// What one GRPO step reports: per reward component mean and std, accuracy,
// KL, clip fractions, entropy, grad norm, IS weights, staleness, tokens/s, the step-time
// breakdown (rollout wait, forward/backward, optimizer, sync), cost and energy per episode, and
// the Lagrange multiplier of the cost-constrained mode, and the share of the step's episodes per
// value of the env's step_shares info keys (share/level/L2: CogER Table 4's level shares, per
// step). Metric names are stable: dashboards and
// the tests read them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/metrics_writer.h"
#include "proto/allot/v1/rollout.pb.h"

namespace allot::trainer::grpo {

struct StepMetrics {
  // Episodes.
  double episodes = 0, failed = 0, stale_dropped = 0, groups_dropped = 0, groups_zero_variance = 0;
  // failed: episodes left out as failed (not the policy's failures, or unscored ones);
  // failed_scored: policy failures trained on with their env's failure reward
  // (rollout/failure_kind.h). failures: every failed episode, kept or not, by reason.
  double failed_scored = 0;
  std::map<std::string, double> failures;
  std::string first_failure;
  double staleness_sum = 0, staleness_max = 0;
  // grpo.async: groups submitted and not yet trained on when the step's update starts (its own
  // excluded); 0 when synchronous.
  double groups_in_flight = 0;
  std::vector<double> rewards;  // raw env reward of each trained-or-dropped episode seen
  std::map<std::string, std::vector<double>> components;
  double cost_usd = 0, energy_j = 0, episode_tokens = 0;
  // The reward's own LLM spend (CogER's L_min oracle, info "oracle_cost_usd"), summed over the
  // step's episodes; never part of cost_usd or the budget.
  double oracle_cost_usd = 0;
  // Per info key of the env's step_shares: episodes by value (e.g. level -> L2 -> 17).
  std::map<std::string, std::map<std::string, double>> shares;
  // Update (token-weighted means over micro-batches and updates).
  double loss = 0, policy_loss = 0, kl = 0, clip_frac_low = 0, clip_frac_high = 0, ratio_mean = 0,
         is_weight_mean = 0, is_truncated_frac = 0, entropy = 0;
  double grad_norm = 0, trained_tokens = 0, lr = 0, lambda = 0, policy_version = 0;
  // Proof of delivery (delivery_probe.h), when the step published under a probe: the probe's
  // |served - learner| log-prob, and how far the update moved the learner's probe log-probs.
  bool probed = false;
  double probe_max_abs_diff = 0, probe_mean_abs_diff = 0, probe_step_change = -1;
  // Mean |rollout log-prob - learner log-prob| over the step's trainable tokens, the learner's
  // as the update's first pass computes them: under the weights the update starts from (the
  // version that should have sampled them), with LoRA dropout when lora_dropout > 0 (its noise
  // is part of the figure). -1 when the rollouts carry no log-probs. A jump is the earliest sign
  // of a delivery fault.
  double rollout_logprob_abs_diff = -1;
  // Seconds.
  double rollout_wait_s = 0, fwd_bwd_s = 0, optimizer_s = 0, sync_s = 0, step_s = 0;
  // The rollout ledger during the step (rollout/dispatcher.h's counters, this step's share):
  // episodes submitted, sent again after a worker loss, drop or return, trajectories that came
  // twice (dropped), and worker streams lost.
  double issued = 0, redispatched = 0, duplicates_dropped = 0, worker_losses = 0;
  // Every episode the step collected and what became of it, for RUN/episodes.jsonl: "trained",
  // "failed" (left out; reason the failure's label), "stale" (beyond max_policy_lag) or
  // "dropped" (its group could not train: fewer than two usable episodes, or flat under dynamic
  // sampling).
  struct EpisodeOutcome {
    int64_t draw = 0;    // the group's draw from the prompt list
    uint32_t index = 0;  // its place in the group
    std::string outcome, reason, worker;
    uint32_t attempts = 0;
  };
  std::vector<EpisodeOutcome> outcomes;
  void RecordOutcome(int64_t draw, const v1::Trajectory& t, uint32_t attempts,
                     const std::string& worker, std::string outcome, std::string reason);
  // One JSON line per outcome, each with the step: {"step", "draw", "index", "outcome",
  // "reason", "attempts", "worker"}.
  std::string OutcomeLines(int64_t step) const;

  // Counts a failed episode under its reason (kept: trained on with its failure reward).
  void ObserveFailure(const v1::Trajectory& t, bool kept);
  // Adds a trajectory's rewards, components and accounting, and counts its values of the
  // `share_keys` info keys (an episode without the key counts under "none").
  void ObserveEpisode(const v1::Trajectory& t, const std::vector<std::string>& share_keys);
  double MeanReward() const;
  Scalars ToScalars() const;
};

}  // namespace allot::trainer::grpo
