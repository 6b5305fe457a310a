// models::DecodeBatch, the continuous-batching decoder behind `allot serve`: requests that join
// a running batch between steps get what Generator gives them alone.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <map>

#include "models/causal_lm.h"
#include "models/generation.h"
#include "models/tokenizer/byte_tokenizer.h"
#include "tests/models/tiny_model.h"

namespace allot::models {
namespace {

class DecodeBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = testing::WriteTinyModel(testing::MakeTempDir("decode_batch"),
                                                    {.vocab_size = tok_.vocab_size(), .seed = 5});
    auto m = CausalLMImpl::Load(dir);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = *m;
  }

  static GenerationRequest Request(std::vector<int32_t> prompt, int64_t max_tokens, int64_t n,
                                   double temperature) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.params.max_tokens = max_tokens;
    r.params.n = n;
    r.params.temperature = temperature;
    r.params.seed = 9;
    r.params.ignore_eos = true;
    return r;
  }

  // `got` (the batch's result for request `id`) equals what `request` gives generated alone.
  void ExpectSoloGeneration(uint64_t id, const GenerationResult& got,
                            const GenerationRequest& request) {
    Generator gen(model_.get(), &tok_);
    auto solo = gen.Generate({request});
    ASSERT_TRUE(solo.ok());
    ASSERT_EQ(got.samples.size(), (*solo)[0].samples.size());
    for (size_t s = 0; s < got.samples.size(); ++s) {
      const auto& a = got.samples[s];
      const auto& b = (*solo)[0].samples[s];
      EXPECT_EQ(a.token_ids, b.token_ids) << "request " << id << " sample " << s;
      ASSERT_EQ(a.logprobs.size(), b.logprobs.size());
      for (size_t t = 0; t < a.logprobs.size(); ++t)
        EXPECT_NEAR(a.logprobs[t], b.logprobs[t], 1e-4);
      EXPECT_EQ(a.text, b.text);
      EXPECT_EQ(a.finish_reason, "length");
    }
  }

  ByteTokenizer tok_;
  std::shared_ptr<CausalLMImpl> model_;
};

TEST_F(DecodeBatchTest, LateJoinersMatchTheirSoloGeneration) {
  const std::vector<GenerationRequest> requests = {
      Request({72, 101, 108, 108, 111}, 10, 1, 0.0),
      Request({1, 2}, 6, 2, 1.0),
      Request({9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 11, 12}, 8, 1, 0.0),
  };
  DecodeBatch batch(model_.get(), &tok_);
  std::map<uint64_t, GenerationResult> got;
  // Request 0 starts alone; 1 joins after two steps, 2 after four (longer prompt than the
  // running sequences' length, so both sides of the merge get left-padded).
  ASSERT_TRUE(batch.Add(0, requests[0]).ok());
  for (int step = 0; step < 40 && (got.size() < 3); ++step) {
    if (step == 2) {
      ASSERT_TRUE(batch.Add(1, requests[1]).ok());
    }
    if (step == 4) {
      ASSERT_TRUE(batch.Add(2, requests[2]).ok());
    }
    auto done = batch.Step();
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    for (auto& [id, r] : *done) got[id] = std::move(r);
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(batch.empty());
  for (uint64_t i = 0; i < 3; ++i) ExpectSoloGeneration(i, got[i], requests[i]);
}

// Greedy completions of a Qwen3-shaped grouped-query model whose requests join at different
// steps and stop at different lengths equal the argmax of a full recomputation of each
// sequence alone, without any cache: what the decode path computed before its static cache.
TEST(DecodeBatchGqaTest, GreedyCompletionsEqualFullRecomputation) {
  ByteTokenizer tok;
  auto m = CausalLMImpl::Load(testing::WriteTinyModel(testing::MakeTempDir("decode_batch_gqa"),
                                                      {.model_type = "qwen3",
                                                       .vocab_size = tok.vocab_size(),
                                                       .num_heads = 4,
                                                       .num_kv_heads = 2,
                                                       .seed = 11}));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto model = *m;
  auto request = [](std::vector<int32_t> prompt, int64_t max_tokens) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.params.max_tokens = max_tokens;
    r.params.temperature = 0.0;
    r.params.ignore_eos = true;
    return r;
  };
  const std::vector<GenerationRequest> requests = {
      request({72, 101, 108}, 9), request({5, 6, 7, 8, 9, 10, 11}, 3), request({40}, 6)};
  DecodeBatch batch(model.get(), &tok);
  std::map<uint64_t, GenerationResult> got;
  ASSERT_TRUE(batch.Add(0, requests[0]).ok());
  for (int step = 0; step < 30 && got.size() < 3; ++step) {
    if (step == 1) {
      ASSERT_TRUE(batch.Add(1, requests[1]).ok());
    }
    if (step == 2) {
      ASSERT_TRUE(batch.Add(2, requests[2]).ok());
    }
    auto done = batch.Step();
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    for (auto& [id, r] : *done) got[id] = std::move(r);
  }
  ASSERT_EQ(got.size(), 3u);
  torch::NoGradGuard g;
  for (uint64_t i = 0; i < 3; ++i) {
    const auto& s = got[i].samples.at(0);
    ASSERT_EQ(static_cast<int64_t>(s.token_ids.size()), requests[i].params.max_tokens);
    std::vector<int64_t> seq(requests[i].prompt.begin(), requests[i].prompt.end());
    for (size_t t = 0; t < s.token_ids.size(); ++t) {
      const at::Tensor logits =
          model->forward(torch::tensor(seq, torch::kLong).unsqueeze(0))[0][-1];
      EXPECT_EQ(s.token_ids[t], logits.argmax().item<int64_t>())
          << "request " << i << " token " << t;
      EXPECT_NEAR(s.logprobs[t], torch::log_softmax(logits, -1)[s.token_ids[t]].item<float>(),
                  1e-4);
      seq.push_back(s.token_ids[t]);
    }
  }
}

// Requests added between two steps are prefilled together, left-padded to the longest prompt;
// each still gets what it would get alone, and a request cancelled before its prefill never
// runs. The first three form one group; after a step, 4 and 5 join, and 5 (82 rows x 200
// tokens, more than kPrefillTokens with 4's row) is prefilled as a group of its own.
TEST_F(DecodeBatchTest, RequestsAddedTogetherArePrefilledTogetherAndMatchTheirSoloGeneration) {
  std::vector<int32_t> long_prompt;
  for (int t = 0; t < 200; ++t) long_prompt.push_back((t * 37) % 256);
  const std::vector<GenerationRequest> requests = {
      Request({72, 101, 108, 108, 111}, 7, 1, 0.0),
      Request({1, 2}, 5, 2, 1.0),
      Request({9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 11, 12}, 6, 1, 0.0),
      Request({40, 41, 42}, 9, 1, 1.0),
      Request({50, 51, 52, 53}, 4, 1, 0.0),
      Request(long_prompt, 3, 82, 1.0),
  };
  ASSERT_GT(82 * 200 + 200, DecodeBatch::kPrefillTokens);
  DecodeBatch batch(model_.get(), &tok_);
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(batch.Add(i, requests[i]).ok());
  EXPECT_EQ(batch.sequences(), 5);  // waiting rows count before their prefill
  ASSERT_TRUE(batch.Cancel(3).ok());
  EXPECT_EQ(batch.sequences(), 4);
  EXPECT_EQ(batch.requests(), 3);
  std::map<uint64_t, GenerationResult> got;
  for (int step = 0; step < 40 && got.size() < 5; ++step) {
    if (step == 1) {
      ASSERT_TRUE(batch.Add(4, requests[4]).ok());
      ASSERT_TRUE(batch.Add(5, requests[5]).ok());
    }
    auto done = batch.Step();
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    for (auto& [id, r] : *done) got[id] = std::move(r);
  }
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got.count(3), 0u);
  EXPECT_TRUE(batch.empty());
  for (uint64_t i : {0, 1, 2, 4, 5}) ExpectSoloGeneration(i, got[i], requests[i]);
}

TEST_F(DecodeBatchTest, InvalidRequestsAreRejectedBeforeJoining) {
  DecodeBatch batch(model_.get(), &tok_);
  EXPECT_FALSE(batch.Add(0, Request({}, 4, 1, 0.0)).ok());
  EXPECT_FALSE(batch.Add(0, Request({1, 100000}, 4, 1, 0.0)).ok());
  EXPECT_FALSE(batch.Add(0, Request({1}, 1000, 1, 0.0)).ok());
  EXPECT_TRUE(batch.empty());
  ASSERT_TRUE(batch.Add(0, Request({1}, 2, 1, 0.0)).ok());
  EXPECT_FALSE(batch.Add(0, Request({1}, 2, 1, 0.0)).ok());  // id taken
  EXPECT_EQ(batch.sequences(), 1);
}

TEST_F(DecodeBatchTest, CancelledRequestsLeaveAndOthersAreUnchanged) {
  const GenerationRequest keep = Request({4, 5, 6}, 8, 1, 0.0);
  DecodeBatch batch(model_.get(), &tok_);
  ASSERT_TRUE(batch.Add(0, Request({1, 2, 3, 4, 5, 6, 7}, 8, 2, 1.0)).ok());
  ASSERT_TRUE(batch.Add(1, keep).ok());
  EXPECT_EQ(batch.sequences(), 3);
  std::map<uint64_t, GenerationResult> got;
  for (int step = 0; step < 20 && got.size() < 1; ++step) {
    if (step == 3) {
      ASSERT_TRUE(batch.Cancel(0).ok());
      EXPECT_EQ(batch.sequences(), 1);
      EXPECT_FALSE(batch.Cancel(0).ok());
    }
    auto done = batch.Step();
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    for (auto& [id, r] : *done) got[id] = std::move(r);
  }
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(got.count(1));
  Generator gen(model_.get(), &tok_);
  auto solo = gen.Generate({keep});
  ASSERT_TRUE(solo.ok());
  EXPECT_EQ(got[1].samples[0].token_ids, (*solo)[0].samples[0].token_ids);
  EXPECT_TRUE(batch.empty());
}

// Runs `requests` through one DecodeBatch: request i joins before step joins[i] (in that order)
// and `cancel` (if any) leaves before step 3. Returns the results by request index.
std::map<uint64_t, GenerationResult> RunBatch(CausalLMImpl* model, const Tokenizer* tok,
                                              const std::vector<GenerationRequest>& requests,
                                              const std::vector<int>& joins, bool invariant,
                                              int64_t cancel = -1) {
  DecodeBatch batch(model, tok);
  batch.set_batch_invariant(invariant);
  std::map<uint64_t, GenerationResult> got;
  for (int step = 0; step < 60 && !(step > 0 && batch.empty()); ++step) {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (joins[i] == step) {
        EXPECT_TRUE(batch.Add(i, requests[i]).ok());
      }
    }
    if (step == 3 && cancel >= 0) {
      EXPECT_TRUE(batch.Cancel(static_cast<uint64_t>(cancel)).ok());
    }
    auto done = batch.Step();
    EXPECT_TRUE(done.ok()) << done.status().ToString();
    if (!done.ok()) break;
    for (auto& [id, r] : *done) got[id] = std::move(r);
  }
  return got;
}

// Bit for bit: the same token ids and the same float bits of every log-prob.
bool Identical(const GenerationResult& a, const GenerationResult& b) {
  if (a.samples.size() != b.samples.size()) return false;
  for (size_t s = 0; s < a.samples.size(); ++s) {
    if (a.samples[s].token_ids != b.samples[s].token_ids) return false;
    const auto& x = a.samples[s].logprobs;
    const auto& y = b.samples[s].logprobs;
    if (x.size() != y.size() || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) != 0)
      return false;
  }
  return true;
}

// Batch-invariant decoding (`allot serve --deterministic`): a seeded request samples the same
// tokens with the same log-prob bits alone as in a batch of other prompts and lengths that
// join before it, after it and while it runs, with a neighbour cancelled mid-way. Catches: a
// row whose float32 results depend on its neighbours (batched matmuls, left padding to a
// longer prompt, a merge of caches), which made two GRPO runs of one seed diverge; the default
// batching must show that dependence here, or the test could not fail.
TEST_F(DecodeBatchTest, BatchInvariantSamplesDoNotDependOnTheBatch) {
  std::vector<int32_t> long_prompt;
  for (int t = 0; t < 40; ++t) long_prompt.push_back((t * 53) % 256);
  const GenerationRequest probe = Request({3, 1, 4, 1, 5, 9, 2, 6}, 12, 2, 1.0);
  GenerationRequest greedy = Request({2, 7, 1, 8}, 10, 1, 0.0);
  const std::vector<GenerationRequest> crowd = {
      Request({72, 101, 108}, 6, 3, 1.0), Request(long_prompt, 9, 2, 1.0),
      Request({9, 9}, 14, 1, 0.7), Request({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 4, 4, 1.0)};
  const auto alone = RunBatch(model_.get(), &tok_, {probe, greedy}, {0, 0}, true);
  ASSERT_EQ(alone.size(), 2u);
  // The probe and the greedy request join a batch at each of these steps.
  int differing_default = 0;
  for (int join : {0, 2, 5}) {
    std::vector<GenerationRequest> requests = crowd;
    requests.push_back(probe);
    requests.push_back(greedy);
    const std::vector<int> joins = {1, 0, 3, 0, join, join};
    const auto crowded = RunBatch(model_.get(), &tok_, requests, joins, true, /*cancel=*/3);
    ASSERT_EQ(crowded.count(4) + crowded.count(5), 2u);
    EXPECT_TRUE(Identical(crowded.at(4), alone.at(0))) << "sampled request joining at " << join;
    EXPECT_TRUE(Identical(crowded.at(5), alone.at(1))) << "greedy request joining at " << join;
    const auto batched = RunBatch(model_.get(), &tok_, requests, joins, false, /*cancel=*/3);
    differing_default += !Identical(batched.at(4), alone.at(0));
  }
  EXPECT_GT(differing_default, 0) << "default batching matched solo decoding bit for bit: the "
                                     "test cannot tell batch-invariant decoding from it";
}

}  // namespace
}  // namespace allot::models
