#include "rollout/session.h"

#include <charconv>
#include <random>
#include <utility>

#include "core/random.h"

namespace allot::rollout {

uint64_t EpisodeSeed(uint64_t seed, int64_t draw, uint32_t index) {
  return SplitMix64Hash(seed ^ SplitMix64Hash(static_cast<uint64_t>(draw) * 4099 + index));
}

Result<std::unique_ptr<RolloutSession>> RolloutSession::Start(SessionOptions options) {
  if (options.registry == nullptr) return InvalidArgument("rollout session: no env registry");
  std::unique_ptr<RolloutSession> s(new RolloutSession());
  s->prefix_ = options.name + "-" + std::to_string(std::random_device{}()) + "-g";
  const DispatcherConfig& dc = options.rollout.dispatcher;
  const int in_process = options.rollout.in_process_workers > 0 ? options.rollout.in_process_workers
                         : dc.workers.empty()                   ? options.default_in_process
                                                                : 0;
  WorkerConfig wc = options.rollout.worker;
  wc.metrics_listen = "";  // in-process workers report through the learner
  for (int i = 0; i < in_process; ++i) {
    wc.worker_id = options.name + "-worker-" + std::to_string(i);
    ALLOT_ASSIGN_OR_RETURN(auto server,
                           WorkerServer::Start(wc, options.registry, /*in_process=*/true));
    s->servers_.push_back(std::move(server));
  }
  ALLOT_ASSIGN_OR_RETURN(s->dispatcher_,
                         Dispatcher::Create(dc, {.max_policy_lag = options.max_policy_lag,
                                                 .policy_history = options.policy_history}));
  for (size_t i = 0; i < s->servers_.size(); ++i) {
    s->dispatcher_->AddChannel(s->servers_[i]->InProcessChannel(),
                               options.name + "-worker-" + std::to_string(i));
  }
  s->options_ = std::move(options);
  return s;
}

RolloutSession::~RolloutSession() {
  if (dispatcher_ != nullptr) dispatcher_->Shutdown();
  for (auto& w : servers_) w->Shutdown();
}

Result<std::string> RolloutSession::SubmitDraw(int64_t draw, uint32_t size,
                                               const v1::EpisodeRequest& base,
                                               uint64_t policy_version) {
  const std::string gid = prefix_ + std::to_string(draw);
  std::vector<v1::EpisodeRequest> reqs;
  reqs.reserve(size);
  for (uint32_t i = 0; i < size; ++i) {
    v1::EpisodeRequest r = base;
    r.set_episode_id(gid + "-" + std::to_string(i));
    r.set_policy_version(policy_version);
    r.set_group_id(gid);
    r.set_group_index(i);
    r.set_group_size(size);
    const uint64_t seed = EpisodeSeed(options_.seed, draw, i);
    r.set_seed(seed);
    if (r.has_sampling()) r.mutable_sampling()->set_seed(seed & 0x7fffffffffffull);
    reqs.push_back(std::move(r));
  }
  ALLOT_RETURN_IF_ERROR(dispatcher_->Submit(std::move(reqs)));
  return gid;
}

std::optional<int64_t> RolloutSession::DrawOf(const std::string& group_id) const {
  if (group_id.size() <= prefix_.size() || group_id.compare(0, prefix_.size(), prefix_) != 0) {
    return std::nullopt;
  }
  int64_t draw = 0;
  const char* end = group_id.data() + group_id.size();
  const auto [at, ec] = std::from_chars(group_id.data() + prefix_.size(), end, draw);
  if (ec != std::errc() || at != end) return std::nullopt;
  return draw;
}

std::vector<FinishedEpisode> RolloutSession::NextGroup(std::chrono::milliseconds timeout) {
  return dispatcher_->NextGroup(timeout);
}

Status RolloutSession::Publish(envs::runtime::PolicySnapshot policy) {
  return dispatcher_->PublishPolicy(std::move(policy));
}

}  // namespace allot::rollout
