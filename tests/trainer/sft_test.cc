// trainer/sft: completion-only masks, the loss against hand computation, learning, CPU
// determinism and exact resume, on tiny Qwen2 models with allot's byte tokenizer.
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
#include "trainer/sft/sft_batcher.h"
#include "trainer/sft/sft_dataset.h"
#include "trainer/sft/sft_loss.h"
#include "trainer/sft/sft_trainer.h"

namespace allot::trainer {
namespace {

namespace fs = std::filesystem;

// A tiny Qwen2 over the byte vocabulary (256 bytes + <|endoftext|>, <|im_start|>, <|im_end|>;
// EOS = <|im_end|>) with its tokenizer.json.
std::string TinyByteModel(const std::string& name) {
  const std::string dir = models::testing::MakeTempDir(name);
  models::testing::TinyModelOptions o;
  o.vocab_size = 259;
  models::testing::WriteTinyModel(dir, o);
  std::ofstream(dir + "/tokenizer.json") << models::ByteTokenizer().ToHuggingFaceJson();
  return dir;
}

std::string WriteLines(const std::string& dir, const std::vector<std::string>& lines) {
  const std::string path = dir + "/data.jsonl";
  std::ofstream out(path);
  for (const auto& l : lines) out << l << "\n";
  return path;
}

SftEncoder ByteEncoder(const models::Tokenizer& tok, const SftConfig& c) {
  SftEncoder e;
  e.tokenizer = &tok;
  e.config = &c;
  e.eos_id = 258;
  return e;
}

TEST(SftDatasetTest, PromptCompletionTrainsCompletionAndEos) {
  models::ByteTokenizer tok;
  SftConfig c;
  auto ex = ByteEncoder(tok, c).Encode(R"({"prompt": "ab", "completion": "cd"})", "x:1");
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  EXPECT_EQ(ex->ids, (std::vector<int32_t>{'a', 'b', 'c', 'd', 258}));
  EXPECT_EQ(ex->loss, (std::vector<uint8_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(ex->loss_tokens(), 3);
}

TEST(SftDatasetTest, ChatTrainsOnlyAssistantTurns) {
  models::ByteTokenizer tok;
  SftConfig c;
  const std::string line =
      R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},)"
      R"( {"role": "assistant", "content": "yo"}, {"role": "user", "content": "q"},)"
      R"( {"role": "assistant", "content": "ok"}]})";
  auto ex = ByteEncoder(tok, c).Encode(line, "x:1");
  ASSERT_TRUE(ex.ok()) << ex.status().message();
  std::vector<int32_t> trained, all = ex->ids;
  for (size_t j = 0; j < ex->ids.size(); ++j) {
    if (ex->loss[j]) trained.push_back(ex->ids[j]);
  }
  EXPECT_EQ(*tok.Decode(trained), "yo<|im_end|>\nok<|im_end|>\n");
  EXPECT_EQ(*tok.Decode(all),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
            "<|im_start|>assistant\nyo<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"
            "<|im_start|>assistant\nok<|im_end|>\n");
}

TEST(SftDatasetTest, BadLinesNameFileAndLine) {
  const std::string dir = models::testing::MakeTempDir("sft_bad_lines");
  models::ByteTokenizer tok;
  SftConfig c;
  c.data = WriteLines(dir, {R"({"prompt": "a", "completion": "b"})", "", R"({"prompt": 3})",
                            R"({"messages": [{"role": "user", "content": "x"}]})"});
  auto ds = LoadSftDataset(ByteEncoder(tok, c));
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("data.jsonl:3"), std::string::npos) << ds.status().message();
  c.skip_bad_lines = true;
  auto skipped = LoadSftDataset(ByteEncoder(tok, c));
  ASSERT_TRUE(skipped.ok()) << skipped.status().message();
  EXPECT_EQ(skipped->examples.size(), 1u);
  EXPECT_EQ(skipped->skipped, 2);  // line 3 (prompt not a string), line 4 (no assistant turn)
  EXPECT_NE(skipped->skipped_messages[1].find("data.jsonl:4"), std::string::npos);
}

TEST(SftDatasetTest, OverlongIsTruncatedDroppedOrRefused) {
  const std::string dir = models::testing::MakeTempDir("sft_overlong");
  models::ByteTokenizer tok;
  SftConfig c;
  c.max_seq_len = 6;
  c.data = WriteLines(dir, {R"({"prompt": "abc", "completion": "defgh"})",
                            R"({"prompt": "abcdefg", "completion": "h"})"});
  auto t = LoadSftDataset(ByteEncoder(tok, c));
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->examples.size(), 1u);  // the second keeps no completion token: dropped
  EXPECT_EQ(t->examples[0].ids.size(), 6u);
  EXPECT_EQ(t->truncated, 1);
  EXPECT_EQ(t->dropped, 1);
  c.overlong = "error";
  auto e = LoadSftDataset(ByteEncoder(tok, c));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("data.jsonl:1"), std::string::npos);
}

TEST(SftBatcherTest, EpochSeesEachExampleOnceInLengthBuckets) {
  std::vector<SftExample> examples(12);
  for (size_t i = 0; i < examples.size(); ++i) {
    examples[i].ids.assign(1 + (i * 7) % 12, 'a');  // lengths 1..12, shuffled
    examples[i].loss.assign(examples[i].ids.size(), 1);
  }
  // 2 per micro-batch, 2 micro-batches per step, windows of 3 micro-batches (6 examples).
  auto b = SftBatcher::Create(&examples, 2, 2, 3, true, 7);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->steps_per_epoch(), 3);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int> seen(examples.size(), 0);
    for (int64_t s = 0; s < 3; ++s) {
      const int64_t step = epoch * 3 + s;
      EXPECT_EQ(b->CursorAt(step).epoch, epoch);
      for (const auto& micro : b->StepIndices(step)) {
        ASSERT_EQ(micro.size(), 2u);
        for (size_t i : micro) ++seen[i];
        // Sorted within a window of 6: the two lengths of a micro-batch are neighbours there.
        const auto la = examples[micro[0]].ids.size(), lb = examples[micro[1]].ids.size();
        EXPECT_LE(la, lb);
      }
    }
    for (int n : seen) EXPECT_EQ(n, 1);
  }
  // The order is a function of (seed, step): a fresh batcher agrees at any step.
  auto again = SftBatcher::Create(&examples, 2, 2, 3, true, 7);
  EXPECT_EQ(again->StepIndices(4), b->StepIndices(4));
  auto reseeded = SftBatcher::Create(&examples, 2, 2, 3, true, 8);
  EXPECT_NE(reseeded->StepIndices(0), again->StepIndices(0));
}

// The loss of a padded micro-batch equals -sum log softmax(logits)[target] over completion
// tokens, computed from full logits of each unpadded row.
TEST(SftLossTest, CompletionOnlyLossMatchesHandComputation) {
  const std::string dir = TinyByteModel("sft_loss_model");
  auto model = models::CausalLMImpl::Load(dir);
  ASSERT_TRUE(model.ok()) << model.status().message();
  std::vector<SftExample> examples(2);
  examples[0].ids = {'a', 'b', 'c', 'd', 'e'};
  examples[0].loss = {0, 0, 1, 1, 1};
  examples[1].ids = {'x', 'y', 'z'};
  examples[1].loss = {0, 0, 1};
  auto batcher = SftBatcher::Create(&examples, 2, 1, 1, false, 0);
  ASSERT_TRUE(batcher.ok());
  SftMicroBatch mb = batcher->Collate({0, 1});
  EXPECT_EQ(mb.loss_tokens, 4);
  EXPECT_EQ(mb.input_ids[1][0].item<int64_t>(), 0);  // left padding
  const double got = CompletionLossSum(**model, mb, /*chunk_tokens=*/3).item<double>();

  double want = 0;
  for (const auto& ex : examples) {
    at::Tensor ids = torch::tensor(std::vector<int64_t>(ex.ids.begin(), ex.ids.end())).unsqueeze(0);
    at::Tensor logp = torch::log_softmax((*model)->forward(ids)[0].to(torch::kDouble), -1);
    for (size_t j = 1; j < ex.ids.size(); ++j) {
      if (ex.loss[j]) want -= logp[static_cast<int64_t>(j) - 1][ex.ids[j]].item<double>();
    }
  }
  EXPECT_NEAR(got, want, 1e-4 * std::abs(want));
}

SftRunOptions TinyRun(const std::string& model_dir, const std::string& data, int64_t steps) {
  SftRunOptions o;
  o.model.path = model_dir;
  o.sft.data = data;
  o.sft.init = "random";
  o.sft.init_seed = 5;
  o.sft.batch_size = 4;
  o.sft.bucket_window = 2;
  o.sft.threads = 1;
  o.sft.optim.lr = 3e-3;
  o.sft.optim.schedule = "cosine";
  o.sft.optim.warmup_steps = 5;
  o.sft.optim.weight_decay = 0.01;
  o.sft.optim.grad_accum = 2;
  o.total_steps = steps;
  o.seed = 11;
  return o;
}

// Eight key -> value pairs of different lengths.
std::string MemoryData(const std::string& dir) {
  std::vector<std::string> lines;
  const char* values[] = {"red", "blue7", "go", "tree", "x9y", "moon", "qq", "sand"};
  for (int i = 0; i < 8; ++i) {
    std::string line = R"({"prompt": "k)";
    line += std::to_string(i);
    line += R"(=", "completion": ")";
    line += values[i];
    line += R"("})";
    lines.push_back(line);
  }
  return WriteLines(models::testing::MakeTempDir("sft_memory_data"), lines);
}

std::string Greedy(models::CausalLMImpl& model, const models::Tokenizer& tok,
                   const std::string& prompt) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> ids;
  for (unsigned char ch : prompt) ids.push_back(ch);
  std::vector<int32_t> out;
  for (int i = 0; i < 12; ++i) {
    at::Tensor logits = model.forward(torch::tensor(ids).unsqueeze(0));
    const int64_t next = logits[0][-1].argmax().item<int64_t>();
    if (next == 258) break;
    out.push_back(static_cast<int32_t>(next));
    ids.push_back(next);
  }
  return *tok.Decode(out);
}

std::vector<at::Tensor> Weights(SftTrainer& t) {
  std::vector<at::Tensor> out;
  for (auto& [name, p] : t.TrainableParameters()) out.push_back(p.detach().clone());
  return out;
}

bool Same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

TEST(SftTrainerIntegrationTest, FromScratchLearnsTheCompletions) {
  const std::string model_dir = TinyByteModel("sft_learn_model");
  auto t = SftTrainer::Create(TinyRun(model_dir, MemoryData(model_dir), 150));
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto summary = (*t)->Run(nullptr, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->steps, 150);
  std::printf("sft from scratch: loss %.4f -> %.4f, %.0f tokens/s\n", summary->first_loss,
              summary->last_loss, summary->tokens_per_s);
  // transformers-style init (N(0, 0.02) matrices): the first loss is that of a uniform guess.
  EXPECT_NEAR(summary->first_loss, std::log(259.0), 0.05);
  EXPECT_LT(summary->last_loss, 0.1 * summary->first_loss)
      << summary->first_loss << " -> " << summary->last_loss;
  (*t)->model().eval();
  const char* values[] = {"red", "blue7", "go", "tree", "x9y", "moon", "qq", "sand"};
  int right = 0;
  for (int i = 0; i < 8; ++i) {
    right += Greedy((*t)->model(), (*t)->tokenizer(), "k" + std::to_string(i) + "=") == values[i];
  }
  EXPECT_EQ(right, 8);
}

TEST(SftTrainerTest, SameSeedSameWeightsOnCpu) {
  const std::string model_dir = TinyByteModel("sft_det_model");
  const std::string data = MemoryData(model_dir);
  SftRunOptions o = TinyRun(model_dir, data, 4);
  o.sft.batch_size = 2;  // a step sees 2 of the 8 examples, so the data order matters
  o.sft.optim.grad_accum = 1;
  o.sft.optim.warmup_steps = 1;
  auto a = SftTrainer::Create(o);
  auto b = SftTrainer::Create(o);
  SftRunOptions other = o;
  other.seed = 12;  // another data order
  auto c = SftTrainer::Create(other);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_TRUE((*a)->Run(nullptr, nullptr).ok());
  ASSERT_TRUE((*b)->Run(nullptr, nullptr).ok());
  ASSERT_TRUE((*c)->Run(nullptr, nullptr).ok());
  EXPECT_TRUE(Same(Weights(**a), Weights(**b)));
  EXPECT_FALSE(Same(Weights(**a), Weights(**c)));
}

TEST(SftTrainerTest, ResumeEqualsUninterruptedRunBitForBit) {
  const std::string model_dir = TinyByteModel("sft_resume_model");
  const std::string data = MemoryData(model_dir);
  // 4 of the 8 examples per step: the run crosses epochs, and resumes in the middle of one.
  SftRunOptions straight = TinyRun(model_dir, data, 6);
  straight.sft.batch_size = 2;
  auto u = SftTrainer::Create(straight);
  ASSERT_TRUE(u.ok());
  ASSERT_TRUE((*u)->Run(nullptr, nullptr).ok());

  SftRunOptions first = straight;
  first.checkpoint_dir = models::testing::MakeTempDir("sft_resume_ckpt");
  first.checkpoint_every = 3;
  auto a = SftTrainer::Create(first);
  ASSERT_TRUE(a.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*a)->Step().ok());
  ASSERT_TRUE((*a)->SaveCheckpoint().ok());
  EXPECT_TRUE(fs::exists(first.checkpoint_dir + "/" + CheckpointStore::StepDirName(3) +
                         "/policy/policy.json"));  // what `allot export` reads

  // The resumed trainer starts from other weights: a restore that loads nothing fails below.
  SftRunOptions second = first;
  second.sft.init_seed = 99;
  auto b = SftTrainer::Create(second);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(Same(Weights(**a), Weights(**b)));
  auto step = (*b)->Resume();
  ASSERT_TRUE(step.ok()) << step.status().message();
  EXPECT_EQ(*step, 3);
  EXPECT_TRUE(Same(Weights(**a), Weights(**b)));
  ASSERT_TRUE((*b)->Run(nullptr, nullptr).ok());
  EXPECT_EQ((*b)->step(), 6);
  EXPECT_TRUE(Same(Weights(**u), Weights(**b)));

  // A different run seed means a different data order: the checkpoint's cursor would not apply.
  SftRunOptions reseeded = first;
  reseeded.seed = 12;
  auto c = SftTrainer::Create(reseeded);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*c)->Resume().ok());
}

TEST(SftTrainerTest, LoraTrainsOnlyTheAdapterAndSavesIt) {
  const std::string model_dir = TinyByteModel("sft_lora_model");
  SftRunOptions o = TinyRun(model_dir, MemoryData(model_dir), 3);
  o.sft.init = "pretrained";
  o.sft.init_seed = 0;
  o.sft.lora.enabled = true;
  o.sft.lora.r = 4;
  o.sft.optim.warmup_steps = 1;
  auto t = SftTrainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().message();
  for (auto& [name, p] : (*t)->TrainableParameters()) {
    EXPECT_TRUE(name.find("lora_") != std::string::npos) << name;
  }
  auto base = models::CausalLMImpl::Load(model_dir);
  ASSERT_TRUE((*t)->Run(nullptr, nullptr).ok());
  const auto base_w = (*base)->StateTensors(false);
  const auto now_w = (*t)->model().StateTensors(false);
  ASSERT_EQ(base_w.size(), now_w.size());
  for (size_t i = 0; i < base_w.size(); ++i)
    EXPECT_TRUE(torch::equal(base_w[i].second, now_w[i].second));
  const std::string out = models::testing::MakeTempDir("sft_lora_out");
  ASSERT_TRUE((*t)->SaveModel(out).ok());
  EXPECT_TRUE(fs::exists(out + "/adapter_config.json"));
  EXPECT_TRUE(fs::exists(out + "/adapter_model.safetensors"));
}

TEST(SftConfigTest, KnobsWithoutEffectAreErrors) {
  SftConfig c;
  c.lora.r = 8;  // lora is off
  auto s = ValidateSftConfig(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("sft.lora"), std::string::npos);
  SftConfig d;
  d.init_seed = 3;  // pretrained weights
  EXPECT_NE(ValidateSftConfig(d).message().find("sft.init_seed"), std::string::npos);
  SftConfig e;
  e.format = "prompt_completion";
  e.chat_template.kind = "llama3";
  EXPECT_NE(ValidateSftConfig(e).message().find("sft.chat_template"), std::string::npos);
  EXPECT_TRUE(ValidateSftConfig(SftConfig{}).ok());
}

double MaxDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  }
  return d;
}

// Two Gloo ranks of the real trainer, each on half of every micro-batch, end where one rank ends
// on the whole batch. Without the gradient all-reduce each rank would step on its half alone
// and land far from the single learner (and from the other rank).
TEST(SftDataParallelIntegrationTest, TwoGlooRanksEqualOneRankOnTheUnionBatch) {
  const std::string model_dir = TinyByteModel("sft_dp_model");
  SftRunOptions o = TinyRun(model_dir, MemoryData(model_dir), 4);
  o.sft.init = "pretrained";  // both ranks load the same weights (random init draws from the
  o.sft.init_seed = 0;        // global generator, which two threads would share)
  o.sft.optim.warmup_steps = 1;
  o.sft.optim.lr = 1e-2;
  auto start = SftTrainer::Create(o);
  auto one = SftTrainer::Create(o);
  ASSERT_TRUE(start.ok() && one.ok());
  ASSERT_TRUE((*one)->Run(nullptr, nullptr).ok());
  const auto expected = Weights(**one);
  ASSERT_GT(MaxDiff(Weights(**start), expected), 1e-3) << "the single learner did not move";

  std::vector<std::vector<at::Tensor>> got(2);
  std::vector<int64_t> loss_tokens(2);
  std::vector<double> first_loss(2);
  testing::RunGlooRanks(2, [&](int rank, comm::Communicator& comm) {
    SftRunOptions r = o;
    r.comm = &comm;
    auto t = SftTrainer::Create(r);
    ASSERT_TRUE(t.ok()) << t.status().message();
    auto first = (*t)->Step();
    ASSERT_TRUE(first.ok()) << first.status().message();
    loss_tokens[rank] = first->loss_tokens;
    first_loss[rank] = first->loss;
    auto rest = (*t)->Run(nullptr, nullptr);
    ASSERT_TRUE(rest.ok()) << rest.status().message();
    EXPECT_EQ((*t)->is_rank0(), rank == 0);
    got[rank] = Weights(**t);
  });
  ASSERT_EQ(got[0].size(), expected.size());
  ASSERT_EQ(got[1].size(), expected.size());
  // The step's token count and loss are the union's on every rank.
  EXPECT_EQ(loss_tokens[0], loss_tokens[1]);
  EXPECT_NEAR(first_loss[0], first_loss[1], 1e-6);
  EXPECT_LT(MaxDiff(got[0], got[1]), 1e-6) << "ranks diverged";
  const double off = MaxDiff(got[0], expected);
  std::printf("sft 2 ranks vs 1: max |diff| %.3g\n", off);
  EXPECT_LT(off, 1e-5) << "two ranks differ from one rank on the batch";
}

}  // namespace
}  // namespace allot::trainer
