// POST /pooling (step pooling, llm/serve/step_pooling.h) on allot serve with a tiny random
// model, and the PRM client (rewards/prm_reward.h) against it over real HTTP.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "llm/serve/server.h"
#include "models/causal_lm.h"
#include "models/tokenizer/tokenizer.h"
#include "rewards/prm_reward.h"
#include "tests/llm/serve/serve_fixture.h"

namespace allot::llm::serve {
namespace {

using nlohmann::json;
using testing::Post;

const std::string kTag = "\xD0\xBA\xD0\xB8";  // ки

class PrmPoolingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_dir_ = new std::string(testing::WriteServableTinyModel("prm_model", 5));
    ServeConfig c;
    c.model = *model_dir_;
    c.port = 0;
    c.served_model_name = "prm";
    auto s = Server::Create(c);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = s->release();
    auto port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete model_dir_;
  }

  // [P(+), P(-)] at the last token of every tag, computed from the model's full logits.
  static std::vector<std::array<double, 2>> Direct(const std::string& text) {
    auto tok = models::LoadTokenizer(*model_dir_);
    EXPECT_TRUE(tok.ok());
    auto ids = (*tok)->Encode(text);
    EXPECT_TRUE(ids.ok());
    const int64_t plus = *(*tok)->TokenId("+"), minus = *(*tok)->TokenId("-");
    auto m = models::CausalLMImpl::Load(*model_dir_);
    EXPECT_TRUE(m.ok());
    torch::NoGradGuard no_grad;
    (*m)->eval();
    std::vector<int64_t> ids64(ids->begin(), ids->end());
    at::Tensor logits = (*m)->forward(torch::tensor(ids64).view({1, -1}))[0].to(torch::kDouble);
    // The byte tokenizer has one token per byte: a tag ends at the byte offset of its end.
    EXPECT_EQ(ids->size(), text.size());
    std::vector<std::array<double, 2>> out;
    for (size_t p = text.find(kTag); p != std::string::npos; p = text.find(kTag, p + 1)) {
      const int64_t at = static_cast<int64_t>(p + kTag.size() - 1);
      at::Tensor two = torch::stack({logits[at][plus], logits[at][minus]}).softmax(0);
      out.push_back({two[0].item<double>(), two[1].item<double>()});
    }
    return out;
  }

  static std::string* model_dir_;
  static Server* server_;
  static int port_;
};

std::string* PrmPoolingTest::model_dir_ = nullptr;
Server* PrmPoolingTest::server_ = nullptr;
int PrmPoolingTest::port_ = 0;

TEST_F(PrmPoolingTest, ScoresAreTheSoftmaxOfTheModelsOwnLogitsAtEachTag) {
  const std::string text = "Q: 2+3? Step 1: 2+3=5 " + kTag + "\nStep 2: so 5 " + kTag;
  auto r = Post(port_, "/pooling", json{{"model", "prm"}, {"input", text}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["object"], "list");
  EXPECT_EQ(r.json["model"], "prm");
  EXPECT_EQ(r.json["usage"]["prompt_tokens"], text.size());
  ASSERT_EQ(r.json["data"].size(), 1u);
  EXPECT_EQ(r.json["data"][0]["object"], "pooling");
  const json& rows = r.json["data"][0]["data"];
  const auto expected = Direct(text);
  ASSERT_EQ(expected.size(), 2u);
  ASSERT_EQ(rows.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(rows[i][0].get<double>(), expected[i][0], 1e-5) << i;
    EXPECT_NEAR(rows[i][1].get<double>(), expected[i][1], 1e-5) << i;
    EXPECT_NEAR(rows[i][0].get<double>() + rows[i][1].get<double>(), 1.0, 1e-9);
  }
  // Different tags see different prefixes: a server that scored one position twice fails here.
  EXPECT_NE(rows[0][0].get<double>(), rows[1][0].get<double>());
}

TEST_F(PrmPoolingTest, TokenIdsAndVllmStyleIdsGiveTheSameScores) {
  const std::string text = "Q Step 1: x " + kTag;
  auto tok = models::LoadTokenizer(*model_dir_);
  ASSERT_TRUE(tok.ok());
  auto ids = (*tok)->Encode(text);
  ASSERT_TRUE(ids.ok());
  auto a = Post(port_, "/pooling", json{{"input", text}});
  const int32_t last_tag_byte = static_cast<unsigned char>(kTag.back());
  auto b = Post(port_, "/pooling",
                json{{"input", *ids},
                     {"step_tag_id", last_tag_byte},
                     {"returned_token_ids", {*(*tok)->TokenId("+"), *(*tok)->TokenId("-")}}});
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(b.status, 200) << b.body;
  ASSERT_EQ(a.json["data"][0]["data"].size(), 1u);
  ASSERT_EQ(b.json["data"][0]["data"].size(), 1u);
  EXPECT_NEAR(a.json["data"][0]["data"][0][0].get<double>(),
              b.json["data"][0]["data"][0][0].get<double>(), 1e-9);
}

TEST_F(PrmPoolingTest, BatchesAndInputsWithoutTags) {
  auto r = Post(port_, "/pooling", json{{"input", {"no tag here", "Q Step 1: y " + kTag}}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json["data"].size(), 2u);
  EXPECT_EQ(r.json["data"][0]["index"], 0);
  EXPECT_TRUE(r.json["data"][0]["data"].empty());
  EXPECT_EQ(r.json["data"][1]["data"].size(), 1u);
}

TEST_F(PrmPoolingTest, ErrorReplies) {
  auto expect = [](const testing::Reply& r, int status, const std::string& param) {
    EXPECT_EQ(r.status, status) << r.body;
    ASSERT_TRUE(r.json.is_object() && r.json.contains("error")) << r.body;
    EXPECT_EQ(r.json["error"]["param"], param) << r.body;
  };
  expect(Post(port_, "/pooling", json{{"model", "prm"}}), 400, "input");
  expect(Post(port_, "/pooling", json{{"input", 5}}), 400, "input");
  expect(Post(port_, "/pooling", json{{"input", ""}}), 400, "input");
  expect(Post(port_, "/pooling", json{{"input", {1, 2, 100000}}}), 400, "input");
  auto long_input = Post(port_, "/pooling", json{{"input", std::string(300, 'a') + kTag}});
  expect(long_input, 400, "input");
  EXPECT_EQ(long_input.json["error"]["code"], "context_length_exceeded");
  expect(Post(port_, "/pooling", json{{"model", "nope"}, {"input", "x"}}), 404, "model");
  expect(Post(port_, "/pooling", json{{"input", "x"}, {"returned_tokens", {"++", "-"}}}), 400,
         "returned_tokens");
  expect(Post(port_, "/pooling", json{{"input", "x"}, {"returned_token_ids", {1}}}), 400,
         "returned_token_ids");
  expect(Post(port_, "/pooling", json{{"input", "x"}, {"step_tag", ""}}), 400, "step_tag");
  auto not_json = Post(port_, "/pooling", std::string("{nope"));
  EXPECT_EQ(not_json.status, 400);
  EXPECT_EQ(testing::Get(port_, "/pooling").status, 405);
  // Still serving.
  EXPECT_EQ(Post(port_, "/pooling", json{{"input", "x " + kTag}}).status, 200);
}

rewards::JsonTransport HttpTransport(int port, int* calls) {
  return [port, calls](const std::string& path, const json& body) -> Result<json> {
    ++*calls;
    auto r = Post(port, path, body);
    if (r.status != 200) return Unavailable(path + ": HTTP " + std::to_string(r.status));
    return r.json;
  };
}

TEST_F(PrmPoolingTest, PrmClientScoresEveryStepFromOneForwardPass) {
  rewards::PrmRewardConfig c;
  c.mode = "pooling";
  c.model = "prm";
  int calls = 0;
  rewards::PrmReward prm(c, HttpTransport(port_, &calls));
  auto scores = prm.StepScores("Q: 2+3?", {"2+3=5", "so 5"});
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  EXPECT_EQ(calls, 1);  // no truncation asked for: the scoring request only
  const auto expected = Direct("Q: 2+3? Step 1: 2+3=5 " + kTag + "\nStep 2: so 5 " + kTag);
  ASSERT_EQ(scores->size(), 2u);
  EXPECT_NEAR((*scores)[0], expected[0][0], 1e-5);
  EXPECT_NEAR((*scores)[1], expected[1][0], 1e-5);
}

TEST_F(PrmPoolingTest, PrmClientDropsEarliestStepsByTheServersTokenCount) {
  rewards::PrmRewardConfig c;
  c.mode = "pooling";
  c.model = "prm";
  c.max_prompt_tokens = 256;  // the tiny model's context
  int calls = 0;
  rewards::PrmReward prm(c, HttpTransport(port_, &calls));
  // Each step is ~70 bytes = tokens; five of them do not fit in 256, the last three do.
  std::vector<std::string> steps(5);
  for (size_t i = 0; i < steps.size(); ++i) steps[i].assign(60, static_cast<char>('a' + i));
  auto scores = prm.StepScores("Q", steps);
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  EXPECT_EQ(scores->size(), 3u);
  const std::string kept = "Q Step 3: " + steps[2] + " " + kTag + "\nStep 4: " + steps[3] + " " +
                           kTag + "\nStep 5: " + steps[4] + " " + kTag;
  const auto expected = Direct(kept);
  ASSERT_EQ(expected.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR((*scores)[i], expected[i][0], 1e-5) << i;
  // Without truncation the server refuses the input rather than cutting it.
  c.max_prompt_tokens = 0;
  rewards::PrmReward whole(c, HttpTransport(port_, &calls));
  EXPECT_EQ(whole.StepScores("Q", steps).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace allot::llm::serve
