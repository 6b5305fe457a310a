#include "trainer/grpo/grpo_metrics.h"

#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "rollout/failure_kind.h"

namespace allot::trainer::grpo {

namespace {

std::pair<double, double> MeanStd(const std::vector<double>& xs) {
  if (xs.empty()) return {0.0, 0.0};
  double sum = 0.0;
  for (double x : xs) sum += x;
  const double mean = sum / static_cast<double>(xs.size());
  double ss = 0.0;
  for (double x : xs) ss += (x - mean) * (x - mean);
  return {mean, std::sqrt(ss / static_cast<double>(xs.size()))};
}

}  // namespace

void StepMetrics::ObserveFailure(const v1::Trajectory& t, bool kept) {
  failures[rollout::FailureReasonLabel(t.failure().reason())] += 1;
  if (kept) {
    failed_scored += 1;
    return;
  }
  failed += 1;
  if (failed == 1) first_failure = t.failure().message();
}

void StepMetrics::ObserveEpisode(const v1::Trajectory& t,
                                 const std::vector<std::string>& share_keys) {
  rewards.push_back(t.reward());
  for (const auto& c : t.rewards()) components[c.name()].push_back(c.value());
  const auto& a = t.accounting();
  cost_usd += a.cost_usd();
  energy_j += a.energy_joules();
  episode_tokens += static_cast<double>(a.prompt_tokens() + a.completion_tokens());
  if (auto it = t.info().find("oracle_cost_usd"); it != t.info().end()) {
    const double usd = std::strtod(it->second.c_str(), nullptr);
    if (std::isfinite(usd) && usd > 0) oracle_cost_usd += usd;
  }
  for (const std::string& key : share_keys) {
    const auto it = t.info().find(key);
    shares[key][it == t.info().end() || it->second.empty() ? "none" : it->second] += 1;
  }
}

void StepMetrics::RecordOutcome(int64_t draw, const v1::Trajectory& t, uint32_t attempts,
                                const std::string& worker, std::string outcome,
                                std::string reason) {
  outcomes.push_back(
      {draw, t.group_index(), std::move(outcome), std::move(reason), worker, attempts});
}

std::string StepMetrics::OutcomeLines(int64_t step) const {
  std::string out;
  for (const EpisodeOutcome& o : outcomes) {
    out += nlohmann::json({{"step", step},
                           {"draw", o.draw},
                           {"index", o.index},
                           {"outcome", o.outcome},
                           {"reason", o.reason},
                           {"attempts", o.attempts},
                           {"worker", o.worker}})
               .dump();
    out += "\n";
  }
  return out;
}

double StepMetrics::MeanReward() const { return MeanStd(rewards).first; }

Scalars StepMetrics::ToScalars() const {
  Scalars out;
  const auto [rm, rs] = MeanStd(rewards);
  out.emplace_back("reward/mean", rm);
  out.emplace_back("reward/std", rs);
  for (const auto& [name, xs] : components) {
    const auto [m, sd] = MeanStd(xs);
    out.emplace_back("reward/" + name + "/mean", m);
    out.emplace_back("reward/" + name + "/std", sd);
    if (name == "accuracy") out.emplace_back("accuracy", m);
  }
  const double n = std::max<double>(static_cast<double>(rewards.size()), 1.0);
  out.emplace_back("episodes", episodes);
  out.emplace_back("episodes/failed", failed);
  out.emplace_back("episodes/failed_scored", failed_scored);
  for (const auto& [reason, n] : failures) out.emplace_back("episodes/failed/" + reason, n);
  out.emplace_back("episodes/stale_dropped", stale_dropped);
  out.emplace_back("groups/dropped", groups_dropped);
  out.emplace_back("groups/zero_variance", groups_zero_variance);
  const double kept = std::max(episodes - failed, 1.0);
  out.emplace_back("staleness/mean", staleness_sum / kept);
  out.emplace_back("staleness/max", staleness_max);
  out.emplace_back("rollout/groups_in_flight", groups_in_flight);
  out.emplace_back("rollout/issued", issued);
  out.emplace_back("rollout/redispatched", redispatched);
  out.emplace_back("rollout/duplicates_dropped", duplicates_dropped);
  out.emplace_back("rollout/worker_losses", worker_losses);
  out.emplace_back("cost_usd_per_episode", cost_usd / n);
  out.emplace_back("energy_j_per_episode", energy_j / n);
  out.emplace_back("oracle_cost_usd", oracle_cost_usd);
  for (const auto& [key, counts] : shares) {
    for (const auto& [value, count] : counts) {
      out.emplace_back("share/" + key + "/" + value, count / n);
    }
  }
  out.emplace_back("tokens_per_episode", episode_tokens / n);
  out.emplace_back("loss", loss);
  out.emplace_back("policy_loss", policy_loss);
  out.emplace_back("kl", kl);
  out.emplace_back("clip_frac/low", clip_frac_low);
  out.emplace_back("clip_frac/high", clip_frac_high);
  out.emplace_back("ratio_mean", ratio_mean);
  out.emplace_back("is_weight/mean", is_weight_mean);
  out.emplace_back("is_weight/truncated_frac", is_truncated_frac);
  out.emplace_back("entropy", entropy);
  out.emplace_back("grad_norm", grad_norm);
  out.emplace_back("lr", lr);
  out.emplace_back("lambda", lambda);
  out.emplace_back("policy_version", policy_version);
  out.emplace_back("trained_tokens", trained_tokens);
  const double update_s = fwd_bwd_s + optimizer_s;
  out.emplace_back("tokens_per_s", update_s > 0 ? trained_tokens / update_s : 0.0);
  if (probed) {
    out.emplace_back("delivery/probe_max_abs_diff", probe_max_abs_diff);
    out.emplace_back("delivery/probe_mean_abs_diff", probe_mean_abs_diff);
    if (probe_step_change >= 0) out.emplace_back("delivery/probe_step_change", probe_step_change);
  }
  if (rollout_logprob_abs_diff >= 0) {
    out.emplace_back("delivery/rollout_logprob_abs_diff", rollout_logprob_abs_diff);
  }
  out.emplace_back("time/rollout_wait_s", rollout_wait_s);
  out.emplace_back("time/fwd_bwd_s", fwd_bwd_s);
  out.emplace_back("time/optimizer_s", optimizer_s);
  out.emplace_back("time/sync_s", sync_s);
  out.emplace_back("time/step_s", step_s);
  return out;
}

}  // namespace allot::trainer::grpo
