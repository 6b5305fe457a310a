#include "rollout/dispatcher.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "rollout/chunking.h"
#include "rollout/security.h"
#include "rollout/validate.h"

namespace allot::rollout {
namespace {

using Clock = std::chrono::steady_clock;
using Stream = grpc::ClientReaderWriter<v1::LearnerMessage, v1::WorkerMessage>;

uint64_t NowUnixMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

Dispatcher::Dispatcher(DispatcherConfig config)
    : config_(std::move(config)),
      closed_(static_cast<size_t>(std::max<int64_t>(0, config_.remember_closed))) {}

Result<std::unique_ptr<Dispatcher>> Dispatcher::Create(const DispatcherConfig& config) {
  if (config.chunk_bytes * 2 > config.max_message_bytes) {
    return InvalidArgument("rollout.dispatcher.chunk_bytes: must be at most max_message_bytes / 2");
  }
  if (config.reconnect_max_ms < config.reconnect_initial_ms) {
    return InvalidArgument("rollout.dispatcher.reconnect_max_ms: below reconnect_initial_ms");
  }
  if (config.auth.tls() && (config.auth.tls_cert.empty() != config.auth.tls_key.empty())) {
    return InvalidArgument("rollout.dispatcher.auth: tls_cert and tls_key must be set together");
  }
  std::unique_ptr<Dispatcher> d(new Dispatcher(config));
  for (const auto& address : config.workers) ALLOT_RETURN_IF_ERROR(d->AddWorker(address));
  d->heartbeat_ = std::thread([p = d.get()] { p->HeartbeatLoop(); });
  return d;
}

Dispatcher::~Dispatcher() { Shutdown(); }

Status Dispatcher::AddWorker(const std::string& address) {
  if (address.empty()) return InvalidArgument("rollout.dispatcher.workers: empty address");
  ALLOT_ASSIGN_OR_RETURN(auto creds, MakeChannelCredentials(config_.auth));
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, config_.reconnect_initial_ms);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, config_.reconnect_initial_ms);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, config_.reconnect_max_ms);
  if (!config_.auth.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(config_.auth.tls_server_name);
  }
  AddConnection(grpc::CreateCustomChannel(address, creds, args), address);
  return Status::Ok();
}

void Dispatcher::AddChannel(std::shared_ptr<grpc::Channel> channel, const std::string& name) {
  AddConnection(std::move(channel), name);
}

void Dispatcher::AddConnection(std::shared_ptr<grpc::Channel> channel, const std::string& name) {
  auto conn = std::make_unique<Connection>();
  conn->name = name;
  conn->stub = v1::RolloutWorker::NewStub(channel);
  conn->channel = std::move(channel);
  std::lock_guard<std::mutex> lock(mu_);
  const int index = static_cast<int>(conns_.size());
  conns_.push_back(std::move(conn));
  conns_.back()->thread = std::thread([this, index] { ConnectionLoop(index); });
}

bool Dispatcher::SleepUnlessStopping(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !stop_cv_.wait_for(lock, d, [&] { return stopping_; });
}

void Dispatcher::ConnectionLoop(int index) {
  Connection* conn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conn = conns_[index].get();
  }
  std::mt19937 rng(static_cast<uint32_t>(index * 7919 + 17));
  int64_t backoff = config_.reconnect_initial_ms;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    v1::HelloRequest hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_learner_id(config_.learner_id.substr(0, kMaxIdBytes));
    v1::HelloReply reply;
    grpc::ClientContext hello_ctx;
    AttachToken(hello_ctx, config_.auth.token);
    hello_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    grpc::Status hs = conn->stub->Hello(&hello_ctx, hello, &reply);
    if (!hs.ok() || reply.capacity() == 0 || reply.protocol_version() != v1::PROTOCOL_VERSION_1) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        conn->hello_error =
            !hs.ok() ? "gRPC code " + std::to_string(hs.error_code()) + ": " + hs.error_message()
            : reply.capacity() == 0 ? "worker reports capacity 0"
                                    : "worker speaks another protocol version";
      }
      // Jittered exponential backoff: workers restarting together do not reconnect in lockstep.
      std::uniform_int_distribution<int64_t> jitter(0, backoff / 2);
      if (!SleepUnlessStopping(std::chrono::milliseconds(backoff + jitter(rng)))) return;
      backoff = std::min<int64_t>(backoff * 2, config_.reconnect_max_ms);
      continue;
    }
    grpc::ClientContext ctx;
    AttachToken(ctx, config_.auth.token);
    std::unique_ptr<Stream> stream = conn->stub->Rollout(&ctx);
    uint64_t session = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        ctx.TryCancel();
        stream->Finish();
        return;
      }
      conn->connected = true;
      conn->hello_error.clear();
      conn->draining = reply.draining();
      conn->full = false;
      conn->capacity = std::min<uint32_t>(reply.capacity(), 1u << 20);
      conn->missed = 0;
      conn->ctx = &ctx;
      session = ++conn->session;
      if (policy_chunks_ != nullptr && reply.policy_version() < policy_->version) {
        conn->policy_chunks = policy_chunks_;
        conn->policy_next = 0;
      }
      ++stats_.workers_connected;
      ScheduleLocked();
    }
    const Clock::time_point connected_at = Clock::now();
    std::thread writer([this, index, session, s = stream.get()] { WriterLoop(index, session, s); });
    TrajectoryAssembler assembler(config_.max_trajectory_bytes, 4096);
    v1::WorkerMessage msg;
    while (stream->Read(&msg)) {
      std::vector<v1::Trajectory> done;
      std::vector<std::string> invalid;
      int64_t bytes = 0;
      for (auto& chunk : *msg.mutable_chunks()) {
        bytes += static_cast<int64_t>(chunk.ByteSizeLong());
        auto added = assembler.Add(chunk);
        if (!added.ok()) {
          invalid.push_back(chunk.episode_id());
          continue;
        }
        if (!added->has_value()) continue;
        v1::Trajectory t = std::move(**added);
        if (!ValidateTrajectory(t).ok() || t.episode_id() != chunk.episode_id()) {
          invalid.push_back(chunk.episode_id());
          continue;
        }
        done.push_back(std::move(t));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        stats_.bytes_received += bytes;
      }
      HandleMessage(index, std::move(done), std::move(invalid), msg);
      msg.Clear();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      LoseConnectionLocked(*conn);
    }
    conn->cv.notify_all();
    writer.join();
    ctx.TryCancel();
    stream->Finish();
    // A session that lived a while resets the backoff; a flapping worker keeps backing off.
    if (Clock::now() - connected_at > std::chrono::seconds(5))
      backoff = config_.reconnect_initial_ms;
    if (!SleepUnlessStopping(std::chrono::milliseconds(backoff))) return;
    backoff = std::min<int64_t>(backoff * 2, config_.reconnect_max_ms);
  }
}

void Dispatcher::LoseConnectionLocked(Connection& conn) {
  if (!conn.connected) return;
  conn.connected = false;
  conn.ctx = nullptr;
  ++conn.session;
  --stats_.workers_connected;
  ++stats_.worker_losses;
  // Everything in flight there goes back to the front of the queue: the ledger, not the
  // worker, owns episodes. If the worker finished some and resends them later, they are
  // deduplicated by id.
  std::vector<std::string> ids(conn.assigned.begin(), conn.assigned.end());
  conn.assigned.clear();
  conn.to_send.clear();
  conn.acks.clear();
  conn.policy_chunks = nullptr;
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    auto e = ledger_.find(*it);
    if (e == ledger_.end() || e->second.state != State::kInFlight) continue;
    --in_flight_;
    e->second.conn = -1;
    RequeueLocked(*it, e->second, /*front=*/true);
  }
  ScheduleLocked();
}

void Dispatcher::RequeueLocked(const std::string& id, Entry& entry, bool front) {
  if (entry.attempts >= static_cast<uint32_t>(config_.max_attempts)) {
    FinishedEpisode f;
    f.trajectory.set_episode_id(id);
    f.trajectory.set_env(entry.request.env());
    f.trajectory.set_group_id(entry.request.group_id());
    f.trajectory.set_group_index(entry.request.group_index());
    f.trajectory.mutable_failure()->set_reason(v1::FAILURE_REASON_WORKER_LOST);
    f.trajectory.mutable_failure()->set_message("gave up after " + std::to_string(entry.attempts) +
                                                " dispatches");
    f.attempts = entry.attempts;
    CloseLocked(entry, std::move(f));
    return;
  }
  if (entry.state != State::kPending) ++pending_count_;
  entry.state = State::kPending;
  ++stats_.redispatched;
  if (front) {
    pending_.push_front(id);
  } else {
    pending_.push_back(id);
  }
}

void Dispatcher::WriterLoop(int index, uint64_t session, Stream* stream) {
  Connection* conn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conn = conns_[index].get();
  }
  const size_t budget = static_cast<size_t>(config_.chunk_bytes);
  for (;;) {
    v1::LearnerMessage msg;
    {
      std::unique_lock<std::mutex> lock(mu_);
      conn->cv.wait(lock, [&] {
        return stopping_ || conn->session != session || !conn->to_send.empty() ||
               !conn->acks.empty() ||
               (conn->policy_chunks && conn->policy_next < conn->policy_chunks->size());
      });
      if (stopping_ || conn->session != session) break;
      size_t bytes = 0;
      if (conn->policy_chunks && conn->policy_next < conn->policy_chunks->size()) {
        *msg.mutable_policy() = (*conn->policy_chunks)[conn->policy_next++];
        bytes += msg.policy().data().size();
      }
      const size_t acks = std::min<size_t>(conn->acks.size(), kMaxAcksPerMessage);
      for (size_t i = 0; i < acks; ++i) *msg.add_acks() = std::move(conn->acks[i]);
      conn->acks.erase(conn->acks.begin(), conn->acks.begin() + static_cast<ptrdiff_t>(acks));
      while (!conn->to_send.empty() && msg.episodes_size() < kMaxEpisodesPerMessage &&
             bytes < budget) {
        bytes += conn->to_send.front().ByteSizeLong();
        *msg.add_episodes() = std::move(conn->to_send.front());
        conn->to_send.pop_front();
      }
    }
    if (!stream->Write(msg)) break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (conn->session == session && conn->ctx != nullptr) conn->ctx->TryCancel();
}

void Dispatcher::HandleMessage(int index, std::vector<v1::Trajectory> done,
                               std::vector<std::string> invalid, const v1::WorkerMessage& msg) {
  Connection* conn;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conn = conns_[index].get();
    for (auto& t : done) {
      conn->acks.push_back(t.episode_id());
      AcceptLocked(index, std::move(t));
    }
    for (const auto& id : invalid) {
      ++stats_.invalid_trajectories;
      auto e = ledger_.find(id);
      if (e == ledger_.end() || e->second.state == State::kDone) continue;
      // A worker that sends a broken trajectory gets the episode closed as an env error, and
      // the ack makes it forget the broken copy.
      conn->acks.push_back(id);
      if (e->second.state == State::kInFlight && e->second.conn >= 0) {
        conns_[e->second.conn]->assigned.erase(id);
        --in_flight_;
      }
      FinishedEpisode f;
      f.trajectory.set_episode_id(id);
      f.trajectory.set_env(e->second.request.env());
      f.trajectory.set_group_id(e->second.request.group_id());
      f.trajectory.set_group_index(e->second.request.group_index());
      f.trajectory.mutable_failure()->set_reason(v1::FAILURE_REASON_ENV_ERROR);
      f.trajectory.mutable_failure()->set_message("worker sent a malformed trajectory");
      f.attempts = e->second.attempts;
      f.worker = conn->name;
      CloseLocked(e->second, std::move(f));
    }
    for (const auto& r : msg.rejected()) {
      ++stats_.rejected;
      auto e = ledger_.find(r.episode_id());
      if (e == ledger_.end() || e->second.state != State::kInFlight || e->second.conn != index) {
        continue;
      }
      Entry& entry = e->second;
      conn->assigned.erase(r.episode_id());
      --in_flight_;
      entry.conn = -1;
      switch (r.reason()) {
        case v1::REJECT_REASON_INVALID:
        case v1::REJECT_REASON_UNKNOWN_ENV: {
          FinishedEpisode f;
          f.trajectory.set_episode_id(r.episode_id());
          f.trajectory.set_env(entry.request.env());
          f.trajectory.set_group_id(entry.request.group_id());
          f.trajectory.set_group_index(entry.request.group_index());
          f.trajectory.mutable_failure()->set_reason(v1::FAILURE_REASON_BAD_REQUEST);
          f.trajectory.mutable_failure()->set_message(
              r.message().substr(0, kMaxFailureMessageBytes));
          f.attempts = entry.attempts;
          f.worker = conn->name;
          CloseLocked(entry, std::move(f));
          break;
        }
        case v1::REJECT_REASON_DRAINING:
          conn->draining = true;
          --entry.attempts;  // not the episode's fault
          RequeueLocked(r.episode_id(), entry, true);
          break;
        case v1::REJECT_REASON_NO_CAPACITY:
          conn->full = true;
          --entry.attempts;
          RequeueLocked(r.episode_id(), entry, true);
          break;
        default:  // RETURNED and unknown values: run it elsewhere
          RequeueLocked(r.episode_id(), entry, true);
          break;
      }
    }
    if (msg.has_status()) {
      conn->draining = msg.status().draining();
      conn->full = msg.status().free_slots() == 0 && !conn->assigned.empty();
    } else if (!done.empty()) {
      conn->full = false;
    }
    ScheduleLocked();
  }
  conn->cv.notify_all();
  ready_cv_.notify_all();
}

void Dispatcher::AcceptLocked(int index, v1::Trajectory t) {
  const std::string id = t.episode_id();
  auto e = ledger_.find(id);
  if (e == ledger_.end()) {
    if (closed_.Contains(id)) {
      ++stats_.duplicates_dropped;
    } else {
      ++stats_.orphans_dropped;
    }
    return;
  }
  Entry& entry = e->second;
  if (entry.state == State::kDone) {
    ++stats_.duplicates_dropped;
    return;
  }
  if (entry.state == State::kInFlight) {
    if (entry.conn >= 0) conns_[entry.conn]->assigned.erase(id);
    --in_flight_;
    entry.conn = -1;
  }
  // Staleness bound: lag in policy versions between now and when the episode was sampled.
  const uint64_t current = policy_ ? policy_->version : 0;
  const int64_t lag =
      current > t.policy_version() ? static_cast<int64_t>(current - t.policy_version()) : 0;
  double weight = 1.0;
  if (config_.max_policy_lag >= 0 && lag > config_.max_policy_lag) {
    if (config_.stale_policy == "discard") {
      ++stats_.stale_discarded;
      if (entry.attempts >= static_cast<uint32_t>(config_.max_attempts)) {
        t.mutable_failure()->set_reason(v1::FAILURE_REASON_STALE);
        t.mutable_failure()->set_message("policy lag " + std::to_string(lag) +
                                         " > max_policy_lag " +
                                         std::to_string(config_.max_policy_lag));
      } else {
        RequeueLocked(id, entry, /*front=*/true);
        return;
      }
    } else {
      ++stats_.stale_downweighted;
      weight =
          std::pow(config_.stale_weight_decay, static_cast<double>(lag - config_.max_policy_lag));
    }
  }
  FinishedEpisode f;
  f.trajectory = std::move(t);
  f.weight = weight;
  f.policy_lag = lag;
  f.attempts = entry.attempts;
  f.worker = conns_[index]->name;
  CloseLocked(entry, std::move(f));
}

void Dispatcher::CloseLocked(Entry& entry, FinishedEpisode finished) {
  if (entry.state == State::kPending) --pending_count_;
  ++stats_.finished;
  const std::string group_id = entry.request.group_id();
  const uint32_t group_size = entry.request.group_size();
  // The ledger forgets closed episodes (memory stays bounded however long the run); the id is
  // remembered a while longer to count late duplicates and refuse resubmission.
  const std::string id = std::move(entry.id);
  closed_.Insert(id);
  ledger_.erase(id);
  if (config_.deliver_groups && !group_id.empty()) {
    Group& g = groups_[group_id];
    g.size = group_size;
    g.held.push_back(std::move(finished));
    if (g.held.size() >= g.size) {
      std::sort(g.held.begin(), g.held.end(), [](const auto& a, const auto& b) {
        return a.trajectory.group_index() < b.trajectory.group_index();
      });
      for (auto& f : g.held) ready_.push_back(std::move(f));
      groups_.erase(group_id);
    }
    return;
  }
  ready_.push_back(std::move(finished));
}

void Dispatcher::ScheduleLocked() {
  if (stopping_ || pending_.empty()) return;
  int64_t budget = config_.max_buffered - in_flight_ - static_cast<int64_t>(ready_.size());
  if (budget <= 0) return;
  // Water-filling: every episode goes to the worker with the most free slots, so that a batch
  // smaller than the total free capacity is spread over all workers instead of filling the
  // first one (all workers run in parallel, and each stream carries a share of the bytes).
  std::vector<std::pair<int64_t, int>> heap;  // (free slots, connection), max-heap
  for (int i = 0; i < static_cast<int>(conns_.size()); ++i) {
    Connection& c = *conns_[i];
    if (!c.connected || c.draining || c.full) continue;
    const int64_t free = static_cast<int64_t>(c.capacity) - static_cast<int64_t>(c.assigned.size());
    if (free > 0) heap.emplace_back(free, i);
  }
  if (heap.empty()) return;
  std::make_heap(heap.begin(), heap.end());
  std::vector<bool> touched(conns_.size(), false);
  const uint64_t version = policy_ ? policy_->version : 0;
  while (budget > 0 && !pending_.empty() && !heap.empty()) {
    std::string id = std::move(pending_.front());
    pending_.pop_front();
    auto e = ledger_.find(id);
    if (e == ledger_.end() || e->second.state != State::kPending) continue;
    --pending_count_;
    std::pop_heap(heap.begin(), heap.end());
    const int i = heap.back().second;
    Connection& c = *conns_[i];
    Entry& entry = e->second;
    entry.state = State::kInFlight;
    entry.conn = i;
    ++entry.attempts;
    entry.request.set_attempt(entry.attempts);
    entry.request.set_policy_version(version);
    c.to_send.push_back(entry.request);
    c.assigned.insert(std::move(id));
    ++in_flight_;
    --budget;
    touched[static_cast<size_t>(i)] = true;
    if (--heap.back().first > 0) {
      std::push_heap(heap.begin(), heap.end());
    } else {
      heap.pop_back();
    }
  }
  for (size_t i = 0; i < touched.size(); ++i) {
    if (touched[i]) conns_[i]->cv.notify_all();
  }
}

Status Dispatcher::Submit(v1::EpisodeRequest request) {
  std::vector<v1::EpisodeRequest> one;
  one.push_back(std::move(request));
  return Submit(std::move(one));
}

Status Dispatcher::Submit(std::vector<v1::EpisodeRequest> requests) {
  for (auto& r : requests) {
    r.set_attempt(0);
    ALLOT_RETURN_IF_ERROR(ValidateEpisodeRequest(r));
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_set<std::string_view> batch;
  batch.reserve(requests.size());
  for (const auto& r : requests) {
    if (ledger_.count(r.episode_id()) > 0 || closed_.Contains(r.episode_id()) ||
        !batch.insert(r.episode_id()).second) {
      return AlreadyExists("episode_id '" + r.episode_id() + "' was already submitted");
    }
  }
  for (auto& r : requests) {
    const std::string id = r.episode_id();
    Entry& e = ledger_[id];
    e.id = id;
    e.request = std::move(r);
    pending_.push_back(id);
    ++pending_count_;
    ++stats_.submitted;
  }
  ScheduleLocked();
  return Status::Ok();
}

Status Dispatcher::PublishPolicy(PolicySnapshot policy) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t current = policy_ ? policy_->version : 0;
  if (policy.version <= current) {
    return InvalidArgument("policy version " + std::to_string(policy.version) +
                           " is not newer than " + std::to_string(current));
  }
  if (policy.kind == v1::POLICY_KIND_UNSPECIFIED)
    return InvalidArgument("policy kind: unspecified");
  auto snap = std::make_shared<const PolicySnapshot>(std::move(policy));
  auto chunks = std::make_shared<const std::vector<v1::PolicyChunk>>(
      ChunkPolicy(*snap, static_cast<size_t>(config_.chunk_bytes)));
  for (const auto& c : *chunks) {
    ALLOT_RETURN_IF_ERROR(ValidatePolicyChunk(c, 1LL << 40, config_.chunk_bytes));
  }
  policy_ = snap;
  policy_chunks_ = chunks;
  for (auto& c : conns_) {
    if (!c->connected) continue;
    c->policy_chunks = chunks;
    c->policy_next = 0;
    c->cv.notify_all();
  }
  return Status::Ok();
}

uint64_t Dispatcher::policy_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_ ? policy_->version : 0;
}

std::optional<FinishedEpisode> Dispatcher::Next(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!ready_cv_.wait_for(lock, timeout, [&] { return stopping_ || !ready_.empty(); })) {
    return std::nullopt;
  }
  if (ready_.empty()) return std::nullopt;
  FinishedEpisode f = std::move(ready_.front());
  ready_.pop_front();
  ScheduleLocked();
  return f;
}

std::vector<FinishedEpisode> Dispatcher::NextGroup(std::chrono::milliseconds timeout) {
  std::vector<FinishedEpisode> group;
  std::unique_lock<std::mutex> lock(mu_);
  if (!ready_cv_.wait_for(lock, timeout, [&] { return stopping_ || !ready_.empty(); })) {
    return group;
  }
  if (ready_.empty()) return group;
  const std::string id = ready_.front().trajectory.group_id();
  do {
    group.push_back(std::move(ready_.front()));
    ready_.pop_front();
  } while (!id.empty() && config_.deliver_groups && !ready_.empty() &&
           ready_.front().trajectory.group_id() == id);
  ScheduleLocked();
  return group;
}

DispatcherStats Dispatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  DispatcherStats s = stats_;
  s.in_flight = in_flight_;
  s.ready = static_cast<int64_t>(ready_.size());
  s.pending = pending_count_;
  s.open = static_cast<int64_t>(ledger_.size());
  s.closed_remembered = static_cast<int64_t>(closed_.size());
  return s;
}

std::string Dispatcher::DescribeUnconnected() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& conn : conns_) {
    if (conn->connected) continue;
    if (!out.empty()) out += ", ";
    out += conn->name + " (" + (conn->hello_error.empty() ? "connecting" : conn->hello_error) + ")";
  }
  return out;
}

bool Dispatcher::WaitForWorkers(int n, std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stats_.workers_connected >= n) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void Dispatcher::HeartbeatLoop() {
  const auto interval = std::chrono::milliseconds(config_.heartbeat_interval_ms);
  while (SleepUnlessStopping(interval)) {
    std::vector<std::pair<Connection*, uint64_t>> live;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& c : conns_) {
        if (c->connected) live.emplace_back(c.get(), c->session);
      }
    }
    for (auto [conn, session] : live) {
      grpc::ClientContext ctx;
      AttachToken(ctx, config_.auth.token);
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::max(interval, std::chrono::milliseconds(100)));
      v1::HeartbeatRequest req;
      req.set_sent_unix_ms(NowUnixMs());
      v1::HeartbeatReply reply;
      grpc::Status s = conn->stub->Heartbeat(&ctx, req, &reply);
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      if (conn->session != session || !conn->connected) continue;
      if (s.ok()) {
        conn->missed = 0;
        conn->draining = reply.draining();
        continue;
      }
      if (++conn->missed >= config_.missed_heartbeats && conn->ctx != nullptr) {
        // Declared dead: ending the stream re-dispatches its episodes at once.
        conn->ctx->TryCancel();
        LoseConnectionLocked(*conn);
        conn->cv.notify_all();
      }
    }
  }
}

void Dispatcher::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& c : conns_) {
      if (c->ctx != nullptr) c->ctx->TryCancel();
      c->cv.notify_all();
    }
  }
  stop_cv_.notify_all();
  ready_cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : conns_) threads.push_back(std::move(c->thread));
  }
  for (auto& t : threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace allot::rollout
