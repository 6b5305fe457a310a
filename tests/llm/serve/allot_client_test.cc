// allot's own OpenAI-compatible client (llm::Client, what rollout workers use) against
// `allot serve`: token ids in, token ids and log-probs out, streaming, models, tokenize and
// adapters.
#include <gtest/gtest.h>

#include <mutex>

#include "llm/client.h"
#include "llm/serve/server.h"
#include "tests/llm/serve/serve_fixture.h"

namespace allot::llm::serve {
namespace {

class ServeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_dir_ = testing::WriteServableTinyModel("serve_client");
    ServeConfig c;
    c.model = model_dir_;
    c.port = 0;
    c.served_model_name = "tiny";
    auto s = Server::Create(c);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    auto port = server_->Start();
    ASSERT_TRUE(port.ok());
    EndpointConfig ep;
    ep.name = "policy";
    ep.base_url = server_->url();
    ep.model = "tiny";
    auto client = Client::Create({ep});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  std::string model_dir_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ServeClientTest, TokensInTokensOut) {
  CompletionRequest req;
  req.prompt_token_ids = {5, 6, 7};
  req.params.max_tokens = 6;
  req.params.temperature = 1.0;
  req.params.seed = 4;
  req.params.logprobs = 0;
  req.params.return_token_ids = true;
  auto r = client_->Complete("policy", req).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->choices.size(), 1u);
  const Choice& c = r->choices[0];
  EXPECT_FALSE(c.token_ids.empty());
  EXPECT_LE(c.token_ids.size(), 6u);
  ASSERT_EQ(c.logprobs.size(), c.token_ids.size());
  for (size_t i = 0; i < c.token_ids.size(); ++i) {
    EXPECT_EQ(c.logprobs[i].token_id, c.token_ids[i]);
    EXPECT_LE(c.logprobs[i].logprob, 0.0);
  }
  EXPECT_EQ(c.prompt_token_ids, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(r->usage.prompt_tokens, 3);
  EXPECT_EQ(r->usage.completion_tokens, static_cast<int64_t>(c.token_ids.size()));
}

TEST_F(ServeClientTest, StreamedChunksCarryTheSameTokens) {
  CompletionRequest req;
  req.prompt = "Hello";
  req.params.max_tokens = 8;
  req.params.temperature = 0.0;
  req.params.return_token_ids = true;
  auto full = client_->Complete("policy", req).get();
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  std::mutex mu;
  std::vector<int64_t> streamed;
  std::string text;
  CallOptions opts;
  opts.on_chunk = [&](const StreamChunk& c) {
    std::lock_guard lock(mu);
    streamed.insert(streamed.end(), c.token_ids.begin(), c.token_ids.end());
    text += c.text;
  };
  auto r = client_->Complete("policy", req, opts).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::lock_guard lock(mu);
  EXPECT_EQ(streamed, full->choices[0].token_ids);
  EXPECT_EQ(text, full->choices[0].text);
}

TEST_F(ServeClientTest, ModelsTokenizeAndAdapters) {
  auto tokens = client_->Tokenize("policy", "abc").get();
  ASSERT_TRUE(tokens.ok()) << tokens.status().ToString();
  EXPECT_EQ(*tokens, (std::vector<int64_t>{97, 98, 99}));
  auto text = client_->Detokenize("policy", *tokens).get();
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "abc");
  const std::string dir = testing::WriteAdapter(model_dir_, "serve_client_adapter", false);
  ASSERT_TRUE(client_->LoadLoraAdapter("policy", {.name = "step-1", .path = dir}).get().ok());
  auto models = client_->Models("policy").get();
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[1].id, "step-1");
  EXPECT_EQ((*models)[1].parent, "tiny");
  EXPECT_TRUE(client_->UnloadLoraAdapter("policy", "step-1").get().ok());
  EXPECT_FALSE(client_->UnloadLoraAdapter("policy", "step-1").get().ok());
  EXPECT_TRUE(client_->Health("policy").get().ok());
}

}  // namespace
}  // namespace allot::llm::serve
