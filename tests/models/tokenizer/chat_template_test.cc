#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/config/binder.h"
#include "models/tokenizer/chat_template.h"

namespace allot::models {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "You are terse."}, {"user", "What is 2+2?"}, {"assistant", "4"}, {"user", "x3?"}};

TEST(ChatTemplateTest, ChatMlMatchesQwenTemplate) {
  EXPECT_EQ(RenderChat(ChatTemplateKind::kChatMl, kConversation),
            "<|im_start|>system\nYou are terse.<|im_end|>\n"
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
            "<|im_start|>assistant\n4<|im_end|>\n"
            "<|im_start|>user\nx3?<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, ChatMlOptions) {
  const std::vector<ChatMessage> one = {{"user", "hi"}};
  EXPECT_EQ(RenderChat(ChatTemplateKind::kChatMl, one,
                       {.default_system = "You are Qwen.", .enable_thinking = false}),
            "<|im_start|>system\nYou are Qwen.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(RenderChat(ChatTemplateKind::kChatMl, one, {.add_generation_prompt = false}),
            "<|im_start|>user\nhi<|im_end|>\n");
}

TEST(ChatTemplateTest, ChatMlGroupsToolResultsInOneUserTurn) {
  const std::vector<ChatMessage> msgs = {{"user", "add"},
                                         {"assistant", "<tool_call>\n{}\n</tool_call>"},
                                         {"tool", "3"},
                                         {"tool", "4"}};
  EXPECT_EQ(RenderChat(ChatTemplateKind::kChatMl, msgs, {.add_generation_prompt = false}),
            "<|im_start|>user\nadd<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n3\n</tool_response>\n<tool_response>\n4\n"
            "</tool_response><|im_end|>\n");
}

TEST(ChatTemplateTest, Llama3TrimsContentAndAddsBos) {
  const std::vector<ChatMessage> msgs = {{"system", " Be brief.\n"}, {"user", "Hi"}};
  EXPECT_EQ(RenderChat(ChatTemplateKind::kLlama3, msgs),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

class ChatTemplateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / "allot_chat_template_test";
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(dir_ / "tokenizer_config.json") << text; }
  std::filesystem::path dir_;
};

TEST_F(ChatTemplateFileTest, DetectsFromTokenizerConfig) {
  Write(R"({"chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"})");
  auto kind = ResolveChatTemplate({}, dir_.string());
  ASSERT_TRUE(kind.ok()) << kind.status().ToString();
  EXPECT_EQ(*kind, ChatTemplateKind::kChatMl);

  Write(R"({"chat_template": [{"name": "default",
            "template": "{{ '<|start_header_id|>' + m.role }}"}]})");
  kind = ResolveChatTemplate({}, dir_.string());
  ASSERT_TRUE(kind.ok());
  EXPECT_EQ(*kind, ChatTemplateKind::kLlama3);

  // Config overrides the file.
  kind = ResolveChatTemplate({.kind = "chatml"}, dir_.string());
  ASSERT_TRUE(kind.ok());
  EXPECT_EQ(*kind, ChatTemplateKind::kChatMl);

  Write(R"({"chat_template": "{{ messages }}"})");
  kind = ResolveChatTemplate({}, dir_.string());
  ASSERT_FALSE(kind.ok());
  EXPECT_EQ(kind.status().code(), StatusCode::kNotFound);
  EXPECT_NE(kind.status().message().find("set chat_template.kind"), std::string::npos);
}

TEST(ChatTemplateConfigTest, BindsFromYaml) {
  auto root = config::ParseYaml("kind: llama3\nenable_thinking: false\n", "m.yaml");
  ASSERT_TRUE(root.ok());
  ChatTemplateConfig cfg;
  ASSERT_TRUE(config::Load(*root, cfg).ok());
  EXPECT_EQ(cfg.kind, "llama3");
  EXPECT_FALSE(cfg.enable_thinking);

  auto bad = config::ParseYaml("kind: jinja\n", "m.yaml");
  ASSERT_TRUE(bad.ok());
  ChatTemplateConfig cfg2;
  EXPECT_FALSE(config::Load(*bad, cfg2).ok());
}

}  // namespace
}  // namespace allot::models
