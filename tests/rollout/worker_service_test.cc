// The worker's gRPC surface driven by a raw client: auth, malformed and oversized messages.
#include <gtest/gtest.h>

#include <set>

#include "rollout/chunking.h"
#include "rollout/dispatcher.h"
#include "rollout/security.h"
#include "rollout/worker.h"
#include "tests/rollout/echo_env.h"
#include "tests/rollout/rollout_test_util.h"

namespace allot::rollout {
namespace {

using namespace std::chrono_literals;
using testing::EchoRequest;

constexpr char kToken[] = "test-token-0123456789";

class WorkerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::RegisterEchoEnv(registry_);
    WorkerConfig wc;
    wc.listen = "127.0.0.1:0";
    wc.metrics_listen = "";
    wc.auth.token = kToken;
    auto w = WorkerServer::Start(wc, &registry_);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    worker_ = std::move(w).value();
    channel_ = grpc::CreateChannel(worker_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::RolloutWorker::NewStub(channel_);
  }
  void TearDown() override { worker_->Shutdown(); }

  grpc::Status Hello(const std::string& token) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::HelloRequest req;
    req.set_protocol_version(v1::PROTOCOL_VERSION_1);
    v1::HelloReply reply;
    return stub_->Hello(&ctx, req, &reply);
  }

  // Reads until a message satisfies `pred` or the stream ends.
  template <typename Pred>
  bool ReadUntil(grpc::ClientReaderWriter<v1::LearnerMessage, v1::WorkerMessage>* s, Pred pred) {
    v1::WorkerMessage m;
    while (s->Read(&m)) {
      if (pred(m)) return true;
    }
    return false;
  }

  EnvRegistry registry_;
  std::unique_ptr<WorkerServer> worker_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::RolloutWorker::Stub> stub_;
};

TEST_F(WorkerServiceTest, MissingOrWrongTokenIsRejected) {
  EXPECT_EQ(Hello("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Hello("test-token-0123456788").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Hello("short").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Hello(kToken).ok());
  grpc::ClientContext ctx;
  auto stream = stub_->Rollout(&ctx);
  v1::WorkerMessage m;
  EXPECT_FALSE(stream->Read(&m));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(WorkerServiceTest, DispatcherNeedsTheRightToken) {
  DispatcherConfig dc;
  dc.workers = {worker_->address()};
  dc.auth.token = "wrong-token";
  dc.reconnect_initial_ms = 20;
  auto bad = Dispatcher::Create(dc);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE((*bad)->WaitForWorkers(1, 300ms));
  (*bad)->Shutdown();
  dc.auth.token = kToken;
  auto good = Dispatcher::Create(dc);
  ASSERT_TRUE(good.ok());
  ASSERT_TRUE((*good)->Submit(EchoRequest("authed")).ok());
  EXPECT_EQ(testing::Collect(**good, 1, 5s).size(), 1u);
}

TEST_F(WorkerServiceTest, NonLoopbackBindWithoutAuthRefusesToStart) {
  WorkerConfig wc;
  wc.listen = "0.0.0.0:0";
  wc.metrics_listen = "";
  auto w = WorkerServer::Start(wc, &registry_);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kPermissionDenied);
}

TEST_F(WorkerServiceTest, MalformedMessagesGetCleanErrorsAndTheWorkerSurvives) {
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", std::string("Bearer ") + kToken);
  auto stream = stub_->Rollout(&ctx);
  v1::LearnerMessage msg;
  *msg.add_episodes() = EchoRequest("bad id with spaces");
  v1::EpisodeRequest hot = EchoRequest("hot");
  hot.mutable_sampling()->set_temperature(1e9f);
  *msg.add_episodes() = hot;
  v1::EpisodeRequest unknown = EchoRequest("unknown");
  unknown.set_env("no-such-env");
  *msg.add_episodes() = unknown;
  v1::PolicyChunk* bad_policy = msg.mutable_policy();
  bad_policy->set_version(1);
  bad_policy->set_kind(static_cast<v1::PolicyKind>(77));
  ASSERT_TRUE(stream->Write(msg));
  std::map<std::string, v1::RejectReason> reasons;
  bool policy_refused = false;
  ASSERT_TRUE(ReadUntil(stream.get(), [&](const v1::WorkerMessage& m) {
    for (const auto& r : m.rejected()) {
      reasons[r.episode_id()] = r.reason();
      EXPECT_FALSE(r.message().empty());
    }
    for (const auto& p : m.policy_applied()) policy_refused = policy_refused || !p.ok();
    return reasons.size() >= 3 && policy_refused;
  }));
  EXPECT_EQ(reasons["bad id with spaces"], v1::REJECT_REASON_INVALID);
  EXPECT_EQ(reasons["hot"], v1::REJECT_REASON_INVALID);
  EXPECT_EQ(reasons["unknown"], v1::REJECT_REASON_UNKNOWN_ENV);

  // Oversized: one message above the 4 MiB limit ends this stream with RESOURCE_EXHAUSTED...
  v1::LearnerMessage huge;
  v1::EpisodeRequest big = EchoRequest("big");
  big.set_dataset_item(std::string(5 << 20, 'x'));
  *huge.add_episodes() = big;
  stream->Write(huge);
  v1::WorkerMessage m;
  while (stream->Read(&m)) {
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // ...and the worker carries on: a new stream runs an episode.
  grpc::ClientContext ctx2;
  ctx2.AddMetadata("authorization", std::string("Bearer ") + kToken);
  auto again = stub_->Rollout(&ctx2);
  v1::LearnerMessage ok;
  *ok.add_episodes() = EchoRequest("fine");
  ASSERT_TRUE(again->Write(ok));
  EXPECT_TRUE(ReadUntil(again.get(), [](const v1::WorkerMessage& wm) {
    for (const auto& c : wm.chunks()) {
      if (c.episode_id() == "fine" && c.has_whole()) return true;
    }
    return false;
  }));
  again->WritesDone();
  ctx2.TryCancel();
  again->Finish();
}

TEST_F(WorkerServiceTest, UnacknowledgedTrajectoriesAreResentOnTheNextStream) {
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", std::string("Bearer ") + kToken);
  auto s1 = stub_->Rollout(&ctx);
  v1::LearnerMessage msg;
  *msg.add_episodes() = EchoRequest("keep-me");
  ASSERT_TRUE(s1->Write(msg));
  auto has = [](const v1::WorkerMessage& m) {
    for (const auto& c : m.chunks()) {
      if (c.episode_id() == "keep-me") return true;
    }
    return false;
  };
  ASSERT_TRUE(ReadUntil(s1.get(), has));
  ctx.TryCancel();  // drop without acking
  s1->Finish();

  grpc::ClientContext ctx2;
  ctx2.AddMetadata("authorization", std::string("Bearer ") + kToken);
  auto s2 = stub_->Rollout(&ctx2);
  ASSERT_TRUE(ReadUntil(s2.get(), has));
  v1::LearnerMessage ack;
  ack.add_acks("keep-me");
  ASSERT_TRUE(s2->Write(ack));
  // Once acknowledged it is forgotten: the heartbeat reports nothing unacked.
  uint32_t unacked = 1;
  for (int i = 0; i < 100 && unacked != 0; ++i) {
    grpc::ClientContext hb;
    hb.AddMetadata("authorization", std::string("Bearer ") + kToken);
    v1::HeartbeatReply reply;
    ASSERT_TRUE(stub_->Heartbeat(&hb, v1::HeartbeatRequest(), &reply).ok());
    unacked = reply.unacked();
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(unacked, 0u);
  ctx2.TryCancel();
  s2->Finish();
}

TEST_F(WorkerServiceTest, UnacknowledgedBytesHoldBackNewEpisodes) {
  WorkerConfig wc;
  wc.listen = "127.0.0.1:0";
  wc.metrics_listen = "";
  wc.max_unacked_bytes = 1 << 20;
  wc.threads = 1;  // the bound applies when an episode starts
  auto started = WorkerServer::Start(wc, &registry_);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  std::unique_ptr<WorkerServer> w = std::move(started).value();
  auto stub = v1::RolloutWorker::NewStub(
      grpc::CreateChannel(w->address(), grpc::InsecureChannelCredentials()));
  auto heartbeat = [&] {
    grpc::ClientContext hb;
    v1::HeartbeatReply reply;
    EXPECT_TRUE(stub->Heartbeat(&hb, v1::HeartbeatRequest(), &reply).ok());
    return reply;
  };
  grpc::ClientContext ctx;
  auto stream = stub->Rollout(&ctx);
  v1::LearnerMessage msg;
  // About 800 KB each: the second one pushes the outbox past 1 MiB, the other two must wait.
  for (int i = 0; i < 4; ++i)
    *msg.add_episodes() = EchoRequest("fat-" + std::to_string(i), "{tokens: 100000}");
  ASSERT_TRUE(stream->Write(msg));
  std::set<std::string> got;
  ASSERT_TRUE(ReadUntil(stream.get(), [&](const v1::WorkerMessage& m) {
    for (const auto& c : m.chunks()) got.insert(c.episode_id());
    return got.size() >= 2;
  }));
  std::this_thread::sleep_for(100ms);
  v1::HeartbeatReply held = heartbeat();
  EXPECT_EQ(held.unacked(), 2u);
  EXPECT_EQ(held.running(), 2u);  // accepted, not started
  // Acknowledging frees the bytes: the rest run.
  v1::LearnerMessage ack;
  for (const auto& id : got) ack.add_acks(id);
  ASSERT_TRUE(stream->Write(ack));
  ASSERT_TRUE(ReadUntil(stream.get(), [&](const v1::WorkerMessage& m) {
    for (const auto& c : m.chunks()) got.insert(c.episode_id());
    return got.size() >= 4;
  }));
  ctx.TryCancel();
  stream->Finish();
  w->Shutdown();
}

}  // namespace
}  // namespace allot::rollout
