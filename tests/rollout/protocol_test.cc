// Validation, chunking and security helpers: fast unit tests.
#include <gtest/gtest.h>

#include <optional>

#include "rollout/chunking.h"
#include "rollout/security.h"
#include "rollout/validate.h"
#include "tests/rollout/rollout_test_util.h"

namespace allot::rollout {
namespace {

using envs::runtime::PolicySnapshot;
using testing::EchoRequest;

v1::Trajectory LongTrajectory(const std::string& id, int tokens) {
  v1::Trajectory t;
  t.set_episode_id(id);
  auto* s = t.add_segments();
  s->set_role(v1::SEGMENT_ROLE_POLICY);
  s->set_trainable(true);
  for (int i = 0; i < tokens; ++i) {
    s->add_ids(static_cast<uint32_t>(i * 7 % 150000));
    s->add_logprobs(-0.5f);
  }
  return t;
}

TEST(ValidateTest, AcceptsAWellFormedRequest) {
  EXPECT_TRUE(ValidateEpisodeRequest(EchoRequest("ep-1")).ok());
}

TEST(ValidateTest, RejectsBadIdsAndRanges) {
  EXPECT_FALSE(ValidateEpisodeRequest(EchoRequest("")).ok());
  EXPECT_FALSE(ValidateEpisodeRequest(EchoRequest("a b")).ok());
  EXPECT_FALSE(ValidateEpisodeRequest(EchoRequest(std::string(129, 'x'))).ok());
  v1::EpisodeRequest r = EchoRequest("ep");
  r.mutable_sampling()->set_temperature(11.0f);
  Status s = ValidateEpisodeRequest(r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("sampling.temperature"), std::string::npos);
  r = EchoRequest("ep");
  r.set_group_id("g");
  r.set_group_size(4);
  r.set_group_index(4);
  EXPECT_NE(ValidateEpisodeRequest(r).message().find("group_index"), std::string::npos);
  r = EchoRequest("ep");
  r.set_dataset_item(std::string(kMaxDatasetItemBytes + 1, 'x'));
  EXPECT_NE(ValidateEpisodeRequest(r).message().find("dataset_item"), std::string::npos);
}

TEST(ValidateTest, TrajectoryContract) {
  v1::Trajectory t = LongTrajectory("ep", 4);
  EXPECT_TRUE(ValidateTrajectory(t).ok());
  t.mutable_segments(0)->add_logprobs(-1.0f);  // one more logprob than ids
  EXPECT_NE(ValidateTrajectory(t).message().find("logprobs"), std::string::npos);
  // A trainable segment without log-probs (an endpoint that returned none) names its source,
  // the endpoint that sampled it: truncated IS cannot weigh those tokens.
  t = LongTrajectory("ep", 2);
  t.mutable_segments(0)->clear_logprobs();
  t.mutable_segments(0)->set_source("decomposer@policy");
  EXPECT_NE(
      ValidateTrajectory(t).message().find("trainable segment sampled by 'decomposer@policy'"),
      std::string::npos)
      << ValidateTrajectory(t).message();
  t = LongTrajectory("ep", 2);
  t.mutable_segments(0)->set_logprobs(0, 0.5f);  // a probability above 1
  EXPECT_FALSE(ValidateTrajectory(t).ok());
  t = LongTrajectory("ep", 2);
  t.mutable_segments(0)->set_role(static_cast<v1::SegmentRole>(42));
  EXPECT_NE(ValidateTrajectory(t).message().find("role"), std::string::npos);
  t = LongTrajectory("ep", 2);
  auto* tr = t.add_transitions();
  tr->add_state(1.0f);
  tr->set_num_actions(3);
  tr->set_action(3);
  EXPECT_NE(ValidateTrajectory(t).message().find("action"), std::string::npos);
  t = LongTrajectory("ep", 2);
  t.add_rewards()->set_name("format");
  t.add_rewards()->set_name("format");
  EXPECT_NE(ValidateTrajectory(t).message().find("duplicate"), std::string::npos);
  t = LongTrajectory("ep", 2);
  t.mutable_failure()->set_reason(static_cast<v1::FailureReason>(99));
  EXPECT_FALSE(ValidateTrajectory(t).ok());
}

TEST(ChunkingTest, SmallTrajectoryTravelsWhole) {
  auto chunks = ChunkTrajectory(LongTrajectory("ep", 10), 3, 1 << 20);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_TRUE(chunks[0].has_whole());
  EXPECT_EQ(chunks[0].attempt(), 3u);
}

TEST(ChunkingTest, LargeTrajectoryRoundTripsInParts) {
  v1::Trajectory t = LongTrajectory("big", 20000);
  auto chunks = ChunkTrajectory(t, 1, 16 << 10);
  ASSERT_GT(chunks.size(), 5u);
  TrajectoryAssembler a(1 << 30, 4);
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    auto r = a.Add(chunks[i]);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_FALSE(r->has_value());
  }
  auto r = a.Add(chunks.back());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->SerializeAsString(), t.SerializeAsString());
  EXPECT_EQ(a.open(), 0u);
}

TEST(ChunkingTest, SerializedChunksParseAsTypedChunks) {
  // What a worker writes: pre-serialized chunks (one whole, one trajectory in parts) next to
  // typed fields. The learner parses it with the ordinary WorkerMessage.
  const v1::Trajectory small = LongTrajectory("small", 10);
  const v1::Trajectory big = LongTrajectory("big", 5000);
  std::vector<std::string> whole = SerializeTrajectoryChunks(small, 2, 16 << 10);
  std::vector<std::string> parts = SerializeTrajectoryChunks(big, 1, 16 << 10);
  ASSERT_EQ(whole.size(), 1u);
  ASSERT_GT(parts.size(), 1u);
  std::vector<std::string> originals = whole;
  originals.insert(originals.end(), parts.begin(), parts.end());

  v1::WorkerMessage msg;
  msg.add_rejected()->set_episode_id("r");
  for (auto& bytes : whole) AppendSerializedChunk(&msg, &bytes);
  for (auto& bytes : parts) AppendSerializedChunk(&msg, &bytes);
  msg.mutable_status()->set_free_slots(7);
  EXPECT_TRUE(whole[0].empty());  // moved into the message, not copied

  v1::WorkerMessage parsed;
  ASSERT_TRUE(parsed.ParseFromString(msg.SerializeAsString()));
  ASSERT_EQ(parsed.chunks_size(), static_cast<int>(originals.size()));
  EXPECT_EQ(parsed.rejected(0).episode_id(), "r");
  EXPECT_EQ(parsed.status().free_slots(), 7u);
  EXPECT_EQ(parsed.chunks(0).attempt(), 2u);
  EXPECT_EQ(parsed.chunks(0).whole().SerializeAsString(), small.SerializeAsString());
  TrajectoryAssembler a(1 << 30, 4);
  std::optional<v1::Trajectory> rebuilt;
  for (int i = 1; i < parsed.chunks_size(); ++i) {
    v1::TrajectoryChunk c = parsed.chunks(i);
    auto r = a.Add(c);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (r->has_value()) rebuilt = std::move(**r);
  }
  ASSERT_TRUE(rebuilt.has_value());
  EXPECT_EQ(rebuilt->SerializeAsString(), big.SerializeAsString());

  // After the write the bytes come back unchanged, in order, and the message holds none.
  std::vector<std::string> back = TakeBackSerializedChunks(&msg);
  EXPECT_EQ(back, originals);
  v1::WorkerMessage rest;
  rest.add_rejected()->set_episode_id("r");
  rest.mutable_status()->set_free_slots(7);
  EXPECT_EQ(msg.SerializeAsString(), rest.SerializeAsString());
}

TEST(ChunkingTest, RejectsOutOfOrderAndOversizedParts) {
  auto chunks = ChunkTrajectory(LongTrajectory("big", 20000), 1, 16 << 10);
  TrajectoryAssembler a(1 << 30, 4);
  ASSERT_TRUE(a.Add(chunks[0]).ok());
  EXPECT_FALSE(a.Add(chunks[2]).ok());
  EXPECT_FALSE(a.Add(chunks[1]).ok());  // the partial episode was dropped
  TrajectoryAssembler small(1000, 4);
  EXPECT_NE(small.Add(chunks[0]).status().message().find("max_trajectory_bytes"),
            std::string::npos);
  v1::TrajectoryChunk lying = chunks[0];
  lying.set_index(0);
  lying.set_count(1);
  EXPECT_FALSE(a.Add(lying).ok());
}

TEST(ChunkingTest, PolicyRoundTripAndChecksum) {
  PolicySnapshot p;
  p.version = 7;
  p.kind = PolicySnapshot::Kind::kQnetWeights;
  p.bytes = std::string(100000, 'w');
  p.bytes[5] = 'x';
  auto chunks = ChunkPolicy(p, 8192);
  ASSERT_EQ(chunks.size(), 13u);
  PolicyAssembler a(1 << 20, 8192);
  std::shared_ptr<const PolicySnapshot> got;
  for (const auto& c : chunks) {
    auto r = a.Add(c);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    got = *r;
  }
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->version, 7u);
  EXPECT_EQ(got->kind, PolicySnapshot::Kind::kQnetWeights);
  EXPECT_EQ(got->bytes, p.bytes);

  chunks[4].mutable_data()->at(0) = 'z';
  Status last;
  for (const auto& c : chunks) last = a.Add(c).status();
  EXPECT_EQ(last.code(), StatusCode::kDataLoss);
  PolicyAssembler tiny(1000, 8192);
  EXPECT_NE(tiny.Add(chunks[0]).status().message().find("max_policy_bytes"), std::string::npos);
}

// A policy of one LoRA adapter per role (R2-Reasoner's decomposer and allocator) reaches the
// worker with every role's served name and version.
TEST(ChunkingTest, RoleAdaptersTravelWithALoraPolicy) {
  PolicySnapshot p;
  p.version = 5;
  p.kind = PolicySnapshot::Kind::kLoraAdapter;
  p.adapter_name = "run-allocator-v5";
  p.adapter_uri = "/runs/run/adapters/allocator/v5";
  p.role_adapters = {{"decomposer", "run-decomposer-v3", 3, "/runs/run/adapters/decomposer/v3"},
                     {"allocator", "run-allocator-v5", 5, "/runs/run/adapters/allocator/v5"}};
  auto chunks = ChunkPolicy(p, 8192);
  ASSERT_EQ(chunks.size(), 1u);
  PolicyAssembler a(1 << 20, 8192);
  auto got = a.Add(chunks[0]);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_NE(*got, nullptr);
  EXPECT_EQ((*got)->kind, PolicySnapshot::Kind::kLoraAdapter);
  ASSERT_EQ((*got)->role_adapters.size(), 2u);
  EXPECT_EQ((*got)->role_adapters[0].role, "decomposer");
  EXPECT_EQ((*got)->role_adapters[0].adapter_name, "run-decomposer-v3");
  EXPECT_EQ((*got)->role_adapters[0].version, 3u);
  EXPECT_EQ((*got)->role_adapters[1].adapter_uri, "/runs/run/adapters/allocator/v5");

  v1::PolicyChunk bad = chunks[0];
  bad.mutable_role_adapters(0)->set_adapter_name("");
  EXPECT_NE(ValidatePolicyChunk(bad, 1 << 20, 8192).message().find("decomposer"),
            std::string::npos);
  bad = chunks[0];
  bad.set_kind(v1::POLICY_KIND_QNET_WEIGHTS);
  EXPECT_FALSE(ValidatePolicyChunk(bad, 1 << 20, 8192).ok());
}

TEST(SecurityTest, LoopbackDetection) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:50051"));
  EXPECT_TRUE(IsLoopbackAddress("127.1.2.3:1"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:1"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:5"));
  EXPECT_TRUE(IsLoopbackAddress("unix:/tmp/x.sock"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:50051"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:50051"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.5:50051"));
  EXPECT_FALSE(IsLoopbackAddress("127.0.0.1.evil.com:1"));
}

TEST(SecurityTest, NonLoopbackBindNeedsAuth) {
  AuthConfig none;
  Status s = CheckBindPolicy("0.0.0.0:50051", none);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  AuthConfig token;
  token.token = "s3cret-value";
  // A token without TLS would travel in plaintext: refused, and the message says why.
  s = CheckBindPolicy("0.0.0.0:50051", token);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("plaintext"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("allow_insecure_transport"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("s3cret-value"), std::string::npos) << "the token is never shown";
  token.allow_insecure_transport = true;
  EXPECT_TRUE(CheckBindPolicy("0.0.0.0:50051", token).ok());
  AuthConfig tls_token;
  tls_token.token = "s3cret-value";
  tls_token.tls_cert = "a.pem";
  tls_token.tls_key = "a.key";
  EXPECT_TRUE(CheckBindPolicy("0.0.0.0:50051", tls_token).ok());  // encrypted, authenticated
  AuthConfig half_tls;
  half_tls.tls_cert = "a.pem";
  half_tls.tls_key = "a.key";
  EXPECT_FALSE(CheckBindPolicy("0.0.0.0:50051", half_tls).ok());  // no CA: not mutual
  half_tls.tls_ca = "ca.pem";
  EXPECT_TRUE(CheckBindPolicy("0.0.0.0:50051", half_tls).ok());
  EXPECT_TRUE(CheckBindPolicy("127.0.0.1:0", none).ok());
}

TEST(SecurityTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("Bearer abc", "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", "Bearer abd"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", "Bearer abcd"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
}

}  // namespace
}  // namespace allot::rollout
