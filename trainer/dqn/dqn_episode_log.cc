#include "trainer/dqn/dqn_episode_log.h"

#include <numeric>
#include <string>

#include "core/metrics_writer.h"
#include "envs/rlot/logic_block.h"
#include "trainer/dqn/dqn_learner.h"

namespace allot::trainer {

const char* BlockName(int action) { return envs::rlot::LogicBlockName(action); }

void DqnEpisodeLog::AddStep(int applied_action, float reward, bool done) {
  ++histogram_[static_cast<size_t>(applied_action) % histogram_.size()];
  if (!done) {
    prm_ += reward;
    ++prm_steps_;
  }
}

void DqnEpisodeLog::AddUpdate(const UpdateStats& u) {
  q_ += u.q_mean;
  td_ += u.td_abs_mean;
  loss_ += u.loss;
  ++updates_;
}

void DqnEpisodeLog::EndEpisode(double episode_return, int64_t steps) {
  recent_.push_back(episode_return);
  if (recent_.size() > 100) recent_.pop_front();
  return_ += episode_return;
  steps_ += steps;
  ++episodes_;
}

void DqnEpisodeLog::AddFailure(const std::string& reason, bool trained) {
  ++failures_[reason];
  if (trained) ++failures_trained_;
}

double DqnEpisodeLog::RecentMeanReturn() const {
  if (recent_.empty()) return 0;
  return std::accumulate(recent_.begin(), recent_.end(), 0.0) / static_cast<double>(recent_.size());
}

Status DqnEpisodeLog::Flush(MetricsWriter& metrics, const DqnLearner& learner, int64_t episode) {
  if (episodes_ == 0) return Status::Ok();
  const double n = static_cast<double>(episodes_);
  Scalars s = {{"episode/return", return_ / n},
               {"episode/steps", static_cast<double>(steps_) / n},
               {"train/epsilon", learner.epsilon()},
               {"train/lr", learner.lr()},
               {"train/replay_size", static_cast<double>(learner.replay().size())},
               {"train/updates", static_cast<double>(learner.updates())}};
  if (updates_ > 0) {
    const double u = static_cast<double>(updates_);
    s.push_back({"train/q_mean", q_ / u});
    s.push_back({"train/td_error", td_ / u});
    s.push_back({"train/loss", loss_ / u});
  }
  if (prm_steps_ > 0) s.push_back({"reward/prm_per_step", prm_ / static_cast<double>(prm_steps_)});
  for (size_t a = 0; a < histogram_.size(); ++a) {
    s.push_back({std::string("actions/") + BlockName(static_cast<int>(a)),
                 static_cast<double>(histogram_[a])});
  }
  for (const auto& [reason, n] : failures_) {
    s.push_back({"failures/" + reason, static_cast<double>(n)});
  }
  if (!failures_.empty()) s.push_back({"failures/trained", static_cast<double>(failures_trained_)});
  ALLOT_RETURN_IF_ERROR(metrics.Log(episode, s));
  failures_.clear();
  failures_trained_ = 0;
  histogram_.fill(0);
  q_ = td_ = loss_ = prm_ = return_ = 0;
  updates_ = steps_ = prm_steps_ = episodes_ = 0;
  return Status::Ok();
}

}  // namespace allot::trainer
