// The dispatcher with in-process workers: the same stream protocol as over the network, minus
// the sockets. Fast enough for the unit label.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <set>
#include <thread>

#include "rollout/dispatcher.h"
#include "rollout/worker.h"
#include "tests/rollout/echo_env.h"
#include "tests/rollout/rollout_test_util.h"

namespace allot::rollout {
namespace {

using namespace std::chrono_literals;
using envs::runtime::PolicySnapshot;
using testing::Collect;
using testing::EchoRequest;
using testing::EchoRequests;

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::RegisterEchoEnv(registry_); }

  WorkerServer* AddWorker(int capacity = 16, int threads = 4, const std::string& metrics = "") {
    WorkerConfig wc;
    wc.capacity = capacity;
    wc.threads = threads;
    wc.metrics_listen = metrics;
    wc.worker_id = "w" + std::to_string(workers_.size());
    auto w = WorkerServer::Start(wc, &registry_, /*in_process=*/true);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    workers_.push_back(std::move(w).value());
    return workers_.back().get();
  }

  std::unique_ptr<Dispatcher> MakeDispatcher(DispatcherConfig dc = {},
                                             int64_t max_policy_lag = -1) {
    dc.heartbeat_interval_ms = 100;
    auto d = Dispatcher::Create(dc, {.max_policy_lag = max_policy_lag});
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    for (auto& w : workers_) (*d)->AddChannel(w->InProcessChannel(), w->service().worker_id());
    EXPECT_TRUE((*d)->WaitForWorkers(static_cast<int>(workers_.size()), 5s));
    return std::move(d).value();
  }

  void TearDown() override {
    for (auto& w : workers_) w->Shutdown();
  }

  EnvRegistry registry_;
  std::vector<std::unique_ptr<WorkerServer>> workers_;
};

TEST_F(DispatcherTest, EveryEpisodeFinishesExactlyOnce) {
  AddWorker();
  AddWorker();
  auto d = MakeDispatcher();
  ASSERT_TRUE(d->Submit(EchoRequests("ep-", 300, "{tokens: 5}")).ok());
  auto done = Collect(*d, 300, 20s);
  ASSERT_EQ(done.size(), 300u);
  std::set<std::string> ids;
  std::set<std::string> workers;
  for (const auto& f : done) {
    const v1::Trajectory& t = f.trajectory;
    ids.insert(t.episode_id());
    workers.insert(t.worker_id());
    EXPECT_EQ(t.failure().reason(), v1::FAILURE_REASON_NONE);
    ASSERT_EQ(t.segments_size(), 2);
    EXPECT_FALSE(t.segments(0).trainable());
    ASSERT_EQ(t.segments(1).ids_size(), 5);
    EXPECT_EQ(t.segments(1).ids(4), testing::EchoToken(t.episode_id(), 4));
    EXPECT_EQ(t.segments(1).logprobs_size(), 5);
    ASSERT_EQ(t.rewards_size(), 2);
    EXPECT_EQ(t.rewards(0).name(), "format");
  }
  EXPECT_EQ(ids.size(), 300u);
  EXPECT_EQ(workers.size(), 2u);  // scheduled across both
  EXPECT_FALSE(d->Next(50ms).has_value());
  EXPECT_EQ(d->stats().duplicates_dropped, 0);
}

TEST_F(DispatcherTest, SubmitRejectsKnownIdsAndInvalidRequests) {
  AddWorker();
  auto d = MakeDispatcher();
  ASSERT_TRUE(d->Submit(EchoRequest("a")).ok());
  EXPECT_EQ(d->Submit(EchoRequest("a")).code(), StatusCode::kAlreadyExists);
  std::vector<v1::EpisodeRequest> twice = {EchoRequest("b"), EchoRequest("b")};
  EXPECT_EQ(d->Submit(twice).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(d->Submit(EchoRequest("bad id!")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Collect(*d, 1, 5s).size(), 1u);
  EXPECT_EQ(d->stats().submitted, 1);
}

// The ledger used to keep every closed episode forever (memory grew with every episode of the
// run): now it holds open episodes only, plus the ids of the most recent closed ones.
TEST_F(DispatcherTest, LedgerForgetsClosedEpisodes) {
  AddWorker();
  DispatcherConfig dc;
  dc.remember_closed = 50;
  auto d = MakeDispatcher(dc);
  ASSERT_TRUE(d->Submit(EchoRequests("ep-", 400, "{tokens: 2}")).ok());
  ASSERT_EQ(Collect(*d, 400, 20s).size(), 400u);
  DispatcherStats s = d->stats();
  EXPECT_EQ(s.finished, 400);
  EXPECT_EQ(s.open, 0);
  EXPECT_EQ(s.pending, 0);
  EXPECT_EQ(s.closed_remembered, 50);
  // A recently closed id is still refused; a forgotten one is new again.
  EXPECT_EQ(d->Submit(EchoRequest("ep-399")).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(d->Submit(EchoRequest("ep-0")).ok());
  EXPECT_EQ(Collect(*d, 1, 5s).size(), 1u);
  EXPECT_EQ(d->stats().open, 0);
}

TEST_F(DispatcherTest, UnknownEnvAndFailingEnvCloseWithReasons) {
  AddWorker();
  auto d = MakeDispatcher();
  v1::EpisodeRequest unknown = EchoRequest("u");
  unknown.set_env("nope");
  ASSERT_TRUE(d->Submit(unknown).ok());
  ASSERT_TRUE(d->Submit(EchoRequest("f", "{fail: true}")).ok());
  auto done = Collect(*d, 2, 5s);
  ASSERT_EQ(done.size(), 2u);
  std::map<std::string, v1::FailureReason> reasons;
  for (const auto& f : done) reasons[f.trajectory.episode_id()] = f.trajectory.failure().reason();
  EXPECT_EQ(reasons["u"], v1::FAILURE_REASON_BAD_REQUEST);
  EXPECT_EQ(reasons["f"], v1::FAILURE_REASON_ENV_ERROR);
}

TEST_F(DispatcherTest, PolicyWeightsArriveInChunksAndSwapBetweenEpisodes) {
  WorkerServer* w = AddWorker();
  auto d = MakeDispatcher();
  PolicySnapshot p;
  p.version = 3;
  p.kind = PolicySnapshot::Kind::kQnetWeights;
  p.bytes = std::string(3 * 1024 * 1024 + 17, 'q');  // four chunks of 1 MiB
  ASSERT_TRUE(d->PublishPolicy(p).ok());
  EXPECT_FALSE(d->PublishPolicy(p).ok());  // not newer
  for (int i = 0; i < 500 && (!w->service().policy() || w->service().policy()->version < 3); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_NE(w->service().policy(), nullptr);
  EXPECT_EQ(w->service().policy()->bytes, p.bytes);
  ASSERT_TRUE(d->Submit(EchoRequest("after")).ok());
  auto done = Collect(*d, 1, 5s);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].trajectory.policy_version(), 3u);
  EXPECT_EQ(done[0].trajectory.info().at("policy_bytes"), std::to_string(p.bytes.size()));
}

// Episodes sampled under v1 finish after v2 is published: lag 1 > max_policy_lag 0.
class StalenessTest : public DispatcherTest {
 protected:
  std::vector<FinishedEpisode> RunStale() {
    WorkerServer* w = AddWorker(8, 8);
    auto d = MakeDispatcher({}, /*max_policy_lag=*/0);
    PolicySnapshot p{.version = 1, .kind = PolicySnapshot::Kind::kQnetWeights, .bytes = "v1"};
    EXPECT_TRUE(d->PublishPolicy(p).ok());
    for (int i = 0; i < 500 && !w->service().policy(); ++i) std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(d->Submit(EchoRequests("s", 4, "{delay_ms: 300}")).ok());
    std::this_thread::sleep_for(100ms);  // running under v1
    p.version = 2;
    p.bytes = "v2";
    EXPECT_TRUE(d->PublishPolicy(p).ok());
    auto done = Collect(*d, 4, 10s);
    stats_ = d->stats();
    return done;
  }
  DispatcherStats stats_;
};

TEST_F(StalenessTest, DiscardReRunsUnderTheNewPolicy) {
  auto done = RunStale();
  ASSERT_EQ(done.size(), 4u);
  EXPECT_EQ(stats_.stale_discarded, 4);
  for (const auto& f : done) {
    EXPECT_EQ(f.trajectory.policy_version(), 2u);
    EXPECT_EQ(f.policy_lag, 0);
    EXPECT_EQ(f.attempts, 2u);
  }
}

// A request pinned to an older version is sampled by it while the worker holds it, an unpinned
// one by the newest; a worker that connects late is sent the recent versions too. Catches: a
// worker that ignores the pin, or one that only ever gets the newest version (asynchronous GRPO
// would train a step on a newer policy than its own).
TEST_F(DispatcherTest, PinnedEpisodesSampleTheirVersion) {
  auto d = Dispatcher::Create(DispatcherConfig{}, {.policy_history = 2});
  ASSERT_TRUE(d.ok());
  PolicySnapshot p{.version = 1, .kind = PolicySnapshot::Kind::kQnetWeights, .bytes = "v1"};
  ASSERT_TRUE((*d)->PublishPolicy(p).ok());
  p.version = 2;
  p.bytes = "v2-longer";
  ASSERT_TRUE((*d)->PublishPolicy(p).ok());
  WorkerServer* w = AddWorker(8, 4);
  (*d)->AddChannel(w->InProcessChannel(), w->service().worker_id());
  ASSERT_TRUE((*d)->WaitForWorkers(1, 5s));
  for (int i = 0; i < 1000 && (!w->service().policy() || w->service().policy()->version < 2); ++i) {
    std::this_thread::sleep_for(5ms);
  }
  auto reqs = EchoRequests("pin", 2, "{tokens: 2}");
  reqs[0].set_policy_version(1);
  ASSERT_TRUE((*d)->Submit(reqs).ok());
  auto done = Collect(**d, 2, 10s);
  ASSERT_EQ(done.size(), 2u);
  std::map<std::string, std::pair<uint64_t, std::string>> got;
  for (const auto& f : done) {
    got[f.trajectory.episode_id()] = {f.trajectory.policy_version(),
                                      f.trajectory.info().at("policy_bytes")};
  }
  EXPECT_EQ(got.at("pin0"), std::make_pair(uint64_t{1}, std::string("2")));
  EXPECT_EQ(got.at("pin1"), std::make_pair(uint64_t{2}, std::string("9")));
  (*d)->Shutdown();
}

TEST_F(DispatcherTest, GrpoGroupsAreDeliveredWhole) {
  AddWorker(8, 4);
  AddWorker(8, 4);
  auto d = MakeDispatcher();
  std::vector<v1::EpisodeRequest> reqs;
  for (int g = 0; g < 3; ++g) {
    for (int i = 0; i < 4; ++i) {
      v1::EpisodeRequest r = EchoRequest("g" + std::to_string(g) + "-" + std::to_string(i),
                                         "{delay_ms: " + std::to_string((3 - i) * 10) + "}");
      r.set_group_id("g" + std::to_string(g));
      r.set_group_index(static_cast<uint32_t>(i));
      r.set_group_size(4);
      reqs.push_back(r);
    }
  }
  ASSERT_TRUE(d->Submit(reqs).ok());
  std::set<std::string> groups;
  for (int k = 0; k < 3; ++k) {
    auto group = d->NextGroup(10s);
    ASSERT_EQ(group.size(), 4u);
    for (uint32_t i = 0; i < 4; ++i) {
      EXPECT_EQ(group[i].trajectory.group_index(), i);
      EXPECT_EQ(group[i].trajectory.group_id(), group[0].trajectory.group_id());
    }
    groups.insert(group[0].trajectory.group_id());
  }
  EXPECT_EQ(groups.size(), 3u);
}

TEST_F(DispatcherTest, BackpressureBoundsWhatIsBuffered) {
  AddWorker(64, 8);
  DispatcherConfig dc;
  dc.max_buffered = 10;
  auto d = MakeDispatcher(dc);
  ASSERT_TRUE(d->Submit(EchoRequests("bp", 50)).ok());
  std::this_thread::sleep_for(200ms);  // nobody consumes
  DispatcherStats s = d->stats();
  EXPECT_LE(s.in_flight + s.ready, 10);
  EXPECT_GE(s.pending, 40);
  EXPECT_EQ(Collect(*d, 50, 10s).size(), 50u);
}

TEST_F(DispatcherTest, EpisodesSpreadOverWorkersByFreeCapacity) {
  // Fewer episodes than free slots: water-filling gives each worker an equal share instead of
  // filling the first one.
  for (int i = 0; i < 4; ++i) AddWorker(/*capacity=*/32, /*threads=*/8);
  auto d = MakeDispatcher();
  ASSERT_TRUE(d->Submit(EchoRequests("spread-", 20, "{delay_ms: 20}")).ok());
  std::map<std::string, int> per_worker;
  for (const auto& f : Collect(*d, 20, 10s)) ++per_worker[f.worker];
  ASSERT_EQ(per_worker.size(), 4u);
  for (const auto& [worker, n] : per_worker) EXPECT_EQ(n, 5) << worker;
}

TEST_F(DispatcherTest, MetricsEndpointServesPrometheusText) {
  WorkerServer* w = AddWorker(16, 4, "127.0.0.1:0");
  ASSERT_GT(w->metrics_port(), 0);
  auto d = MakeDispatcher();
  ASSERT_TRUE(d->Submit(EchoRequests("m", 4)).ok());
  ASSERT_TRUE(d->Submit(EchoRequest("mf", "{fail: true}")).ok());
  ASSERT_EQ(Collect(*d, 5, 5s).size(), 5u);
  httplib::Client client("127.0.0.1", w->metrics_port());
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("allot_worker_episodes_total 5"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("allot_worker_episode_failures_total{reason=\"env_error\"} 1"),
            std::string::npos);
  EXPECT_NE(res->body.find("allot_worker_endpoint_latency_seconds_count{endpoint=\"echo\"} 4"),
            std::string::npos);
  EXPECT_NE(res->body.find("allot_worker_in_flight_episodes 0"), std::string::npos);
  EXPECT_NE(res->body.find("allot_worker_episodes_per_second"), std::string::npos);
}

}  // namespace
}  // namespace allot::rollout
