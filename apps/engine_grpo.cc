// The grpo engine: trains an LLM policy (CausalLM + LoRA) with GRPO over rollout workers, and
// publishes each adapter version to the policy endpoint (trainer/grpo/grpo_trainer.h).
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/engines.h"
#include "apps/env_catalog.h"
#include "core/config/node.h"
#include "core/metrics_writer.h"
#include "core/progress_bar.h"
#include "core/run_plots.h"
#include "datasets/jsonl_loader.h"
#include "rollout/env_registry.h"
#include "trainer/comm/communicator.h"
#include "trainer/grpo/grpo_trainer.h"
#include "trainer/grpo/policy_losses.h"

namespace allot::apps {

// Configs fail loudly: a section or key the grpo engine does not read, or a
// knob that has no effect in the chosen mode, is an error naming it and where it was set.
Status CheckGrpoRecipe(const config::ConfigNode& written, const AllotConfig& cfg,
                       const std::string& source) {
  const config::ConfigNode* root = &written;
  // Sections other engines read and this one ignores.
  static const std::set<std::string> kUnread = {"dqn", "sft"};
  std::string errors;
  for (const auto& [key, node] : written.entries()) {
    if (kUnread.count(key) != 0) {
      errors += "\n  " + node.origin().ToString() + ": section '" + key +
                "' is not read by the grpo engine (trainer.algorithm: grpo)";
    }
  }
  if (const config::ConfigNode* env = root->Find("env"); env != nullptr) {
    if (const config::ConfigNode* chain = env->Find("chain"); chain != nullptr) {
      errors +=
          "\n  " + chain->origin().ToString() +
          ": env.chain configures the DQN navigator's MDP, which the grpo engine does not run";
    }
  }
  errors += UnreadSections(written, cfg, "grpo");
  errors += UnreadKeys(written, cfg, "grpo");
  errors += OtherEnvSections(written, cfg.env.name, {"chain"});
  const config::ConfigNode* g = root->Find("grpo");
  auto set = [&](const std::string& k) -> const config::ConfigNode* {
    return g == nullptr ? nullptr : g->Find(k);
  };
  auto no_effect = [&](const std::string& k, const std::string& why) {
    if (const config::ConfigNode* n = set(k); n != nullptr) {
      errors += "\n  " + n->origin().ToString() + ": grpo." + k + " has no effect " + why;
    }
  };
  // Whether a knob has an effect is decided by the resulting config (on resume: the run's).
  const trainer::GrpoConfig& c = cfg.grpo;
  if (c.budget_metric == "none") {
    for (const char* k : {"budget", "lambda_init", "lambda_lr"}) {
      no_effect(k, "while grpo.budget_metric is none");
    }
  }
  if (!c.dynamic_sampling) {
    no_effect("max_refill_groups", "without grpo.dynamic_sampling");
  }
  if (c.async.max_lag == 0) {
    if (const config::ConfigNode* a = set("async"); a != nullptr) {
      if (const config::ConfigNode* d = a->Find("deterministic"); d != nullptr) {
        errors += "\n  " + d->origin().ToString() +
                  ": grpo.async.deterministic has no effect while grpo.async.max_lag is 0 "
                  "(synchronous steps)";
      }
    }
  }
  if (c.overlong_buffer == 0) {
    no_effect("overlong_penalty", "while grpo.overlong_buffer is 0");
  }
  if (c.loss_aggregation != "seq_mean_token_sum") {
    no_effect("aggregation_norm_len", "unless grpo.loss_aggregation is seq_mean_token_sum");
  }
  if (c.kl_coef == 0.0) no_effect("kl_estimator", "while grpo.kl_coef is 0");
  if (!c.truncated_is) {
    no_effect("truncated_is_cap", "while grpo.truncated_is is false");
  }
  // R2-Reasoner Sec. 4.3: with alternation.adapters each role's adapter is its own entry.
  if (c.alternation.enabled && !c.alternation.adapters.empty()) {
    no_effect("lora", "while grpo.alternation.adapters gives each role its own adapter");
  }
  if (!c.alternation.enabled) {
    if (const config::ConfigNode* a = set("alternation"); a != nullptr) {
      if (const config::ConfigNode* n = a->Find("adapters"); n != nullptr) {
        errors += "\n  " + n->origin().ToString() +
                  ": grpo.alternation.adapters has no effect while grpo.alternation.enabled is "
                  "false";
      }
    }
  }
  // stale_policy: importance keeps the segments older than max_policy_lag and corrects them with
  // the truncated IS weight min(pi_learner / pi_rollout, C) (policy_loss.h); without
  // truncated_is there is no such weight, and the learner does not switch it on by itself.
  if (c.stale_policy == "importance" && !c.truncated_is) {
    const config::ConfigNode* n =
        set("stale_policy") != nullptr ? set("stale_policy") : set("truncated_is");
    errors += "\n  " + (n != nullptr ? n->origin().ToString() : source) +
              ": grpo.stale_policy: importance corrects stale segments with the truncated IS "
              "weight: it needs grpo.truncated_is: true";
  }
  // The chosen advantage estimator's and policy loss's own rules (trainer/grpo/
  // advantage_estimators.h, policy_losses.h: e.g. the PPO clip with updates_per_batch 1), and
  // the keys another registered variant reads and the chosen one does not.
  std::set<std::string> reported;
  for (const trainer::grpo::NoEffect& n : trainer::grpo::VariantNoEffects(c)) {
    if (reported.insert(n.key).second) no_effect(n.key, n.why);
  }
  // Each policy turn is sampled under its env's own budget (env.coger.router_max_tokens,
  // env.r2.decomposer_max_tokens and allocator_max_tokens, env.deeptool.step_max_tokens,
  // env.atlas.orchestrator_max_tokens), in training as in evaluation: episode requests carry no
  // max_tokens (grpo_trainer.cc). grpo.max_tokens is only a length the loss assumes.
  if (c.overlong_buffer == 0 &&
      !(c.loss_aggregation == "seq_mean_token_sum" && c.aggregation_norm_len == 0)) {
    no_effect("max_tokens",
              "unless grpo.overlong_buffer > 0 or grpo.loss_aggregation is seq_mean_token_sum "
              "without aggregation_norm_len: each turn's sampling budget is the env's "
              "(env.<name>.*_max_tokens)");
  }
  // grad_accum x prompts_per_step x group_size bounds micro_batch_size; grpo.async excludes
  // some modes.
  if (Status batching = trainer::grpo::CheckGrpoConfig(c); !batching.ok()) {
    const config::ConfigNode* n =
        set(batching.message().rfind("grpo.async", 0) == 0 ? "async" : "micro_batch_size");
    errors += "\n  " + (n != nullptr ? n->origin().ToString() : source) + ": " + batching.message();
  }
  if (!errors.empty()) return InvalidArgument("config " + source + ":" + errors);
  return Status::Ok();
}

namespace {

// The dataset items episodes are drawn from, as JSON text.
Result<std::vector<std::string>> Prompts(const AllotConfig& cfg) {
  if (cfg.train_data.path.empty()) {
    return InvalidArgument("train_data.path: the grpo engine needs prompts (a JSONL dataset)");
  }
  ALLOT_ASSIGN_OR_RETURN(datasets::Dataset data, datasets::LoadJsonl(cfg.train_data));
  std::vector<std::string> out;
  for (const auto& e : data.examples) {
    out.push_back(nlohmann::json{
        {"id", e.id},
        {"question", e.question},
        {"answer", e.answer},
        {"options", e.options},
        {"answer_format", e.answer_format},
        {"extra",
         e.extra}}.dump());
  }
  if (out.empty()) return InvalidArgument(cfg.train_data.path + ": no examples");
  return out;
}

// The reward, accuracy and cost curves as a PNG next to metrics.jsonl (core/run_plots.h).
void WriteCurves(const RunDirectory& run) {
  auto plot = PlotTrainingCurves(run.metrics_path(), run.path());
  if (!plot.ok()) {
    spdlog::warn("no training curves: {}", plot.status().message());
  } else if (plot->rendered) {
    spdlog::info("training curves: {}", plot->png);
  } else {
    spdlog::info("training curves not rendered (gnuplot missing or failed): gnuplot {}",
                 plot->script);
  }
  // The env's step shares (e.g. CogER's routed level per step), when its metrics hold any.
  auto shares = PlotShares(run.metrics_path(), run.path());
  if (shares.ok() && shares->rendered) spdlog::info("shares per step: {}", shares->png);
}

}  // namespace

int RunGrpoEngine(RunContext& ctx) {
  const AllotConfig& cfg = ctx.loaded.config;  // checked by CheckRecipe before the run began
  // Learner ranks (`--nproc`, SLURM, Kubernetes): rank 0 runs the rollouts and owns the run's
  // files and the policy endpoint; every rank trains on its shard of each step's episodes.
  auto comm = trainer::comm::ProcessCommunicator();
  if (!comm.ok()) {
    std::cerr << "allot: " << comm.status().message() << "\n";
    return kExitError;
  }
  const bool rank0 = (*comm)->is_rank0();
  trainer::grpo::GrpoRunOptions o;
  o.comm = *comm;
  o.grpo = cfg.grpo;
  o.total_steps = cfg.trainer.total_steps;
  o.seed = static_cast<uint64_t>(cfg.run.seed);
  o.model_dir = cfg.model.path;
  o.load.dtype = cfg.model.dtype;
  o.load.device = cfg.model.device;
  o.load.packing = cfg.model.packing;
  o.load.gradient_checkpointing = cfg.model.gradient_checkpointing;
  o.load.checkpoint_layers = cfg.model.checkpoint_layers;
  o.logprob_chunk_tokens = cfg.model.logprob_chunk_tokens;
  o.env = cfg.env.name;
  // Workers get the resolved recipe (secrets redacted: they resolve their own keys).
  o.env_config = ResolvedYaml(ctx.loaded);
  o.run_dir = ctx.run.path();
  // What became of every episode, step by step (rank 0 collects them): RUN/episodes.jsonl.
  if (rank0) o.episode_log = ctx.run.path() + "/episodes.jsonl";
  // Adapters are served as "<run name>-v<N>" (a valid name: core/run_directory.h), so that runs
  // restarted against one long-lived vLLM or allot serve never collide.
  o.adapter_prefix = ctx.run.name();
  o.checkpoint_dir = ctx.run.checkpoints_dir();
  o.checkpoint_every = cfg.checkpoint.every;
  o.keep_last = cfg.checkpoint.keep_last;
  o.log_every = cfg.logging.log_every;
  o.rollout = cfg.rollout;
  o.endpoints = cfg.endpoints;
  const auto kind = FindEnvKind(o.env);
  if (!kind) {
    // Refused here rather than failing every episode on the workers: a recipe must not
    // validate and then train nothing.
    std::cerr << "allot: env.name: '" << o.env << "': no env of that name exists in this build "
              << "(the grpo engine runs: " << EnvNames(EnvKind::kLlmPolicy) << ")\n";
    return kExitError;
  }
  if (*kind != EnvKind::kLlmPolicy) {
    std::cerr << "allot: env.name: '" << o.env << "' yields DQN transitions for the navigator "
              << "(trainer.algorithm: dqn); the grpo engine trains an LLM policy (envs: "
              << EnvNames(EnvKind::kLlmPolicy) << ")\n";
    return kExitError;
  }
  o.step_shares = FindEnv(o.env)->step_shares;
  auto prompts = Prompts(cfg);
  if (!prompts.ok()) {
    std::cerr << "allot: " << prompts.status().message() << "\n";
    return kExitError;
  }
  o.prompts = std::move(*prompts);
  // In-process rollout workers run the LLM envs from the global registry, as
  // `allot rollout-worker` does.
  RegisterAllEnvs(rollout::EnvRegistry::Global());
  auto trainer = trainer::grpo::GrpoTrainer::Create(std::move(o));
  if (!trainer.ok()) {
    std::cerr << "allot: " << trainer.status().message() << "\n";
    return kExitError;
  }
  std::optional<int64_t> resumed_at;
  if (ctx.resume) {
    auto at = (*trainer)->Resume();
    if (!at.ok()) {
      std::cerr << "allot resume: " << at.status().message() << "\n";
      return kExitError;
    }
    resumed_at = *at;
    if (*at >= cfg.trainer.total_steps) {
      if (!rank0) return kExitOk;
      std::cout << "run '" << cfg.run.name << "' is finished: step " << *at << " of "
                << cfg.trainer.total_steps << "; nothing to resume\n";
      return kExitOk;
    }
  }
  std::unique_ptr<MetricsWriter> metrics;
  std::unique_ptr<ProgressBar> bar;
  if (rank0) {
    // The steps after the checkpoint are trained again: their records go (metrics_writer.h).
    if (resumed_at.has_value()) {
      Status st =
          TruncateMetricsAfter(ctx.run.metrics_path(), ctx.run.tensorboard_dir(), *resumed_at);
      // Their episodes are collected again (the same draws and seeds).
      if (st.ok()) st = TruncateMetricsAfter(ctx.run.path() + "/episodes.jsonl", "", *resumed_at);
      if (!st.ok()) {
        std::cerr << "allot resume: " << st.message() << "\n";
        return kExitError;
      }
    }
    auto opened = MetricsWriter::Open(ctx.run.metrics_path(),
                                      cfg.logging.tensorboard ? ctx.run.tensorboard_dir() : "");
    if (!opened.ok()) {
      std::cerr << "allot: " << opened.status().message() << "\n";
      return kExitError;
    }
    metrics = std::move(*opened);
    if (cfg.logging.progress_bar) {
      bar = std::make_unique<ProgressBar>(cfg.trainer.total_steps, "grpo steps", stderr);
    }
  }
  auto summary = (*trainer)->Run(metrics.get(), bar.get());
  if (!summary.ok()) {
    std::cerr << "allot: " << summary.status().message() << "\n";
    return kExitError;
  }
  if (!rank0) {
    spdlog::info("rank {} of {}: {} steps trained on its shard, policy version {}", (*comm)->rank(),
                 (*comm)->world_size(), summary->steps, summary->policy_version);
    return kExitOk;
  }
  WriteCurves(ctx.run);
  spdlog::info("done: {} steps, policy version {}; adapters in {}/adapters; metrics: {}",
               summary->steps, summary->policy_version, ctx.run.path(), ctx.run.metrics_path());
  return kExitOk;
}

}  // namespace allot::apps
