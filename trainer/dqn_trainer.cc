#include "trainer/dqn_trainer.h"

#include <spdlog/spdlog.h>

#include <deque>
#include <numeric>

#include "core/checkpoint_store.h"
#include "core/metrics_writer.h"
#include "core/progress_bar.h"
#include "trainer/dqn_learner.h"

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
  auto saved = store.Save(learner_->episodes(),
                          [&](const std::string& dir) { return learner_->Save(dir); });
  return saved.status();
}

double DqnTrainer::GreedyReturn(std::vector<int>* actions) const {
  envs::ChainMdp env(options_.env);
  auto s = env.Reset();
  double ret = 0;
  for (int i = 0; i < 64; ++i) {
    auto step = env.Act(learner_->Greedy(s));
    if (actions != nullptr) actions->push_back(step.applied_action);
    ret += step.reward;
    s = step.next_state;
    if (step.done) break;
  }
  return ret;
}

Result<DqnRunSummary> DqnTrainer::Run(MetricsWriter* metrics, ProgressBar* progress) {
  std::deque<double> recent;
  std::array<int64_t, 5> histogram{};
  double window_q = 0, window_td = 0, window_loss = 0, window_prm = 0;
  int64_t window_updates = 0, window_steps = 0, window_prm_steps = 0;
  double window_return = 0;
  int64_t window_episodes = 0;

  if (progress != nullptr) progress->Start(learner_->episodes());
  while (learner_->episodes() < options_.total_episodes) {
    auto state = env_.Reset();
    double ret = 0;
    int64_t steps = 0;
    for (bool done = false; !done;) {
      const int action = learner_->Act(state);
      auto step = env_.Act(action);
      ++histogram[static_cast<size_t>(step.applied_action) % histogram.size()];
      Transition t;
      t.state.assign(state.begin(), state.end());
      t.action = step.applied_action;
      t.reward = step.reward;
      t.next_state.assign(step.next_state.begin(), step.next_state.end());
      t.done = step.done;
      ALLOT_RETURN_IF_ERROR(learner_->Observe(t));
      if (auto u = learner_->MaybeUpdate()) {
        window_q += u->q_mean;
        window_td += u->td_abs_mean;
        window_loss += u->loss;
        ++window_updates;
      }
      if (!step.done) {
        window_prm += step.reward;
        ++window_prm_steps;
      }
      ret += step.reward;
      ++steps;
      state = step.next_state;
      done = step.done;
    }
    learner_->EndEpisode();
    recent.push_back(ret);
    if (recent.size() > 100) recent.pop_front();
    window_return += ret;
    window_steps += steps;
    ++window_episodes;

    const int64_t episode = learner_->episodes();
    if (metrics != nullptr && episode % options_.log_every == 0) {
      const double n = static_cast<double>(window_episodes);
      Scalars s = {{"episode/return", window_return / n},
                   {"episode/steps", static_cast<double>(window_steps) / n},
                   {"train/epsilon", learner_->epsilon()},
                   {"train/lr", learner_->lr()},
                   {"train/replay_size", static_cast<double>(learner_->replay().size())},
                   {"train/updates", static_cast<double>(learner_->updates())}};
      if (window_updates > 0) {
        s.push_back({"train/q_mean", window_q / window_updates});
        s.push_back({"train/td_error", window_td / window_updates});
        s.push_back({"train/loss", window_loss / window_updates});
      }
      if (window_prm_steps > 0) s.push_back({"reward/prm_per_step", window_prm / window_prm_steps});
      static const char* kBlocks[] = {"reason", "decompose", "debate", "refine", "terminate"};
      for (size_t a = 0; a < histogram.size(); ++a) {
        s.push_back({std::string("actions/") + kBlocks[a], static_cast<double>(histogram[a])});
      }
      ALLOT_RETURN_IF_ERROR(metrics->Log(episode, s));
      histogram.fill(0);
      window_q = window_td = window_loss = window_prm = window_return = 0;
      window_updates = window_steps = window_prm_steps = window_episodes = 0;
    }
    if (progress != nullptr) {
      progress->Update(episode, std::accumulate(recent.begin(), recent.end(), 0.0) / recent.size());
    }
    if (!options_.checkpoint_dir.empty() && episode % options_.checkpoint_every == 0) {
      ALLOT_RETURN_IF_ERROR(SaveCheckpoint());
    }
  }
  if (progress != nullptr) progress->Finish();

  DqnRunSummary summary;
  summary.episodes = learner_->episodes();
  summary.mean_return_last_100 =
      recent.empty() ? 0 : std::accumulate(recent.begin(), recent.end(), 0.0) / recent.size();
  std::vector<int> actions;
  summary.greedy_return = GreedyReturn(&actions);
  for (int a : actions) ++summary.greedy_actions[static_cast<size_t>(a) % 5];
  return summary;
}

}  // namespace allot::trainer
