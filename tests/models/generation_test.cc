#include "models/generation.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>

#include "models/tokenizer/byte_tokenizer.h"
#include "tests/models/tiny_model.h"

namespace allot::models {
namespace {

using testing::MakeTempDir;
using testing::WriteTinyModel;

class GenerationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The vocabulary of the byte tokenizer, so that stop strings can be decoded.
    std::string dir =
        WriteTinyModel(MakeTempDir("gen"), {.vocab_size = tokenizer_.vocab_size(), .seed = 7});
    auto m = CausalLMImpl::Load(dir);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = *m;
  }
  std::vector<GenerationResult> Run(const std::vector<GenerationRequest>& requests,
                                    std::vector<int32_t> eos = {}) {
    Generator gen(model_.get(), &tokenizer_, std::move(eos));
    auto r = gen.Generate(requests);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<GenerationResult>{};
  }
  ByteTokenizer tokenizer_;
  std::shared_ptr<CausalLMImpl> model_;
};

SamplingParams Sampled(uint64_t seed, int64_t max_tokens = 12) {
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = seed;
  p.max_tokens = max_tokens;
  return p;
}

SamplingParams Greedy(int64_t max_tokens = 10) {
  SamplingParams p;
  p.temperature = 0.0;
  p.max_tokens = max_tokens;
  return p;
}

TEST_F(GenerationTest, GreedyEqualsArgmaxOfFullRecomputation) {
  std::vector<int32_t> prompt = {72, 101, 108, 108, 111};
  auto out = Run({{prompt, Greedy(8)}});
  ASSERT_EQ(out.size(), 1u);
  const auto& s = out[0].samples.at(0);
  ASSERT_EQ(s.token_ids.size(), 8u);
  EXPECT_EQ(s.finish_reason, "length");
  std::vector<int64_t> seq(prompt.begin(), prompt.end());
  torch::NoGradGuard g;
  for (int32_t got : s.token_ids) {
    at::Tensor logits = model_->forward(torch::tensor(seq, torch::kLong).unsqueeze(0))[0][-1];
    EXPECT_EQ(got, logits.argmax().item<int64_t>());
    seq.push_back(got);
  }
}

TEST_F(GenerationTest, LogprobsEqualTheLearnersChunkedLogprobs) {
  std::vector<int32_t> prompt = {10, 20, 30};
  for (double temperature : {1.0, 0.8}) {
    SamplingParams p = Sampled(3, 10);
    p.temperature = temperature;
    p.top_k = 20;  // truncation changes which token is drawn, not the reported log-prob
    auto out = Run({{prompt, p}});
    const auto& s = out.at(0).samples.at(0);
    std::vector<int64_t> seq(prompt.begin(), prompt.end());
    seq.insert(seq.end(), s.token_ids.begin(), s.token_ids.end());
    torch::NoGradGuard g;
    at::Tensor lp =
        model_->TokenLogProbs(torch::tensor(seq, torch::kLong).unsqueeze(0), {}, 4, temperature)[0];
    for (size_t i = 0; i < s.token_ids.size(); ++i) {
      EXPECT_NEAR(s.logprobs[i], lp[static_cast<int64_t>(prompt.size() - 1 + i)].item<float>(),
                  1e-4)
          << i;
    }
  }
}

TEST_F(GenerationTest, SeedMakesSamplingDeterministic) {
  GenerationRequest r{{65, 66, 67}, Sampled(42, 16)};
  auto a = Run({r});
  auto b = Run({r});
  EXPECT_EQ(a[0].samples[0].token_ids, b[0].samples[0].token_ids);
  r.params.seed = 43;
  auto c = Run({r});
  EXPECT_NE(a[0].samples[0].token_ids, c[0].samples[0].token_ids);
}

TEST_F(GenerationTest, BatchedRequestsEqualUnbatched) {
  std::vector<GenerationRequest> requests = {
      {{1, 2, 3, 4, 5, 6, 7}, Sampled(1, 9)},
      {{100}, Greedy(5)},
      {{50, 60, 70}, Sampled(2, 12)},
  };
  requests[2].params.n = 3;
  requests[2].params.top_p = 0.9;
  auto batched = Run(requests);
  ASSERT_EQ(batched.size(), 3u);
  ASSERT_EQ(batched[2].samples.size(), 3u);
  for (size_t i = 0; i < requests.size(); ++i) {
    auto alone = Run({requests[i]});
    for (size_t s = 0; s < batched[i].samples.size(); ++s) {
      EXPECT_EQ(batched[i].samples[s].token_ids, alone[0].samples[s].token_ids) << i << "/" << s;
      ASSERT_EQ(batched[i].samples[s].logprobs.size(), alone[0].samples[s].logprobs.size());
      for (size_t t = 0; t < batched[i].samples[s].logprobs.size(); ++t) {
        EXPECT_NEAR(batched[i].samples[s].logprobs[t], alone[0].samples[s].logprobs[t], 1e-4);
      }
    }
  }
  // The n samples of one request draw from different streams.
  std::set<std::vector<int32_t>> distinct;
  for (const auto& s : batched[2].samples) distinct.insert(s.token_ids);
  EXPECT_EQ(distinct.size(), 3u);
}

TEST_F(GenerationTest, TopKOneAndTinyTopPAreGreedy) {
  std::vector<int32_t> prompt = {9, 8, 7, 6};
  auto greedy = Run({{prompt, Greedy(10)}})[0].samples[0].token_ids;
  SamplingParams k1 = Sampled(5, 10);
  k1.top_k = 1;
  SamplingParams p0 = Sampled(6, 10);
  p0.top_p = 1e-6;
  auto out = Run({{prompt, k1}, {prompt, p0}});
  EXPECT_EQ(out[0].samples[0].token_ids, greedy);
  EXPECT_EQ(out[1].samples[0].token_ids, greedy);
}

TEST_F(GenerationTest, StopTokenIdsAndEosEndTheSequence) {
  std::vector<int32_t> prompt = {11, 12, 13};
  auto free_run = Run({{prompt, Greedy(10)}})[0].samples[0].token_ids;
  const int32_t stop = free_run[3];
  const size_t first = std::find(free_run.begin(), free_run.end(), stop) - free_run.begin();
  SamplingParams p = Greedy(10);
  p.stop_token_ids = {stop};
  auto out = Run({{prompt, p}})[0].samples[0];
  EXPECT_EQ(out.finish_reason, "stop");
  ASSERT_TRUE(out.stop_token.has_value());
  EXPECT_EQ(*out.stop_token, stop);
  EXPECT_EQ(out.token_ids, std::vector<int32_t>(free_run.begin(), free_run.begin() + first + 1));
  EXPECT_EQ(out.logprobs.size(), out.token_ids.size());
  // The same token as EOS, unless ignored.
  auto eos = Run({{prompt, Greedy(10)}}, {stop})[0].samples[0];
  EXPECT_EQ(eos.token_ids, out.token_ids);
  SamplingParams ignore = Greedy(10);
  ignore.ignore_eos = true;
  EXPECT_EQ(Run({{prompt, ignore}}, {stop})[0].samples[0].token_ids, free_run);
}

TEST_F(GenerationTest, StopStringsTruncateTextAfterTheCompletingToken) {
  std::vector<int32_t> prompt = {40, 41, 42};
  auto free_run = Run({{prompt, Greedy(16)}})[0].samples[0].token_ids;
  // A printable ASCII byte from the run, followed by the next token, is the stop string.
  size_t pick = 1;
  while (pick + 1 < free_run.size() && !(free_run[pick] >= 33 && free_run[pick] < 127)) ++pick;
  ASSERT_LT(pick + 1, free_run.size()) << "no printable token in the free run";
  auto two = tokenizer_.Decode(std::vector<int32_t>{free_run[pick], free_run[pick + 1]});
  ASSERT_TRUE(two.ok());
  const std::string stop = two->substr(0, 2);
  // Expected: the shortest prefix of the run whose text contains the stop string.
  size_t want_tokens = 0;
  std::string want_text;
  for (size_t k = 1; k <= free_run.size(); ++k) {
    auto text = tokenizer_.Decode(std::vector<int32_t>(free_run.begin(), free_run.begin() + k));
    ASSERT_TRUE(text.ok());
    if (size_t at = text->find(stop); at != std::string::npos) {
      want_tokens = k;
      want_text = text->substr(0, at);
      break;
    }
  }
  ASSERT_GT(want_tokens, 0u);
  SamplingParams p = Greedy(16);
  p.stop = {"never-produced", stop};
  auto out = Run({{prompt, p}})[0].samples[0];
  EXPECT_EQ(out.finish_reason, "stop");
  ASSERT_TRUE(out.stop_string.has_value());
  EXPECT_EQ(*out.stop_string, stop);
  EXPECT_EQ(out.token_ids, std::vector<int32_t>(free_run.begin(), free_run.begin() + want_tokens));
  EXPECT_EQ(out.text, want_text);
  p.include_stop_str_in_output = true;
  EXPECT_EQ(Run({{prompt, p}})[0].samples[0].text, want_text + stop);
}

TEST_F(GenerationTest, InvalidRequestsFailWithTheField) {
  Generator gen(model_.get(), nullptr);
  auto check = [&](GenerationRequest r, const std::string& needle) {
    auto out = gen.Generate({{{1, 2}, Greedy(2)}, r});
    ASSERT_FALSE(out.ok()) << needle;
    EXPECT_NE(out.status().message().find(needle), std::string::npos) << out.status().message();
    EXPECT_NE(out.status().message().find("request 1"), std::string::npos);
  };
  SamplingParams p = Greedy(2);
  p.top_p = 0.0;
  check({{1}, p}, "top_p");
  p = Greedy(2);
  p.temperature = -1;
  check({{1}, p}, "temperature");
  check({{}, Greedy(2)}, "empty prompt");
  check({{1, 100000}, Greedy(2)}, "outside the vocabulary");
  check({{1}, Greedy(10000)}, "max_position_embeddings");
  p = Greedy(2);
  p.stop = {"x"};
  check({{1}, p}, "stop strings need a tokenizer");
}

}  // namespace
}  // namespace allot::models
