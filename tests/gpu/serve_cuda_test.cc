// `allot serve` with the model on CUDA: the same tiny
// model served on the CPU and on the GPU in float32 gives the same greedy chat completion, and
// a bfloat16 server decodes a burst of concurrent greedy, sampled, n > 1 and streamed requests
// in shared batches; and the learner's proof of delivery (trainer/grpo/delivery_probe.h) holds
// against a server on the device in float32 and bfloat16 with its default tolerances: the
// delivered adapter passes, the base model served under the adapter's name fails, and the reply
// names the adapter by its file's sha256. Skipped where CUDA is not available
// (ALLOT_GPU_TEST_DEVICE=cpu runs the delivery test on the CPU).
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sha256.h"
#include "llm/openai_json.h"
#include "llm/serve/server.h"
#include "models/causal_lm.h"
#include "models/peft.h"
#include "models/tokenizer/byte_tokenizer.h"
#include "tests/llm/serve/serve_fixture.h"
#include "trainer/grpo/delivery_probe.h"

namespace allot::llm::serve {
namespace {

using nlohmann::json;
using testing::Post;
using testing::SseEvents;

class ServeCudaIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA is not available";
    model_dir_ = testing::WriteServableTinyModel("serve_cuda");
  }

  // A server on `device` in `dtype`; `port` is its loopback port.
  std::unique_ptr<Server> Start(const std::string& device, const std::string& dtype, int* port) {
    ServeConfig c;
    c.model = model_dir_;
    c.port = 0;
    c.device = device;
    c.dtype = dtype;
    c.batch_wait_ms = 20;  // let the concurrent requests below share a batch
    auto s = Server::Create(c);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return nullptr;
    auto p = (*s)->Start();
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return nullptr;
    *port = *p;
    return std::move(*s);
  }

  std::string model_dir_;
};

TEST_F(ServeCudaIntegrationTest, GreedyChatCompletionOnCudaMatchesTheCpu) {
  int cpu_port = 0;
  int cuda_port = 0;
  auto cpu = Start("cpu", "float32", &cpu_port);
  auto cuda = Start("cuda", "float32", &cuda_port);
  ASSERT_TRUE(cpu && cuda);
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})},
                     {"max_tokens", 8},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"logprobs", true},
                     {"top_logprobs", 2},
                     {"return_token_ids", true}};
  auto a = Post(cpu_port, "/v1/chat/completions", body);
  auto b = Post(cuda_port, "/v1/chat/completions", body);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(b.status, 200) << b.body;
  const json& ca = a.json["choices"][0];
  const json& cb = b.json["choices"][0];
  EXPECT_EQ(cb["message"]["role"], "assistant");
  EXPECT_EQ(cb["finish_reason"], "length");
  EXPECT_EQ(b.json["usage"]["completion_tokens"], 8);
  // Float32 on both devices (cuBLAS does not use TF32 unless asked): the same argmax at every
  // step, and log-probs equal up to summation order.
  EXPECT_EQ(ca["token_ids"], cb["token_ids"]) << "cpu: " << a.body << "\ncuda: " << b.body;
  EXPECT_EQ(ca["message"]["content"], cb["message"]["content"]);
  const json& la = ca["logprobs"]["content"];
  const json& lb = cb["logprobs"]["content"];
  ASSERT_EQ(la.size(), lb.size());
  for (size_t t = 0; t < la.size(); ++t) {
    EXPECT_NEAR(la[t]["logprob"].get<double>(), lb[t]["logprob"].get<double>(), 1e-3) << t;
    ASSERT_EQ(lb[t]["top_logprobs"].size(), 2u);
  }
}

TEST_F(ServeCudaIntegrationTest, Bf16ServerDecodesConcurrentRequestsTogether) {
  int port = 0;
  auto server = Start("cuda", "bfloat16", &port);
  ASSERT_TRUE(server);
  constexpr int kClients = 12;
  constexpr int kTokens = 16;
  std::vector<testing::Reply> replies(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      // Greedy, sampled with a seed and n = 2 sampled rows, with prompts of different lengths
      // so that the batch's prefill and merges pad on both sides.
      json body = {{"prompt", std::vector<int>(3 + 5 * i, 65 + i)},
                   {"max_tokens", kTokens},
                   {"ignore_eos", true},
                   {"return_token_ids", true},
                   {"temperature", i % 3 == 0 ? 0.0 : 0.8},
                   {"n", i % 3 == 2 ? 2 : 1},
                   {"seed", i}};
      replies[i] = Post(port, "/v1/completions", body);
    });
  }
  for (auto& t : threads) t.join();
  const int vocab = models::ByteTokenizer().vocab_size();
  for (int i = 0; i < kClients; ++i) {
    ASSERT_EQ(replies[i].status, 200) << "request " << i << ": " << replies[i].body;
    const int n = i % 3 == 2 ? 2 : 1;
    EXPECT_EQ(replies[i].json["usage"]["completion_tokens"], n * kTokens) << i;
    ASSERT_EQ(replies[i].json["choices"].size(), static_cast<size_t>(n));
    for (const json& c : replies[i].json["choices"]) {
      EXPECT_EQ(c["token_ids"].size(), static_cast<size_t>(kTokens)) << i;
      for (const json& id : c["token_ids"]) {
        EXPECT_GE(id.get<int>(), 0);
        EXPECT_LT(id.get<int>(), vocab);
      }
    }
  }
  // Alone, each request would decode one or two rows per step; more than two on average means
  // the requests shared batches on the GPU.
  EXPECT_GT(server->metrics().generation_tokens(), 2 * server->metrics().batches());

  // Streaming: the token callbacks run on the scheduler thread with the model on the GPU.
  auto s = Post(port, "/v1/completions",
                json{{"prompt", "Hi"}, {"max_tokens", 6}, {"ignore_eos", true}, {"stream", true}});
  ASSERT_EQ(s.status, 200) << s.body;
  auto events = SseEvents(s.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
}

std::string DeliveryTestDevice() {
  const char* d = std::getenv("ALLOT_GPU_TEST_DEVICE");
  return d != nullptr && *d ? d : "cuda";
}

// The probe's comparison against a server on the device, in both dtypes the learner trains in.
// The differences measured are recorded as test properties (ctest's XML output).
TEST(CudaDeliveryProbeTest, DeliveredAdapterPassesAndTheBaseModelFailsAtTheDefaultTolerance) {
  const std::string device = DeliveryTestDevice();
  if (device == "cuda" && !torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const std::string model_dir = testing::WriteServableTinyModel("delivery_cuda");
  // B drawn N(0, 0.5): an adapter that moves the log-probs far beyond any tolerance, as a
  // trained adapter does after some steps.
  const std::string adapter = testing::WriteAdapter(model_dir, "delivery_cuda_adapter", false);
  ASSERT_FALSE(adapter.empty());
  auto sha = Sha256File(adapter + "/adapter_model.safetensors");
  ASSERT_TRUE(sha.ok());
  for (const std::string dtype : {"float32", "bfloat16"}) {
    SCOPED_TRACE(dtype);
    ServeConfig c;
    c.model = model_dir;
    c.served_model_name = "tiny";
    c.port = 0;
    c.device = device;
    c.dtype = dtype;
    auto server = Server::Create(c);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    auto port = (*server)->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    ASSERT_EQ(Post(*port, "/v1/load_lora_adapter",
                   json{{"lora_name", "policy-v2"}, {"lora_path", adapter}})
                  .status,
              200);
    // The learner: the same weights and adapter, on the device in the same dtype.
    auto model = models::CausalLMImpl::Load(model_dir, {.dtype = dtype, .device = device});
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    ASSERT_TRUE(models::LoadAdapter(**model, adapter).ok());
    const double tolerance =
        trainer::grpo::DefaultProbeTolerance((*model)->parameters()[0].scalar_type());
    trainer::grpo::DeliveryProbe probe(tolerance);
    ASSERT_TRUE(probe
                    .Draw(models::ByteTokenizer(),
                          {"Route the query to the cheapest solver that answers it correctly."}, 5,
                          32, 255)
                    .ok());
    const std::vector<double> learner = probe.LearnerLogprobs(**model);
    auto served = [&](const std::string& name) {
      const std::vector<int32_t>& ids = probe.tokens();
      auto r = Post(*port, "/v1/completions",
                    json{{"model", name},
                         {"prompt", std::vector<int64_t>(ids.begin(), ids.end())},
                         {"max_tokens", 1},
                         {"temperature", 0},
                         {"prompt_logprobs", 0}});
      EXPECT_EQ(r.status, 200) << r.body;
      return r;
    };
    const std::string url = (*server)->url();
    const auto delivered = served("policy-v2");
    auto parsed = ParseCompletion(delivered.body, false, "test");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(parsed->adapter_sha256, *sha);
    auto ok = probe.Compare(parsed->choices[0].prompt_logprobs, learner, url, "policy-v2");
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    ::testing::Test::RecordProperty(dtype + "_delivered_mean_abs_diff",
                                    std::to_string(ok->mean_abs_diff));
    ::testing::Test::RecordProperty(dtype + "_delivered_max_abs_diff",
                                    std::to_string(ok->max_abs_diff));
    // Not delivered: the base model answers for the adapter's name.
    const auto base = served("tiny");
    auto parsed_base = ParseCompletion(base.body, false, "test");
    ASSERT_TRUE(parsed_base.ok()) << parsed_base.status().ToString();
    EXPECT_EQ(parsed_base->adapter_sha256, "");
    auto bad = probe.Compare(parsed_base->choices[0].prompt_logprobs, learner, url, "policy-v2");
    ASSERT_FALSE(bad.ok()) << "the base model passed the probe at tolerance " << tolerance;
    EXPECT_NE(bad.status().message().find(url), std::string::npos) << bad.status().message();
    std::printf(
        "[ delivery ] %s on %s: delivered mean |diff| %.3g (max %.3g), tolerance %.3g; "
        "base model: %s\n",
        dtype.c_str(), device.c_str(), ok->mean_abs_diff, ok->max_abs_diff, tolerance,
        bad.status().message().c_str());
    (*server)->Stop();
  }
}

}  // namespace
}  // namespace allot::llm::serve
