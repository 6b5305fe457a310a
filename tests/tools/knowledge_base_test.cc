#include "tools/knowledge_base.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tools/rstkit.h"

namespace allot::tools {
namespace {

namespace fs = std::filesystem;

// Each test works on its own copy of the corpus, so the cached index is fresh.
class KnowledgeBaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(ALLOT_BINARY_DIR) /
           ("kb_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    corpus_ = (dir_ / "corpus.jsonl").string();
    fs::copy_file(fs::path(ALLOT_TEST_DATA_DIR) / "tools" / "corpus.jsonl", corpus_);
    config_.corpus = corpus_;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string corpus_;
  KnowledgeBaseConfig config_;
};

TEST_F(KnowledgeBaseTest, SearchRanksByBm25) {
  auto kb = KnowledgeBase::Open(config_);
  ASSERT_TRUE(kb.ok()) << kb.status().ToString();
  EXPECT_EQ((*kb)->num_documents(), 8u);
  auto hits = (*kb)->Search("Where do marmots live?", 5);
  ASSERT_TRUE(hits.ok());
  ASSERT_FALSE(hits->empty());
  EXPECT_EQ((*hits)[0].title, "Marmot");
  EXPECT_EQ((*hits)[0].id, "1");
  // Porter stemming: "burrowing" finds "Burrow"; FTS syntax in the query is inert.
  hits = (*kb)->Search("burrowing AND NOT \"(* animals", 3);
  ASSERT_TRUE(hits.ok()) << hits.status().ToString();
  ASSERT_FALSE(hits->empty());
  EXPECT_EQ((*hits)[0].title, "Burrow");
  EXPECT_LE(hits->size(), 3u);
  EXPECT_TRUE((*kb)->Search("zzzqqq", 5)->empty());
  EXPECT_FALSE((*kb)->Search("?!", 5).ok());
}

TEST_F(KnowledgeBaseTest, PagesAndSummaries) {
  auto kb = KnowledgeBase::Open(config_);
  ASSERT_TRUE(kb.ok());
  auto page = (*kb)->GetPage("great plains");  // case-insensitive title
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->id, "2");
  auto by_id = (*kb)->GetPage("8");
  ASSERT_TRUE(by_id.ok());
  EXPECT_EQ(by_id->title, "Prime number");
  auto summary = (*kb)->GetSummary("Hibernation", 2);
  ASSERT_TRUE(summary.ok());
  // "Dr." does not end a sentence.
  EXPECT_EQ(summary->text,
            "Hibernation is a state of minimal activity and metabolic depression. Dr. Smith "
            "studied it in ground squirrels.");
  EXPECT_EQ((*kb)->GetPage("Atlantis").status().code(), StatusCode::kNotFound);
}

TEST_F(KnowledgeBaseTest, IndexIsCachedAndRebuiltOnChange) {
  {
    auto kb = KnowledgeBase::Open(config_);
    ASSERT_TRUE(kb.ok());
    EXPECT_TRUE((*kb)->rebuilt());
  }
  {
    auto kb = KnowledgeBase::Open(config_);
    ASSERT_TRUE(kb.ok());
    EXPECT_FALSE((*kb)->rebuilt());
  }
  EXPECT_TRUE(fs::exists(corpus_ + ".fts5.sqlite"));
  // Same content, new mtime: the hash matches, no rebuild.
  fs::last_write_time(corpus_, fs::last_write_time(corpus_) + std::chrono::seconds(5));
  {
    auto kb = KnowledgeBase::Open(config_);
    ASSERT_TRUE(kb.ok()) << kb.status().ToString();
    EXPECT_FALSE((*kb)->rebuilt());
  }
  // New content: rebuilt, and the new page is searchable.
  {
    std::ofstream out(corpus_, std::ios::app);
    out << R"({"id": "9", "title": "Quokka", "text": "The quokka is a small wallaby."})"
        << "\n";
  }
  auto kb = KnowledgeBase::Open(config_);
  ASSERT_TRUE(kb.ok());
  EXPECT_TRUE((*kb)->rebuilt());
  EXPECT_EQ((*kb)->num_documents(), 9u);
  EXPECT_EQ((*(*kb)->Search("quokka", 1))[0].id, "9");
}

TEST_F(KnowledgeBaseTest, BadCorpusLinesNameFileAndLine) {
  {
    std::ofstream out(corpus_, std::ios::app);
    out << R"({"id": "10", "title": 5, "text": "x"})"
        << "\n";
  }
  auto kb = KnowledgeBase::Open(config_);
  ASSERT_FALSE(kb.ok());
  EXPECT_EQ(kb.status().message(), corpus_ + ":9: field 'title' must be a string");
  config_.corpus = (dir_ / "missing.jsonl").string();
  EXPECT_EQ(KnowledgeBase::Open(config_).status().code(), StatusCode::kNotFound);
}

TEST_F(KnowledgeBaseTest, QaToolsThroughTheRegistry) {
  ToolsConfig tools;
  tools.knowledge_base = config_;
  tools.code = false;
  auto registry = BuildRstKit(tools);
  ASSERT_TRUE(registry.ok()) << registry.status().ToString();
  ToolResult r = (*registry)->CallFromText(
      R"({"tool_name": "wiki_search", "parameters": {"query": "marmot habitat", "top_k": 2}})");
  ASSERT_TRUE(r.ok) << r.Render();
  EXPECT_EQ(r.output["results"][0]["title"], "Marmot");
  r = (*registry)->Call({"wiki_get_summary", {{"page", "Marmot"}}});
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.output["text"].get<std::string>().rfind("Marmots are large ground squirrels", 0), 0u);
  r = (*registry)->Call({"wiki_get_page", {{"page", "Nowhere"}}});
  EXPECT_FALSE(r.ok);
  r = (*registry)->Call({"wiki_search", {{"query", "x"}, {"top_k", 500}}});
  EXPECT_FALSE(r.ok);  // above max_top_k in the schema
  // The three RSTKit families (CogER Table 8): 3 QA + 8 arithmetic + 13 symbolic + 5 stats.
  EXPECT_EQ((*registry)->size(), 3u + 8u + 13u + 5u);
}

TEST(FirstSentencesTest, Abbreviations) {
  EXPECT_EQ(FirstSentences("One. Two. Three.", 2), "One. Two.");
  EXPECT_EQ(FirstSentences("Use e.g. this one. Next!", 1), "Use e.g. this one.");
  EXPECT_EQ(FirstSentences("No end", 3), "No end");
  EXPECT_EQ(FirstSentences("Pi is 3.14 roughly. Yes.", 1), "Pi is 3.14 roughly.");
}

}  // namespace
}  // namespace allot::tools
