#include "rollout/worker_service.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <thread>
#include <utility>

#include "rollout/chunking.h"
#include "rollout/security.h"
#include "rollout/trajectory_convert.h"
#include "rollout/validate.h"

namespace allot::rollout {
namespace {

using Clock = std::chrono::steady_clock;

std::string DefaultWorkerId() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "worker") + ":" + std::to_string(getpid());
}

v1::Trajectory FailedTrajectory(const v1::EpisodeRequest& req, v1::FailureReason reason,
                                const std::string& message) {
  v1::Trajectory t;
  t.set_episode_id(req.episode_id());
  t.mutable_failure()->set_reason(reason);
  t.mutable_failure()->set_message(message.substr(0, kMaxFailureMessageBytes));
  return t;
}

}  // namespace

WorkerService::WorkerService(WorkerConfig config, const EnvRegistry* registry)
    : config_(std::move(config)),
      worker_id_(config_.worker_id.empty() ? DefaultWorkerId() : config_.worker_id),
      envs_(registry),
      registry_(registry) {
  threads_.reserve(config_.threads);
  for (int i = 0; i < config_.threads; ++i) threads_.emplace_back([this] { RunEpisodes(); });
}

WorkerService::~WorkerService() { Shutdown(); }

void WorkerService::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    for (auto& [id, ep] : episodes_) ep.cancelled->store(true);
    if (session_ctx_ != nullptr) session_ctx_->TryCancel();
  }
  work_cv_.notify_all();
  out_cv_.notify_all();
  idle_cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

std::shared_ptr<const envs::runtime::PolicySnapshot> WorkerService::policy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_;
}

uint32_t WorkerService::FreeSlotsLocked() const {
  if (draining_ || stopping_) return 0;
  const int64_t held = static_cast<int64_t>(episodes_.size() + outbox_.size());
  return static_cast<uint32_t>(std::max<int64_t>(0, config_.capacity - held));
}

v1::WorkerStatus WorkerService::StatusLocked() const {
  v1::WorkerStatus s;
  s.set_free_slots(FreeSlotsLocked());
  s.set_running(static_cast<uint32_t>(episodes_.size()));
  s.set_unacked(static_cast<uint32_t>(outbox_.size()));
  s.set_draining(draining_);
  s.set_policy_version(policy_ ? policy_->version : 0);
  return s;
}

grpc::Status WorkerService::Hello(grpc::ServerContext* ctx, const v1::HelloRequest* req,
                                  v1::HelloReply* reply) {
  grpc::Status auth = CheckToken(*ctx, config_.auth.token);
  if (!auth.ok()) return auth;
  if (req->protocol_version() != v1::PROTOCOL_VERSION_1) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "protocol_version " + std::to_string(req->protocol_version()) +
                            " is not supported (worker speaks 1)");
  }
  if (req->learner_id().size() > kMaxIdBytes) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "learner_id: longer than 128 bytes");
  }
  reply->set_protocol_version(v1::PROTOCOL_VERSION_1);
  reply->set_worker_id(worker_id_);
  reply->set_allot_version(ALLOT_VERSION);
  reply->set_capacity(static_cast<uint32_t>(config_.capacity));
  for (const auto& name : registry_->Names()) reply->add_envs(name);
  reply->set_max_message_bytes(static_cast<uint64_t>(config_.max_message_bytes));
  std::lock_guard<std::mutex> lock(mu_);
  reply->set_policy_version(policy_ ? policy_->version : 0);
  reply->set_draining(draining_);
  return grpc::Status::OK;
}

grpc::Status WorkerService::Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* req,
                                      v1::HeartbeatReply* reply) {
  grpc::Status auth = CheckToken(*ctx, config_.auth.token);
  if (!auth.ok()) return auth;
  std::lock_guard<std::mutex> lock(mu_);
  CheckDrainDeadlineLocked();
  const v1::WorkerStatus s = StatusLocked();
  reply->set_sent_unix_ms(req->sent_unix_ms());
  reply->set_running(s.running());
  reply->set_unacked(s.unacked());
  reply->set_free_slots(s.free_slots());
  reply->set_draining(s.draining());
  reply->set_policy_version(s.policy_version());
  return grpc::Status::OK;
}

grpc::Status WorkerService::Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req,
                                  v1::DrainReply* reply) {
  grpc::Status auth = CheckToken(*ctx, config_.auth.token);
  if (!auth.ok()) return auth;
  if (req->timeout_ms() > 3600u * 1000u) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "timeout_ms: at most one hour");
  }
  const auto timeout =
      req->timeout_ms() > 0
          ? std::chrono::milliseconds(req->timeout_ms())
          : std::chrono::milliseconds(static_cast<int64_t>(config_.drain_timeout_s * 1000));
  BeginDrain(timeout);
  std::lock_guard<std::mutex> lock(mu_);
  reply->set_running(static_cast<uint32_t>(episodes_.size()));
  return grpc::Status::OK;
}

void WorkerService::BeginDrain(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!draining_) {
      draining_ = true;
      drain_deadline_ = Clock::now() + timeout;
    } else {
      drain_deadline_ = std::min(drain_deadline_, Clock::now() + timeout);
    }
    status_dirty_ = true;
    CheckDrainDeadlineLocked();
  }
  out_cv_.notify_all();
}

void WorkerService::CheckDrainDeadlineLocked() {
  if (!draining_ || Clock::now() < drain_deadline_) return;
  bool any = false;
  for (auto it = episodes_.begin(); it != episodes_.end();) {
    Episode& ep = it->second;
    if (ep.returned) {
      ++it;
      continue;
    }
    RejectLocked(it->first, v1::REJECT_REASON_RETURNED, "drain timeout: episode returned");
    any = true;
    auto queued = std::find(queue_.begin(), queue_.end(), it->first);
    if (queued != queue_.end()) {
      queue_.erase(queued);
      it = episodes_.erase(it);
      continue;
    }
    ep.returned = true;
    ep.cancelled->store(true);
    ++it;
  }
  if (any) out_cv_.notify_all();
}

bool WorkerService::Drained() {
  std::lock_guard<std::mutex> lock(mu_);
  CheckDrainDeadlineLocked();
  if (!draining_) return false;
  for (const auto& [id, ep] : episodes_) {
    if (!ep.returned) return false;
  }
  return outbox_.empty() && rejected_.empty();
}

void WorkerService::RejectLocked(const std::string& id, v1::RejectReason reason,
                                 const std::string& message) {
  v1::EpisodeRejected& r = rejected_.emplace_back();
  r.set_episode_id(Truncated(id));
  r.set_reason(reason);
  r.set_message(message.substr(0, kMaxFailureMessageBytes));
  status_dirty_ = true;
  metrics_.RecordRejected(reason);
}

void WorkerService::HandleEpisodeLocked(v1::EpisodeRequest* request) {
  const v1::EpisodeRequest& req = *request;
  Status valid = ValidateEpisodeRequest(req);
  if (!valid.ok()) {
    RejectLocked(req.episode_id(), v1::REJECT_REASON_INVALID, valid.message());
    return;
  }
  if (!registry_->Has(req.env())) {
    RejectLocked(req.episode_id(), v1::REJECT_REASON_UNKNOWN_ENV,
                 "env '" + req.env() + "' is not registered on worker " + worker_id_);
    return;
  }
  const std::string& id = req.episode_id();
  if (episodes_.count(id) > 0) return;  // already running: its trajectory will come
  auto done = outbox_.find(id);
  if (done != outbox_.end()) {  // finished earlier (maybe sent on a dropped stream): resend
    if (done->second.sent) {
      done->second.sent = false;
      done->second.next_chunk = 0;
      unsent_.push_back(id);
    }
    return;
  }
  if (draining_ || stopping_) {
    RejectLocked(id, v1::REJECT_REASON_DRAINING, "worker " + worker_id_ + " is draining");
    return;
  }
  if (FreeSlotsLocked() == 0) {
    RejectLocked(id, v1::REJECT_REASON_NO_CAPACITY, "worker " + worker_id_ + " is full");
    return;
  }
  queue_.push_back(id);
  Episode& ep = episodes_[id];
  ep.request = std::make_shared<const v1::EpisodeRequest>(std::move(*request));
  ep.accepted = Clock::now();
  work_cv_.notify_one();
}

void WorkerService::RunEpisodes() {
  for (;;) {
    std::string id;
    Episode ep;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Backpressure in bytes as well as in episodes: no new episode starts while the
      // finished-but-unacknowledged trajectories exceed max_unacked_bytes.
      work_cv_.wait(lock, [&] {
        return stopping_ || (!queue_.empty() && outbox_bytes_ < config_.max_unacked_bytes);
      });
      if (stopping_) return;
      id = std::move(queue_.front());
      queue_.pop_front();
      auto it = episodes_.find(id);
      if (it == episodes_.end()) continue;
      ep = it->second;
    }
    const Clock::time_point started = Clock::now();
    v1::Trajectory t = RunOne(id, ep, started);
    metrics_.RecordEpisode(t, std::chrono::duration<double>(Clock::now() - started).count());
    // Serialized once here, on the episode thread; the stream writer only moves bytes.
    std::vector<std::string> chunks = SerializeTrajectoryChunks(
        std::move(t), ep.request->attempt(), static_cast<size_t>(config_.chunk_bytes));
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = episodes_.find(id);
      if (it == episodes_.end()) continue;
      const bool returned = it->second.returned;
      episodes_.erase(it);
      if (!returned && !stopping_) {
        Finished& f = outbox_[id];
        f.chunks = std::move(chunks);
        for (const auto& c : f.chunks) f.bytes += static_cast<int64_t>(c.size());
        outbox_bytes_ += f.bytes;
        f.order = next_order_++;
        unsent_.push_back(id);
      }
    }
    out_cv_.notify_all();
    idle_cv_.notify_all();
  }
}

v1::Trajectory WorkerService::RunOne(const std::string& id, const Episode& ep,
                                     Clock::time_point started) {
  const v1::EpisodeRequest& req = *ep.request;
  const Clock::time_point deadline = req.timeout_ms() > 0
                                         ? ep.accepted + std::chrono::milliseconds(req.timeout_ms())
                                         : Clock::time_point::max();
  if (ep.cancelled->load()) return FailedTrajectory(req, v1::FAILURE_REASON_CANCELLED, "cancelled");
  if (started >= deadline) {
    return FailedTrajectory(req, v1::FAILURE_REASON_TIMEOUT, "deadline passed before start");
  }
  auto env = envs_.Get(req.env(), req.env_config());
  v1::Trajectory t;
  std::shared_ptr<const envs::runtime::PolicySnapshot> snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto held = held_.find(req.policy_version());
    snapshot = held != held_.end() ? held->second : policy_;
  }
  if (!env.ok()) {
    t = FailedTrajectory(req, v1::FAILURE_REASON_ENV_ERROR, env.status().ToString());
  } else {
    envs::runtime::EpisodeInput input = ToEpisodeInput(req);
    input.policy = snapshot;
    input.deadline = deadline;
    input.cancelled = ep.cancelled.get();
    Result<envs::runtime::Trajectory> result = (*env)->Run(input);
    if (!result.ok()) {
      t = FailedTrajectory(req, v1::FAILURE_REASON_ENV_ERROR, result.status().ToString());
    } else {
      t = ToProto(*result);
    }
  }
  t.set_episode_id(id);
  t.set_env(req.env());
  t.set_group_id(req.group_id());
  t.set_group_index(req.group_index());
  t.set_worker_id(worker_id_);
  if (t.policy_version() == 0) {
    t.set_policy_version(snapshot ? snapshot->version : req.policy_version());
  }
  const double wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  if (t.accounting().latency_ms() == 0) t.mutable_accounting()->set_latency_ms(wall_ms);
  if (ep.cancelled->load() && t.failure().reason() == v1::FAILURE_REASON_NONE) {
    t.mutable_failure()->set_reason(v1::FAILURE_REASON_CANCELLED);
  }
  if (Clock::now() > deadline && t.failure().reason() == v1::FAILURE_REASON_NONE) {
    t.mutable_failure()->set_reason(v1::FAILURE_REASON_TIMEOUT);
    t.mutable_failure()->set_message("episode ran past its timeout_ms");
  }
  Status valid = ValidateTrajectory(t);
  if (!valid.ok()) {
    return FailedTrajectory(req, v1::FAILURE_REASON_ENV_ERROR,
                            "env returned an invalid trajectory: " + valid.message());
  }
  const size_t size = t.ByteSizeLong();
  if (size > static_cast<size_t>(config_.max_trajectory_bytes)) {
    return FailedTrajectory(
        req, v1::FAILURE_REASON_ENV_ERROR,
        "trajectory of " + std::to_string(size) + " bytes exceeds max_trajectory_bytes");
  }
  return t;
}

bool WorkerService::HasOutgoingLocked() const {
  if (!rejected_.empty() || !policy_applied_.empty() || status_dirty_) return true;
  if (unsent_.empty()) return false;
  // Not while the next chunk to send is still lent to a message of a superseded stream.
  auto it = outbox_.find(unsent_.front());
  return it == outbox_.end() || it->second.sent ||
         it->second.next_chunk >= it->second.chunks.size() ||
         !it->second.chunks[it->second.next_chunk].empty();
}

void WorkerService::FillMessageLocked(v1::WorkerMessage* msg, std::vector<Lent>* lent) {
  size_t bytes = 0;
  const size_t budget = static_cast<size_t>(config_.chunk_bytes);
  // Small trajectories batch together; a parted one continues at the front until all of its
  // parts went out, so that parts stay in order on one stream.
  while (!unsent_.empty() && bytes < budget) {
    auto it = outbox_.find(unsent_.front());
    if (it == outbox_.end() || it->second.sent) {
      unsent_.pop_front();
      continue;
    }
    Finished& f = it->second;
    while (f.next_chunk < f.chunks.size() && bytes < budget) {
      std::string& c = f.chunks[f.next_chunk];
      if (c.empty()) break;  // lent to a message still being written on an old stream
      bytes += c.size();
      lent->push_back(Lent{it->first, f.order, f.next_chunk});
      AppendSerializedChunk(msg, &c);
      ++f.next_chunk;
    }
    if (f.next_chunk < f.chunks.size()) break;
    f.sent = true;
    unsent_.pop_front();
  }
  for (auto& r : rejected_) *msg->add_rejected() = std::move(r);
  rejected_.clear();
  for (auto& p : policy_applied_) *msg->add_policy_applied() = std::move(p);
  policy_applied_.clear();
  if (status_dirty_) {
    *msg->mutable_status() = StatusLocked();
    status_dirty_ = false;
  }
}

void WorkerService::ReturnLentLocked(v1::WorkerMessage* msg, const std::vector<Lent>& lent) {
  std::vector<std::string> bytes = TakeBackSerializedChunks(msg);
  for (size_t i = 0; i < lent.size() && i < bytes.size(); ++i) {
    auto it = outbox_.find(lent[i].id);
    // Gone (acknowledged meanwhile) or a later episode under the same id: drop the bytes.
    if (it == outbox_.end() || it->second.order != lent[i].order) continue;
    it->second.chunks[lent[i].chunk].swap(bytes[i]);
  }
}

void WorkerService::WriterLoop(
    uint64_t session, grpc::ServerReaderWriter<v1::WorkerMessage, v1::LearnerMessage>* stream) {
  std::vector<Lent> lent;
  for (;;) {
    v1::WorkerMessage msg;
    lent.clear();
    {
      std::unique_lock<std::mutex> lock(mu_);
      out_cv_.wait(lock, [&] { return stopping_ || session_ != session || HasOutgoingLocked(); });
      if (stopping_ || session_ != session) return;
      FillMessageLocked(&msg, &lent);
    }
    if (lent.empty() && msg.rejected_size() == 0 && msg.policy_applied_size() == 0 &&
        !msg.has_status()) {
      continue;
    }
    // Write serializes the message before it returns, so the lent chunks can go back at once.
    const bool ok = stream->Write(msg);
    if (!lent.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      ReturnLentLocked(&msg, lent);
    }
    out_cv_.notify_all();
    if (!ok) return;
  }
}

grpc::Status WorkerService::Rollout(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::WorkerMessage, v1::LearnerMessage>* stream) {
  grpc::Status auth = CheckToken(*ctx, config_.auth.token);
  if (!auth.ok()) return auth;
  uint64_t session = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is stopping");
    // A new stream supersedes the old one; everything unacknowledged is sent again on it.
    if (session_ctx_ != nullptr) session_ctx_->TryCancel();
    session = ++sessions_opened_;
    session_ = session;
    session_ctx_ = ctx;
    std::vector<std::pair<uint64_t, std::string>> order;
    order.reserve(outbox_.size());
    for (auto& [id, f] : outbox_) {
      f.sent = false;
      f.next_chunk = 0;
      order.emplace_back(f.order, id);
    }
    std::sort(order.begin(), order.end());
    unsent_.clear();
    for (auto& [o, id] : order) unsent_.push_back(std::move(id));
    status_dirty_ = true;
  }
  out_cv_.notify_all();
  // Ends this stream's session (unless a newer stream superseded it) and joins its writer, on
  // every way out of the read loop: a std::thread destroyed while joinable would terminate the
  // worker, and an exception below (bad_alloc in a policy or an episode) must not do that.
  auto end_session = [this, session] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (session_ == session) {
        session_ = 0;
        session_ctx_ = nullptr;
      }
    }
    out_cv_.notify_all();
  };
  struct WriterJoin {
    std::function<void()> end;
    std::thread thread;
    ~WriterJoin() {
      if (!thread.joinable()) return;
      end();
      thread.join();
    }
  } writer{end_session, std::thread([this, session, stream] { WriterLoop(session, stream); })};

  PolicyAssembler policy_parts(config_.max_policy_bytes, config_.chunk_bytes);
  v1::LearnerMessage msg;
  while (stream->Read(&msg)) {
    Status valid = ValidateLearnerMessage(msg);
    std::shared_ptr<const envs::runtime::PolicySnapshot> completed;
    Status policy_status;
    if (valid.ok() && msg.has_policy()) {
      auto added = policy_parts.Add(msg.policy());
      if (added.ok()) {
        completed = *added;
      } else {
        policy_status = added.status();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (session_ != session) break;
      if (!valid.ok()) {
        RejectLocked("", v1::REJECT_REASON_INVALID, valid.message());
      } else {
        const int64_t before = outbox_bytes_;
        for (const auto& id : msg.acks()) {
          auto it = outbox_.find(id);
          if (it == outbox_.end()) continue;
          outbox_bytes_ -= it->second.bytes;
          outbox_.erase(it);
        }
        if (before >= config_.max_unacked_bytes && outbox_bytes_ < config_.max_unacked_bytes) {
          work_cv_.notify_all();
        }
        if (msg.acks_size() > 0) status_dirty_ = status_dirty_ || draining_;
        for (const auto& id : msg.cancel()) {
          auto it = episodes_.find(id);
          if (it != episodes_.end()) it->second.cancelled->store(true);
        }
        if (!policy_status.ok()) {
          v1::PolicyApplied& p = policy_applied_.emplace_back();
          p.set_version(msg.policy().version());
          p.set_ok(false);
          p.set_message(policy_status.message());
        } else if (completed != nullptr) {
          v1::PolicyApplied& p = policy_applied_.emplace_back();
          p.set_version(completed->version);
          p.set_ok(true);
          held_[completed->version] = completed;
          while (held_.size() > kHeldPolicies) held_.erase(held_.begin());
          if (policy_ == nullptr || completed->version > policy_->version) {
            policy_ = completed;  // episodes started from now on use it
            status_dirty_ = true;
          } else {
            p.set_message("version not newer than the one held; kept " +
                          std::to_string(policy_->version) + " as the newest");
          }
        }
        for (auto& req : *msg.mutable_episodes()) HandleEpisodeLocked(&req);
      }
    }
    out_cv_.notify_all();
    idle_cv_.notify_all();
    msg.Clear();
  }
  end_session();
  writer.thread.join();
  return grpc::Status::OK;
}

std::string WorkerService::RenderMetrics() {
  int64_t running = 0;
  int64_t unacked = 0;
  bool draining = false;
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running = static_cast<int64_t>(episodes_.size());
    unacked = static_cast<int64_t>(outbox_.size());
    draining = draining_;
    version = policy_ ? policy_->version : 0;
  }
  return metrics_.Render(running, unacked, config_.capacity, draining, version);
}

}  // namespace allot::rollout
