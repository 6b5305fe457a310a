// The sft engine: supervised fine-tuning of a CausalLM from JSONL (trainer/sft/sft_trainer.h),
// for `allot sft -c RECIPE` and `allot train` with trainer.algorithm: sft. The trained model
// goes to <run>/model (full fine-tuning: a Hugging Face directory) or <run>/adapter (LoRA, PEFT
// format); checkpoints also hold policy/ for `allot export`.
#include <spdlog/spdlog.h>

#include <iostream>
#include <optional>
#include <set>

#include "apps/commands.h"
#include "apps/engines.h"
#include "core/config/node.h"
#include "core/metrics_writer.h"
#include "core/progress_bar.h"
#include "trainer/comm/communicator.h"
#include "trainer/sft/sft_trainer.h"

namespace allot::apps {

namespace {

int Fail(const Status& s) {
  std::cerr << "allot sft: " << s.message() << "\n";
  return kExitError;
}

}  // namespace

// Configs fail loudly: a section the sft engine does not read is an error
// naming it and where it was set; so is trainer.total_steps next to sft.epochs.
Status CheckSftRecipe(const config::ConfigNode& written, const AllotConfig& cfg,
                      const std::string& source) {
  static const std::set<std::string> kRead = {"run",     "logging", "checkpoint",
                                              "trainer", "model",   "sft"};
  std::string errors;
  for (const auto& [key, node] : written.entries()) {
    if (key == "include") continue;
    if (kRead.count(key) == 0) {
      errors += "\n  " + node.origin().ToString() + ": section '" + key +
                "' is not read by the sft engine (trainer.algorithm: sft)";
    }
  }
  const config::ConfigNode* section = written.Find("trainer");
  const config::ConfigNode* steps = section == nullptr ? nullptr : section->Find("total_steps");
  if (steps != nullptr && cfg.sft.epochs > 0) {
    errors += "\n  " + steps->origin().ToString() +
              ": trainer.total_steps has no effect while sft.epochs is set (" +
              std::to_string(cfg.sft.epochs) + ")";
  }
  // ZeRO shards a full-parameter AdamW (trainer/optim/zero_adamw.h), not an adapter's.
  const config::ConfigNode* zero = section == nullptr ? nullptr : section->Find("zero_stage");
  if (zero != nullptr && cfg.sft.lora.enabled) {
    errors += "\n  " + zero->origin().ToString() +
              ": trainer.zero_stage has no effect with sft.lora.enabled (ZeRO shards "
              "full-parameter training; an adapter's optimizer state is small)";
  }
  // model.packing is the GRPO log-prob pass's knob; SFT packs by sft.packing.
  const config::ConfigNode* model = written.Find("model");
  if (const config::ConfigNode* packing = model == nullptr ? nullptr : model->Find("packing")) {
    errors += "\n  " + packing->origin().ToString() +
              ": model.packing has no effect under the sft engine (set sft.packing)";
  }
  if (!errors.empty()) return InvalidArgument("config " + source + ":" + errors);
  return trainer::ValidateSftConfig(cfg.sft);
}

int RunSftEngine(RunContext& ctx) {
  const AllotConfig& cfg = ctx.loaded.config;  // checked by CheckRecipe before the run began
  // Learner ranks (`--nproc`, SLURM, Kubernetes) split each step's examples and sum their
  // gradients; rank 0 alone writes metrics, checkpoints and the model.
  auto comm = trainer::comm::ProcessCommunicator();
  if (!comm.ok()) return Fail(comm.status());
  const bool rank0 = (*comm)->is_rank0();
  trainer::SftRunOptions options;
  options.sft = cfg.sft;
  options.model = cfg.model;
  options.total_steps = cfg.trainer.total_steps;
  options.seed = static_cast<uint64_t>(cfg.run.seed);
  options.checkpoint_dir = ctx.run.checkpoints_dir();
  options.checkpoint_every = cfg.checkpoint.every;
  options.keep_last = cfg.checkpoint.keep_last;
  options.log_every = cfg.logging.log_every;
  options.comm = *comm;
  options.zero_stage = static_cast<int>(cfg.trainer.zero_stage);

  auto trainer = trainer::SftTrainer::Create(options);
  if (!trainer.ok()) return Fail(trainer.status());
  const trainer::SftDataset& data = (*trainer)->dataset();
  spdlog::info(
      "sft data {}: {} examples, {} tokens ({} trained); {} truncated, {} dropped, {} "
      "bad lines skipped",
      data.path, data.examples.size(), data.tokens, data.loss_tokens, data.truncated, data.dropped,
      data.skipped);
  for (const auto& m : data.skipped_messages) spdlog::warn("skipped {}", m);

  std::optional<int64_t> resumed_at;
  if (ctx.resume) {
    auto step = (*trainer)->Resume();
    if (!step.ok()) return Fail(step.status().Annotate("resume"));
    resumed_at = *step;
    if ((*trainer)->finished()) {
      if (!rank0) return kExitOk;
      std::cout << "run '" << cfg.run.name << "' is already finished (step " << *step << " of "
                << (*trainer)->total_steps() << "); nothing to do\n";
      return kExitOk;
    }
    spdlog::info("resumed at step {} of {}", *step, (*trainer)->total_steps());
  }
  std::unique_ptr<MetricsWriter> metrics;
  std::unique_ptr<ProgressBar> bar;
  if (rank0) {
    // The steps after the checkpoint are trained again: their records go (metrics_writer.h).
    if (resumed_at.has_value()) {
      Status st =
          TruncateMetricsAfter(ctx.run.metrics_path(), ctx.run.tensorboard_dir(), *resumed_at);
      if (!st.ok()) return Fail(st.Annotate("resume"));
    }
    auto opened = MetricsWriter::Open(ctx.run.metrics_path(),
                                      cfg.logging.tensorboard ? ctx.run.tensorboard_dir() : "");
    if (!opened.ok()) return Fail(opened.status());
    metrics = std::move(*opened);
    if (cfg.logging.progress_bar) {
      bar = std::make_unique<ProgressBar>((*trainer)->total_steps(), "sft steps", stderr);
    }
  }
  auto summary = (*trainer)->Run(metrics.get(), bar.get());
  if (!summary.ok()) return Fail(summary.status());
  if (!rank0) return kExitOk;
  const std::string out = ctx.run.path() + ((*trainer)->lora() ? "/adapter" : "/model");
  if (Status s = (*trainer)->SaveModel(out); !s.ok()) return Fail(s);
  spdlog::info("done: {} steps, loss {:.4f} -> {:.4f}, {:.0f} tokens/s; {} written to {}",
               summary->steps, summary->first_loss, summary->last_loss, summary->tokens_per_s,
               (*trainer)->lora() ? "adapter" : "model", out);
  return kExitOk;
}

}  // namespace allot::apps
