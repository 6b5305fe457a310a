#include "envs/coger/tool_selector.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tools/rstkit.h"

namespace allot::envs::coger {
namespace {

namespace fs = std::filesystem;

// The rule selector over a registry with the arithmetic tools and the QA tools on a small corpus
// written by the test (pages in the tiny world's shape: the answer is only in the page text).
class RuleToolSelectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(ALLOT_BINARY_DIR) /
           ("tool_selector_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "corpus.jsonl")
        << R"({"id": "t001", "title": "Vemere", "text": "Vemere is a town on the river )"
           R"(Oskal. Vemere was founded in 1321. Vemere has 4410 inhabitants."})"
        << "\n"
        << R"({"id": "p001", "title": "Dorin Halk", "text": "Dorin Halk is a potter who )"
           R"(lives in Vemere. Dorin Halk was born in 1290."})"
        << "\n";
    tools::ToolsConfig tc;
    tc.symbolic = tc.statistics = tc.code = false;
    tc.knowledge_base.corpus = (dir_ / "corpus.jsonl").string();
    auto registry = tools::BuildRstKit(tc);
    ASSERT_TRUE(registry.ok()) << registry.status().ToString();
    registry_ = std::move(registry).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<std::unique_ptr<ToolSelector>> Make(const std::string& rules_search) {
    CoToolConfig c;
    c.selector = "rules";
    c.rules_search = rules_search;
    return MakeToolSelector(c, registry_.get(), "");
  }

  // The selector's call, run through the registry as CoTool runs it.
  tools::ToolResult SelectAndCall(ToolSelector& selector, const std::string& query) {
    runtime::Episode episode(nullptr, {}, input_);
    Result<tools::ToolCall> call = selector.Select(episode, query);
    EXPECT_TRUE(call.ok()) << call.status().ToString();
    if (!call.ok()) return tools::ToolResult::Error(call.status().message());
    last_tool_ = call->tool_name;
    return registry_->Call(*call);
  }

  fs::path dir_;
  std::unique_ptr<tools::ToolRegistry> registry_;
  runtime::EpisodeInput input_;
  std::string last_tool_;
};

// The bug this guards: with titles only, a tiny-world fact query ("search Vemere founded")
// returned {"id", "title"} and the model never saw the founding year.
TEST_F(RuleToolSelectorTest, PageModeReturnsTheTextOfTheBestMatchingPage) {
  auto selector = Make("page");
  ASSERT_TRUE(selector.ok()) << selector.status().ToString();
  tools::ToolResult r = SelectAndCall(**selector, "search Vemere founded");
  ASSERT_TRUE(r.ok) << r.Render();
  EXPECT_EQ(last_tool_, "wiki_get_page");
  EXPECT_EQ(r.output.at("id"), "t001");
  EXPECT_NE(r.output.at("text").get<std::string>().find("founded in 1321"), std::string::npos);
  EXPECT_NE(r.Render().find("1321"), std::string::npos);

  r = SelectAndCall(**selector, "Search for Dorin Halk born");
  ASSERT_TRUE(r.ok) << r.Render();
  EXPECT_EQ(r.output.at("id"), "p001");
  EXPECT_NE(r.output.at("text").get<std::string>().find("born in 1290"), std::string::npos);
}

TEST_F(RuleToolSelectorTest, TitlesModeKeepsWikiSearch) {
  auto selector = Make("titles");
  ASSERT_TRUE(selector.ok());
  tools::ToolResult r = SelectAndCall(**selector, "search Vemere founded");
  ASSERT_TRUE(r.ok) << r.Render();
  EXPECT_EQ(last_tool_, "wiki_search");
  ASSERT_FALSE(r.output.at("results").empty());
  EXPECT_EQ(r.output["results"][0].at("title"), "Vemere");
  EXPECT_EQ(r.Render().find("1321"), std::string::npos);  // titles only
}

TEST_F(RuleToolSelectorTest, ArithmeticStillGoesToCalculateInPageMode) {
  auto selector = Make("page");
  ASSERT_TRUE(selector.ok());
  tools::ToolResult r = SelectAndCall(**selector, "calculate 37 * 12");
  ASSERT_TRUE(r.ok) << r.Render();
  EXPECT_EQ(last_tool_, "calculate");
  EXPECT_NE(r.Render().find("444"), std::string::npos);
}

TEST_F(RuleToolSelectorTest, NoMatchingPageIsAnErrorTheModelCanRead) {
  auto selector = Make("page");
  ASSERT_TRUE(selector.ok());
  runtime::Episode episode(nullptr, {}, input_);
  Result<tools::ToolCall> call = (*selector)->Select(episode, "search zzzqqq");
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(call.status().code(), StatusCode::kNotFound);
  EXPECT_NE(call.status().message().find("zzzqqq"), std::string::npos);
}

TEST_F(RuleToolSelectorTest, PageModeWithoutACorpusIsAConfigError) {
  tools::ToolRegistry empty;
  CoToolConfig c;
  c.selector = "rules";
  c.rules_search = "page";
  auto selector = MakeToolSelector(c, &empty, "");
  ASSERT_FALSE(selector.ok());
  EXPECT_NE(selector.status().message().find("rules_search"), std::string::npos);
}

}  // namespace
}  // namespace allot::envs::coger
