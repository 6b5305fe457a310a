// GrpoTrainer: the GRPO learner loop over rollout workers.
//
//   per step:  submit grad_accum x prompts_per_step groups of group_size episodes
//                 (EpisodeRequest.group_id): grad_accum collected batches
//              -> collect whole groups through the rollout::RolloutSession (in-process workers
//                 or remote ones), drop failed and stale episodes, shape rewards (per-turn
//                 overlong, Lagrange cost), drop groups whose advantages would all be 0 and
//                 draw replacements (dynamic sampling)
//              -> group-relative (+ step) advantages -> left-padded token batch
//              -> updates_per_batch optimizer steps, each over all the step's episodes in
//                 micro-batches of micro_batch_size (gradients accumulated, the loss normalised
//                 over the whole step) with the clipped surrogate (policy_loss.h), log-probs
//                 computed in chunks
//              -> publish the adapter as a new version and prove the endpoint serves it
//              -> metrics, checkpoint.
//
// A step is the unit of trainer.total_steps, of the learning-rate schedule, of
// checkpoint.every, of alternation.switch_every and of the published versions: with
// grad_accum K it takes K times the episodes of one collected batch and still one optimizer
// step (updates_per_batch of them) and one adapter version, as TRL counts global steps over
// gradient_accumulation_steps. Checkpoints fall between steps, so no partial accumulation is
// ever saved. max_empty_steps steps in a row with no group left fail the run.
//
// The policy is models::CausalLM with a LoRA adapter; the reference policy (KL term) is the same
// model with the adapter switched off, and is not evaluated when kl_coef = 0. With
// grpo.alternation each role is an adapter of its own (role_adapters.h, R2-Reasoner Sec. 4.3):
// a step attaches, trains and publishes the active role's alone, and checkpoints hold every
// role's adapter, optimizer and version in place of the one adapter and optimizer below.
//
// Checkpoints (core/checkpoint_store.h) hold the adapter, AdamW's state (trainer/optim's
// safetensors image, with the schedule step), the step, the policy version, the data cursor,
// lambda and the dispatcher's open-episode count; the learning-rate schedule is a function of
// the step and
// every sampling seed a function of (seed, draw, index), so a resumed run draws the same
// episodes. A step's episodes are all collected before its update, so the dispatcher ledger is
// empty at every checkpoint and the episodes of an interrupted step are issued again on resume.
//
// Asynchronous GRPO (grpo.async.max_lag N > 0): the groups of the next N steps are sampled while
// the learner updates. Step k (from 1) trains on draws [(k-1) G, k G), G = grad_accum x
// prompts_per_step, every one sampled by the version the learner held after step k - N - 1
// (version 1, the initial adapter, for k <= N + 1; a step that trained nothing publishes no
// version, so its successors' are the one before). The workers
// sample the version their request names (the ledger keeps it on every dispatch; the workers
// keep the recent versions), so a group run again after a worker's death is sampled by its own
// version too, and a step's batch is the same draws under the same version whatever the arrival
// order; against batch-invariant serving (allot serve --deterministic) two runs of one seed,
// and a killed and resumed one, train bit-identical adapters (docs/training.md).
// A checkpoint records the versions the steps in flight sample; a resume issues their draws
// again (none was trained on) and has the endpoint serve those versions from the adapters
// written then. Dynamic sampling (its refills would depend on arrival order) and alternation are
// synchronous only.
//
// Data parallel (options.comm with a world of N > 1): every rank builds the same model and
// starts from rank 0's adapter (broadcast). Rank 0 alone runs the rollouts, publishes adapters,
// talks to the policy endpoint and writes checkpoints and metrics; it sends each step's samples
// with their advantages to the other ranks (step_batch.h), which wait for them, train on their
// shard with union-batch denominators and sum gradients with rank 0 (policy_update.h). All ranks
// resume from the same checkpoint directory (shared storage on multi-host runs).
//
// Not thread-safe: one Run at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/metrics_writer.h"
#include "core/progress_bar.h"
#include "core/status.h"
#include "llm/endpoint_config.h"
#include "models/causal_lm.h"
#include "rollout/config.h"
#include "trainer/grpo/grpo_config.h"

namespace allot::trainer::comm {
class Communicator;
}

namespace allot::trainer::grpo {

class RoleAdapters;

struct GrpoRunOptions {
  GrpoConfig grpo;
  int64_t total_steps = 100;
  uint64_t seed = 0;
  std::string model_dir;
  models::LoadOptions load;
  int64_t logprob_chunk_tokens = 512;
  std::string env;                   // registered env name the episodes run
  std::string env_config;            // its config text
  std::vector<std::string> prompts;  // dataset items (JSON text), drawn in order, cycling
  std::string run_dir;               // receives adapters/v<N>/
  // Adapters are served as "<adapter_prefix>-v<N>"; allot train passes the run name.
  std::string adapter_prefix = "policy";
  std::string checkpoint_dir;    // empty: no checkpoints
  int64_t checkpoint_every = 0;  // steps; 0: only at the end
  int keep_last = 3;
  int64_t log_every = 1;
  // One JSON line per episode each step collected (StepMetrics::OutcomeLines), appended and
  // flushed every step; rank 0's RUN/episodes.jsonl. Empty: none.
  std::string episode_log;
  rollout::RolloutConfig rollout;
  std::vector<llm::EndpointConfig> endpoints;
  // Trajectory info keys whose values each step counts (metrics share/<key>/<value>): the env's
  // descriptor's step_shares, e.g. CogER's routed level.
  std::vector<std::string> step_shares;
  // Called after each step (and its checkpoint, if any) with the number of steps done.
  std::function<void(int64_t)> on_step_end;
  // Data-parallel learner ranks; null or a world of one: a single learner.
  comm::Communicator* comm = nullptr;
};

struct GrpoRunSummary {
  int64_t steps = 0;  // steps completed in total
  int64_t steps_this_run = 0;
  uint64_t policy_version = 0;
  std::vector<double> mean_rewards;  // per step of this run (raw env reward)
  bool already_finished = false;     // resumed a run that had reached total_steps
};

// The grpo section's cross-key rules, checked before anything is loaded (also by `allot config
// check`): a micro_batch_size larger than a step's episodes (grad_accum x prompts_per_step x
// group_size) is InvalidArgument naming the key, not a silent clamp.
Status CheckGrpoConfig(const GrpoConfig& g);

class GrpoTrainer {
 public:
  static Result<std::unique_ptr<GrpoTrainer>> Create(GrpoRunOptions options);
  ~GrpoTrainer();
  GrpoTrainer(const GrpoTrainer&) = delete;
  GrpoTrainer& operator=(const GrpoTrainer&) = delete;

  // Restores the newest checkpoint, including the run seed the episodes were drawn with;
  // returns its step (NotFound when there is none).
  Result<int64_t> Resume();

  Result<GrpoRunSummary> Run(MetricsWriter* metrics, ProgressBar* progress);

  int64_t step() const;
  uint64_t policy_version() const;
  models::CausalLMImpl& policy();
  // With grpo.alternation, each role's own adapter (role_adapters.h); null otherwise.
  const RoleAdapters* role_adapters() const;
  // The learning rate of step `step` (0-based): trainer/optim's schedule over total_steps with
  // the grpo section's lr, lr_schedule and warmup_ratio (GrpoOptimConfig).
  double LearningRateAt(int64_t step) const;

  struct State;

 private:
  explicit GrpoTrainer(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace allot::trainer::grpo
