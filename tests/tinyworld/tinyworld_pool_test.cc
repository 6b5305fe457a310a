// The tiny world's shipped model pool: the manifest's sha256 match the shipped files,
// every tier loads as a Qwen2 over the byte vocabulary with the parameter count the manifest and
// configs/tinyworld/pool.yaml state, and the smallest tier answers easy items in the formats it
// was trained on.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/sha256.h"
#include "models/causal_lm.h"
#include "models/generation.h"
#include "models/hf_config.h"
#include "models/tokenizer/byte_tokenizer.h"
#include "models/tokenizer/tokenizer.h"
#include "tinyworld/formats.h"

namespace allot::tinyworld {
namespace {

namespace fs = std::filesystem;

const std::string kPool = std::string(ALLOT_SOURCE_DIR) + "/assets/tinyworld/pool";

nlohmann::json ReadJson(const std::string& path) {
  std::string text;
  Status s = ReadFile(path, &text);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::vector<nlohmann::json> Tiers() {
  const nlohmann::json manifest = ReadJson(kPool + "/manifest.json");
  if (!manifest.is_object() || !manifest.contains("tiers")) return {};
  return std::vector<nlohmann::json>(manifest["tiers"].begin(), manifest["tiers"].end());
}

TEST(TinyWorldPoolTest, ManifestSha256MatchesShippedFiles) {
  const auto tiers = Tiers();
  ASSERT_GE(tiers.size(), 3u) << kPool << "/manifest.json: fewer than 3 tiers";
  int64_t total = 0;
  for (const auto& tier : tiers) {
    const std::string name = tier["name"];
    for (const char* required : {"config.json", "model.safetensors", "tokenizer.json"}) {
      EXPECT_TRUE(tier["files"].contains(required)) << name << " lacks " << required;
    }
    for (const auto& [file, entry] : tier["files"].items()) {
      const std::string path = kPool + "/" + name + "/" + file;
      auto digest = Sha256File(path);
      ASSERT_TRUE(digest.ok()) << digest.status().ToString();
      EXPECT_EQ(*digest, entry["sha256"].get<std::string>()) << path;
      EXPECT_EQ(static_cast<int64_t>(fs::file_size(path)), entry["bytes"].get<int64_t>()) << path;
      total += entry["bytes"].get<int64_t>();
    }
  }
  EXPECT_LE(total, 40'000'000) << "the shipped weights are 40 MB in all at most";
}

TEST(TinyWorldPoolTest, ShippedTokenizerIsTheByteTokenizer) {
  for (const auto& tier : Tiers()) {
    std::string text;
    ASSERT_TRUE(
        ReadFile(kPool + "/" + tier["name"].get<std::string>() + "/tokenizer.json", &text).ok());
    EXPECT_EQ(nlohmann::json::parse(text),
              nlohmann::json::parse(models::ByteTokenizer().ToHuggingFaceJson()))
        << tier["name"];
  }
}

// The tiers grow in size; a model trained further from a tier (the manifest names its "base":
// RLoT's t1r) has its base's size and stays out of that order.
TEST(TinyWorldPoolTest, TiersLoadAsQwen2OfIncreasingSize) {
  const auto tiers = Tiers();
  ASSERT_GE(tiers.size(), 3u);
  std::map<std::string, int64_t> sizes;
  for (const auto& tier : tiers) {
    sizes[tier["name"].get<std::string>()] = tier["params"].get<int64_t>();
  }
  int64_t previous = 0;
  for (const auto& tier : tiers) {
    const std::string dir = kPool + "/" + tier["name"].get<std::string>();
    auto config = models::LoadTransformerConfig(dir);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    EXPECT_EQ(config->family, models::ModelFamily::kQwen2) << dir;
    EXPECT_EQ(config->vocab_size, models::ByteTokenizer().vocab_size()) << dir;
    EXPECT_EQ(config->eos_token_ids, std::vector<int64_t>{258}) << dir << ": EOS is <|im_end|>";
    auto model = models::CausalLMImpl::Load(dir);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    int64_t params = 0;
    for (const auto& p : (*model)->parameters()) params += p.numel();
    EXPECT_EQ(params, tier["params"].get<int64_t>()) << dir;
    if (tier.contains("base")) {
      const std::string base = tier["base"].get<std::string>();
      ASSERT_TRUE(sizes.count(base)) << dir << ": its base " << base << " is not in the pool";
      EXPECT_EQ(params, sizes[base]) << dir << ": not the size of its base " << base;
      continue;
    }
    EXPECT_GT(params, previous) << dir << ": tiers are listed smallest first";
    previous = params;
  }
}

TEST(TinyWorldPoolTest, PoolFileStatesTheRealParameterCounts) {
  std::string text;
  ASSERT_TRUE(ReadFile(std::string(ALLOT_SOURCE_DIR) + "/configs/tinyworld/pool.yaml", &text).ok());
  for (const auto& tier : Tiers()) {
    // "params_b: 0.000140032" for 140,032 parameters (the tiers are far below a billion).
    std::string digits = std::to_string(tier["params"].get<int64_t>());
    ASSERT_LT(digits.size(), 10u);
    digits = std::string(9 - digits.size(), '0') + digits;
    while (digits.back() == '0') digits.pop_back();
    const std::string expected = "params_b: 0." + digits + "\n";
    EXPECT_NE(text.find(expected), std::string::npos)
        << "configs/tinyworld/pool.yaml lacks '" << expected << "' for " << tier["name"];
  }
}

// Greedy completions of the smallest tier, in process (the code path allot serve runs).
std::vector<std::string> Greedy(const std::vector<std::string>& prompts, int64_t max_tokens) {
  torch::set_num_threads(1);
  auto model = models::CausalLMImpl::Load(kPool + "/" + Tiers().front()["name"].get<std::string>());
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return {};
  (*model)->eval();
  models::ByteTokenizer tok;
  models::Generator gen(model->get(), &tok);
  std::vector<models::GenerationRequest> requests;
  for (const auto& p : prompts) {
    models::GenerationRequest r;
    r.prompt = *tok.Encode(p);
    r.params.temperature = 0.0;
    r.params.max_tokens = max_tokens;
    requests.push_back(std::move(r));
  }
  torch::NoGradGuard no_grad;
  auto out = gen.Generate(requests);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  std::vector<std::string> texts;
  if (out.ok()) {
    for (const auto& r : *out) texts.push_back(r.samples[0].text);
  }
  return texts;
}

TEST(TinyWorldPoolTest, SmallestTierAnswersInTheTaskFormats) {
  // add1 items asked directly (CogER's L1) and for a level tag (the router's base model), and a
  // fact question with the tool instruction (CoTool).
  const std::vector<std::string> questions = {"What is 3 + 4?", "What is 9 - 2?", "What is 5 + 1?",
                                              "What is 8 - 8?"};
  std::vector<std::string> prompts;
  for (const auto& q : questions) prompts.push_back(Prompt(q, "", kAskDirect));
  for (const auto& q : questions) prompts.push_back(Prompt(q, "", kAskRoute));
  prompts.push_back(Prompt("What is the trade of Drouthei Wosk?", "", kAskTool));
  const auto texts = Greedy(prompts, 96);
  ASSERT_EQ(texts.size(), prompts.size());
  const std::regex answer(R"(The answer is \\boxed\{-?[0-9]+\})");
  const std::regex level(R"((-?[0-9]+ )?<question_level>L[1-4]</question_level>)");
  for (size_t i = 0; i < questions.size(); ++i) {
    EXPECT_TRUE(std::regex_match(texts[i], answer)) << prompts[i] << " -> " << texts[i];
    const std::string& tag = texts[questions.size() + i];
    EXPECT_TRUE(std::regex_match(tag, level)) << questions[i] << " -> " << tag;
  }
  // CoTool (CogER App. B.2): a step, then a knowledge-base query in the markers.
  const std::string& tool = texts.back();
  EXPECT_EQ(tool.rfind(std::string(kStepPrefix) + "1: I need the ", 0), 0u) << tool;
  EXPECT_NE(tool.find(std::string(kToolQueryOpen) + " " + std::string(kSearchVerb)),
            std::string::npos)
      << tool;
}

}  // namespace
}  // namespace allot::tinyworld
