#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/byte_tokenizer.h"

namespace allot::models {
namespace {

TEST(ByteTokenizerTest, IdsAreBytesAndSpecialsFollow) {
  ByteTokenizer t;
  EXPECT_EQ(t.vocab_size(), 259);
  auto ids = t.Encode("<|im_start|>hé\n<|im_end|>");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{257, 'h', 0xC3, 0xA9, '\n', 258}));
  EXPECT_EQ(*t.Decode(*ids), "<|im_start|>hé\n<|im_end|>");
  EXPECT_EQ(*t.Decode(*ids, {.skip_special_tokens = true}), "hé\n");
  EXPECT_EQ(t.TokenId("<|endoftext|>"), std::optional<int32_t>(256));
  EXPECT_TRUE(t.IsSpecial(258));
  EXPECT_FALSE(t.IsSpecial(255));
  EXPECT_FALSE(t.Decode(std::vector<int32_t>{259}).ok());
}

TEST(ByteTokenizerTest, RoundTripsTextExactlyWithoutNormalizing) {
  ByteTokenizer t;
  const std::string text = "cafe\xCC\x81 \t\r\n 中文 😀 \x01";
  auto ids = t.Encode(text);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->size(), text.size());
  EXPECT_EQ(*t.Decode(*ids), text);
}

TEST(ByteTokenizerTest, HuggingFaceJsonLoadsToTheSameIds) {
  ByteTokenizer bytes({"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>"});
  auto bpe = BpeTokenizer::FromJson(nlohmann::json::parse(bytes.ToHuggingFaceJson()), "bytes");
  ASSERT_TRUE(bpe.ok()) << bpe.status().ToString();
  EXPECT_EQ((*bpe)->vocab_size(), bytes.vocab_size());
  for (const std::string text :
       {"plain", "  spaces   and\n\nlines ", "<|im_start|>user\n中文 😀<|im_end|><pad>", "Ünïcödé",
        "a\tb", ""}) {
    auto a = bytes.Encode(text);
    auto b = (*bpe)->Encode(text);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b) << text;
  }
}

}  // namespace
}  // namespace allot::models
