// Gradient bucketing, the torchrun environment, a world of one and the launcher's argv.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "trainer/comm/communicator.h"
#include "trainer/comm/dist_env.h"
#include "trainer/comm/local_launcher.h"
#include "trainer/comm/tensor_buckets.h"

namespace allot::trainer::comm {
namespace {

std::vector<at::Tensor> Floats(const std::vector<int64_t>& sizes) {
  std::vector<at::Tensor> out;
  for (int64_t n : sizes) out.push_back(torch::zeros({n}, torch::kFloat));
  return out;
}

TEST(CommBucketsTest, BucketsCloseWhenTheNextTensorWouldOverflow) {
  // 10 floats = 40 bytes each; 80-byte buckets hold two.
  const auto buckets = PlanBuckets(Floats({10, 10, 10, 10, 10}), 80);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0], (Bucket{0, 1}));
  EXPECT_EQ(buckets[1], (Bucket{2, 3}));
  EXPECT_EQ(buckets[2], (Bucket{4}));
}

TEST(CommBucketsTest, ATensorLargerThanABucketIsABucketOfItsOwn) {
  const auto buckets = PlanBuckets(Floats({2, 100, 2}), 40);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[1], (Bucket{1}));
}

TEST(CommBucketsTest, DtypeChangeStartsABucket) {
  std::vector<at::Tensor> t = {torch::zeros({2}), torch::zeros({2}, torch::kDouble),
                               torch::zeros({2}, torch::kDouble), torch::zeros({2})};
  const auto buckets = PlanBuckets(t, 0);  // unbounded
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[1], (Bucket{1, 2}));
}

TEST(CommBucketsTest, UnboundedPutsEverythingInOneBucket) {
  EXPECT_EQ(PlanBuckets(Floats({3, 1000, 7}), 0).size(), 1u);
  EXPECT_TRUE(PlanBuckets({}, 64).empty());
}

TEST(CommBucketsTest, FlattenUnflattenRoundTripKeepsShapesAndOrder) {
  torch::manual_seed(3);
  std::vector<at::Tensor> t = {torch::randn({2, 3}), torch::randn({4}), torch::randn({1, 2, 2})};
  std::vector<at::Tensor> before;
  for (auto& x : t) before.push_back(x.clone());
  const Bucket all{0, 1, 2};
  at::Tensor flat = FlattenBucket(t, all);
  ASSERT_EQ(flat.dim(), 1);
  ASSERT_EQ(flat.numel(), 6 + 4 + 4);
  EXPECT_TRUE(torch::equal(flat.narrow(0, 6, 4), before[1]));
  flat.mul_(2.0);
  // Flattening copies: the tensors are untouched until unflattened.
  EXPECT_TRUE(torch::equal(t[0], before[0]));
  UnflattenBucket(flat, t, all);
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].sizes(), before[i].sizes());
    EXPECT_TRUE(torch::allclose(t[i], before[i] * 2.0)) << i;
  }
}

TEST(CommBucketsTest, PartialBucketTouchesOnlyItsTensors) {
  std::vector<at::Tensor> t = {torch::ones({2}), torch::ones({3}), torch::ones({2})};
  const Bucket middle{1};
  at::Tensor flat = FlattenBucket(t, middle);
  flat.fill_(7.0);
  UnflattenBucket(flat, t, middle);
  EXPECT_EQ(t[0].sum().item<float>(), 2.0f);
  EXPECT_EQ(t[1].sum().item<float>(), 21.0f);
  EXPECT_EQ(t[2].sum().item<float>(), 2.0f);
}

TEST(CommBucketsTest, UnflattenWritesThroughNonContiguousViews) {
  at::Tensor base = torch::zeros({3, 2});
  std::vector<at::Tensor> t = {base.t()};  // [2, 3], not contiguous
  at::Tensor flat = torch::arange(6, torch::kFloat);
  UnflattenBucket(flat, t, Bucket{0});
  EXPECT_EQ(base[2][1].item<float>(), 5.0f);  // t[1][2] is base[2][1]
}

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(CommDistEnvTest, NothingSetIsAWorldOfOne) {
  auto env = ReadDistEnv(Env({}));
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->rank, 0);
  EXPECT_FALSE(env->distributed());
}

TEST(CommDistEnvTest, ReadsTorchrunVariables) {
  auto env = ReadDistEnv(Env({{"WORLD_SIZE", "4"},
                              {"RANK", "2"},
                              {"LOCAL_RANK", "0"},
                              {"MASTER_ADDR", "10.0.0.7"},
                              {"MASTER_PORT", "29611"}}));
  ASSERT_TRUE(env.ok()) << env.status().message();
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->rank, 2);
  EXPECT_EQ(env->local_rank, 0);
  EXPECT_EQ(env->master_addr, "10.0.0.7");
  EXPECT_EQ(env->master_port, 29611);
  EXPECT_FALSE(env->is_rank0());
}

TEST(CommDistEnvTest, DefaultsPortAndLocalRank) {
  auto env = ReadDistEnv(Env({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "h"}}));
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->master_port, 29500);
  EXPECT_EQ(env->local_rank, 1);
}

TEST(CommDistEnvTest, ErrorsNameTheVariable) {
  auto no_rank = ReadDistEnv(Env({{"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}));
  ASSERT_FALSE(no_rank.ok());
  EXPECT_NE(no_rank.status().message().find("RANK"), std::string::npos);
  auto big_rank = ReadDistEnv(Env({{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"MASTER_ADDR", "h"}}));
  ASSERT_FALSE(big_rank.ok());
  EXPECT_NE(big_rank.status().message().find("RANK=2"), std::string::npos);
  auto bad_world = ReadDistEnv(Env({{"WORLD_SIZE", "two"}}));
  ASSERT_FALSE(bad_world.ok());
  EXPECT_NE(bad_world.status().message().find("WORLD_SIZE"), std::string::npos);
  auto no_addr = ReadDistEnv(Env({{"WORLD_SIZE", "2"}, {"RANK", "0"}}));
  ASSERT_FALSE(no_addr.ok());
  EXPECT_NE(no_addr.status().message().find("MASTER_ADDR"), std::string::npos);
  auto bad_port = ReadDistEnv(
      Env({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}));
  ASSERT_FALSE(bad_port.ok());
  EXPECT_NE(bad_port.status().message().find("MASTER_PORT"), std::string::npos);
}

TEST(CommSingleTest, WorldOfOneNeedsNoStoreAndLeavesTensorsAlone) {
  DistEnv env;
  env.master_port = 1;  // nothing listens there: a world of one must not try to connect
  auto comm = Communicator::Create(env);
  ASSERT_TRUE(comm.ok()) << comm.status().message();
  EXPECT_EQ((*comm)->backend(), "none");
  EXPECT_TRUE((*comm)->is_rank0());
  at::Tensor t = torch::tensor({1.0f, 3.0f});
  ASSERT_TRUE((*comm)->AllReduceMean({t}).ok());
  ASSERT_TRUE((*comm)->Broadcast({t}).ok());
  ASSERT_TRUE((*comm)->Barrier().ok());
  EXPECT_TRUE(torch::equal(t, torch::tensor({1.0f, 3.0f})));
  std::vector<double> v = {2.0, 4.0};
  ASSERT_TRUE((*comm)->AllReduceScalars(v, /*mean=*/true).ok());
  EXPECT_EQ(v, (std::vector<double>{2.0, 4.0}));
}

TEST(CommSingleTest, RejectsUnknownBackend) {
  DistEnv env;
  env.world_size = 2;
  CommOptions options;
  options.backend = "mpi";
  auto comm = Communicator::Create(env, options);
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("comm.backend"), std::string::npos);
}

TEST(CommLauncherTest, WithoutOptionDropsBothSpellings) {
  const std::vector<std::string> argv = {"allot",  "train",     "--nproc",  "2", "-c",
                                         "x.yaml", "--nproc=3", "--nprocs", "1"};
  EXPECT_EQ(WithoutOption(argv, "--nproc"),
            (std::vector<std::string>{"allot", "train", "-c", "x.yaml", "--nprocs", "1"}));
}

TEST(CommLauncherTest, FreeTcpPortIsBindable) {
  auto port = FreeTcpPort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status().message();
  EXPECT_GT(*port, 0);
  EXPECT_FALSE(FreeTcpPort("not-an-ip").ok());
}

}  // namespace
}  // namespace allot::trainer::comm
