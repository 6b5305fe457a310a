// The dqn engine: trains the RLoT navigator, in one process (learner and env together), or
// actor/learner style over rollout workers when dqn.distributed is set.
#include <spdlog/spdlog.h>

#include <iostream>
#include <set>

#include "apps/commands.h"
#include "apps/engines.h"
#include "apps/env_catalog.h"
#include "core/atomic_file.h"
#include "core/metrics_writer.h"
#include "core/progress_bar.h"
#include "envs/rlot/rlot_recipe.h"
#include "models/cpu_threads.h"
#include "rollout/malloc_tuning.h"
#include "trainer/dqn/dqn_distributed.h"
#include "trainer/dqn/dqn_learner.h"
#include "trainer/dqn/dqn_trainer.h"

namespace allot::apps {

namespace {

// The trained navigator, in the format rollout workers and `allot export` use.
int Finish(RunContext& ctx, const trainer::DqnRunOptions& options, trainer::DqnLearner& learner,
           const trainer::DqnRunSummary& summary) {
  auto weights = learner.OnlineWeights();
  const std::string out = ctx.run.path() + "/navigator.safetensors";
  if (!weights.ok() || !WriteFileAtomic(out, *weights).ok()) {
    std::cerr << "allot: could not write " << out << "\n";
    return kExitError;
  }
  if (options.env_name == "chain") {
    envs::ChainMdp probe(options.env);
    spdlog::info("done: {} episodes, mean return (last 100) {:.3f}, greedy return {:.3f} of {:.3f}",
                 summary.episodes, summary.mean_return_last_100, summary.greedy_return,
                 probe.OptimalReturn());
  } else {
    spdlog::info("done: {} {} episodes, mean return (last 100) {:.3f}", summary.episodes,
                 options.env_name, summary.mean_return_last_100);
  }
  spdlog::info("navigator weights: {}; metrics: {}", out, ctx.run.metrics_path());
  return kExitOk;
}

// Resume (when asked), train with metrics and a progress bar, and write the navigator. Both
// trainers (single-process DqnTrainer, actor/learner DistributedDqnTrainer) have this shape.
template <typename Trainer>
int TrainAndFinish(RunContext& ctx, const trainer::DqnRunOptions& options, Trainer& trainer) {
  const AllotConfig& cfg = ctx.loaded.config;
  if (ctx.resume) {
    auto at = trainer.Resume();
    if (!at.ok()) {
      std::cerr << "allot resume: " << at.status().message() << "\n";
      return kExitError;
    }
    // The episodes after the checkpoint run again: their records go (metrics_writer.h).
    if (Status st = TruncateMetricsAfter(ctx.run.metrics_path(), ctx.run.tensorboard_dir(), *at);
        !st.ok()) {
      std::cerr << "allot resume: " << st.message() << "\n";
      return kExitError;
    }
  }
  auto metrics = MetricsWriter::Open(ctx.run.metrics_path(),
                                     cfg.logging.tensorboard ? ctx.run.tensorboard_dir() : "");
  if (!metrics.ok()) {
    std::cerr << "allot: " << metrics.status().message() << "\n";
    return kExitError;
  }
  std::unique_ptr<ProgressBar> bar;
  if (cfg.logging.progress_bar) {
    bar = std::make_unique<ProgressBar>(options.total_episodes, "dqn episodes", stderr);
  }
  auto summary = trainer.Run(metrics->get(), bar.get());
  if (!summary.ok()) {
    std::cerr << "allot: " << summary.status().message() << "\n";
    return kExitError;
  }
  return Finish(ctx, options, trainer.learner(), *summary);
}

}  // namespace

Status CheckDqnRecipe(const config::ConfigNode& written, const AllotConfig& cfg,
                      const std::string& source) {
  // The LLM learners' sections; the dqn engine trains the navigator and reads none of them.
  static const std::set<std::string> kUnread = {"grpo", "sft", "model"};
  std::string errors;
  auto at = [](const config::ConfigNode& n) { return "\n  " + n.origin().ToString() + ": "; };
  for (const auto& [key, node] : written.entries()) {
    if (kUnread.count(key) != 0) {
      errors +=
          at(node) + "section '" + key + "' is not read by the dqn engine (trainer.algorithm: dqn)";
    }
  }
  errors += UnreadSections(written, cfg, "dqn");
  errors += UnreadKeys(written, cfg, "dqn");
  errors += OtherEnvSections(written, cfg.env.name);
  if (const config::ConfigNode* rollout = written.Find("rollout"); rollout != nullptr) {
    if (!cfg.dqn.distributed) {
      errors += at(*rollout) +
                "section 'rollout' is not read while dqn.distributed is false (the navigator "
                "acts and learns in one process)";
    }
  }
  // RLoT's transition reward is the env's: the step scorer's score per block and the outcome at
  // the end (env.rlot.step_scorer, env.rlot.step_reward; notes.md). Of the rewards section the
  // engine reads the PRM request alone, with step_scorer: prm, where it becomes env.rlot.prm
  // (rlot_recipe.h). (Under the chain MDP no rewards section is read at all: UnreadSections.)
  const bool rlot = cfg.env.name == "rlot";
  const bool prm_scored = rlot && cfg.env.rlot.step_scorer == "prm";
  const config::ConfigNode* rewards = rlot ? written.Find("rewards") : nullptr;
  for (size_t i = 0; rewards != nullptr && i < rewards->entries().size(); ++i) {
    const auto& [key, node] = rewards->entries()[i];
    if (key == "prm" && prm_scored) continue;
    if (key == "prm") {
      errors += at(node) +
                "rewards.prm has no effect while env.rlot.step_scorer is rule (the rule step "
                "verifier scores each step)";
    } else {
      errors += at(node) + "rewards." + key +
                " is not read by the dqn engine: RLoT's transition reward is the env's "
                "(env.rlot.step_scorer's score per block, the outcome at the end)";
    }
  }
  const config::ConfigNode* env = written.Find("env");
  const config::ConfigNode* r = env == nullptr || !rlot ? nullptr : env->Find("rlot");
  if (r != nullptr) {
    if (const config::ConfigNode* n = r->Find("prm"); n != nullptr) {
      errors += at(*n) +
                "env.rlot.prm is filled in from rewards.prm (the recipe's PRM request), "
                "which would overwrite it: set rewards.prm";
    }
    const char* unused = prm_scored ? "rule" : "prm_endpoint";
    if (const config::ConfigNode* n = r->Find(unused); n != nullptr) {
      errors += at(*n) + "env.rlot." + unused + " has no effect while env.rlot.step_scorer is " +
                cfg.env.rlot.step_scorer;
    }
  }
  if (!errors.empty()) return InvalidArgument("config " + source + ":" + errors);
  return Status::Ok();
}

int RunDqnEngine(RunContext& ctx) {
  const AllotConfig& cfg = ctx.loaded.config;
  // The navigator is tiny: more threads only add synchronisation.
  models::SetCpuThreads(1);

  trainer::DqnRunOptions options;
  options.dqn = cfg.dqn;
  options.env = cfg.env.chain;
  options.total_episodes = cfg.trainer.total_steps;
  options.checkpoint_every = cfg.checkpoint.every;
  options.keep_last = cfg.checkpoint.keep_last;
  options.log_every = cfg.logging.log_every;
  options.seed = static_cast<uint64_t>(cfg.run.seed);
  options.checkpoint_dir = ctx.run.checkpoints_dir();
  // The navigator trains on the chain MDP or RLoT's env; any other env.name (an LLM-policy env,
  // e.g. an ATLAS evaluation recipe, whose trainer.algorithm defaults to dqn) would be ignored
  // and the chain MDP trained instead.
  if (FindEnvKind(cfg.env.name) != EnvKind::kNavigator) {
    std::cerr << "allot: env.name: '" << cfg.env.name
              << "' is not an env the dqn engine trains on (" << EnvNames(EnvKind::kNavigator)
              << "); an LLM-policy env trains with "
              << "trainer.algorithm: grpo, and allot eval evaluates it\n";
    return kExitError;
  }
  if (options.dqn.state_dim != envs::ChainMdp::kStateDim ||
      options.dqn.num_actions != envs::ChainMdp::kNumActions) {
    std::cerr << "allot: dqn.state_dim/num_actions must be 7/5 for env '" << cfg.env.name << "'\n";
    return kExitError;
  }
  if (cfg.env.name == "rlot") {
    // RLoT's LLM env runs in rollout workers (in-process or remote) against the recipe's
    // endpoints, on the train_data problems; the PRM request is rewards.prm.
    if (!options.dqn.distributed) {
      std::cerr << "allot: env 'rlot' trains through the actor/learner split: set "
                   "dqn.distributed: true\n";
      return kExitError;
    }
    auto env_config = envs::rlot::RlotEnvConfigForRun(cfg.env.rlot, cfg.endpoints, cfg.rewards.prm,
                                                      cfg.dqn.gamma, ctx.loaded.source);
    auto items = env_config.ok() ? envs::rlot::RlotDatasetItems(cfg.train_data)
                                 : Result<std::vector<std::string>>(env_config.status());
    if (!items.ok()) {
      std::cerr << "allot: " << items.status().message() << "\n";
      return kExitError;
    }
    options.env_name = "rlot";
    options.env_config = *env_config;
    options.dataset_items = std::move(items).value();
    spdlog::info("rlot: {} training problems, LLM endpoint '{}', step scorer {}",
                 options.dataset_items.size(), cfg.env.rlot.llm_endpoint, cfg.env.rlot.step_scorer);
  }

  if (options.dqn.distributed) {
    // The learner streams trajectories too, but LibTorch's threads allocate here as well: keep
    // freed pages, leave the number of malloc arenas to glibc.
    if (cfg.rollout.dispatcher.keep_freed_memory) {
      rollout::KeepFreedMemoryForReuse(/*max_arenas=*/0);
    }
    trainer::DistributedDqnTrainer trainer(options, cfg.rollout);
    const int code = TrainAndFinish(ctx, options, trainer);
    spdlog::info("actor/learner: {} weight publications, {} failed episodes",
                 trainer.publications(), trainer.failed_episodes());
    return code;
  }
  trainer::DqnTrainer trainer(options);
  return TrainAndFinish(ctx, options, trainer);
}

}  // namespace allot::apps
