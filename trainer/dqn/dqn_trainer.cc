#include "trainer/dqn/dqn_trainer.h"

#include <spdlog/spdlog.h>

#include "core/checkpoint_store.h"
#include "core/metrics_writer.h"
#include "core/progress_bar.h"
#include "envs/synthetic/chain_episode.h"
#include "trainer/dqn/dqn_episode_log.h"
#include "trainer/dqn/dqn_learner.h"

namespace allot::trainer {

DqnTrainer::DqnTrainer(DqnRunOptions options)
    : options_(std::move(options)),
      learner_(std::make_unique<DqnLearner>(options_.dqn, options_.seed)),
      env_(options_.env) {}

DqnTrainer::~DqnTrainer() = default;

Result<int64_t> DqnTrainer::Resume() {
  if (options_.checkpoint_dir.empty()) return int64_t{0};
  CheckpointStore store(options_.checkpoint_dir, options_.keep_last);
  if (store.Steps().empty()) return int64_t{0};
  std::vector<std::string> skipped;
  auto latest = store.LoadLatest(&skipped);
  if (!latest.ok()) {
    return latest.status().Annotate("resume: every checkpoint failed verification");
  }
  ALLOT_RETURN_IF_ERROR(learner_->Load(latest->path));
  spdlog::info("resumed from {} (episode {})", latest->path, learner_->episodes());
  return learner_->episodes();
}

Status DqnTrainer::SaveCheckpoint() {
  CheckpointStore store(options_.checkpoint_dir, options_.keep_last);
  auto saved =
      store.Save(learner_->episodes(), [&](const std::string& dir) { return learner_->Save(dir); });
  return saved.status();
}

double GreedyChainReturn(const envs::ChainMdpConfig& config, const models::NavigatorMlp& navigator,
                         std::vector<int>* actions) {
  envs::ChainMdp env(config);
  return envs::RunChainEpisode(
      env, [&](const envs::ChainMdp::State& s) { return navigator.Greedy(s); },
      [&](const envs::ChainEpisodeStep& s) {
        if (actions != nullptr) actions->push_back(s.step.applied_action);
      });
}

double DqnTrainer::GreedyReturn(std::vector<int>* actions) const {
  return GreedyChainReturn(options_.env, learner_->actor(), actions);
}

Result<DqnRunSummary> DqnTrainer::Run(MetricsWriter* metrics, ProgressBar* progress) {
  DqnEpisodeLog log;
  if (progress != nullptr) progress->Start(learner_->episodes());
  while (learner_->episodes() < options_.total_episodes) {
    int64_t steps = 0;
    Status observed = Status::Ok();
    const double ret = envs::RunChainEpisode(
        env_, [&](const envs::ChainMdp::State& s) { return learner_->Act(s); },
        [&](const envs::ChainEpisodeStep& s) {
          log.AddStep(s.step.applied_action, s.step.reward, s.step.done);
          Transition t;
          t.state.assign(s.state.begin(), s.state.end());
          t.action = s.step.applied_action;
          t.reward = s.step.reward;
          t.next_state.assign(s.step.next_state.begin(), s.step.next_state.end());
          t.done = s.step.done;
          if (observed.ok()) observed = learner_->Observe(t);
          if (observed.ok()) {
            if (auto u = learner_->MaybeUpdate()) log.AddUpdate(*u);
          }
          ++steps;
        },
        [&] { return !observed.ok(); });
    ALLOT_RETURN_IF_ERROR(observed);
    learner_->EndEpisode();
    log.EndEpisode(ret, steps);

    const int64_t episode = learner_->episodes();
    if (metrics != nullptr && episode % options_.log_every == 0) {
      ALLOT_RETURN_IF_ERROR(log.Flush(*metrics, *learner_, episode));
    }
    if (progress != nullptr) progress->Update(episode, log.RecentMeanReturn());
    if (!options_.checkpoint_dir.empty() && episode % options_.checkpoint_every == 0) {
      ALLOT_RETURN_IF_ERROR(SaveCheckpoint());
    }
  }
  if (progress != nullptr) progress->Finish();

  DqnRunSummary summary;
  summary.episodes = learner_->episodes();
  summary.mean_return_last_100 = log.RecentMeanReturn();
  std::vector<int> actions;
  summary.greedy_return = GreedyReturn(&actions);
  for (int a : actions) ++summary.greedy_actions[static_cast<size_t>(a) % 5];
  return summary;
}

}  // namespace allot::trainer
