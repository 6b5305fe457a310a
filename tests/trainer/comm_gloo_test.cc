// Two learner ranks on LibTorch's ProcessGroupGloo, one thread each, meeting on one TCPStore
// over loopback (the same code path as two processes; the launcher test covers processes).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <thread>

#include "models/causal_lm.h"
#include "tests/models/tiny_model.h"
#include "trainer/comm/communicator.h"
#include "trainer/comm/local_launcher.h"

namespace allot::trainer::comm {
namespace {

// Runs body(rank, comm) on `world` threads, each with its own Communicator.
void RunRanks(int world, const CommOptions& options,
              const std::function<void(int, Communicator&)>& body) {
  auto port = FreeTcpPort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status().message();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      DistEnv env;
      env.rank = r;
      env.local_rank = r;
      env.world_size = world;
      env.master_addr = "127.0.0.1";
      env.master_port = *port;
      auto comm = Communicator::Create(env, options);
      if (!comm.ok()) {
        errors[r] = comm.status().message();
        return;
      }
      body(r, **comm);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

CommOptions SmallBuckets() {
  CommOptions options;
  options.bucket_bytes = 16;  // several buckets per call
  options.timeout_s = 60;
  return options;
}

TEST(CommGlooIntegrationTest, AllReduceBroadcastScalarsAndStrings) {
  std::vector<std::vector<at::Tensor>> results(2);
  std::vector<std::vector<double>> scalars(2);
  std::vector<std::string> strings(2);
  std::vector<at::Tensor> broadcasts(2);
  RunRanks(2, SmallBuckets(), [&](int rank, Communicator& comm) {
    EXPECT_EQ(comm.backend(), "gloo");
    EXPECT_EQ(comm.world_size(), 2);
    EXPECT_EQ(comm.is_rank0(), rank == 0);
    const double k = rank + 1;
    std::vector<at::Tensor> t = {torch::full({3}, k), torch::full({2, 2}, 10 * k, torch::kDouble),
                                 torch::full({5}, 100 * k).to(torch::kBFloat16)};
    EXPECT_TRUE(comm.AllReduceMean(t).ok());
    results[rank] = t;
    at::Tensor b = torch::full({4}, k);
    EXPECT_TRUE(comm.Broadcast({b}, /*root=*/1).ok());
    broadcasts[rank] = b;
    scalars[rank] = {k, 2 * k};
    EXPECT_TRUE(comm.AllReduceScalars(scalars[rank], /*mean=*/false).ok());
    strings[rank] = rank == 0 ? "run-from-rank-0" : "";
    EXPECT_TRUE(comm.BroadcastString(strings[rank]).ok());
    EXPECT_TRUE(comm.Barrier().ok());
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(results[r].size(), 3u);
    EXPECT_TRUE(torch::allclose(results[r][0], torch::full({3}, 1.5))) << results[r][0];
    EXPECT_TRUE(torch::allclose(results[r][1], torch::full({2, 2}, 15.0, torch::kDouble)));
    EXPECT_EQ(results[r][2].scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::allclose(results[r][2].to(torch::kFloat), torch::full({5}, 150.0)));
    EXPECT_TRUE(torch::equal(broadcasts[r], torch::full({4}, 2.0)));
    EXPECT_EQ(scalars[r], (std::vector<double>{3.0, 6.0}));
    EXPECT_EQ(strings[r], "run-from-rank-0");
  }
}

// --- data-parallel training of the tiny causal LM with LoRA -----------------------------------

constexpr int kSteps = 3;
constexpr double kLr = 0.5;

std::shared_ptr<models::CausalLMImpl> LoraModel(const std::string& dir, uint64_t lora_seed) {
  auto model = models::CausalLMImpl::Load(dir);
  EXPECT_TRUE(model.ok()) << model.status().message();
  const models::LoraSpec spec{.r = 4, .alpha = 8.0, .dropout = 0.0, .use_rslora = false};
  EXPECT_TRUE((*model)->AttachLora(spec, {"q_proj", "v_proj", "down_proj"}, lora_seed).ok());
  return *model;
}

// Mean over sequences of the mean token negative log-likelihood.
at::Tensor Loss(models::CausalLMImpl& model, const at::Tensor& ids) {
  return -model.TokenLogProbs(ids).mean(1).mean();
}

// One SGD step; `comm` (nullable) averages the gradients first.
void Step(models::CausalLMImpl& model, const at::Tensor& ids, Communicator* comm) {
  auto params = model.LoraParameters();
  for (auto& p : params) p.mutable_grad() = at::Tensor();
  Loss(model, ids).backward();
  if (comm != nullptr) {
    ASSERT_TRUE(comm->AverageGradients(params).ok());
  }
  torch::NoGradGuard no_grad;
  for (auto& p : params) p.sub_(p.grad() * kLr);
}

std::vector<at::Tensor> Snapshot(const models::CausalLMImpl& model) {
  std::vector<at::Tensor> out;
  for (const auto& p : model.LoraParameters()) out.push_back(p.detach().clone());
  return out;
}

double MaxDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

TEST(CommGlooIntegrationTest, TwoRanksMatchOneRankWithTheDoubledBatch) {
  const std::string dir = models::testing::WriteTinyModel(models::testing::MakeTempDir("comm_dp"));
  torch::manual_seed(11);
  const at::Tensor batch = torch::randint(0, 64, {4, 9}, torch::kLong);  // global batch

  // One rank, the whole batch. Rank 0's LoRA seed, which the broadcast gives every rank.
  auto single = LoraModel(dir, /*lora_seed=*/1);
  // B starts at zero; a non-zero B gives A a gradient from the first step.
  {
    torch::NoGradGuard g;
    torch::manual_seed(5);
    for (const auto& site : single->linear_sites()) {
      if (site.linear->has_lora()) site.linear->lora_B.normal_(0.0, 0.1);
    }
  }
  const auto start = Snapshot(*single);
  for (int s = 0; s < kSteps; ++s) Step(*single, batch, nullptr);
  const auto expected = Snapshot(*single);
  ASSERT_GT(MaxDiff(start, expected), 1e-3) << "the reference run did not learn";

  std::vector<std::vector<at::Tensor>> got(2);
  RunRanks(2, SmallBuckets(), [&](int rank, Communicator& comm) {
    // Different initial adapters: only the broadcast makes them equal.
    auto model = LoraModel(dir, /*lora_seed=*/rank + 1);
    {
      torch::NoGradGuard g;
      torch::manual_seed(5 + rank);
      for (const auto& site : model->linear_sites()) {
        if (site.linear->has_lora()) site.linear->lora_B.normal_(0.0, 0.1);
      }
    }
    ASSERT_TRUE(comm.BroadcastParameters(model->LoraParameters()).ok());
    const at::Tensor shard = batch.narrow(0, 2 * rank, 2);
    for (int s = 0; s < kSteps; ++s) Step(*model, shard, &comm);
    got[rank] = Snapshot(*model);
  });
  ASSERT_EQ(got[0].size(), expected.size());
  ASSERT_EQ(got[1].size(), expected.size());
  EXPECT_LT(MaxDiff(got[0], got[1]), 1e-6) << "ranks diverged";
  EXPECT_LT(MaxDiff(got[0], expected), 1e-5) << "two ranks differ from one rank, doubled batch";
}

}  // namespace
}  // namespace allot::trainer::comm
