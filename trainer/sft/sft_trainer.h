// SftTrainer: supervised fine-tuning of a CausalLM, full-parameter or LoRA, with AdamW, a
// warmup schedule, clipping and token-weighted gradient accumulation (trainer/optim/).
//
// Checkpoints (core/checkpoint_store.h) hold the trainable weights, AdamW's state, the schedule
// step, the torch CPU generator (LoRA dropout) and the data cursor; a resumed run continues bit
// for bit as if it had never stopped (the data order is a function of run.seed and the step).
// On CPU, with a fixed thread count, the same seed gives the same weights.
//
// Data parallel (options.comm with a world of N > 1): every rank starts from rank 0's trainable
// weights (broadcast), takes every N-th example of each micro-batch of the step (the global batch
// is the same sft.batch_size x optim.grad_accum examples as one rank's), scales its loss by the
// loss tokens of the whole step on all ranks, and the gradients are summed over ranks (bucketed
// all-reduce) before clipping: N ranks take the step one rank takes on the union batch, up to
// float rounding. Rank 0 alone writes checkpoints and metrics; every rank resumes from the same
// checkpoint directory (shared storage on multi-host runs). With zero_stage 1 or 2 each rank
// keeps 1/N of AdamW's state (trainer/optim/zero_adamw.h); checkpoints then take every rank:
// rank 0 gathers the shards and writes one file per rank, and only N ranks resume them.
//
// Not thread-safe: one caller drives it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/metrics_writer.h"
#include "core/progress_bar.h"
#include "core/status.h"
#include "models/causal_lm.h"
#include "models/model_config.h"
#include "models/tokenizer/tokenizer.h"
#include "trainer/optim/lr_schedule.h"
#include "trainer/sft/sft_batcher.h"
#include "trainer/sft/sft_config.h"
#include "trainer/sft/sft_dataset.h"

namespace torch::optim {
class AdamW;
}

namespace allot::trainer {

class ZeroAdamW;

namespace comm {
class Communicator;
}

struct SftRunOptions {
  SftConfig sft;
  models::ModelConfig model;
  int64_t total_steps = 100;
  uint64_t seed = 0;
  std::string checkpoint_dir;  // empty: no checkpoints
  int checkpoint_every = 100;
  int keep_last = 3;
  int log_every = 1;
  // Data-parallel learner ranks; null or a world of one: a single learner.
  comm::Communicator* comm = nullptr;
  // trainer.zero_stage: 1 or 2 shard AdamW's state (2: the gradients too) over the ranks
  // (trainer/optim/zero_adamw.h); full-parameter only. A world of one keeps it unsharded.
  int zero_stage = 0;
};

struct SftStepStats {
  int64_t step = 0;  // optimizer steps done, this one included
  double loss = 0;   // mean negative log-likelihood per target token
  double lr = 0;
  double grad_norm = 0;
  int64_t tokens = 0;
  int64_t loss_tokens = 0;
  double seconds = 0;
  SftCursor cursor;  // where this step's data came from
};

struct SftRunSummary {
  int64_t steps = 0;  // taken by this Run call
  double first_loss = 0;
  double last_loss = 0;
  double tokens_per_s = 0;
};

// Checks knobs that would have no effect (lora keys with lora off, init_seed with pretrained
// weights, ...). The message names the key.
Status ValidateSftConfig(const SftConfig& config);

class SftTrainer {
 public:
  static Result<std::unique_ptr<SftTrainer>> Create(const SftRunOptions& options);
  ~SftTrainer();
  SftTrainer(const SftTrainer&) = delete;
  SftTrainer& operator=(const SftTrainer&) = delete;

  // Restores the newest valid checkpoint; NotFound when there is none. Returns the step.
  Result<int64_t> Resume();

  // One optimizer step over sft.batch_size x optim.grad_accum examples.
  Result<SftStepStats> Step();

  // Steps until options.total_steps, logging every log_every steps and checkpointing every
  // checkpoint_every steps and at the end.
  Result<SftRunSummary> Run(MetricsWriter* metrics, ProgressBar* bar);

  Result<std::string> SaveCheckpoint();

  // Full fine-tuning: a Hugging Face directory (config.json, model.safetensors and the
  // tokenizer's files). LoRA: the adapter in PEFT format.
  Status SaveModel(const std::string& dir) const;

  int64_t step() const { return step_; }
  // trainer.total_steps, or sft.epochs x the steps of one epoch.
  int64_t total_steps() const { return options_.total_steps; }
  bool finished() const { return step_ >= options_.total_steps; }
  bool lora() const { return options_.sft.lora.enabled; }
  // Rank 0 of the learner ranks (or the only learner): writes checkpoints, metrics, the model.
  bool is_rank0() const;
  models::CausalLMImpl& model() { return *model_; }
  const models::Tokenizer& tokenizer() const { return *tokenizer_; }
  const SftDataset& dataset() const { return *dataset_; }
  // The tensors the optimizer updates, by parameter name.
  std::vector<std::pair<std::string, at::Tensor>> TrainableParameters() const;

 private:
  SftTrainer() = default;

  SftRunOptions options_;
  std::shared_ptr<models::CausalLMImpl> model_;
  std::unique_ptr<models::Tokenizer> tokenizer_;
  std::unique_ptr<SftDataset> dataset_;
  std::unique_ptr<SftBatcher> batcher_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;  // null with ZeRO: zero_ holds the shard
  std::unique_ptr<ZeroAdamW> zero_;
  torch::optim::AdamW& adamw();
  std::unique_ptr<LrSchedule> schedule_;
  std::string tokenizer_dir_;
  int64_t step_ = 0;
};

}  // namespace allot::trainer
