#include "llm/openai_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace allot::llm {
namespace {

using json = nlohmann::json;
const std::string kWhere = "llm endpoint 'p' (POST http://h/v1/completions)";

TEST(OpenAiJsonTest, EncodesTokenIdPromptAndEveryField) {
  CompletionRequest req;
  req.prompt_token_ids = {151644, 8948, 0, 2147483647, 9007199254740991};
  auto& p = req.params;
  p.n = 4;
  p.max_tokens = 64;
  p.temperature = 0.7;
  p.top_p = 0.95;
  p.top_k = 20;
  p.seed = 1234;
  p.stop = {"</answer>"};
  p.stop_token_ids = {151645};
  p.logprobs = 5;
  p.prompt_logprobs = 1;
  p.echo = false;
  p.return_token_ids = true;
  p.return_tokens_as_token_ids = true;
  p.include_stop_str_in_output = true;
  p.skip_special_tokens = false;
  json j = json::parse(EncodeCompletionRequest(req, "qwen", false));
  EXPECT_EQ(j["model"], "qwen");
  EXPECT_EQ(j["prompt"].get<std::vector<int64_t>>(), req.prompt_token_ids);
  EXPECT_EQ(j["n"], 4);
  EXPECT_EQ(j["max_tokens"], 64);
  EXPECT_DOUBLE_EQ(j["temperature"].get<double>(), 0.7);
  EXPECT_EQ(j["top_k"], 20);
  EXPECT_EQ(j["seed"], 1234);
  EXPECT_EQ(j["stop"][0], "</answer>");
  EXPECT_EQ(j["stop_token_ids"][0], 151645);
  EXPECT_EQ(j["logprobs"], 5);
  EXPECT_EQ(j["prompt_logprobs"], 1);
  EXPECT_EQ(j["return_token_ids"], true);
  EXPECT_EQ(j["return_tokens_as_token_ids"], true);
  EXPECT_EQ(j["include_stop_str_in_output"], true);
  EXPECT_EQ(j["skip_special_tokens"], false);
  EXPECT_FALSE(j.contains("stream"));
}

TEST(OpenAiJsonTest, UnsetFieldsAreOmittedAndChatLogprobsUseTopLogprobs) {
  ChatRequest req;
  req.messages = {{"system", "be brief"}, {"user", "2+2?"}};
  req.params.logprobs = 3;
  json j = json::parse(EncodeChatRequest(req, "m", true));
  EXPECT_EQ(j["messages"][1]["content"], "2+2?");
  EXPECT_EQ(j["logprobs"], true);
  EXPECT_EQ(j["top_logprobs"], 3);
  EXPECT_EQ(j["stream"], true);
  EXPECT_FALSE(j.contains("temperature"));
  EXPECT_FALSE(j.contains("n"));
}

TEST(OpenAiJsonTest, TokenIdStringForm) {
  EXPECT_EQ(TokenIdFromString("token_id:151643"), 151643);
  EXPECT_EQ(TokenIdFromString("token_id:0"), 0);
  EXPECT_EQ(TokenIdFromString("token_id:"), -1);
  EXPECT_EQ(TokenIdFromString("token_id:12x"), -1);
  EXPECT_EQ(TokenIdFromString("hello"), -1);
}

TEST(OpenAiJsonTest, CompletionLogprobsRoundTripExactly) {
  const std::vector<int64_t> ids = {785, 4226, 374, 220, 19};
  const std::vector<double> lps = {-0.0001234567890123, -1.5, -0.25, -3.0e-9, -12.345678901234567};
  json tops = json::array();
  json toks = json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    toks.push_back("token_id:" + std::to_string(ids[i]));
    tops.push_back({{"token_id:" + std::to_string(ids[i]), lps[i]}, {"token_id:7", -20.0}});
  }
  json body = {{"id", "c1"},
               {"model", "m"},
               {"choices",
                {{{"index", 0},
                  {"text", "The answer is 4"},
                  {"finish_reason", "stop"},
                  {"stop_reason", 151645},
                  {"logprobs",
                   {{"tokens", toks},
                    {"token_logprobs", lps},
                    {"top_logprobs", tops},
                    {"text_offset", {0, 3, 10, 13, 14}}}}}}},
               {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 5}}}};
  auto c = ParseCompletion(body.dump(), false, kWhere);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const Choice& ch = c->choices[0];
  EXPECT_EQ(ch.token_ids, ids);  // recovered from the token_id:N form
  ASSERT_EQ(ch.logprobs.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(ch.logprobs[i].token_id, ids[i]);
    EXPECT_EQ(ch.logprobs[i].logprob, lps[i]);  // bit-exact
    ASSERT_EQ(ch.logprobs[i].top.size(), 2u);
  }
  EXPECT_EQ(ch.finish_reason, "stop");
  EXPECT_EQ(ch.stop_reason, "151645");
  EXPECT_EQ(c->usage.prompt_tokens, 12);
  EXPECT_EQ(c->usage.completion_tokens, 5);
}

TEST(OpenAiJsonTest, ReturnTokenIdsAndPromptLogprobs) {
  json body = {{"choices",
                {{{"index", 0},
                  {"text", "ab"},
                  {"token_ids", {10, 11}},
                  {"prompt_token_ids", {1, 2, 3}},
                  {"prompt_logprobs",
                   {nullptr,
                    {{"2", {{"logprob", -0.5}, {"rank", 1}, {"decoded_token", "x"}}},
                     {"9", {{"logprob", -0.1}, {"rank", 0}}}},
                    {{"3", {{"logprob", -2.0}, {"rank", 4}}}}}},
                  {"logprobs", {{"tokens", {"a", "b"}}, {"token_logprobs", {-0.1, -0.2}}}}}}}};
  auto c = ParseCompletion(body.dump(), false, kWhere);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const Choice& ch = c->choices[0];
  EXPECT_EQ(ch.token_ids, (std::vector<int64_t>{10, 11}));
  EXPECT_EQ(ch.logprobs[1].token_id, 11);  // text tokens take ids from token_ids
  ASSERT_EQ(ch.prompt_logprobs.size(), 3u);
  EXPECT_FALSE(ch.prompt_logprobs[0].has_value());
  EXPECT_EQ(ch.prompt_logprobs[1]->token_id, 2);  // the actual prompt token, not the top one
  EXPECT_EQ(ch.prompt_logprobs[1]->logprob, -0.5);
  EXPECT_EQ(ch.prompt_logprobs[2]->logprob, -2.0);
}

TEST(OpenAiJsonTest, ChatLogprobs) {
  json body = {{"choices",
                {{{"index", 0},
                  {"message", {{"role", "assistant"}, {"content", "4"}}},
                  {"finish_reason", "stop"},
                  {"logprobs",
                   {{"content",
                     {{{"token", "token_id:19"},
                       {"logprob", -0.01},
                       {"top_logprobs", {{{"token", "token_id:20"}, {"logprob", -5.0}}}}}}}}}}}},
               {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 1}}}};
  auto c = ParseCompletion(body.dump(), true, kWhere);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->choices[0].text, "4");
  EXPECT_EQ(c->choices[0].role, "assistant");
  EXPECT_EQ(c->choices[0].token_ids, (std::vector<int64_t>{19}));
  EXPECT_EQ(c->choices[0].logprobs[0].top[0].token_id, 20);
}

void ExpectDataLoss(const std::string& body, const std::string& needle) {
  auto c = ParseCompletion(body, false, kWhere);
  ASSERT_FALSE(c.ok()) << body;
  EXPECT_EQ(c.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(c.status().message().find("llm endpoint 'p'"), std::string::npos);
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().message();
}

TEST(OpenAiJsonTest, BadBodiesBecomeErrorsNamingWhatWasWrong) {
  ExpectDataLoss("", "empty response body");
  ExpectDataLoss(R"({"choices": [{"index": 0, "text": "hel)", "not valid JSON");
  ExpectDataLoss("{\"choices\": [{\"text\": \"\xff\xfe\"}]}", "not valid UTF-8");
  ExpectDataLoss(R"({"id": "x"})", "choices: missing");
  ExpectDataLoss(R"({"choices": []})", "choices: empty");
  ExpectDataLoss(R"({"choices": {"text": "a"}})", "choices: expected an array, got object");
  ExpectDataLoss(R"({"choices": [{"text": 5}]})", "choices[0].text: expected a string, got number");
  ExpectDataLoss(R"({"choices": [{"index": 0}]})", "choices[0].text: missing");
  ExpectDataLoss(R"({"choices": [{"text": "a", "token_ids": [1, "2"]}]})",
                 "choices[0].token_ids[1]: expected an integer, got string");
  ExpectDataLoss(
      R"({"choices": [{"text": "a", "logprobs": {"tokens": ["a"], "token_logprobs": []}}]})",
      "differ in length");
  ExpectDataLoss(R"({"choices": [{"text": "a"}], "usage": {"prompt_tokens": "many"}})",
                 "usage.prompt_tokens: expected an integer");
  ExpectDataLoss(R"([1, 2])", "$: expected an object, got array");
}

TEST(OpenAiJsonTest, SseParserSplitsEventsAcrossReads) {
  SseParser p;
  std::vector<std::string> got;
  auto sink = [&](std::string_view d) {
    got.emplace_back(d);
    return true;
  };
  const std::string stream =
      "data: {\"a\":1}\n\n: comment\n\ndata: {\"b\":2}\r\n\r\nevent: x\ndata: [DONE]\n\n";
  for (char c : stream) ASSERT_TRUE(p.Feed(std::string_view(&c, 1), sink));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "{\"a\":1}");
  EXPECT_EQ(got[1], "{\"b\":2}");
  EXPECT_EQ(got[2], "[DONE]");
}

TEST(OpenAiJsonTest, SseParserRefusesOversizedEvents) {
  SseParser p;
  p.max_event_bytes = 64;
  EXPECT_FALSE(p.Feed("data: " + std::string(100, 'x'), [](std::string_view) { return true; }));
  EXPECT_TRUE(p.overflowed());
}

TEST(OpenAiJsonTest, StreamChunkParsing) {
  std::vector<StreamChunk> chunks;
  Usage usage;
  bool has_usage = false;
  ASSERT_TRUE(ParseStreamChunk(
                  R"({"choices":[{"index":1,"text":"hi","token_ids":[5],"finish_reason":null}]})",
                  false, kWhere, &chunks, &usage, &has_usage)
                  .ok());
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].index, 1);
  EXPECT_EQ(chunks[0].token_ids, (std::vector<int64_t>{5}));
  ASSERT_TRUE(
      ParseStreamChunk(R"({"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}})", false,
                       kWhere, &chunks, &usage, &has_usage)
          .ok());
  EXPECT_TRUE(has_usage);
  EXPECT_EQ(usage.completion_tokens, 2);
  EXPECT_FALSE(
      ParseStreamChunk(R"({"choices":[{"text":1}]})", false, kWhere, &chunks, &usage, &has_usage)
          .ok());
}

TEST(OpenAiJsonTest, ModelsTokenizeDetokenize) {
  auto m = ParseModels(R"({"object":"list","data":[{"id":"base","max_model_len":4096},
                           {"id":"policy-lora","parent":"base"}]})",
                       kWhere);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ((*m)[1].parent, "base");
  EXPECT_EQ((*m)[0].max_model_len, 4096);
  auto t = ParseTokenize(R"({"count":2,"tokens":[9707,1879]})", kWhere);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, (std::vector<int64_t>{9707, 1879}));
  EXPECT_FALSE(ParseTokenize(R"({"count":2})", kWhere).ok());
  auto d = ParseDetokenize(R"({"prompt":"Hello world"})", kWhere);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "Hello world");
}

TEST(OpenAiJsonTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));  // surrogate
  EXPECT_FALSE(IsValidUtf8("\xe4\xbd"));      // truncated
}

}  // namespace
}  // namespace allot::llm
