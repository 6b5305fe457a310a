// The building blocks: UTF-8 helpers, the GPT-2 byte map, regex splitting, added tokens.
#include <gtest/gtest.h>

#include "models/tokenizer/added_tokens.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/normalizer.h"
#include "models/tokenizer/pre_tokenizer.h"
#include "models/tokenizer/utf8.h"

#include <nlohmann/json.hpp>

namespace allot::models {
namespace {

std::vector<std::string> SplitAll(const RegexSplitter& s, std::string_view text) {
  std::vector<std::string_view> pieces;
  s.Split(text, &pieces);
  return {pieces.begin(), pieces.end()};
}

TEST(Utf8Test, FindsFirstInvalidByte) {
  EXPECT_EQ(FindInvalidUtf8("héllo 😀"), std::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("ab\xC3"), 2u);         // truncated
  EXPECT_EQ(FindInvalidUtf8("a\xED\xA0\x80"), 1u);  // surrogate
  EXPECT_EQ(FindInvalidUtf8("\xC0\xAF"), 0u);       // overlong
}

TEST(Utf8Test, LossyConversionReplacesMaximalSubparts) {
  EXPECT_EQ(ToValidUtf8("ok"), "ok");
  // A cut 3-byte character (E4 B8 of U+4E2D) is one maximal subpart: one U+FFFD.
  EXPECT_EQ(ToValidUtf8("a\xE4\xB8"), "a\xEF\xBF\xBD");
  // Two stray continuation bytes are two subparts.
  EXPECT_EQ(ToValidUtf8("\x80\x80z"), "\xEF\xBF\xBD\xEF\xBF\xBDz");
  EXPECT_EQ(ToValidUtf8("\xE4\xB8\xAD"), "中");
}

TEST(ByteLevelTest, Gpt2Map) {
  EXPECT_EQ(ByteToCodePoint(' '), char32_t(0x120));   // 'Ġ'
  EXPECT_EQ(ByteToCodePoint('\n'), char32_t(0x10A));  // 'Ċ'
  EXPECT_EQ(ByteToCodePoint('a'), char32_t('a'));
  EXPECT_EQ(ByteToCodePoint(0xAD), char32_t(0x143));  // the last remapped byte
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(CodePointToByte(ByteToCodePoint(static_cast<unsigned char>(b))), b);
  }
  EXPECT_EQ(BytesToTokenSpelling(" the\n"), "\xC4\xA0the\xC4\x8A");
  EXPECT_EQ(TokenSpellingToBytes("\xC4\xA0the"), std::optional<std::string>(" the"));
  EXPECT_EQ(TokenSpellingToBytes("中"), std::nullopt);  // outside the 256-symbol alphabet
}

TEST(RegexSplitterTest, QwenPatternWithLookaheadAndCaselessContractions) {
  const std::string qwen =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  auto s = RegexSplitter::Compile(qwen, false, RegexSplitter::Behavior::kIsolated, false);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(SplitAll(*s, "I'M here   now"),
            (std::vector<std::string>{"I", "'M", " here", "  ", " now"}));
  EXPECT_EQ(SplitAll(*s, "x 123"), (std::vector<std::string>{"x", " ", "1", "2", "3"}));
  EXPECT_EQ(SplitAll(*s, "a\n\n b"), (std::vector<std::string>{"a", "\n\n", " b"}));
  EXPECT_EQ(SplitAll(*s, "中文abc"), (std::vector<std::string>{"中文abc"}));
}

TEST(RegexSplitterTest, Behaviors) {
  using B = RegexSplitter::Behavior;
  const auto split = [](B b, bool invert) {
    auto s = RegexSplitter::Compile("-", true, b, invert);
    EXPECT_TRUE(s.ok());
    return SplitAll(*s, "a-b--c");
  };
  EXPECT_EQ(split(B::kIsolated, false), (std::vector<std::string>{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(split(B::kRemoved, false), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split(B::kMergedWithPrevious, false), (std::vector<std::string>{"a-", "b-", "-", "c"}));
  EXPECT_EQ(split(B::kMergedWithNext, false), (std::vector<std::string>{"a", "-b", "-", "-c"}));
  EXPECT_EQ(split(B::kContiguous, false), (std::vector<std::string>{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(split(B::kRemoved, true), (std::vector<std::string>{"-", "-", "-"}));
}

TEST(RegexSplitterTest, BadPatternNamesOffset) {
  auto s = RegexSplitter::Compile("(ab", false, RegexSplitter::Behavior::kIsolated, false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/(ab/ at offset 3"), std::string::npos)
      << s.status().message();
}

TEST(NormalizerTest, NfcComposesAndRejectsUnknownTypes) {
  auto nfc = Normalizer::FromJson(nlohmann::json{{"type", "NFC"}}, "t.json");
  ASSERT_TRUE(nfc.ok());
  EXPECT_EQ(nfc->Apply("cafe\xCC\x81"), "caf\xC3\xA9");  // e + U+0301 -> é
  EXPECT_EQ(nfc->Apply("plain ascii"), "plain ascii");
  auto nfkc = Normalizer::FromJson(
      nlohmann::json{{"type", "Sequence"}, {"normalizers", {{{"type", "NFKC"}}}}}, "t.json");
  ASSERT_TRUE(nfkc.ok());
  EXPECT_EQ(nfkc->Apply("ｆｕｌｌ"), "full");
  auto bad = Normalizer::FromJson(nlohmann::json{{"type", "Lowercase"}}, "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(bad.status().message().find("t.json: normalizer.type \"Lowercase\""),
            std::string::npos);
}

TEST(AddedVocabularyTest, LeftmostLongestAndStripping) {
  AddedVocabulary vocab({{.id = 1, .content = "<a>", .special = true},
                         {.id = 2, .content = "<a><b>", .special = true},
                         {.id = 3, .content = "[M]", .lstrip = true, .rstrip = true},
                         {.id = 4, .content = "w", .single_word = true}});
  auto seg = vocab.Split("x<a><b>y<a>", true);
  ASSERT_EQ(seg.size(), 4u);
  EXPECT_EQ(seg[0].text, "x");
  EXPECT_EQ(seg[1].token->id, 2);  // the longer token wins at the same position
  EXPECT_EQ(seg[2].text, "y");
  EXPECT_EQ(seg[3].token->id, 1);

  seg = vocab.Split("a  [M]  b", true);
  ASSERT_EQ(seg.size(), 3u);
  EXPECT_EQ(seg[0].text, "a");
  EXPECT_EQ(seg[1].text, "  [M]  ");  // whitespace on both sides is swallowed
  EXPECT_EQ(seg[2].text, "b");

  // single_word: "w" inside "awb" is not a token, alone it is.
  seg = vocab.Split("awb w", true);
  ASSERT_EQ(seg.size(), 2u);
  EXPECT_EQ(seg[0].text, "awb ");
  EXPECT_EQ(seg[1].token->id, 4);

  // parse_special = false leaves special tokens in the text.
  seg = vocab.Split("x<a>", false);
  ASSERT_EQ(seg.size(), 1u);
  EXPECT_EQ(seg[0].token, nullptr);
}

}  // namespace
}  // namespace allot::models
