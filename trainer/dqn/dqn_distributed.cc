#include "trainer/dqn/dqn_distributed.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/checkpoint_store.h"
#include "core/metrics_writer.h"
#include "core/progress_bar.h"
#include "envs/rlot/rlot_env.h"
#include "envs/synthetic/chain_env.h"
#include "rollout/failure_kind.h"
#include "rollout/session.h"
#include "trainer/dqn/dqn_episode_log.h"
#include "trainer/dqn/dqn_learner.h"

namespace allot::trainer {
namespace {

Result<Transition> FromProto(const v1::Transition& p, int state_dim, int num_actions,
                             const std::string& where) {
  Transition t;
  t.state.assign(p.state().begin(), p.state().end());
  t.next_state.assign(p.next_state().begin(), p.next_state().end());
  if (t.next_state.empty() && p.done()) t.next_state.assign(t.state.size(), 0.0f);
  if (t.state.size() != static_cast<size_t>(state_dim) || t.next_state.size() != t.state.size()) {
    return InvalidArgument(where + ": transition state has " + std::to_string(t.state.size()) +
                           " features (next state " + std::to_string(t.next_state.size()) +
                           "), dqn.state_dim is " + std::to_string(state_dim));
  }
  if (num_actions <= 0 || p.action() >= static_cast<uint32_t>(num_actions)) {
    return InvalidArgument(where + ": transition action " + std::to_string(p.action()) +
                           " is outside [0, " + std::to_string(num_actions) + ")");
  }
  const auto finite = [](float v) { return std::isfinite(v); };
  if (!std::isfinite(p.reward()) || !std::all_of(t.state.begin(), t.state.end(), finite) ||
      !std::all_of(t.next_state.begin(), t.next_state.end(), finite)) {
    return InvalidArgument(where + ": transition has a non-finite reward or state feature");
  }
  t.action = static_cast<int>(p.action());
  t.reward = p.reward();
  t.done = p.done();
  return t;
}

}  // namespace

DistributedDqnTrainer::DistributedDqnTrainer(DqnRunOptions options, rollout::RolloutConfig rollout)
    : options_(std::move(options)),
      rollout_(std::move(rollout)),
      learner_(std::make_unique<DqnLearner>(options_.dqn, options_.seed)),
      registry_(std::make_unique<rollout::EnvRegistry>()) {
  if (rollout_.in_process_workers == 0 && rollout_.dispatcher.workers.empty()) {
    rollout_.in_process_workers = kDefaultActors;
  }
  envs::RegisterChainEnv(*registry_);
  envs::rlot::RegisterRlotEnv(*registry_);
}

DistributedDqnTrainer::~DistributedDqnTrainer() = default;

Result<int64_t> DistributedDqnTrainer::Resume() {
  if (options_.checkpoint_dir.empty()) return int64_t{0};
  CheckpointStore store(options_.checkpoint_dir, options_.keep_last);
  if (store.Steps().empty()) return int64_t{0};
  auto latest = store.LoadLatest();
  if (!latest.ok()) {
    return latest.status().Annotate("resume: every checkpoint failed verification");
  }
  ALLOT_RETURN_IF_ERROR(learner_->Load(latest->path));
  spdlog::info("resumed from {} (episode {})", latest->path, learner_->episodes());
  return learner_->episodes();
}

Status DistributedDqnTrainer::SaveCheckpoint() {
  CheckpointStore store(options_.checkpoint_dir, options_.keep_last);
  return store
      .Save(learner_->episodes(), [&](const std::string& dir) { return learner_->Save(dir); })
      .status();
}

Status DistributedDqnTrainer::Publish(rollout::RolloutSession& session) {
  // Versions follow the update count, so they keep rising across a learner restart and
  // workers that outlived it accept the resumed learner's weights.
  const uint64_t version = static_cast<uint64_t>(learner_->updates()) + 1;
  if (version <= last_version_) return Status::Ok();
  envs::runtime::PolicySnapshot snapshot;
  snapshot.version = version;
  snapshot.kind = envs::runtime::PolicySnapshot::Kind::kQnetWeights;
  ALLOT_ASSIGN_OR_RETURN(snapshot.bytes, learner_->OnlineWeights());
  ALLOT_RETURN_IF_ERROR(session.Publish(std::move(snapshot)));
  last_version_ = version;
  ++publications_;
  return Status::Ok();
}

Result<DqnRunSummary> DistributedDqnTrainer::Run(MetricsWriter* metrics, ProgressBar* progress) {
  const DqnConfig& dqn = options_.dqn;
  const int actors = rollout_.in_process_workers;
  publications_ = failed_episodes_ = dropped_failures_ = malformed_episodes_ = 0;
  failures_.clear();
  last_version_ = 0;
  worker_ids_.clear();

  // Off-policy learning: transitions from older navigators are as good as any (Ape-X), so the
  // session bounds no staleness.
  rollout::SessionOptions so;
  so.rollout = rollout_;
  so.rollout.worker.capacity = std::max(so.rollout.worker.capacity, dqn.episodes_in_flight);
  // Chain episodes are microseconds of work: a thread or two per actor is plenty.
  so.rollout.worker.threads = std::min(so.rollout.worker.threads,
                                       std::max(1, dqn.episodes_in_flight / std::max(1, actors)));
  so.registry = registry_.get();
  so.name = "dqn";
  so.default_in_process = 0;  // the constructor chose: kDefaultActors without remote workers
  so.seed = options_.seed;
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<rollout::RolloutSession> session,
                         rollout::RolloutSession::Start(std::move(so)));
  ALLOT_RETURN_IF_ERROR(Publish(*session));

  const std::string env_config = options_.env_config.empty()
                                     ? envs::ChainEnvConfigText(options_.env)
                                     : options_.env_config;
  // Draw n is episode n of the run (its dataset item and seed): a resumed run draws on from the
  // episodes its checkpoint counted.
  int64_t next_draw = learner_->episodes();
  int64_t outstanding = 0;
  int consecutive_failures = 0;
  auto last_progress = std::chrono::steady_clock::now();
  DqnEpisodeLog log;
  Status status = Status::Ok();

  if (progress != nullptr) progress->Start(learner_->episodes());
  while (status.ok() && learner_->episodes() < options_.total_episodes) {
    while (status.ok() && outstanding < dqn.episodes_in_flight &&
           learner_->episodes() + outstanding < options_.total_episodes) {
      v1::EpisodeRequest req;
      req.set_env(options_.env_name);
      req.set_env_config(env_config);
      // RLoT Sec. 3.3: the actors explore with the learner's epsilon, in its own field.
      req.set_epsilon(learner_->epsilon());
      if (!options_.dataset_items.empty()) {
        const size_t n = static_cast<size_t>(next_draw) % options_.dataset_items.size();
        req.set_dataset_item(options_.dataset_items[n]);
      }
      status = session->SubmitDraw(next_draw++, 1, req).status();
      ++outstanding;
    }
    if (!status.ok()) break;
    std::vector<rollout::FinishedEpisode> arrived =
        session->NextGroup(std::chrono::milliseconds(200));
    if (arrived.empty()) {
      if (std::chrono::steady_clock::now() - last_progress > idle_timeout_) {
        const std::string unconnected = session->DescribeUnconnected();
        status = DeadlineExceeded(
            "dqn.distributed: no episode finished in " + std::to_string(idle_timeout_.count()) +
            " ms (workers: " + std::to_string(session->stats().workers_connected) + " connected" +
            (unconnected.empty() ? "" : "; not connected: " + unconnected) + ")");
      }
      continue;
    }
    last_progress = std::chrono::steady_clock::now();
    --outstanding;
    const rollout::FinishedEpisode* finished = &arrived.front();
    const v1::Trajectory& traj = finished->trajectory;
    const v1::FailureReason reason = traj.failure().reason();
    const bool failed = reason != v1::FAILURE_REASON_NONE;
    const std::string failure = failed ? rollout::FailureReasonLabel(reason) : "";
    if (failed) {
      ++failed_episodes_;
      ++failures_[failure];
      // A policy failure its env scored ends in the failing decision, terminal, with the
      // failure reward: the learner keeps it and the transitions before it, so that it learns
      // where that choice leads (rollout/failure_kind.h). Any other failure (endpoint, timeout,
      // worker lost, ...) is dropped, counted by reason, and replaced by a new episode.
      const bool scored = rollout::IsPolicyFailure(reason) && traj.transitions_size() > 0 &&
                          traj.transitions(traj.transitions_size() - 1).done();
      if (!scored) {
        log.AddFailure(failure, /*trained=*/false);
        ++dropped_failures_;
        // Say why, without flooding the log: the first few failures, then every 100th.
        if (dropped_failures_ <= 5 || dropped_failures_ % 100 == 0) {
          spdlog::warn("dqn.distributed: episode from {} failed ({}): {} [{} dropped so far]",
                       finished->worker, failure, traj.failure().message(), dropped_failures_);
        }
        if (++consecutive_failures >= 100) {
          status = Unavailable("dqn.distributed: 100 episodes failed in a row; last from " +
                               finished->worker + ": " + traj.failure().message());
        }
        continue;  // the loop submits a replacement
      }
    }
    consecutive_failures = 0;
    if (std::find(worker_ids_.begin(), worker_ids_.end(), traj.worker_id()) == worker_ids_.end()) {
      worker_ids_.push_back(traj.worker_id());
    }
    const std::string where = "episode " + traj.episode_id() + " from " + finished->worker;
    // A worker is another process, possibly another build: check the whole episode before any
    // of it reaches replay, and drop (and count) a malformed one instead of ending the run.
    std::vector<Transition> transitions;
    transitions.reserve(static_cast<size_t>(traj.transitions_size()));
    Status malformed = Status::Ok();
    for (const v1::Transition& p : traj.transitions()) {
      auto t = FromProto(p, dqn.state_dim, dqn.num_actions, where);
      if (!t.ok()) {
        malformed = t.status();
        break;
      }
      transitions.push_back(std::move(t).value());
    }
    if (!malformed.ok()) {
      ++malformed_episodes_;
      if (failed) {
        ++dropped_failures_;
        log.AddFailure(failure, /*trained=*/false);
      }
      spdlog::warn("dqn.distributed: dropped malformed {} ({} so far)", malformed.message(),
                   malformed_episodes_);
      continue;  // the loop submits a replacement
    }
    for (const Transition& t : transitions) {
      status = learner_->Observe(t);
      if (!status.ok()) break;
      log.AddStep(t.action, t.reward, t.done);
      // RLoT: one update per env step once replay is full.
      if (auto u = learner_->MaybeUpdate()) {
        log.AddUpdate(*u);
        if (learner_->updates() % dqn.publish_every == 0) {
          status = Publish(*session);
          if (!status.ok()) break;
        }
      }
    }
    if (!status.ok()) break;
    if (failed) log.AddFailure(failure, /*trained=*/true);
    learner_->AdvanceEpsilon(traj.transitions_size());
    learner_->EndEpisode();
    log.EndEpisode(traj.reward(), traj.transitions_size());

    const int64_t episode = learner_->episodes();
    if (metrics != nullptr && episode % options_.log_every == 0) {
      status = log.Flush(*metrics, *learner_, episode);
    }
    if (progress != nullptr) progress->Update(episode, log.RecentMeanReturn());
    if (status.ok() && !options_.checkpoint_dir.empty() &&
        episode % options_.checkpoint_every == 0) {
      status = SaveCheckpoint();
    }
  }
  if (progress != nullptr) progress->Finish();
  session.reset();
  ALLOT_RETURN_IF_ERROR(status);

  DqnRunSummary summary;
  summary.episodes = learner_->episodes();
  summary.mean_return_last_100 = log.RecentMeanReturn();
  std::vector<int> actions;
  summary.greedy_return = GreedyChainReturn(options_.env, learner_->actor(), &actions);
  for (int a : actions) ++summary.greedy_actions[static_cast<size_t>(a) % 5];
  return summary;
}

}  // namespace allot::trainer
