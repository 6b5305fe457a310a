// The grpo section: group-relative policy optimisation of a LoRA policy (CogER, R2-Reasoner,
// DeepTool, ATLAS). The advantage estimator (GRPO, Dr.GRPO) and the policy loss (PPO clip with
// DAPO's clip-higher, GSPO) are chosen by name from registries (trainer/grpo/
// advantage_estimators.h, policy_losses.h). Every number a paper fixes is a default here; the
// knobs of the loss family are documented where they are read (trainer/grpo/policy_loss.h,
// advantages.h, lagrange_multiplier.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "models/model_config.h"

namespace allot::trainer::grpo {
// The registered names, the choices of grpo.advantage_estimator and grpo.policy_loss (declared
// in advantage_estimators.h and policy_losses.h, which this header, torch-free, does not include).
std::vector<std::string> AdvantageEstimatorNames();
std::vector<std::string> PolicyLossNames();
}  // namespace allot::trainer::grpo

namespace allot::trainer {

// Alternating GRPO over the roles of a policy (R2-Reasoner Sec. 4.3; grpo/alternation.h): each
// role is its own LoRA adapter (grpo/role_adapters.h), and in a phase only the active role's
// adapter is trained and published while the others stay fixed. The paper gives no switching
// period.
struct AlternationConfig {
  bool enabled = false;
  std::vector<std::string> roles = {"decomposer", "allocator"};
  int64_t switch_every = 16;  // K: steps per role before switching (allot's choice)
  // Learning rate of each role, in `roles` order (R2-Reasoner Table 7: 1e-4 decomposer,
  // 1.5e-4 allocator); empty = grpo.lr for every role. grpo.lr_schedule shapes each alike.
  std::vector<double> lr;
  // Each role's adapter, in `roles` order: rank, scale and cold start (init_from) of its own
  // (Table 7: rank 32 decomposer, 64 allocator, each from its SFT). Empty: every role gets an
  // adapter of its own made from grpo.lora.
  std::vector<models::LoraConfig> adapters;

  void Describe(config::Visitor& v) {
    v.Field("enabled", enabled, {.doc = "train one role at a time, the others frozen"});
    v.Field("roles", roles,
            {.doc = "roles in training order, as tagged in segment sources (<role>@endpoint)"});
    v.Field("switch_every", switch_every, {.doc = "K: steps before the next role", .min = 1.0});
    v.Field("lr", lr, {.doc = "learning rate per role, in roles order (empty: grpo.lr)"});
    v.Field("adapters", adapters,
            {.doc = "each role's LoRA adapter (r, lora_alpha, init_from, ...), in roles order "
                    "(empty: one adapter per role from grpo.lora)"});
  }
};

// Proof of delivery by what the endpoint computes (grpo/delivery_probe.h): after each publish a
// fixed probe, drawn once per run from the training prompts, is sent to the policy endpoint
// under the new adapter's name for its prompt_logprobs, and compared with the learner's own
// log-probs under the weights it just published.
struct DeliveryProbeConfig {
  bool enabled = true;
  int tokens = 32;  // probe length in tokens (fewer when the drawn prompt is shorter)
  // Largest mean |served - learner| log-prob over the probe's tokens; 0 = by the learner's
  // dtype (kDefaultProbeTolerance*, delivery_probe.h).
  double tolerance = 0.0;

  void Describe(config::Visitor& v) {
    v.Field("enabled", enabled,
            {.doc = "after each publish, check the endpoint's prompt_logprobs under the new "
                    "adapter against the learner's (needs an endpoint that returns them)"});
    v.Field("tokens", tokens, {.doc = "probe length in tokens", .min = 2.0, .max = 4096.0});
    v.Field("tolerance", tolerance,
            {.doc = "largest mean absolute log-prob difference (0: by dtype: float32 1e-3, "
                    "float16 2e-2, bfloat16 5e-2)",
             .min = 0.0});
  }
};

// Asynchronous GRPO (grpo_trainer.h): the groups of the next max_lag steps are sampled while
// the learner updates. Deterministic: step k (from 1) trains on the groups of its own draws,
// every one pinned to the version the learner held after step k - max_lag - 1 (the initial
// adapter, version 1, for the first max_lag + 1 steps), and a resume re-issues exactly the
// draws it had not consumed.
struct AsyncConfig {
  int max_lag = 0;  // 0: synchronous (collect, update, publish, collect...)
  bool deterministic = true;

  void Describe(config::Visitor& v) {
    v.Field("max_lag", max_lag,
            {.doc = "steps whose groups are sampled ahead while the learner updates (0: "
                    "synchronous); step k trains on groups sampled by version max(1, k - "
                    "max_lag)",
             .min = 0.0,
             .max = 64.0});
    v.Field("deterministic", deterministic,
            {.doc = "each step's groups pinned to one fixed version (the only mode: free mode "
                    "is not available)"});
  }
};

struct GrpoConfig {
  std::string policy_endpoint = "policy";  // endpoints[].name serving the policy being trained
  int group_size = 12;                     // CogER: G = 12
  int prompts_per_step = 1;
  // Gradient accumulation as in TRL (gradient_accumulation_steps) and verl: one step (one
  // optimizer step, one published adapter) trains on grad_accum collected batches of
  // prompts_per_step groups each, with the loss normalised over all of them, as one batch of
  // grad_accum x prompts_per_step groups would be. CogER: 4 (configs/coger.yaml).
  int grad_accum = 1;
  // Episodes per forward/backward pass on one learner rank (memory only: the update is the
  // same for any value; verl's ppo_micro_batch_size_per_gpu). 0: one collected batch
  // (prompts_per_step x group_size), TRL's per_device_train_batch_size.
  int micro_batch_size = 0;
  double lr = 5e-5;      // CogER: 5e-5
  double kl_coef = 0.0;  // DeepTool: 0
  double clip_eps = 0.2;
  double temperature = 1.0;
  // Not a sampling budget: each policy turn is sampled under its env's own (env.coger.
  // router_max_tokens, env.r2.decomposer_max_tokens, ...), in training as in evaluation. The
  // length the loss assumes: seq_mean_token_sum's divisor (aggregation_norm_len 0) and overlong
  // shaping's L_max for a turn that records no budget.
  int max_tokens = 8192;
  int max_policy_lag = 1;   // staleness bound for rollouts
  models::LoraConfig lora;  // CogER: r = 16

  // Loss family (trainer/grpo/policy_loss.h).
  double clip_eps_high = 0.2;                // DAPO clip-higher: 0.28; = clip_eps is symmetric PPO
  std::string kl_estimator = "k3";           // DeepTool: k3 when the KL term is on
  std::string advantage_estimator = "grpo";  // advantage_estimators.h: grpo | dr_grpo | ...
  std::string loss_aggregation = "seq_mean_token_mean";  // CogER Eq. 10 (1/G sum over outputs)
  int64_t aggregation_norm_len = 0;      // seq_mean_token_sum divisor; 0 = max_tokens (Dr.GRPO)
  std::string policy_loss = "ppo_clip";  // policy_losses.h: ppo_clip | gspo | ...
  int updates_per_batch = 1;             // DeepTool: one update per batch
  bool truncated_is = true;              // rollout-vs-learner importance weights (TIS)
  double truncated_is_cap = 2.0;
  // Dynamic sampling (DAPO): drop groups that carry no advantage signal (advantages.h,
  // FlatGroup: judged on the shaped rewards and step rewards the advantages use) and draw new
  // ones.
  bool dynamic_sampling = false;
  int max_refill_groups = 8;  // extra groups drawn per step at most
  // Steps in a row that end with no group to train on (every group dropped: no advantage
  // signal under dynamic sampling, stale, or failed) before the run fails naming the cause.
  int max_empty_steps = 3;
  // Overlong shaping (DAPO Eq. 13), per policy turn: a penalty ramping from 0 to
  // -overlong_penalty over the last overlong_buffer tokens before the budget the turn was
  // sampled under (TokenSegment.max_tokens; max_tokens where the env recorded none); the
  // episode takes its worst turn's (overlong_shaping.h). 0 = off.
  int overlong_buffer = 0;
  double overlong_penalty = 1.0;
  // Step-level advantages from Trajectory.step_rewards (process supervision).
  bool step_advantages = true;
  // Cost-constrained mode: E[budget_metric per episode] <= budget, by dual ascent on lambda.
  std::string budget_metric = "none";  // none | cost_usd | energy_joules | tokens
  double budget = 0.0;
  double lambda_init = 0.0;
  double lambda_lr = 0.05;
  // Optimisation.
  double weight_decay = 0.0;
  double max_grad_norm = 1.0;
  std::string lr_schedule = "constant";  // constant | linear | cosine
  double warmup_ratio = 0.0;
  // Staleness (per segment, from TokenSegment.policy_version).
  // drop | importance (needs truncated_is: the TIS weight is the correction)
  std::string stale_policy = "drop";
  // Policy sync with proof of delivery.
  double sync_timeout_s = 30.0;
  int sync_retries = 3;
  DeliveryProbeConfig delivery_probe;
  double rollout_timeout_s = 600.0;
  AlternationConfig alternation;  // R2-Reasoner Sec. 4.3
  AsyncConfig async;

  void Describe(config::Visitor& v) {
    v.Field("policy_endpoint", policy_endpoint, {.doc = "endpoint that serves the policy"});
    v.Field("group_size", group_size, {.doc = "samples per prompt (G)", .min = 2.0});
    v.Field("prompts_per_step", prompts_per_step, {.min = 1.0});
    v.Field("grad_accum", grad_accum,
            {.doc = "collected batches (prompts_per_step groups each) per optimizer step, as "
                    "TRL's gradient_accumulation_steps",
             .min = 1.0});
    v.Field("micro_batch_size", micro_batch_size,
            {.doc = "episodes per forward/backward pass on one rank, for memory only "
                    "(0: prompts_per_step x group_size)",
             .min = 0.0});
    v.Field("lr", lr, {.doc = "learning rate", .min = 0.0});
    v.Field("kl_coef", kl_coef,
            {.doc = "KL penalty to the reference (adapter off) policy; 0 skips the reference pass",
             .min = 0.0});
    v.Field("clip_eps", clip_eps,
            {.doc = "ratio clip, low side (1 - eps); acts only with updates_per_batch > 1",
             .min = 0.0});
    v.Field("temperature", temperature, {.doc = "sampling temperature", .min = 0.0});
    v.Field("max_tokens", max_tokens,
            {.doc = "length the loss assumes (seq_mean_token_sum divisor, overlong L_max of a "
                    "turn with no budget); turns are sampled under the env's budgets",
             .min = 1.0});
    v.Field("max_policy_lag", max_policy_lag,
            {.doc = "policy versions a policy segment may lag (max_staleness)", .min = 0.0});
    v.Field("lora", lora);
    v.Field("clip_eps_high", clip_eps_high,
            {.doc = "ratio clip, high side (1 + eps); DAPO clip-higher uses 0.28; acts only "
                    "with updates_per_batch > 1",
             .min = 0.0});
    v.Field("kl_estimator", kl_estimator,
            {.doc = "k1 | k2 | k3 (Schulman's estimators)", .choices = {"k1", "k2", "k3"}});
    v.Field("advantage_estimator", advantage_estimator,
            {.doc = "advantages from the group's rewards: grpo (divided by the group std) | "
                    "dr_grpo (not divided: Dr.GRPO) | any registered estimator",
             .choices = grpo::AdvantageEstimatorNames()});
    v.Field("loss_aggregation", loss_aggregation,
            {.doc = "token_mean (DAPO) | seq_mean_token_mean (GRPO) | seq_mean_token_sum (Dr.GRPO)",
             .choices = {"token_mean", "seq_mean_token_mean", "seq_mean_token_sum"}});
    v.Field("aggregation_norm_len", aggregation_norm_len,
            {.doc = "seq_mean_token_sum divisor (0: max_tokens)", .min = 0.0});
    v.Field("policy_loss", policy_loss,
            {.doc = "ppo_clip (token ratio, PPO/GRPO) | gspo (length-normalised sequence ratio) "
                    "| any registered loss; ppo_clip and gspo differ only with "
                    "updates_per_batch > 1",
             .choices = grpo::PolicyLossNames()});
    v.Field("updates_per_batch", updates_per_batch,
            {.doc = "optimizer steps per step over its episodes (all grad_accum batches), "
                    "keeping the old log-probs",
             .min = 1.0});
    v.Field("truncated_is", truncated_is,
            {.doc = "weight tokens by min(pi_learner / pi_rollout, cap) (rollout mismatch)"});
    v.Field("truncated_is_cap", truncated_is_cap, {.doc = "TIS truncation C", .min = 1.0});
    v.Field("dynamic_sampling", dynamic_sampling,
            {.doc = "drop groups whose advantages are all 0 and draw replacements (DAPO)"});
    v.Field("max_refill_groups", max_refill_groups,
            {.doc = "replacement groups drawn per step at most", .min = 0.0});
    v.Field("max_empty_steps", max_empty_steps,
            {.doc = "steps in a row with every group dropped before the run fails", .min = 1.0});
    v.Field("overlong_buffer", overlong_buffer,
            {.doc = "DAPO soft overlong punishment window in tokens before each policy turn's "
                    "budget (0: off)",
             .min = 0.0});
    v.Field("overlong_penalty", overlong_penalty,
            {.doc = "penalty of a turn that reaches its budget (the episode takes its worst "
                    "turn's)",
             .min = 0.0});
    v.Field("step_advantages", step_advantages,
            {.doc = "add process advantages from Trajectory.step_rewards to policy segments"});
    v.Field("budget_metric", budget_metric,
            {.doc = "cost-constrained mode: none | cost_usd | energy_joules | tokens",
             .choices = {"none", "cost_usd", "energy_joules", "tokens"}});
    v.Field("budget", budget, {.doc = "target mean of budget_metric per episode", .min = 0.0});
    v.Field("lambda_init", lambda_init, {.doc = "initial Lagrange multiplier", .min = 0.0});
    v.Field("lambda_lr", lambda_lr, {.doc = "dual ascent step size", .min = 0.0});
    v.Field("weight_decay", weight_decay, {.doc = "AdamW weight decay", .min = 0.0});
    v.Field("max_grad_norm", max_grad_norm, {.doc = "gradient clip norm (0: off)", .min = 0.0});
    v.Field("lr_schedule", lr_schedule,
            {.doc = "constant | linear | cosine (DeepTool: linear, no warmup)",
             .choices = {"constant", "linear", "cosine"}});
    v.Field("warmup_ratio", warmup_ratio,
            {.doc = "warmup share of total_steps", .min = 0.0, .max = 1.0});
    v.Field("stale_policy", stale_policy,
            {.doc = "segments older than max_policy_lag: drop the episode, or keep them and "
                    "correct by the TIS weight (needs truncated_is)",
             .choices = {"drop", "importance"}});
    v.Field("sync_timeout_s", sync_timeout_s,
            {.doc = "adapter load + proof-of-delivery timeout", .min = 0.0});
    v.Field("sync_retries", sync_retries, {.doc = "adapter load attempts", .min = 1.0});
    v.Field("delivery_probe", delivery_probe,
            {.doc = "check each published adapter by the endpoint's own log-probs"});
    v.Field("rollout_timeout_s", rollout_timeout_s,
            {.doc = "longest wait for a step's episodes (every grad_accum batch, refills "
                    "included); also each episode's deadline",
             .min = 1.0});
    v.Field("alternation", alternation,
            {.doc = "alternating GRPO over the policy's roles (R2-Reasoner Sec. 4.3)"});
    v.Field("async", async,
            {.doc = "sample the groups of the next steps while the learner updates"});
  }
};

}  // namespace allot::trainer
