#include "models/causal_lm.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/safetensors.h"
#include "tests/models/tiny_model.h"

namespace allot::models {
namespace {

using testing::MakeTempDir;
using testing::TinyModelOptions;
using testing::WriteTinyModel;

std::shared_ptr<CausalLMImpl> LoadTiny(const TinyModelOptions& o = {},
                                       const std::string& dtype = "auto") {
  std::string dir = WriteTinyModel(MakeTempDir("lm"), o);
  auto model = CausalLMImpl::Load(dir, {.dtype = dtype});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? *model : nullptr;
}

at::Tensor Ids(std::vector<int64_t> v) { return torch::tensor(v, torch::kLong).unsqueeze(0); }

// An independent float64 forward pass written from the architecture description: explicit
// per-head loops, RoPE as a rotation of the pairs (a, a + D/2), kv head = head / group.
at::Tensor ReferenceLogits(CausalLMImpl& m, const at::Tensor& ids) {
  std::map<std::string, at::Tensor> p;
  for (const auto& it : m.named_parameters()) p[it.key()] = it.value().detach().to(torch::kDouble);
  const auto& c = m.config();
  const int64_t t = ids.size(0), d = c.head_dim, half = d / 2;
  const int64_t group = c.num_attention_heads / c.num_key_value_heads;
  auto rms = [&](const at::Tensor& x, const at::Tensor& w) {
    return x / torch::sqrt(x.pow(2).mean(-1, true) + c.rms_norm_eps) * w;
  };
  auto linear = [&](const at::Tensor& x, const std::string& name) {
    at::Tensor y = torch::matmul(x, p[name + ".weight"].t());
    return p.count(name + ".bias") ? y + p[name + ".bias"] : y;
  };
  auto rope = [&](at::Tensor x) {  // x [T, D]
    at::Tensor out = x.clone();
    for (int64_t pos = 0; pos < t; ++pos) {
      for (int64_t a = 0; a < half; ++a) {
        const double angle = pos * std::pow(c.rope_theta, -2.0 * a / d);
        const double x1 = x[pos][a].item<double>(), x2 = x[pos][a + half].item<double>();
        out[pos][a] = x1 * std::cos(angle) - x2 * std::sin(angle);
        out[pos][a + half] = x2 * std::cos(angle) + x1 * std::sin(angle);
      }
    }
    return out;
  };
  at::Tensor x = p["model.embed_tokens.weight"].index_select(0, ids);
  at::Tensor future = torch::ones({t, t}, torch::kBool).triu(1);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string pre = "model.layers." + std::to_string(l) + ".";
    at::Tensor h = rms(x, p[pre + "input_layernorm.weight"]);
    at::Tensor q = linear(h, pre + "self_attn.q_proj");
    at::Tensor k = linear(h, pre + "self_attn.k_proj");
    at::Tensor v = linear(h, pre + "self_attn.v_proj");
    std::vector<at::Tensor> heads;
    for (int64_t i = 0; i < c.num_attention_heads; ++i) {
      const int64_t g = i / group;
      at::Tensor qi = q.narrow(1, i * d, d);
      at::Tensor kg = k.narrow(1, g * d, d);
      if (p.count(pre + "self_attn.q_norm.weight")) {  // Qwen3: RMSNorm per head before RoPE
        qi = rms(qi, p[pre + "self_attn.q_norm.weight"]);
        kg = rms(kg, p[pre + "self_attn.k_norm.weight"]);
      }
      qi = rope(qi);
      kg = rope(kg);
      at::Tensor s = torch::matmul(qi, kg.t()) / std::sqrt(static_cast<double>(d));
      s = s.masked_fill(future, -INFINITY);
      heads.push_back(torch::matmul(torch::softmax(s, -1), v.narrow(1, g * d, d)));
    }
    x = x + linear(torch::cat(heads, 1), pre + "self_attn.o_proj");
    at::Tensor h2 = rms(x, p[pre + "post_attention_layernorm.weight"]);
    x = x + linear(torch::silu(linear(h2, pre + "mlp.gate_proj")) * linear(h2, pre + "mlp.up_proj"),
                   pre + "mlp.down_proj");
  }
  x = rms(x, p["model.norm.weight"]);
  at::Tensor head = c.tie_word_embeddings ? p["model.embed_tokens.weight"] : p["lm_head.weight"];
  return torch::matmul(x, head.t());
}

TEST(CausalLMTest, LoadsConfigAndWeightsUnderHuggingFaceNames) {
  auto m = LoadTiny();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->config().family, ModelFamily::kQwen2);
  EXPECT_EQ(m->config().head_dim, 8);
  EXPECT_EQ(m->dtype(), torch::kFloat);
  auto params = m->named_parameters();
  EXPECT_TRUE(params.contains("model.layers.1.self_attn.q_proj.bias"));
  EXPECT_TRUE(params.contains("lm_head.weight"));
  EXPECT_EQ(m->linear_sites().size(), 14u);
  EXPECT_EQ(m->linear_sites()[13].path, "model.layers.1.mlp.down_proj");
}

TEST(CausalLMTest, MatchesIndependentReferenceWithGqaAndBias) {
  auto m = LoadTiny();
  at::Tensor ids = torch::tensor({3, 17, 5, 60, 2, 9, 33}, torch::kLong);
  torch::NoGradGuard g;
  at::Tensor got = m->forward(ids.unsqueeze(0))[0].to(torch::kDouble);
  at::Tensor want = ReferenceLogits(*m, ids);
  EXPECT_LT((got - want).abs().max().item<double>(), 1e-4);
}

TEST(CausalLMTest, LlamaWithTiedEmbeddingsAndRopeParametersMatchesReference) {
  auto m = LoadTiny({.model_type = "llama",
                     .tie_word_embeddings = true,
                     .rope_parameters_spelling = true,
                     .rope_theta = 500.0});
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->config().rope_theta, 500.0);
  EXPECT_FALSE(m->named_parameters().contains("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_FALSE(m->named_parameters().contains("lm_head.weight"));
  at::Tensor ids = torch::tensor({1, 2, 40, 41, 7}, torch::kLong);
  torch::NoGradGuard g;
  at::Tensor got = m->forward(ids.unsqueeze(0))[0].to(torch::kDouble);
  EXPECT_LT((got - ReferenceLogits(*m, ids)).abs().max().item<double>(), 1e-4);
}

TEST(CausalLMTest, Qwen3WithQueryAndKeyNormsMatchesReference) {
  auto m = LoadTiny({.model_type = "qwen3", .tie_word_embeddings = true, .rope_theta = 1e6});
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->config().family, ModelFamily::kQwen3);
  EXPECT_EQ(m->config().head_dim, 8);
  EXPECT_FALSE(m->named_parameters().contains("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_FALSE(m->named_parameters().contains("model.layers.0.self_attn.o_proj.bias"));
  EXPECT_TRUE(m->named_parameters().contains("model.layers.1.self_attn.k_norm.weight"));
  at::Tensor ids = torch::tensor({3, 17, 5, 60, 2, 9, 33}, torch::kLong);
  torch::NoGradGuard g;
  at::Tensor got = m->forward(ids.unsqueeze(0))[0].to(torch::kDouble);
  at::Tensor want = ReferenceLogits(*m, ids);
  EXPECT_LT((got - want).abs().max().item<double>(), 1e-4);
  // The norms matter: without them the logits are elsewhere.
  for (const auto& it : m->named_parameters()) {
    if (it.key().find("_norm.weight") != std::string::npos &&
        it.key().find("self_attn") != std::string::npos) {
      it.value().fill_(1.0);
    }
  }
  EXPECT_GT((m->forward(ids.unsqueeze(0))[0].to(torch::kDouble) - want).abs().max().item<double>(),
            1e-3);
}

TEST(CausalLMTest, KvCacheDecodingEqualsFullRecomputation) {
  auto m = LoadTiny();
  torch::NoGradGuard g;
  at::Tensor ids = torch::randint(0, 64, {2, 12}, torch::kLong);
  at::Tensor full = m->forward(ids);
  KVCache cache(m->config().num_hidden_layers);
  at::Tensor h = m->Hidden(ids.narrow(1, 0, 5), {}, {}, &cache);
  EXPECT_LT((m->Logits(h) - full.narrow(1, 0, 5)).abs().max().item<float>(), 1e-5);
  for (int64_t t = 5; t < 12; ++t) {
    at::Tensor step = m->Logits(m->Hidden(ids.narrow(1, t, 1), {}, {}, &cache));
    EXPECT_LT((step[0][0] - full[0][t]).abs().max().item<float>(), 1e-4) << t;
    EXPECT_LT((step[1][0] - full[1][t]).abs().max().item<float>(), 1e-4) << t;
  }
  EXPECT_EQ(cache.length(), 12);
}

TEST(CausalLMTest, LeftPaddedBatchEqualsUnbatchedIncludingCachedSteps) {
  auto m = LoadTiny();
  torch::NoGradGuard g;
  std::vector<std::vector<int64_t>> seqs = {{4, 8, 15, 16, 23, 42}, {7, 7}, {1, 2, 3, 4}};
  const int64_t width = 6;
  at::Tensor ids = torch::zeros({3, width}, torch::kLong);
  at::Tensor mask = torch::zeros({3, width}, torch::kLong);
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t n = static_cast<int64_t>(seqs[b].size());
    ids[b].narrow(0, width - n, n).copy_(torch::tensor(seqs[b], torch::kLong));
    mask[b].narrow(0, width - n, n).fill_(1);
  }
  KVCache cache(m->config().num_hidden_layers);
  at::Tensor logits = m->Logits(m->Hidden(ids, mask, {}, &cache));
  // Two decode steps for everyone.
  at::Tensor next = torch::tensor({{11}, {12}, {13}}, torch::kLong);
  std::vector<at::Tensor> steps;
  for (int s = 0; s < 2; ++s) {
    mask = torch::cat({mask, torch::ones({3, 1}, torch::kLong)}, 1);
    steps.push_back(m->Logits(m->Hidden(next + s, mask, {}, &cache)));
  }
  for (int64_t b = 0; b < 3; ++b) {
    std::vector<int64_t> alone = seqs[b];
    alone.push_back(11 + b);
    alone.push_back(12 + b);
    at::Tensor want = m->forward(Ids(alone))[0];
    const int64_t n = static_cast<int64_t>(seqs[b].size());
    EXPECT_LT((logits[b].narrow(0, width - n, n) - want.narrow(0, 0, n)).abs().max().item<float>(),
              1e-4);
    EXPECT_LT((steps[0][b][0] - want[n]).abs().max().item<float>(), 1e-4);
    EXPECT_LT((steps[1][b][0] - want[n + 1]).abs().max().item<float>(), 1e-4);
  }
}

TEST(CausalLMTest, ChunkedLogProbsEqualFullLogSoftmaxWithGradients) {
  auto m = LoadTiny({.tie_word_embeddings = true});
  at::Tensor ids = torch::randint(0, 64, {2, 9}, torch::kLong);
  for (double temperature : {1.0, 0.7}) {
    at::Tensor logp = m->TokenLogProbs(ids, {}, /*chunk_tokens=*/3, temperature);
    ASSERT_EQ(logp.sizes(), (std::vector<int64_t>{2, 8}));
    at::Tensor full = torch::log_softmax(m->forward(ids) / temperature, -1)
                          .narrow(1, 0, 8)
                          .gather(2, ids.narrow(1, 1, 8).unsqueeze(2))
                          .squeeze(2);
    EXPECT_LT((logp - full).abs().max().item<float>(),
              1e-5 + 1e-5 * full.abs().max().item<float>());
    // Gradients through the chunked backward equal autograd's through full logits; the tied
    // embedding receives both the logits and the input gradient.
    at::Tensor weights = torch::rand({2, 8});
    at::Tensor emb = m->named_parameters()["model.embed_tokens.weight"];
    at::Tensor q = m->named_parameters()["model.layers.0.self_attn.q_proj.weight"];
    auto grads_chunked = torch::autograd::grad({(logp * weights).sum()}, {emb, q});
    auto grads_full = torch::autograd::grad({(full * weights).sum()}, {emb, q});
    // The two sum in different orders (and an optimised BLAS may split GEMMs across threads):
    // agreement is to float rounding relative to the gradients' size.
    for (size_t k = 0; k < 2; ++k) {
      const float scale = grads_full[k].abs().max().item<float>();
      EXPECT_LT((grads_chunked[k] - grads_full[k]).abs().max().item<float>(), 1e-5 + 1e-4 * scale)
          << (k == 0 ? "embedding" : "q_proj") << " gradient, temperature " << temperature;
    }
  }
}

// The bfloat16 head (one fused log-softmax in forward, a bfloat16 softmax in backward) against
// autograd through float32 log-softmax of the same bfloat16 logits. A wrong sign, a missing
// target column or a target column taken from the bfloat16 softmax instead of forward's
// float32 log-prob fails one of the three comparisons.
TEST(CausalLMTest, Bfloat16ChunkedLogProbsMatchFloat32LogSoftmaxOfTheSameLogits) {
  torch::manual_seed(3);
  auto m = LoadTiny({.vocab_size = 64, .hidden_size = 32}, "bfloat16");
  ASSERT_NE(m, nullptr);
  const at::Tensor w = m->output_weight().detach();
  at::Tensor h = (torch::randn({11, 32}) * 4).to(torch::kBFloat16).requires_grad_();
  at::Tensor targets = torch::randint(0, 64, {11}, torch::kLong);
  // One confident row: its target logit far above the rest, so 1 - p(t) is tiny.
  {
    torch::NoGradGuard g;
    h[0].copy_((w[targets[0].item<int64_t>()].to(torch::kFloat) * 400).to(torch::kBFloat16));
  }
  at::Tensor logp = m->SelectedLogProbs(h, targets, /*chunk_tokens=*/4);
  ASSERT_EQ(logp.scalar_type(), torch::kFloat);
  at::Tensor h_ref = h.detach().clone().requires_grad_();
  at::Tensor want = torch::log_softmax(torch::matmul(h_ref, w.t()).to(torch::kFloat), -1)
                        .gather(1, targets.unsqueeze(1))
                        .squeeze(1);
  EXPECT_LT((logp - want).abs().max().item<float>(), 1e-5);
  EXPECT_GT(logp[0].item<float>(), -1e-3);  // the confident row
  at::Tensor upstream = torch::rand({11}) + 0.5;
  at::Tensor grad = torch::autograd::grad({(logp * upstream).sum()}, {h})[0].to(torch::kFloat);
  at::Tensor grad_ref =
      torch::autograd::grad({(want * upstream).sum()}, {h_ref})[0].to(torch::kFloat);
  for (int64_t r = 0; r < 11; ++r) {
    const float scale = grad_ref[r].abs().max().item<float>();
    EXPECT_LT((grad[r] - grad_ref[r]).abs().max().item<float>(), 2e-2 * scale + 1e-6)
        << "row " << r << " (row 0 is the confident one)";
  }
}

// Only the needed columns are scored: they equal the full computation, the rest are 0 and send
// no gradient.
TEST(CausalLMTest, TokenLogProbsScoresOnlyTheNeededColumns) {
  torch::manual_seed(5);
  auto m = LoadTiny();
  at::Tensor ids = torch::randint(0, 64, {3, 9}, torch::kLong);
  at::Tensor mask = torch::ones({3, 9}, torch::kLong);
  mask[1].narrow(0, 0, 3).zero_();  // left padding: the packed path
  at::Tensor needed = torch::zeros({3, 8});
  needed.narrow(1, 4, 4).fill_(1);
  needed[2][0] = 1;
  for (const bool padded : {false, true}) {
    at::Tensor m_ = padded ? at::Tensor() : mask;
    at::Tensor full = m->TokenLogProbs(ids, m_, 4);
    at::Tensor some = m->TokenLogProbs(ids, m_, 4, 1.0, needed);
    ASSERT_EQ(some.sizes(), full.sizes());
    EXPECT_LT(((some - full) * needed).abs().max().item<float>(), 1e-6) << padded;
    EXPECT_EQ((some * (1 - needed)).abs().max().item<float>(), 0.0f) << padded;
    EXPECT_GT((full * (1 - needed)).abs().max().item<float>(), 0.0f) << padded;
    at::Tensor emb = m->named_parameters()["model.embed_tokens.weight"];
    auto g_some = torch::autograd::grad({(some * needed).sum()}, {emb})[0];
    auto g_full = torch::autograd::grad({(full * needed).sum()}, {emb})[0];
    EXPECT_LT((g_some - g_full).abs().max().item<float>(), 1e-5) << padded;
  }
  EXPECT_THROW(m->TokenLogProbs(ids, mask, 4, 1.0, torch::ones({3, 9})), c10::Error);
}

TEST(CausalLMTest, Bfloat16AndFloat16LoadAndStayCloseToFloat32) {
  std::string dir = WriteTinyModel(MakeTempDir("lm"));
  auto f32 = CausalLMImpl::Load(dir, {.dtype = "float32"});
  auto bf16 = CausalLMImpl::Load(dir, {.dtype = "bfloat16"});
  auto f16 = CausalLMImpl::Load(dir, {.dtype = "float16"});
  ASSERT_TRUE(f32.ok() && bf16.ok() && f16.ok());
  EXPECT_EQ((*bf16)->dtype(), torch::kBFloat16);
  EXPECT_EQ((*bf16)->named_parameters()["model.norm.weight"].scalar_type(), torch::kBFloat16);
  torch::NoGradGuard g;
  at::Tensor ids = Ids({5, 6, 7, 8, 9, 10});
  at::Tensor a = torch::softmax((*f32)->forward(ids), -1);
  at::Tensor b = torch::softmax((*bf16)->forward(ids), -1);
  EXPECT_EQ(b.scalar_type(), torch::kFloat);
  EXPECT_LT((a - b).abs().max().item<float>(), 0.05);
  EXPECT_GT((a - b).abs().max().item<float>(), 0.0f);  // really ran in bfloat16
  EXPECT_LT((a - torch::softmax((*f16)->forward(ids), -1)).abs().max().item<float>(), 1e-5);
}

TEST(CausalLMTest, SaveMergedRoundTripsExactlyAndWritesDtype) {
  auto m = LoadTiny();
  std::string out = MakeTempDir("lm_out");
  ASSERT_TRUE(m->SaveMerged(out).ok());
  auto again = CausalLMImpl::Load(out);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  auto a = m->named_parameters();
  for (const auto& it : (*again)->named_parameters()) {
    EXPECT_TRUE(torch::equal(it.value(), a[it.key()])) << it.key();
  }
  std::string half = MakeTempDir("lm_bf16");
  ASSERT_TRUE(m->SaveMerged(half, "bfloat16").ok());
  auto config = LoadTransformerConfig(half);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->torch_dtype, "bfloat16");
  auto file = safetensors::File::Open(half + "/model.safetensors");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->Find("model.norm.weight")->dtype, safetensors::Dtype::kBF16);
}

TEST(CausalLMTest, MissingTensorNamesFileAndTensor) {
  std::string dir = MakeTempDir("lm_missing");
  WriteTinyModel(dir, {.skip_tensor = "model.layers.1.mlp.up_proj.weight"});
  auto m = CausalLMImpl::Load(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("model.safetensors"), std::string::npos);
  EXPECT_NE(m.status().message().find("model.layers.1.mlp.up_proj.weight"), std::string::npos);
}

TEST(CausalLMTest, WrongShapeNamesTensorAndShapes) {
  std::string dir = WriteTinyModel(MakeTempDir("lm_shape"));
  // Claim a larger intermediate size than the tensors have.
  std::string text;
  {
    std::ifstream in(dir + "/config.json");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  text.replace(text.find("\"intermediate_size\": 48"), 23, "\"intermediate_size\": 50");
  std::ofstream(dir + "/config.json") << text;
  auto m = CausalLMImpl::Load(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("mlp.gate_proj.weight' has shape [48, 32]"),
            std::string::npos)
      << m.status().message();
}

TEST(HfConfigTest, MalformedConfigsNameFileAndField) {
  auto bad_json = ParseTransformerConfig("{not json", "m/config.json");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.status().message().find("m/config.json"), std::string::npos);

  auto missing = ParseTransformerConfig(R"({"model_type": "qwen2", "vocab_size": 10})", "c.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("c.json: field 'hidden_size' is missing"),
            std::string::npos);

  auto type = ParseTransformerConfig(R"({"model_type": "gpt2"})", "c.json");
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.status().message().find("'gpt2' is not supported"), std::string::npos);

  const std::string base =
      R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 16,
          "num_hidden_layers": 1, "num_attention_heads": 4, )";
  auto gqa = ParseTransformerConfig(base + R"("num_key_value_heads": 3})", "c.json");
  ASSERT_FALSE(gqa.ok());
  EXPECT_NE(gqa.status().message().find("num_key_value_heads"), std::string::npos);

  auto wrong_type = ParseTransformerConfig(base + R"("rms_norm_eps": "small"})", "c.json");
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("'rms_norm_eps' must be a number"),
            std::string::npos);

  auto scaled =
      ParseTransformerConfig(base + R"("rope_scaling": {"rope_type": "yarn"}})", "c.json");
  ASSERT_FALSE(scaled.ok());
  EXPECT_NE(scaled.status().message().find("rope_scaling.rope_type"), std::string::npos);

  auto ok = ParseTransformerConfig(base + R"("eos_token_id": [1, 2], "torch_dtype": "bfloat16"})",
                                   "c.json");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->num_key_value_heads, 4);
  EXPECT_EQ(ok->head_dim, 2);
  EXPECT_EQ(ok->eos_token_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(ok->attention_bias);
  auto round = ParseTransformerConfig(ok->ToJson(), "again.json");
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->ToJson(), ok->ToJson());
}

// The config.json transformers 5.x writes for Qwen2Config(hidden_size=896, ...) (the GPU
// benchmark's model): "dtype" instead of "torch_dtype", RoPE under rope_parameters, null token
// ids, and fields allot does not use (layer_types, sliding window).
// Qwen3-4B's published config.json (shape fields as on the hub), its defaults and what it
// may say that allot does not run.
TEST(HfConfigTest, ReadsQwen3AndRefusesItsSlidingWindow) {
  const std::string qwen3_4b =
      R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
          "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
          "hidden_size": 2560, "initializer_range": 0.02, "intermediate_size": 9728,
          "max_position_embeddings": 40960, "max_window_layers": 36, "model_type": "qwen3",
          "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
          "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
          "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
          "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})";
  auto c = ParseTransformerConfig(qwen3_4b, "qwen3/config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->family, ModelFamily::kQwen3);
  EXPECT_TRUE(c->qk_norm());
  EXPECT_EQ(c->head_dim, 128);  // not 2560 / 32 = 80
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->rope_theta, 1e6);
  auto round = ParseTransformerConfig(c->ToJson(), "again.json");
  ASSERT_TRUE(round.ok()) << round.status().ToString();
  EXPECT_EQ(round->ToJson(), c->ToJson());
  EXPECT_NE(c->ToJson().find("Qwen3ForCausalLM"), std::string::npos);

  const std::string minimal =
      R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 16, "intermediate_size": 16,
          "num_hidden_layers": 1, "num_attention_heads": 2)";
  auto defaults = ParseTransformerConfig(minimal + "}", "c.json");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->head_dim, 128);  // transformers' Qwen3Config default

  auto sliding = ParseTransformerConfig(minimal + R"(, "use_sliding_window": true})", "c.json");
  ASSERT_FALSE(sliding.ok());
  EXPECT_NE(sliding.status().message().find("c.json: field 'use_sliding_window'"),
            std::string::npos)
      << sliding.status().message();
  auto layers = ParseTransformerConfig(
      minimal + R"(, "layer_types": ["full_attention", "sliding_attention"]})", "c.json");
  ASSERT_FALSE(layers.ok());
  EXPECT_NE(layers.status().message().find("layer_types"), std::string::npos);
  EXPECT_TRUE(
      ParseTransformerConfig(minimal + R"(, "layer_types": ["full_attention"]})", "c.json").ok());
}

TEST(HfConfigTest, ReadsTheConfigTransformers5Writes) {
  auto c = ParseTransformerConfig(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": null,
    "dtype": "bfloat16", "eos_token_id": null, "hidden_act": "silu", "hidden_size": 896,
    "initializer_range": 0.02, "intermediate_size": 4864,
    "layer_types": ["full_attention", "full_attention"], "max_position_embeddings": 32768,
    "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 14,
    "num_hidden_layers": 2, "num_key_value_heads": 2, "pad_token_id": null,
    "rms_norm_eps": 1e-06, "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
    "sliding_window": null, "tie_word_embeddings": true, "transformers_version": "5.17.0",
    "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})",
                                  "config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->torch_dtype, "bfloat16");
  EXPECT_EQ(c->rope_theta, 1000000.0);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_TRUE(c->attention_bias);
  EXPECT_TRUE(c->eos_token_ids.empty());
  EXPECT_EQ(c->bos_token_id, -1);

  auto bad = ParseTransformerConfig(
      R"({"model_type": "qwen2", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 16,
          "num_hidden_layers": 1, "num_attention_heads": 4, "dtype": "int8"})",
      "config.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("int8"), std::string::npos);
}

TEST(HfConfigTest, MissingConfigFileIsNotFoundWithPath) {
  auto c = LoadTransformerConfig("/nonexistent/model");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/model/config.json"), std::string::npos);
}

}  // namespace
}  // namespace allot::models
