// ZeRO stages 1 and 2 (trainer/optim/zero_adamw.h): the flat partition, the sharded AdamW
// against the unsharded one, and the real SFT trainer on two Gloo ranks against stage 0 (with
// clipping active), exact resume from a two-rank ZeRO checkpoint, export of whole weights, and
// a resume on another world size refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/checkpoint_store.h"
#include "models/causal_lm.h"
#include "models/tokenizer/byte_tokenizer.h"
#include "tests/models/tiny_model.h"
#include "tests/trainer/gloo_ranks.h"
#include "trainer/optim/adamw.h"
#include "trainer/optim/flat_shard.h"
#include "trainer/optim/grad_clip.h"
#include "trainer/optim/multi_tensor_adamw.h"
#include "trainer/optim/zero_adamw.h"
#include "trainer/sft/sft_trainer.h"

namespace allot::trainer {
namespace {

namespace fs = std::filesystem;

// --- the partition --------------------------------------------------------------------------

TEST(FlatShardTest, ChunksCoverTheParametersOnceWithPaddingAtTheEnd) {
  std::vector<at::Tensor> params = {torch::arange(5, torch::kFloat).view({5}),
                                    torch::arange(5, 11, torch::kFloat).view({2, 3}),
                                    torch::arange(11, 13, torch::kFloat)};
  // 13 elements over 3 ranks: chunks of 5, the last holds 3 and 2 of padding.
  std::vector<int64_t> seen;
  for (int r = 0; r < 3; ++r) {
    auto s = FlatShard::Create(params, r, 3);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->chunk(), 5);
    EXPECT_EQ(s->end() - s->begin(), r < 2 ? 5 : 3);
    at::Tensor mine = torch::full({5}, -1.0f);
    s->Read(params, r * 5, mine);
    for (int64_t i = 0; i < 5; ++i) {
      const float v = mine[i].item<float>();
      if (r * 5 + i < 13) {
        EXPECT_EQ(v, static_cast<float>(r * 5 + i)) << "rank " << r << " element " << i;
        seen.push_back(static_cast<int64_t>(v));
      } else {
        EXPECT_EQ(v, 0.0f) << "padding must read as zero";
      }
    }
    // The pieces of rank 1 straddle the first two parameters.
    if (r == 1) {
      auto pieces = s->PiecesIn(s->begin(), s->end());
      ASSERT_EQ(pieces.size(), 1u);  // [5, 10) lies inside the second parameter
      EXPECT_EQ(pieces[0].param, 1u);
      EXPECT_EQ(pieces[0].param_offset, 0);
    }
  }
  EXPECT_EQ(seen.size(), 13u);
  // Write puts a chunk back where Read took it from, and drops the padding.
  auto last = FlatShard::Create(params, 2, 3);
  ASSERT_TRUE(last.ok());
  last->Write(torch::tensor({100.0f, 101.0f, 102.0f, 7.0f, 7.0f}), 10, params);
  EXPECT_EQ(params[1][1][2].item<float>(), 100.0f);
  EXPECT_EQ(params[2][0].item<float>(), 101.0f);
  EXPECT_EQ(params[2][1].item<float>(), 102.0f);
  EXPECT_FALSE(FlatShard::Create(params, 0, 14).ok()) << "more ranks than elements";
}

// --- the optimizer on one rank ---------------------------------------------------------------

// A world of one is a shard of everything: the update must be the unsharded AdamW's bit for
// bit, both weight-decay groups included (a piece put in the wrong group would decay a norm).
TEST(ZeroAdamWTest, OneShardIsTheUnshardedAdamWBitForBit) {
  torch::manual_seed(3);
  auto make = [] {
    NamedParameters p = {{"w", torch::randn({4, 6}).requires_grad_()},
                         {"norm", torch::ones({6}).requires_grad_()},
                         {"v", torch::randn({3, 5}).requires_grad_()}};
    return p;
  };
  NamedParameters a = make();
  NamedParameters b;
  for (auto& [n, t] : a) b.emplace_back(n, t.detach().clone().requires_grad_());
  OptimConfig c;
  c.lr = 0.05;
  c.weight_decay = 0.1;
  auto plain = MakeAdamW(c, a);
  ASSERT_TRUE(plain.ok());
  for (int stage : {1, 2}) {
    NamedParameters z_params;
    for (auto& [n, t] : b) z_params.emplace_back(n, t.detach().clone().requires_grad_());
    auto z = ZeroAdamW::Create(c, z_params, nullptr, stage);
    ASSERT_TRUE(z.ok()) << z.status().message();
    NamedParameters base;
    for (auto& [n, t] : b) base.emplace_back(n, t.detach().clone().requires_grad_());
    auto reference = MakeAdamW(c, base);
    ASSERT_TRUE(reference.ok());
    for (int step = 0; step < 3; ++step) {
      torch::manual_seed(10 + step);
      std::vector<at::Tensor> grads;
      for (auto& [n, t] : base) grads.push_back(torch::randn(t.sizes()));
      (*reference)->zero_grad();
      (*z)->ZeroGrad();
      for (size_t i = 0; i < base.size(); ++i) {
        base[i].second.mutable_grad() = grads[i].clone();
        z_params[i].second.mutable_grad() = grads[i].clone();
      }
      ASSERT_TRUE((*z)->ReduceGradients().ok());
      const double want = ClipGradNorm(OptimizerParameters(**reference), 1.0);
      auto got = (*z)->ClipGradNorm(1.0);
      ASSERT_TRUE(got.ok());
      EXPECT_NEAR(*got, want, 1e-12 * want);
      StepAdamW(**reference);
      ASSERT_TRUE((*z)->Step().ok());
    }
    for (size_t i = 0; i < base.size(); ++i) {
      EXPECT_TRUE(torch::equal(base[i].second, z_params[i].second))
          << "stage " << stage << " " << base[i].first;
    }
    EXPECT_EQ((*z)->StateBytes(), 2 * (24 + 6 + 15) * 4);
  }
  (void)plain;
}

TEST(ZeroAdamWTest, StateFileOfAnotherWorldSizeIsRefusedNamingBoth) {
  const std::string dir = models::testing::MakeTempDir("zero_state_files");
  std::ofstream(dir + "/" + ZeroStateFileName(0, 2)) << "x";
  std::ofstream(dir + "/" + ZeroStateFileName(1, 2)) << "x";
  auto same = OptimizerStateFile(dir, 1, 2);
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(fs::path(*same).filename(), "optimizer.rank-00001-of-00002.safetensors");
  auto four = OptimizerStateFile(dir, 0, 4);
  ASSERT_FALSE(four.ok());
  EXPECT_NE(four.status().message().find("2 ranks"), std::string::npos) << four.status().message();
  EXPECT_NE(four.status().message().find("4 ranks"), std::string::npos) << four.status().message();
  auto one = OptimizerStateFile(dir, 0, 0);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("2 ranks"), std::string::npos) << one.status().message();
  EXPECT_NE(one.status().message().find("unsharded"), std::string::npos) << one.status().message();
}

// --- the SFT trainer on two Gloo ranks -------------------------------------------------------

std::string TinyByteModel(const std::string& name) {
  const std::string dir = models::testing::MakeTempDir(name);
  models::testing::TinyModelOptions o;
  o.vocab_size = 259;
  models::testing::WriteTinyModel(dir, o);
  std::ofstream(dir + "/tokenizer.json") << models::ByteTokenizer().ToHuggingFaceJson();
  return dir;
}

std::string MemoryData() {
  const std::string dir = models::testing::MakeTempDir("zero_data");
  std::ofstream out(dir + "/data.jsonl");
  const char* values[] = {"red", "blue7", "go", "tree", "x9y", "moon", "qq", "sand"};
  for (int i = 0; i < 8; ++i) {
    out << R"({"prompt": "k)" << i << R"(=", "completion": ")" << values[i] << "\"}\n";
  }
  return dir + "/data.jsonl";
}

// Pretrained init: both ranks load the same weights (random init draws from the global
// generator, which the rank threads would share). Gradients of this tiny model are far above
// max_grad_norm, so every step clips.
SftRunOptions TinyRun(const std::string& model_dir, const std::string& data, int steps) {
  SftRunOptions o;
  o.model.path = model_dir;
  o.sft.data = data;
  o.sft.batch_size = 4;
  o.sft.bucket_window = 2;
  o.sft.threads = 1;
  o.sft.optim.lr = 1e-2;
  o.sft.optim.warmup_steps = 1;
  o.sft.optim.weight_decay = 0.01;
  o.sft.optim.grad_accum = 2;
  o.sft.optim.max_grad_norm = 0.5;
  o.total_steps = steps;
  o.seed = 11;
  return o;
}

std::vector<at::Tensor> Weights(SftTrainer& t) {
  std::vector<at::Tensor> out;
  for (auto& [name, p] : t.TrainableParameters()) out.push_back(p.detach().clone());
  return out;
}

double MaxDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  }
  return d;
}

bool Same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

struct RankResult {
  std::vector<at::Tensor> weights;
  std::vector<double> grad_norms;
};

// `steps` steps of `o` with trainer.zero_stage `stage` on two Gloo ranks.
std::vector<RankResult> TwoRanks(SftRunOptions o, int stage, int steps) {
  std::vector<RankResult> out(2);
  testing::RunGlooRanks(2, [&](int rank, comm::Communicator& comm) {
    SftRunOptions r = o;
    r.comm = &comm;
    r.zero_stage = stage;
    auto t = SftTrainer::Create(r);
    ASSERT_TRUE(t.ok()) << t.status().message();
    for (int i = 0; i < steps; ++i) {
      auto s = (*t)->Step();
      ASSERT_TRUE(s.ok()) << s.status().message();
      out[rank].grad_norms.push_back(s->grad_norm);
    }
    out[rank].weights = Weights(**t);
  });
  return out;
}

// Stage 1 all-reduces the gradients as stage 0 does and shards only the update; stage 2 also
// reduce-scatters them and adds the shards' squared norms over ranks for clipping. Both must
// land where stage 0 lands. A rank that skipped the all-gather would keep the other half of the
// weights at their start; a stage-2 norm of the local chunk alone would clip by a different
// factor (its norm is not the global one) and drift off.
TEST(ZeroSftIntegrationTest, StagesOneAndTwoOnTwoGlooRanksMatchStageZero) {
  const std::string model_dir = TinyByteModel("zero_sft_model");
  const SftRunOptions o = TinyRun(model_dir, MemoryData(), 5);
  const auto zero0 = TwoRanks(o, 0, 5);
  ASSERT_EQ(zero0[0].grad_norms.size(), 5u);
  for (double n : zero0[0].grad_norms) EXPECT_GT(n, o.sft.optim.max_grad_norm) << "no clipping";
  for (int stage : {1, 2}) {
    const auto z = TwoRanks(o, stage, 5);
    ASSERT_EQ(z[0].weights.size(), zero0[0].weights.size());
    ASSERT_EQ(z[1].weights.size(), zero0[0].weights.size());
    // Parameters are whole and equal on both ranks after the all-gather.
    EXPECT_TRUE(Same(z[0].weights, z[1].weights)) << "stage " << stage << ": ranks differ";
    const double off = MaxDiff(z[0].weights, zero0[0].weights);
    std::printf("zero stage %d vs stage 0 on 2 ranks: max |diff| %.3g\n", stage, off);
    EXPECT_LT(off, 1e-5) << "stage " << stage;
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_NEAR(z[0].grad_norms[i], zero0[0].grad_norms[i], 1e-5 * zero0[0].grad_norms[i])
          << "stage " << stage << " step " << i + 1;
      EXPECT_EQ(z[0].grad_norms[i], z[1].grad_norms[i]) << "the ranks clip by different norms";
    }
  }
}

// A two-rank stage-2 checkpoint (each rank's shard in its own file, gathered by rank 0) resumes
// on two ranks bit for bit; rank 0 exports one HF directory of whole weights; a single rank
// refuses the sharded state naming both world sizes.
TEST(ZeroSftIntegrationTest, TwoRankCheckpointResumesBitForBitAndExportsWholeWeights) {
  const std::string model_dir = TinyByteModel("zero_resume_model");
  SftRunOptions o = TinyRun(model_dir, MemoryData(), 6);
  const auto straight = TwoRanks(o, 2, 6);

  o.checkpoint_dir = models::testing::MakeTempDir("zero_resume_ckpt");
  o.checkpoint_every = 3;
  o.zero_stage = 2;
  const std::string step3 = o.checkpoint_dir + "/" + CheckpointStore::StepDirName(3);
  testing::RunGlooRanks(2, [&](int rank, comm::Communicator& comm) {
    SftRunOptions r = o;
    r.comm = &comm;
    r.total_steps = 3;
    auto t = SftTrainer::Create(r);
    ASSERT_TRUE(t.ok()) << t.status().message();
    auto run = (*t)->Run(nullptr, nullptr);  // checkpoints at its end, every rank taking part
    ASSERT_TRUE(run.ok()) << run.status().message();
  });
  EXPECT_TRUE(fs::exists(step3 + "/" + ZeroStateFileName(0, 2)));
  EXPECT_TRUE(fs::exists(step3 + "/" + ZeroStateFileName(1, 2)));
  EXPECT_FALSE(fs::exists(step3 + "/optimizer.safetensors"));
  // The two shards differ (each holds its own half of the state).
  EXPECT_NE(fs::file_size(step3 + "/" + ZeroStateFileName(0, 2)), 0u);

  const std::string export_dir = models::testing::MakeTempDir("zero_export");
  std::vector<std::vector<at::Tensor>> resumed(2);
  testing::RunGlooRanks(2, [&](int rank, comm::Communicator& comm) {
    SftRunOptions r = o;
    r.comm = &comm;
    auto t = SftTrainer::Create(r);
    ASSERT_TRUE(t.ok()) << t.status().message();
    auto at = (*t)->Resume();
    ASSERT_TRUE(at.ok()) << at.status().message();
    EXPECT_EQ(*at, 3);
    auto run = (*t)->Run(nullptr, nullptr);
    ASSERT_TRUE(run.ok()) << run.status().message();
    resumed[rank] = Weights(**t);
    if (rank == 0) {
      Status s = (*t)->SaveModel(export_dir);
      EXPECT_TRUE(s.ok()) << s.message();
    }
  });
  EXPECT_TRUE(Same(resumed[0], straight[0].weights)) << "rank 0 resumed off the straight run";
  EXPECT_TRUE(Same(resumed[1], straight[1].weights)) << "rank 1 resumed off the straight run";

  // One HF directory with every weight whole: loaded alone, it is the trained model.
  ASSERT_TRUE(fs::exists(export_dir + "/model.safetensors"));
  ASSERT_TRUE(fs::exists(export_dir + "/config.json"));
  auto loaded = models::CausalLMImpl::Load(export_dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  std::vector<at::Tensor> exported;
  for (const auto& item : (*loaded)->named_parameters(true)) {
    exported.push_back(item.value().detach());
  }
  ASSERT_EQ(exported.size(), resumed[0].size());
  EXPECT_TRUE(Same(exported, resumed[0])) << "the export is not the trained weights";

  // One rank, unsharded: refused, naming the two ranks that wrote the state.
  SftRunOptions single = o;
  single.zero_stage = 0;
  auto t = SftTrainer::Create(single);
  ASSERT_TRUE(t.ok());
  auto at = t->get()->Resume();
  ASSERT_FALSE(at.ok());
  EXPECT_NE(at.status().message().find("2 ranks"), std::string::npos) << at.status().message();
}

TEST(ZeroSftTest, ZeroStageWithLoraOrOutOfRangeIsRefusedNamingTheKey) {
  const std::string model_dir = TinyByteModel("zero_lora_model");
  SftRunOptions o = TinyRun(model_dir, MemoryData(), 1);
  o.sft.lora.enabled = true;
  o.zero_stage = 1;
  auto a = SftTrainer::Create(o);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("trainer.zero_stage"), std::string::npos)
      << a.status().message();
  SftRunOptions b = TinyRun(model_dir, MemoryData(), 1);
  b.zero_stage = 3;
  auto bad = SftTrainer::Create(b);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("trainer.zero_stage"), std::string::npos);
  // One rank: allowed, and the optimizer stays unsharded (a shard of one).
  SftRunOptions one = TinyRun(model_dir, MemoryData(), 1);
  one.zero_stage = 2;
  auto ok = SftTrainer::Create(one);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE((*ok)->Step().ok());
}

}  // namespace
}  // namespace allot::trainer
