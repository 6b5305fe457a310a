// Byte-level BPE on small tokenizer.json files built here, so each rule is checked alone.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/tokenize_command.h"

namespace allot::models {
namespace {

using nlohmann::json;

std::string Sp(std::string_view bytes) { return BytesToTokenSpelling(bytes); }

// Merges in the ["a", "b"] form, spelled with the byte-level alphabet. (A braced list of
// string pairs would become a JSON object, hence the explicit arrays.)
json Pairs(const std::vector<std::pair<std::string, std::string>>& merges) {
  json out = json::array();
  for (const auto& [a, b] : merges) out.push_back(json::array({Sp(a), Sp(b)}));
  return out;
}

// 256 byte tokens (id = byte) plus `extra` merged tokens from id 256, with `merges` in either
// form and a Qwen-shaped pre-tokenizer.
json MakeTokenizerJson(const std::vector<std::string>& extra, const json& merges) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[Sp(std::string(1, static_cast<char>(b)))] = b;
  for (size_t i = 0; i < extra.size(); ++i) vocab[Sp(extra[i])] = 256 + static_cast<int>(i);
  const int special_id = 256 + static_cast<int>(extra.size());
  return json{
      {"added_tokens",
       {{{"id", special_id}, {"content", "<|eot|>"}, {"special", true}},
        {{"id", special_id + 1}, {"content", "<tool>"}, {"special", false}}}},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", R"( ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
}

std::unique_ptr<BpeTokenizer> Build(const json& j) {
  auto t = BpeTokenizer::FromJson(j, "test.json");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

std::vector<int32_t> Enc(const Tokenizer& t, std::string_view s, EncodeOptions o = {}) {
  auto ids = t.Encode(s, o);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

TEST(BpeTokenizerTest, MergesApplyInRankOrder) {
  // ab (256), bc (257), abc (258): ranks decide whether "abc" is built as ab+c or a+bc.
  const std::vector<std::string> extra = {"ab", "bc", "abc"};
  auto ab_first = Build(MakeTokenizerJson(extra, Pairs({{"a", "b"}, {"b", "c"}, {"ab", "c"}})));
  auto bc_first = Build(MakeTokenizerJson(extra, Pairs({{"b", "c"}, {"a", "b"}, {"a", "bc"}})));
  ASSERT_TRUE(ab_first && bc_first);
  EXPECT_EQ(Enc(*ab_first, "abc"), (std::vector<int32_t>{258}));
  EXPECT_EQ(Enc(*bc_first, "abc"), (std::vector<int32_t>{258}));
  // With only a+bc available after bc wins, "abcc" keeps the trailing c alone.
  EXPECT_EQ(Enc(*bc_first, "abcc"), (std::vector<int32_t>{258, 'c'}));
  // Merges that do not overlap both apply.
  EXPECT_EQ(Enc(*ab_first, "abbc"), (std::vector<int32_t>{256, 257}));
}

TEST(BpeTokenizerTest, StringAndPairMergeFormsAgree) {
  const std::vector<std::string> extra = {" t", "he", " the", "aa"};
  const json pairs = Pairs({{" ", "t"}, {"h", "e"}, {" t", "he"}, {"a", "a"}});
  json strings = json::array();
  for (const auto& p : pairs)
    strings.push_back(p[0].get<std::string>() + " " + p[1].get<std::string>());
  auto a = Build(MakeTokenizerJson(extra, pairs));
  auto b = Build(MakeTokenizerJson(extra, strings));
  ASSERT_TRUE(a && b);
  const std::string text = "in the theatre aaaaa";
  EXPECT_EQ(Enc(*a, text), Enc(*b, text));
  // " the" is one token; "aaaaa" merges leftmost first: aa aa a.
  EXPECT_EQ(Enc(*a, " the aaaaa"), (std::vector<int32_t>{258, ' ', 259, 259, 'a'}));
}

TEST(BpeTokenizerTest, SpecialTokensSplitFirstAndDecodeRoundTrips) {
  auto t = Build(MakeTokenizerJson({}, json::array()));
  ASSERT_TRUE(t);
  const auto ids = Enc(*t, "hi<|eot|>x<tool>");
  EXPECT_EQ(ids, (std::vector<int32_t>{'h', 'i', 256, 'x', 257}));
  EXPECT_TRUE(t->IsSpecial(256));
  EXPECT_FALSE(t->IsSpecial(257));
  EXPECT_EQ(*t->Decode(ids), "hi<|eot|>x<tool>");
  EXPECT_EQ(*t->Decode(ids, {.skip_special_tokens = true}), "hix<tool>");
  // Untrusted text: the special token is spelled out byte by byte, the added one still matches.
  const auto literal = Enc(*t, "<|eot|><tool>", {.parse_special = false});
  EXPECT_EQ(literal.size(), 8u);
  EXPECT_EQ(literal.back(), 257);
}

TEST(BpeTokenizerTest, NormalizesToNfcBeforeBpe) {
  auto t = Build(MakeTokenizerJson({}, json::array()));
  ASSERT_TRUE(t);
  // "e" + U+0301 becomes "é" (C3 A9): two byte tokens instead of three.
  EXPECT_EQ(Enc(*t, "e\xCC\x81"), (std::vector<int32_t>{0xC3, 0xA9}));
}

TEST(BpeTokenizerTest, DecodeReplacesCutCharacters) {
  auto t = Build(MakeTokenizerJson({}, json::array()));
  ASSERT_TRUE(t);
  const auto ids = Enc(*t, "中");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(*t->Decode(std::vector<int32_t>{ids[0], ids[1]}), "\xEF\xBF\xBD");
  EXPECT_EQ(*t->TokenBytes(ids[0]), "\xE4");
  auto bad = t->Decode(std::vector<int32_t>{5, 100000});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
}

TEST(BpeTokenizerTest, RejectsInvalidUtf8Input) {
  auto t = Build(MakeTokenizerJson({}, json::array()));
  ASSERT_TRUE(t);
  auto ids = t->Encode("ok\xFFno");
  ASSERT_FALSE(ids.ok());
  EXPECT_NE(ids.status().message().find("not valid UTF-8 at byte 2"), std::string::npos);
}

TEST(BpeTokenizerTest, TemplatePostProcessorAddsBos) {
  json j = MakeTokenizerJson({}, json::array());
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single",
                          {{{"SpecialToken", {{"id", "<|eot|>"}, {"type_id", 0}}}},
                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                         {"special_tokens", {{"<|eot|>", {{"id", "<|eot|>"}, {"ids", {256}}}}}}};
  auto t = Build(j);
  ASSERT_TRUE(t);
  EXPECT_EQ(Enc(*t, "a"), (std::vector<int32_t>{256, 'a'}));
  EXPECT_EQ(Enc(*t, "a", {.add_special_tokens = false}), (std::vector<int32_t>{'a'}));
}

TEST(BpeTokenizerTest, IgnoreMergesEmitsWholeVocabularyWords) {
  // "xyz" is in the vocabulary but no merge builds it.
  json j = MakeTokenizerJson({"xyz"}, json::array());
  auto plain = Build(j);
  j["model"]["ignore_merges"] = true;
  auto llama = Build(j);
  ASSERT_TRUE(plain && llama);
  EXPECT_EQ(Enc(*plain, "xyz"), (std::vector<int32_t>{'x', 'y', 'z'}));
  EXPECT_EQ(Enc(*llama, "xyz"), (std::vector<int32_t>{256}));
}

TEST(BpeTokenizerTest, ErrorsNameTheFieldAndFile) {
  json j = MakeTokenizerJson({}, Pairs({{"a", "b"}}));  // "ab" missing from the vocab
  auto t = BpeTokenizer::FromJson(j, "tok.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tok.json: model.merges[0]"), std::string::npos)
      << t.status().message();

  j = MakeTokenizerJson({}, json::array({"a b c"}));
  t = BpeTokenizer::FromJson(j, "tok.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("model.merges[0]: expected"), std::string::npos);

  j = MakeTokenizerJson({}, json::array());
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  t = BpeTokenizer::FromJson(j, "tok.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);

  auto missing = BpeTokenizer::FromFile("/nonexistent/tokenizer.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// Each mutation used to throw nlohmann::type_error (or std::bad_alloc for the huge id) out of
// FromJson and abort the process; each must now be an error naming the file and the field.
TEST(BpeTokenizerTest, WrongTypesAreErrorsNamingTheField) {
  struct Case {
    const char* field;  // expected in the message
    std::function<void(json&)> mutate;
  };
  const std::vector<Case> cases = {
      {"added_tokens[0].special", [](json& j) { j["added_tokens"][0]["special"] = "yes"; }},
      {"added_tokens[1].lstrip", [](json& j) { j["added_tokens"][1]["lstrip"] = 1; }},
      {"added_tokens[0].rstrip", [](json& j) { j["added_tokens"][0]["rstrip"] = "no"; }},
      {"added_tokens[0].single_word",
       [](json& j) { j["added_tokens"][0]["single_word"] = json::object(); }},
      {"added_tokens[0].normalized", [](json& j) { j["added_tokens"][0]["normalized"] = "x"; }},
      {"added_tokens[0].id", [](json& j) { j["added_tokens"][0]["id"] = "5"; }},
      {"added_tokens[1].id", [](json& j) { j["added_tokens"][1]["id"] = (1 << 30) - 1; }},
      {"added_tokens:",
       [](json& j) {
         j["added_tokens"] = {{"a", 1}};
       }},
      {"model.vocab[", [](json& j) { j["model"]["vocab"]["zz"] = (1 << 30) - 3; }},
      {"model.vocab[", [](json& j) { j["model"]["vocab"]["zz"] = 1.5; }},
      {"model.type", [](json& j) { j["model"]["type"] = 7; }},
      {"model.byte_fallback", [](json& j) { j["model"]["byte_fallback"] = "false"; }},
      {"model.ignore_merges", [](json& j) { j["model"]["ignore_merges"] = 0; }},
      {"model.unk_token", [](json& j) { j["model"]["unk_token"] = 3; }},
      {"model.end_of_word_suffix", [](json& j) { j["model"]["end_of_word_suffix"] = 3; }},
      {"model.merges", [](json& j) { j["model"]["merges"] = "a b"; }},
      {"decoder", [](json& j) { j["decoder"] = "ByteLevel"; }},
      {"decoder.type",
       [](json& j) {
         j["decoder"] = {{"type", false}};
       }},
      {"post_processor", [](json& j) { j["post_processor"] = "TemplateProcessing"; }},
      {"post_processor.type",
       [](json& j) {
         j["post_processor"] = {{"type", 1}};
       }},
      {"post_processor.processors",
       [](json& j) {
         j["post_processor"] = {{"type", "Sequence"}, {"processors", 3}};
       }},
      {"post_processor.single[0]",
       [](json& j) {
         j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", {"<|eot|>"}}};
       }},
      {"post_processor.special_tokens[\"<|eot|>\"].ids[0]",
       [](json& j) {
         j["post_processor"] = {
             {"type", "TemplateProcessing"},
             {"single", {{{"SpecialToken", {{"id", "<|eot|>"}}}}, {{"Sequence", {{"id", "A"}}}}}},
             {"special_tokens", {{"<|eot|>", {{"ids", {"x"}}}}}}};
       }},
      {"pre_tokenizer Split.behavior",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = 2; }},
      {"pre_tokenizer Split.invert",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["invert"] = "false"; }},
      {"pre_tokenizer ByteLevel.add_prefix_space",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = "true"; }},
      {"nests deeper than 32 levels",
       [](json& j) {
         // The parsers recurse into "Sequence": a file nested a million deep overflowed the
         // stack. Depth 1000 is enough to show the bound.
         json p = {{"type", "ByteLevel"}};
         for (int i = 0; i < 1000; ++i) {
           json q = {{"type", "Sequence"}, {"processors", json::array()}};
           q["processors"].push_back(std::move(p));
           p = std::move(q);
         }
         j["post_processor"] = std::move(p);
       }},
      {"pre_tokenizer ByteLevel.use_regex",
       [](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = nullptr; }},
  };
  for (const Case& c : cases) {
    json j = MakeTokenizerJson({"ab"}, Pairs({{"a", "b"}}));
    c.mutate(j);
    Result<std::unique_ptr<BpeTokenizer>> t = InvalidArgument("not run");
    ASSERT_NO_THROW(t = BpeTokenizer::FromJson(j, "tok.json")) << c.field;
    if (std::string(c.field) == "pre_tokenizer ByteLevel.use_regex") {
      EXPECT_TRUE(t.ok()) << "null means default: " << t.status().ToString();
      continue;
    }
    ASSERT_FALSE(t.ok()) << c.field;
    EXPECT_NE(t.status().message().find("tok.json: "), std::string::npos) << t.status().message();
    EXPECT_NE(t.status().message().find(c.field), std::string::npos) << t.status().message();
  }
}

TEST(TokenizeCommandTest, MalformedTokenizerFileIsAClearError) {
  const auto dir = std::filesystem::temp_directory_path() / "allot_tokenize_bad_test";
  std::filesystem::create_directories(dir);
  json j = MakeTokenizerJson({}, json::array());
  j["added_tokens"][0]["special"] = "yes";
  {
    std::ofstream f(dir / "tokenizer.json");
    f << j.dump();
  }
  std::istringstream in("x");
  std::ostringstream out, err;
  EXPECT_EQ(RunTokenize(dir.string(), false, in, out, err), 1);
  EXPECT_NE(err.str().find("tokenizer.json: added_tokens[0].special: expected true or false"),
            std::string::npos)
      << err.str();
  std::filesystem::remove_all(dir);
}

TEST(TokenizeCommandTest, EncodesAndDecodesThroughStreams) {
  const auto dir = std::filesystem::temp_directory_path() / "allot_tokenize_cmd_test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "tokenizer.json");
    f << MakeTokenizerJson({"ab"}, Pairs({{"a", "b"}})).dump();
  }
  std::istringstream in("ab<|eot|>");
  std::ostringstream out, err;
  ASSERT_EQ(RunTokenize(dir.string(), false, in, out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "256 257\n");

  std::istringstream ids("[256, 257]\n");
  std::ostringstream text;
  ASSERT_EQ(RunTokenize(dir.string(), true, ids, text, err), 0) << err.str();
  EXPECT_EQ(text.str(), "ab<|eot|>");

  std::istringstream junk("1 two");
  std::ostringstream none, why;
  EXPECT_EQ(RunTokenize(dir.string(), true, junk, none, why), 1);
  EXPECT_NE(why.str().find("expected a token id, got 'two'"), std::string::npos) << why.str();

  std::istringstream any("x");
  std::ostringstream why2;
  EXPECT_EQ(RunTokenize((dir / "nope").string(), false, any, none, why2), 1);
  EXPECT_NE(why2.str().find("cannot open (tokenizer file)"), std::string::npos) << why2.str();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace allot::models
