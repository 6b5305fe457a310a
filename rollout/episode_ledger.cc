#include "rollout/episode_ledger.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace allot::rollout {

EpisodeLedger::EpisodeLedger(LedgerOptions options)
    : options_(std::move(options)),
      closed_(static_cast<size_t>(std::max<int64_t>(0, options_.remember_closed))) {}

Status EpisodeLedger::Submit(std::vector<v1::EpisodeRequest> requests) {
  std::unordered_set<std::string_view> batch;
  batch.reserve(requests.size());
  for (const auto& r : requests) {
    if (open_.count(r.episode_id()) > 0 || closed_.Contains(r.episode_id()) ||
        !batch.insert(r.episode_id()).second) {
      return AlreadyExists("episode_id '" + r.episode_id() + "' was already submitted");
    }
  }
  for (auto& r : requests) {
    const std::string id = r.episode_id();
    Entry& e = open_[id];
    e.pinned = r.policy_version() > 0;
    e.request = std::move(r);
    pending_.push_back(id);
    ++pending_count_;
    ++stats_.submitted;
  }
  return Status::Ok();
}

std::optional<v1::EpisodeRequest> EpisodeLedger::Dispatch(int worker, uint64_t policy_version) {
  while (!pending_.empty()) {
    std::string id = std::move(pending_.front());
    pending_.pop_front();
    auto e = open_.find(id);
    if (e == open_.end() || e->second.state != State::kPending) continue;
    Entry& entry = e->second;
    --pending_count_;
    entry.state = State::kInFlight;
    entry.worker = worker;
    ++entry.attempts;
    entry.request.set_attempt(entry.attempts);
    if (!entry.pinned) entry.request.set_policy_version(policy_version);
    on_worker_[worker].insert(std::move(id));
    ++in_flight_;
    return entry.request;
  }
  return std::nullopt;
}

void EpisodeLedger::Unassign(const std::string& id, Entry& entry) {
  if (entry.state != State::kInFlight) return;
  if (entry.worker >= 0) on_worker_[entry.worker].erase(id);
  entry.worker = -1;
  --in_flight_;
}

FinishedEpisode EpisodeLedger::Failure(const std::string& id, const Entry& entry,
                                       v1::FailureReason reason, const std::string& message) const {
  FinishedEpisode f;
  f.trajectory.set_episode_id(id);
  f.trajectory.set_env(entry.request.env());
  f.trajectory.set_group_id(entry.request.group_id());
  f.trajectory.set_group_index(entry.request.group_index());
  f.trajectory.mutable_failure()->set_reason(reason);
  f.trajectory.mutable_failure()->set_message(message);
  f.attempts = entry.attempts;
  return f;
}

void EpisodeLedger::Requeue(const std::string& id, Entry& entry) {
  if (entry.attempts >= static_cast<uint32_t>(options_.max_attempts)) {
    FinishedEpisode f = Failure(id, entry, v1::FAILURE_REASON_WORKER_LOST,
                                "gave up after " + std::to_string(entry.attempts) + " dispatches");
    Close(id, entry, std::move(f));
    return;
  }
  if (entry.state != State::kPending) ++pending_count_;
  entry.state = State::kPending;
  ++stats_.redispatched;
  pending_.push_front(id);
}

EpisodeLedger::Accepted EpisodeLedger::Accept(v1::Trajectory t, uint64_t current,
                                              const std::string& worker_name) {
  const std::string id = t.episode_id();
  auto e = open_.find(id);
  if (e == open_.end()) {
    if (closed_.Contains(id)) {
      ++stats_.duplicates_dropped;
      return Accepted::kDuplicate;
    }
    ++stats_.orphans_dropped;
    return Accepted::kOrphan;
  }
  Entry& entry = e->second;
  Unassign(id, entry);
  // Staleness bound: lag in policy versions between now and when the episode was sampled.
  const int64_t lag =
      current > t.policy_version() ? static_cast<int64_t>(current - t.policy_version()) : 0;
  if (options_.max_policy_lag >= 0 && lag > options_.max_policy_lag) {
    ++stats_.stale_discarded;
    if (entry.attempts < static_cast<uint32_t>(options_.max_attempts)) {
      Requeue(id, entry);
      return Accepted::kRequeued;
    }
    t.mutable_failure()->set_reason(v1::FAILURE_REASON_STALE);
    t.mutable_failure()->set_message("policy lag " + std::to_string(lag) + " > max_policy_lag " +
                                     std::to_string(options_.max_policy_lag));
  }
  FinishedEpisode f;
  f.trajectory = std::move(t);
  f.policy_lag = lag;
  f.attempts = entry.attempts;
  f.worker = worker_name;
  Close(id, entry, std::move(f));
  return Accepted::kClosed;
}

bool EpisodeLedger::Fail(const std::string& id, v1::FailureReason reason,
                         const std::string& message, const std::string& worker_name) {
  auto e = open_.find(id);
  if (e == open_.end()) return false;
  Entry& entry = e->second;
  Unassign(id, entry);
  FinishedEpisode f = Failure(id, entry, reason, message);
  f.worker = worker_name;
  Close(id, entry, std::move(f));
  return true;
}

bool EpisodeLedger::Return(const std::string& id, int worker, bool charge) {
  auto e = open_.find(id);
  if (e == open_.end() || e->second.state != State::kInFlight || e->second.worker != worker) {
    return false;
  }
  Entry& entry = e->second;
  Unassign(id, entry);
  if (!charge) --entry.attempts;
  Requeue(id, entry);
  return true;
}

int64_t EpisodeLedger::LoseWorker(int worker) {
  auto w = on_worker_.find(worker);
  if (w == on_worker_.end()) return 0;
  const std::vector<std::string> ids(w->second.begin(), w->second.end());
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) Return(*it, worker, /*charge=*/true);
  on_worker_.erase(worker);
  return static_cast<int64_t>(ids.size());
}

bool EpisodeLedger::InFlightOn(const std::string& id, int worker) const {
  auto e = open_.find(id);
  return e != open_.end() && e->second.state == State::kInFlight && e->second.worker == worker;
}

int64_t EpisodeLedger::in_flight_on(int worker) const {
  auto w = on_worker_.find(worker);
  return w == on_worker_.end() ? 0 : static_cast<int64_t>(w->second.size());
}

void EpisodeLedger::Close(const std::string& id, Entry& entry, FinishedEpisode finished) {
  if (entry.state == State::kPending) --pending_count_;
  ++stats_.finished;
  const std::string group_id = entry.request.group_id();
  const uint32_t group_size = entry.request.group_size();
  // The ledger forgets closed episodes (memory stays bounded however long the run); the id is
  // remembered a while longer to count late duplicates and refuse resubmission.
  closed_.Insert(id);
  open_.erase(id);
  if (group_id.empty()) {
    ready_.push_back(std::move(finished));
    return;
  }
  Group& g = groups_[group_id];
  g.size = group_size;
  g.held.push_back(std::move(finished));
  if (g.held.size() < g.size) return;
  std::sort(g.held.begin(), g.held.end(), [](const auto& a, const auto& b) {
    return a.trajectory.group_index() < b.trajectory.group_index();
  });
  for (auto& f : g.held) ready_.push_back(std::move(f));
  groups_.erase(group_id);
}

std::optional<FinishedEpisode> EpisodeLedger::PopReady() {
  if (ready_.empty()) return std::nullopt;
  FinishedEpisode f = std::move(ready_.front());
  ready_.pop_front();
  return f;
}

std::vector<FinishedEpisode> EpisodeLedger::PopReadyGroup() {
  std::vector<FinishedEpisode> group;
  if (ready_.empty()) return group;
  const std::string id = ready_.front().trajectory.group_id();
  do {
    group.push_back(std::move(ready_.front()));
    ready_.pop_front();
  } while (!id.empty() && !ready_.empty() && ready_.front().trajectory.group_id() == id);
  return group;
}

LedgerStats EpisodeLedger::stats() const {
  LedgerStats s = stats_;
  s.pending = pending_count_;
  s.open = static_cast<int64_t>(open_.size());
  s.closed_remembered = static_cast<int64_t>(closed_.size());
  s.in_flight = in_flight_;
  s.ready = static_cast<int64_t>(ready_.size());
  return s;
}

}  // namespace allot::rollout
