#include "rewards/prm_reward.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace allot::rewards {
namespace {

using nlohmann::json;

json LoadReply() {
  std::ifstream in(std::string(ALLOT_TEST_DATA_DIR) + "/rewards/prm_completions_reply.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

TEST(PrmRewardTest, BuildsMathShepherdInput) {
  PrmRewardConfig c;
  Result<PrmPrompt> p = BuildPrmPrompt("Q", {"a", "b\nc"}, c);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->text, "Q Step 1: a \xD0\xBA\xD0\xB8\nStep 2: b c \xD0\xBA\xD0\xB8");
  EXPECT_EQ(p->num_steps, 2u);
  EXPECT_EQ(p->first_step, 0u);
}

TEST(PrmRewardTest, TagsInsideStepsAreRemoved) {
  Result<PrmPrompt> p = BuildPrmPrompt("Q", {"a \xD0\xBA\xD0\xB8 b"}, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->text, "Q Step 1: a  b \xD0\xBA\xD0\xB8");
}

// Whitespace-separated words stand in for a tokenizer: a long word is one token, so a
// character limit would cut differently.
int64_t Words(const std::string& text) {
  std::istringstream in(text);
  int64_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

TEST(PrmRewardTest, DropsEarliestStepsByTokensNotCharacters) {
  PrmRewardConfig c;
  c.max_prompt_tokens = 10;
  int calls = 0;
  TokenCounter count = [&](const std::string& t) -> Result<int64_t> {
    ++calls;
    return Words(t);
  };
  // Steps 1 and 2 are 6 and 5 words with their "Step i:" and tag; step 3 (200 chars) is 4.
  std::vector<std::string> steps = {"a a a", "b b", std::string(200, 'c')};
  Result<PrmPrompt> p = BuildPrmPrompt("Q", steps, c, count);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->first_step, 1u);
  EXPECT_EQ(p->num_steps, 2u);
  EXPECT_EQ(p->text.find("Step 1:"), std::string::npos);
  EXPECT_NE(p->text.find("Step 2: b b"), std::string::npos);
  EXPECT_LE(Words(p->text), 10);
  EXPECT_GT(p->text.size(), 200u);
  EXPECT_LE(calls, 3);

  // Everything fits: one count, nothing dropped.
  calls = 0;
  c.max_prompt_tokens = 100;
  p = BuildPrmPrompt("Q", steps, c, count);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->first_step, 0u);
  EXPECT_EQ(calls, 1);

  c.max_prompt_tokens = 3;
  EXPECT_EQ(BuildPrmPrompt("Q", steps, c, count).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(BuildPrmPrompt("Q", {"x"}, c, count).status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(BuildPrmPrompt("Q", {}, c, count).ok());
  // A failing tokenizer fails the prompt.
  EXPECT_EQ(BuildPrmPrompt(
                "Q", steps, c,
                [](const std::string&) -> Result<int64_t> { return Unavailable("tokenize: 503"); })
                .status()
                .code(),
            StatusCode::kUnavailable);
}

TEST(PrmRewardTest, PoolingRowsGiveStepScores) {
  json reply =
      json::parse(R"({"data": [{"index": 0, "data": [[0.9, 0.1], [0.25, 0.75], [0.6, 0.4]]}]})");
  auto p = ParsePoolingStepScores(reply, 2);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_DOUBLE_EQ((*p)[0], 0.25);
  EXPECT_DOUBLE_EQ((*p)[1], 0.6);
  EXPECT_EQ(ParsePoolingStepScores(reply, 4).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParsePoolingStepScores(json{{"data", json::array()}}, 1).status().code(),
            StatusCode::kDataLoss);
  json bad = json::parse(R"({"data": [{"data": [["x", 0.1]]}]})");
  EXPECT_EQ(ParsePoolingStepScores(bad, 1).status().code(), StatusCode::kDataLoss);
}

TEST(PrmRewardTest, PoolingModeSendsStepPoolingRequest) {
  PrmRewardConfig c;
  c.mode = "pooling";
  c.max_prompt_tokens = 1000;
  std::vector<std::string> paths;
  PrmReward prm(c, [&](const std::string& path, const json& body) -> Result<json> {
    paths.push_back(path);
    if (path == "/tokenize") return json{{"count", Words(body["prompt"].get<std::string>())}};
    EXPECT_EQ(body["step_tag"], "\xD0\xBA\xD0\xB8");
    EXPECT_EQ(body["returned_tokens"], json::array({"+", "-"}));
    EXPECT_EQ(body["input"], "Q Step 1: a \xD0\xBA\xD0\xB8\nStep 2: b \xD0\xBA\xD0\xB8");
    return json::parse(R"({"data": [{"data": [[0.7, 0.3], [0.2, 0.8]]}]})");
  });
  RewardInput in;
  in.question = "Q";
  in.steps = {"a", "b"};
  Result<double> v = prm.Compute(in);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_DOUBLE_EQ(*v, 0.2);  // RLoT: the last step's P(+)
  EXPECT_EQ(paths, (std::vector<std::string>{"/tokenize", "/pooling"}));
}

TEST(PrmRewardTest, SoftmaxOverPlusAndMinusAtEachTag) {
  Result<std::vector<double>> p = ParseStepProbabilities(LoadReply(), {}, 2);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_NEAR((*p)[0], 0.8, 1e-9);
  // "+" and "Ġ+" are one token once the space marker is stripped: (0.2+0.1)/(0.2+0.1+0.6).
  EXPECT_NEAR((*p)[1], 1.0 / 3.0, 1e-9);
  // Only the last step is asked for.
  Result<std::vector<double>> last = ParseStepProbabilities(LoadReply(), {}, 1);
  ASSERT_TRUE(last.ok());
  EXPECT_NEAR(last->at(0), 1.0 / 3.0, 1e-9);
}

TEST(PrmRewardTest, MalformedRepliesAreDataLoss) {
  json reply = LoadReply();
  EXPECT_EQ(ParseStepProbabilities(reply, {}, 3).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(ParseStepProbabilities(json::object(), {}, 1).status().code(), StatusCode::kDataLoss);
  json no_logprobs = reply;
  no_logprobs["choices"][0].erase("logprobs");
  EXPECT_EQ(ParseStepProbabilities(no_logprobs, {}, 1).status().code(), StatusCode::kDataLoss);
  json cut = reply;
  cut["choices"][0]["logprobs"]["top_logprobs"].erase(14);
  EXPECT_EQ(ParseStepProbabilities(cut, {}, 2).status().code(), StatusCode::kDataLoss);
  json neither = reply;
  neither["choices"][0]["logprobs"]["top_logprobs"][7] = {{"x", -1.0}};
  Result<std::vector<double>> r = ParseStepProbabilities(neither, {}, 2);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("top_logprobs[7]"), std::string::npos);
  json only_minus = reply;
  only_minus["choices"][0]["logprobs"]["top_logprobs"][7] = {{"-", -0.1}};
  EXPECT_DOUBLE_EQ(ParseStepProbabilities(only_minus, {}, 2)->at(0), 0.0);
}

TEST(PrmRewardTest, RewardSendsTheRequestAndAggregates) {
  json sent;
  std::string sent_path;
  JsonTransport transport = [&](const std::string& path, const json& body) -> Result<json> {
    sent_path = path;
    sent = body;
    return LoadReply();
  };
  PrmRewardConfig c;
  PrmReward last(c, transport);
  RewardInput in;
  in.question = "Q";
  in.steps = {"a", "b"};
  Result<double> v = last.Compute(in);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_NEAR(*v, 1.0 / 3.0, 1e-9);  // RLoT: the last step's P(+)
  EXPECT_EQ(sent_path, "/v1/completions");
  EXPECT_EQ(sent["echo"], true);
  EXPECT_EQ(sent["max_tokens"], 1);
  EXPECT_EQ(sent["logprobs"], 20);
  EXPECT_EQ(sent["prompt"], "Q Step 1: a \xD0\xBA\xD0\xB8\nStep 2: b \xD0\xBA\xD0\xB8");

  c.aggregate = "min";
  EXPECT_NEAR(*PrmReward(c, transport).Compute(in), 1.0 / 3.0, 1e-9);
  c.aggregate = "mean";
  EXPECT_NEAR(*PrmReward(c, transport).Compute(in), (0.8 + 1.0 / 3.0) / 2, 1e-9);
  c.aggregate = "product";
  EXPECT_NEAR(*PrmReward(c, transport).Compute(in), 0.8 / 3.0, 1e-9);
}

TEST(PrmRewardTest, TransportErrorsPropagate) {
  PrmReward prm({}, [](const std::string&, const json&) -> Result<json> {
    return Unavailable("http://127.0.0.1:9/v1/completions: connection refused");
  });
  RewardInput in;
  in.question = "Q";
  in.steps = {"a"};
  Result<double> v = prm.Compute(in);
  EXPECT_EQ(v.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(v.status().message().find("127.0.0.1:9"), std::string::npos);
}

TEST(PrmRewardTest, ClassifyAndPoolingReplies) {
  PrmRewardConfig c;
  c.mode = "classify";
  EXPECT_DOUBLE_EQ(*ParseClassifyScore(json::parse(R"({"data":[{"index":0,"label":"good",
      "probs":[0.25,0.75],"num_classes":2}]})"),
                                       c),
                   0.75);
  EXPECT_DOUBLE_EQ(*ParseClassifyScore(json::parse(R"({"data":[{"probs":[0.6]}]})"), c), 0.6);
  EXPECT_DOUBLE_EQ(*ParseClassifyScore(json::parse(R"({"data":[{"score":0.4}]})"), c), 0.4);
  EXPECT_DOUBLE_EQ(
      *ParseClassifyScore(json::parse(R"({"data":[{"data":[[0.9,0.1],[0.3,0.7]]}]})"), c), 0.7);
  EXPECT_DOUBLE_EQ(*ParseClassifyScore(json::parse(R"({"data":[{"data":0.5}]})"), c), 0.5);
  EXPECT_EQ(ParseClassifyScore(json::parse(R"({"data":[{"probs":[0.1,"x"]}]})"), c).status().code(),
            StatusCode::kDataLoss);
  EXPECT_FALSE(ParseClassifyScore(json::parse(R"({"object":"error"})"), c).ok());

  std::string path;
  PrmReward prm(c, [&](const std::string& p, const json& body) -> Result<json> {
    path = p;
    EXPECT_TRUE(body.contains("input"));
    return json::parse(R"({"data":[{"probs":[0.1,0.9]}]})");
  });
  RewardInput in;
  in.question = "Q";
  in.steps = {"a"};
  EXPECT_DOUBLE_EQ(*prm.Compute(in), 0.9);
  EXPECT_EQ(path, "/classify");
}

}  // namespace
}  // namespace allot::rewards
