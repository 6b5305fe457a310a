#include "rollout/dispatcher.h"

#include <algorithm>
#include <random>
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

namespace {

LedgerOptions LedgerOptionsOf(const DispatcherConfig& c, int64_t max_policy_lag) {
  return {.max_attempts = c.max_attempts,
          .max_policy_lag = max_policy_lag,
          .remember_closed = c.remember_closed};
}

}  // namespace

Dispatcher::Dispatcher(DispatcherConfig config, DispatcherOptions options)
    : config_(std::move(config)),
      options_(options),
      ledger_(LedgerOptionsOf(config_, options.max_policy_lag)) {}

Result<std::unique_ptr<Dispatcher>> Dispatcher::Create(const DispatcherConfig& config,
                                                       DispatcherOptions options) {
  if (config.chunk_bytes * 2 > config.max_message_bytes) {
    return InvalidArgument("rollout.dispatcher.chunk_bytes: must be at most max_message_bytes / 2");
  }
  if (config.reconnect_max_ms < config.reconnect_initial_ms) {
    return InvalidArgument("rollout.dispatcher.reconnect_max_ms: below reconnect_initial_ms");
  }
  if (config.auth.tls() && (config.auth.tls_cert.empty() != config.auth.tls_key.empty())) {
    return InvalidArgument("rollout.dispatcher.auth: tls_cert and tls_key must be set together");
  }
  std::unique_ptr<Dispatcher> d(new Dispatcher(config, options));
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
        // Every recent version the worker lacks, oldest first: pinned episodes sample them.
        auto chunks = std::make_shared<std::vector<v1::PolicyChunk>>();
        for (const auto& [version, part] : recent_) {
          if (version > reply.policy_version())
            chunks->insert(chunks->end(), part->begin(), part->end());
        }
        conn->policy_chunks = std::move(chunks);
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
      LoseConnectionLocked(index);
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

void Dispatcher::LoseConnectionLocked(int index) {
  Connection& conn = *conns_[index];
  if (!conn.connected) return;
  conn.connected = false;
  conn.ctx = nullptr;
  ++conn.session;
  --stats_.workers_connected;
  ++stats_.worker_losses;
  // Everything in flight there goes back to the front of the queue: the ledger, not the
  // worker, owns episodes. If the worker finished some and resends them later, they are
  // deduplicated by id.
  conn.to_send.clear();
  conn.acks.clear();
  conn.policy_chunks = nullptr;
  ledger_.LoseWorker(index);
  ScheduleLocked();
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
      // Episodes only once every policy chunk queued before them is on its way: the worker
      // applies a message's policy before its episodes, so an episode pinned to a version (or
      // submitted after its publish) never starts on a worker that lacks it.
      const bool policy_pending =
          conn->policy_chunks && conn->policy_next < conn->policy_chunks->size();
      while (!policy_pending && !conn->to_send.empty() &&
             msg.episodes_size() < kMaxEpisodesPerMessage && bytes < budget) {
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
    const uint64_t current = policy_ ? policy_->version : 0;
    for (auto& t : done) {
      conn->acks.push_back(t.episode_id());
      ledger_.Accept(std::move(t), current, conn->name);
    }
    for (const auto& id : invalid) {
      ++stats_.invalid_trajectories;
      // A worker that sends a broken trajectory gets the episode closed as an env error, and
      // the ack makes it forget the broken copy.
      if (ledger_.Fail(id, v1::FAILURE_REASON_ENV_ERROR, "worker sent a malformed trajectory",
                       conn->name)) {
        conn->acks.push_back(id);
      }
    }
    for (const auto& r : msg.rejected()) {
      ++stats_.rejected;
      if (!ledger_.InFlightOn(r.episode_id(), index)) continue;
      switch (r.reason()) {
        case v1::REJECT_REASON_INVALID:
        case v1::REJECT_REASON_UNKNOWN_ENV:
          ledger_.Fail(r.episode_id(), v1::FAILURE_REASON_BAD_REQUEST,
                       r.message().substr(0, kMaxFailureMessageBytes), conn->name);
          break;
        case v1::REJECT_REASON_DRAINING:  // not the episode's fault
          conn->draining = true;
          ledger_.Return(r.episode_id(), index, /*charge=*/false);
          break;
        case v1::REJECT_REASON_NO_CAPACITY:
          conn->full = true;
          ledger_.Return(r.episode_id(), index, /*charge=*/false);
          break;
        default:  // RETURNED and unknown values: run it elsewhere
          ledger_.Return(r.episode_id(), index, /*charge=*/true);
          break;
      }
    }
    if (msg.has_status()) {
      conn->draining = msg.status().draining();
      conn->full = msg.status().free_slots() == 0 && ledger_.in_flight_on(index) > 0;
    } else if (!done.empty()) {
      conn->full = false;
    }
    ScheduleLocked();
  }
  conn->cv.notify_all();
  ready_cv_.notify_all();
}

void Dispatcher::ScheduleLocked() {
  if (stopping_ || !ledger_.has_pending()) return;
  const LedgerStats ls = ledger_.stats();
  int64_t budget = config_.max_buffered - ls.in_flight - ls.ready;
  if (budget <= 0) return;
  // Water-filling: every episode goes to the worker with the most free slots, so that a batch
  // smaller than the total free capacity is spread over all workers instead of filling the
  // first one (all workers run in parallel, and each stream carries a share of the bytes).
  std::vector<std::pair<int64_t, int>> heap;  // (free slots, connection), max-heap
  for (int i = 0; i < static_cast<int>(conns_.size()); ++i) {
    Connection& c = *conns_[i];
    if (!c.connected || c.draining || c.full) continue;
    const int64_t free = static_cast<int64_t>(c.capacity) - ledger_.in_flight_on(i);
    if (free > 0) heap.emplace_back(free, i);
  }
  if (heap.empty()) return;
  std::make_heap(heap.begin(), heap.end());
  std::vector<bool> touched(conns_.size(), false);
  const uint64_t version = policy_ ? policy_->version : 0;
  while (budget > 0 && !heap.empty()) {
    const int i = heap.front().second;
    std::optional<v1::EpisodeRequest> request = ledger_.Dispatch(i, version);
    if (!request.has_value()) break;
    std::pop_heap(heap.begin(), heap.end());
    conns_[i]->to_send.push_back(std::move(*request));
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
  ALLOT_RETURN_IF_ERROR(ledger_.Submit(std::move(requests)));
  ScheduleLocked();
  return Status::Ok();
}

Status Dispatcher::PublishPolicy(envs::runtime::PolicySnapshot policy) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t current = policy_ ? policy_->version : 0;
  if (policy.version <= current) {
    return InvalidArgument("policy version " + std::to_string(policy.version) +
                           " is not newer than " + std::to_string(current));
  }
  if (policy.kind == envs::runtime::PolicySnapshot::Kind::kNone)
    return InvalidArgument("policy kind: unspecified");
  auto snap = std::make_shared<const envs::runtime::PolicySnapshot>(std::move(policy));
  auto chunks = std::make_shared<const std::vector<v1::PolicyChunk>>(
      ChunkPolicy(*snap, static_cast<size_t>(config_.chunk_bytes)));
  for (const auto& c : *chunks) {
    ALLOT_RETURN_IF_ERROR(ValidatePolicyChunk(c, 1LL << 40, config_.chunk_bytes));
  }
  policy_ = snap;
  policy_chunks_ = chunks;
  recent_.emplace_back(snap->version, chunks);
  while (recent_.size() > std::max<size_t>(options_.policy_history, 1)) recent_.pop_front();
  for (auto& c : conns_) {
    if (!c->connected) continue;
    if (c->policy_chunks && c->policy_next < c->policy_chunks->size()) {
      // The versions not sent yet go first: episodes pinned to one of them (grpo.async, a
      // resume that serves the versions in flight one after another) must find it at the worker.
      auto queued = std::make_shared<std::vector<v1::PolicyChunk>>(
          c->policy_chunks->begin() + static_cast<ptrdiff_t>(c->policy_next),
          c->policy_chunks->end());
      queued->insert(queued->end(), chunks->begin(), chunks->end());
      c->policy_chunks = std::move(queued);
    } else {
      c->policy_chunks = chunks;
    }
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
  if (!ready_cv_.wait_for(lock, timeout, [&] { return stopping_ || ledger_.ready() > 0; })) {
    return std::nullopt;
  }
  std::optional<FinishedEpisode> f = ledger_.PopReady();
  ScheduleLocked();
  return f;
}

std::vector<FinishedEpisode> Dispatcher::NextGroup(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!ready_cv_.wait_for(lock, timeout, [&] { return stopping_ || ledger_.ready() > 0; })) {
    return {};
  }
  std::vector<FinishedEpisode> group = ledger_.PopReadyGroup();
  ScheduleLocked();
  return group;
}

DispatcherStats Dispatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  DispatcherStats s = stats_;
  const LedgerStats l = ledger_.stats();
  s.submitted = l.submitted;
  s.finished = l.finished;
  s.pending = l.pending;
  s.open = l.open;
  s.closed_remembered = l.closed_remembered;
  s.in_flight = l.in_flight;
  s.ready = l.ready;
  s.duplicates_dropped = l.duplicates_dropped;
  s.orphans_dropped = l.orphans_dropped;
  s.stale_discarded = l.stale_discarded;
  s.redispatched = l.redispatched;
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
    std::vector<std::pair<int, uint64_t>> live;  // (connection, session)
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < static_cast<int>(conns_.size()); ++i) {
        if (conns_[i]->connected) live.emplace_back(i, conns_[i]->session);
      }
    }
    for (auto [index, session] : live) {
      Connection* conn;
      {
        std::lock_guard<std::mutex> lock(mu_);
        conn = conns_[index].get();
      }
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
        LoseConnectionLocked(index);
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
