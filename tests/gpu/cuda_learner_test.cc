// The learner's parts on a CUDA device: the causal LM's forward and backward, one
// GRPO update, and the nccl communicator. Each computation runs on the CPU and on the GPU from
// the same weights, so a device mix-up (a host tensor in a device op) fails with LibTorch's
// error and a wrong kernel path (the fused attention of LibTorch 2) fails the comparison.
// Every test skips where no GPU is visible; the CPU build compiles them so that they stay
// buildable against Debian's LibTorch 1.13. ALLOT_GPU_TEST_DEVICE=cpu runs the comparisons
// with the CPU standing in for the GPU (a check of the tests themselves).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "models/causal_lm.h"
#include "tests/models/tiny_model.h"
#include "trainer/comm/communicator.h"
#include "trainer/grpo/policy_update.h"

namespace allot {
namespace {

using models::CausalLMImpl;

std::string TestDevice() {
  const char* d = std::getenv("ALLOT_GPU_TEST_DEVICE");
  return d != nullptr && *d ? d : "cuda";
}

#define SKIP_WITHOUT_GPU()                                                         \
  if (TestDevice() == "cuda" && !torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device"

models::testing::TinyModelOptions TinyOptions() {
  models::testing::TinyModelOptions o;
  o.vocab_size = 96;
  o.hidden_size = 64;
  o.intermediate_size = 96;
  o.num_layers = 2;
  o.num_heads = 4;
  o.num_kv_heads = 2;
  o.tie_word_embeddings = true;
  return o;
}

// The same checkpoint on `device`, with the same LoRA adapter (lora_B drawn non-zero so that
// the adapter changes the output).
std::shared_ptr<CausalLMImpl> LoadOn(const std::string& dir, const std::string& device) {
  auto m = CausalLMImpl::Load(dir, {.dtype = "float32", .device = device});
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return nullptr;
  models::LoraSpec spec;
  spec.r = 4;
  spec.alpha = 8.0;
  spec.dropout = 0.0;
  EXPECT_TRUE((*m)->AttachLora(spec, {"q_proj", "v_proj", "down_proj"}, /*seed=*/3).ok());
  torch::NoGradGuard no_grad;
  int k = 0;
  for (auto& site : (*m)->linear_sites()) {
    if (!site.linear->has_lora()) continue;
    at::Tensor b = torch::full(site.linear->lora_B.sizes(), 0.01 * (1 + k++ % 3));
    site.linear->lora_B.copy_(b);
  }
  return *m;
}

// Rows of different lengths, left-padded: the packed path (one fused causal attention per
// segment) and the padded path (explicit masked attention) both see them.
std::pair<at::Tensor, at::Tensor> LeftPadded(int64_t vocab, std::vector<int64_t> lengths) {
  const int64_t t = *std::max_element(lengths.begin(), lengths.end());
  const int64_t b = static_cast<int64_t>(lengths.size());
  std::mt19937 rng(5);
  at::Tensor ids = torch::zeros({b, t}, torch::kLong);
  at::Tensor mask = torch::zeros({b, t}, torch::kLong);
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = t - lengths[i]; j < t; ++j) {
      ids[i][j] = static_cast<int64_t>(rng() % (vocab - 1)) + 1;
      mask[i][j] = 1;
    }
  }
  return {ids, mask};
}

// 1 where column j's log-prob is of a real token after a real one (a left-padded row's first
// token follows padding: the packed path has no log-prob for it).
at::Tensor RealTargets(const at::Tensor& mask) {
  const int64_t t = mask.size(1);
  return (mask.narrow(1, 1, t - 1) * mask.narrow(1, 0, t - 1)).to(torch::kFloat);
}

double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(torch::kCPU).to(torch::kDouble) - b.to(torch::kCPU).to(torch::kDouble))
      .abs()
      .max()
      .item<double>();
}

TEST(CudaCausalLmTest, LogProbsAndLoraGradientsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const std::string dir =
      models::testing::WriteTinyModel(models::testing::MakeTempDir("cuda_lm"), TinyOptions());
  auto cpu = LoadOn(dir, "cpu");
  auto gpu = LoadOn(dir, TestDevice());
  ASSERT_TRUE(cpu && gpu);
  ASSERT_EQ(gpu->device().type(), at::Device(TestDevice()).type());
  auto [ids, mask] = LeftPadded(96, {40, 23, 31});
  for (bool packing : {true, false}) {
    cpu->set_packing(packing);
    gpu->set_packing(packing);
    cpu->zero_grad();
    gpu->zero_grad();
    at::Tensor lc = cpu->TokenLogProbs(ids, mask);
    at::Tensor lg = gpu->TokenLogProbs(ids, mask);
    ASSERT_EQ(lg.device(), gpu->device());
    // Padding columns hold whatever each path leaves there: compare real targets only.
    at::Tensor real = RealTargets(mask);
    EXPECT_LT(MaxAbsDiff(lc * real, lg * real.to(lg.device())), 1e-4) << "packing " << packing;
    (lc * real).sum().backward();
    (lg * real.to(lg.device())).sum().backward();
    auto pc = cpu->LoraParameters();
    auto pg = gpu->LoraParameters();
    ASSERT_EQ(pc.size(), pg.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      ASSERT_TRUE(pc[i].grad().defined() && pg[i].grad().defined());
      const double scale = pc[i].grad().abs().max().item<double>() + 1e-6;
      EXPECT_LT(MaxAbsDiff(pc[i].grad(), pg[i].grad()) / scale, 1e-3)
          << "LoRA parameter " << i << ", packing " << packing;
    }
  }
}

// Packed rows take LibTorch 2's fused causal attention, padded rows the explicit masked one.
TEST(CudaCausalLmTest, PackedAndPaddedBatchesAgreeOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const std::string dir =
      models::testing::WriteTinyModel(models::testing::MakeTempDir("cuda_packed"), TinyOptions());
  auto [ids, mask] = LeftPadded(96, {64, 17, 50, 33});
  torch::NoGradGuard no_grad;
  auto run = [&](const std::string& dtype, bool packing) {
    auto m = CausalLMImpl::Load(dir, {.dtype = dtype, .device = TestDevice()});
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    (*m)->set_packing(packing);
    at::Tensor logp = (*m)->TokenLogProbs(ids, mask).to(torch::kCPU).to(torch::kFloat);
    return logp * RealTargets(mask);
  };
  const at::Tensor packed32 = run("float32", true), padded32 = run("float32", false);
  EXPECT_LT(MaxAbsDiff(packed32, padded32), 1e-4);
  // In bf16 the two kernels round differently (bf16 log-probs of tens of nats move by tenths):
  // the fused path may be no further from float32 than twice the explicit path's own error. A
  // wrong mask or position would move it by whole units.
  const at::Tensor packed16 = run("bfloat16", true), padded16 = run("bfloat16", false);
  EXPECT_TRUE(torch::isfinite(packed16).all().item<bool>());
  EXPECT_LE(MaxAbsDiff(packed16, padded32), 2.0 * MaxAbsDiff(padded16, padded32) + 1e-2);
}

// A GRPO batch like the learner builds from rollouts: groups of completions after a shared
// prompt, left-padded, group-relative advantages, sampler log-probs near the policy's.
trainer::grpo::RolloutBatch MakeBatch(CausalLMImpl& model, int64_t vocab) {
  std::vector<int64_t> lengths = {30, 44, 38, 25};
  auto [ids, mask] = LeftPadded(vocab, lengths);
  const int64_t b = ids.size(0), t = ids.size(1), prompt = 12;
  trainer::grpo::RolloutBatch batch;
  batch.input_ids = ids;
  batch.attention_mask = mask;
  batch.loss_mask = torch::zeros({b, t - 1});
  batch.advantages = torch::zeros({b, t - 1});
  const std::vector<double> adv = {1.0, -1.0, 0.5, -0.5};
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = t - lengths[i] + prompt; j < t; ++j) {
      batch.loss_mask[i][j - 1] = 1.0;
      batch.advantages[i][j - 1] = adv[i];
    }
  }
  torch::NoGradGuard no_grad;
  at::Tensor lp = model.TokenLogProbs(ids, mask).to(torch::kCPU);
  batch.rollout_logp = (lp + 0.3) * batch.loss_mask;
  batch.trainable_tokens = batch.loss_mask.sum().item<int64_t>();
  batch.total_tokens = mask.sum().item<int64_t>();
  return batch;
}

TEST(CudaGrpoTest, OneUpdateOnTheGpuTakesTheCpuStep) {
  SKIP_WITHOUT_GPU();
  const std::string dir =
      models::testing::WriteTinyModel(models::testing::MakeTempDir("cuda_grpo"), TinyOptions());
  auto cpu = LoadOn(dir, "cpu");
  auto gpu = LoadOn(dir, TestDevice());
  ASSERT_TRUE(cpu && gpu);
  const trainer::grpo::RolloutBatch batch = MakeBatch(*cpu, 96);  // host memory, as from rollouts
  trainer::grpo::UpdateOptions options;
  options.lr = 1e-3;
  trainer::grpo::StepMetrics mc, mg;
  std::vector<at::Tensor> before;
  for (const at::Tensor& p : cpu->LoraParameters()) before.push_back(p.detach().clone());
  torch::optim::AdamW oc(cpu->LoraParameters(), torch::optim::AdamWOptions(1e-3));
  torch::optim::AdamW og(gpu->LoraParameters(), torch::optim::AdamWOptions(1e-3));
  ASSERT_TRUE(trainer::grpo::UpdatePolicy(*cpu, oc, batch, options, &mc).ok());
  Status s = trainer::grpo::UpdatePolicy(*gpu, og, batch, options, &mg);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NEAR(mg.loss, mc.loss, 1e-4 * (1.0 + std::abs(mc.loss)));
  EXPECT_NEAR(mg.grad_norm, mc.grad_norm, 1e-3 * mc.grad_norm);
  EXPECT_GT(mc.grad_norm, 0.0);
  // Adam's first step moves every element by about lr whatever its gradient's size, so elements
  // whose gradient is rounding noise may step either way on either device: the two steps must
  // point the same way as a whole.
  auto pc = cpu->LoraParameters();
  auto pg = gpu->LoraParameters();
  std::vector<at::Tensor> dc, dg;
  for (size_t i = 0; i < pc.size(); ++i) {
    ASSERT_EQ(pg[i].device(), gpu->device());
    dc.push_back((pc[i].detach() - before[i]).reshape({-1}).to(torch::kDouble));
    dg.push_back((pg[i].detach().to(torch::kCPU) - before[i]).reshape({-1}).to(torch::kDouble));
  }
  const at::Tensor a = torch::cat(dc), b = torch::cat(dg);
  const double cosine = (a * b).sum().item<double>() / (a.norm() * b.norm()).item<double>();
  EXPECT_GT(cosine, 0.99);
  EXPECT_GT(a.norm().item<double>(), 0.0);
}

#ifdef ALLOT_WITH_CUDA
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}
#endif

// Two NCCL ranks cannot share one GPU: a world of one, with its process group built anyway,
// runs every collective through NCCL (device tensors, and host ones staged through the GPU).
TEST(CudaCommTest, NcclWorldOfOneRunsEveryCollective) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
#ifndef ALLOT_WITH_CUDA
  GTEST_SKIP() << "not a CUDA build of allot (ALLOT_WITH_CUDA)";
#else
  trainer::comm::DistEnv env;
  env.master_port = FreePort();
  trainer::comm::CommOptions options;
  options.backend = "nccl";
  options.timeout_s = 60;
  options.bucket_bytes = 64;  // several buckets
  auto comm = trainer::comm::Communicator::CreateGroup(env, options);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  EXPECT_EQ((*comm)->backend(), "nccl");
  EXPECT_TRUE((*comm)->distributed());
  at::Tensor a = torch::arange(40, torch::dtype(torch::kFloat).device(torch::kCUDA));
  at::Tensor b = torch::full({7}, 1.5, torch::dtype(torch::kBFloat16).device(torch::kCUDA));
  at::Tensor h = torch::arange(5, torch::kDouble);  // host memory
  ASSERT_TRUE((*comm)->AllReduceSum({a, b, h}).ok());
  EXPECT_EQ(MaxAbsDiff(a, torch::arange(40, torch::kFloat)), 0.0);
  EXPECT_EQ(MaxAbsDiff(b, torch::full({7}, 1.5)), 0.0);
  EXPECT_TRUE(h.device().is_cpu());
  EXPECT_EQ(MaxAbsDiff(h, torch::arange(5, torch::kDouble)), 0.0);
  ASSERT_TRUE((*comm)->AllReduceMean({a}).ok());
  EXPECT_EQ(MaxAbsDiff(a, torch::arange(40, torch::kFloat)), 0.0);
  std::vector<double> scalars = {2.5, -1.0};
  ASSERT_TRUE((*comm)->AllReduceScalars(scalars, /*mean=*/false).ok());
  EXPECT_EQ(scalars, (std::vector<double>{2.5, -1.0}));
  std::string text = "run-name";
  ASSERT_TRUE((*comm)->BroadcastString(text).ok());
  EXPECT_EQ(text, "run-name");
  EXPECT_TRUE((*comm)->Barrier().ok());
#endif
}

}  // namespace
}  // namespace allot
