// The tiny world's knowledge corpus: every fact answer is in it, the FTS5 knowledge-search tool
// finds the page for each question's entity, and no test fact leaks into the SFT data.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "core/atomic_file.h"
#include "tests/tinyworld/tinyworld_test_world.h"
#include "tinyworld/task_generator.h"
#include "tools/knowledge_base.h"

namespace allot::tinyworld {
namespace {

namespace fs = std::filesystem;

class TinyWorldCorpusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::path(ALLOT_BINARY_DIR) /
                        ("tinyworld_corpus_" + std::to_string(::getpid())));
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    const std::string corpus = (*dir_ / "corpus.jsonl").string();
    ASSERT_TRUE(WriteFileAtomic(corpus, CorpusJsonl(SmallWorld().knowledge)).ok());
    tools::KnowledgeBaseConfig config;
    config.corpus = corpus;
    auto kb = tools::KnowledgeBase::Open(config);
    ASSERT_TRUE(kb.ok()) << kb.status().ToString();
    kb_ = kb->release();
  }
  static void TearDownTestSuite() {
    delete kb_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::map<std::string, CorpusPage> Pages() {
    std::map<std::string, CorpusPage> out;
    for (const CorpusPage& p : SmallWorld().knowledge.Corpus()) out[p.id] = p;
    return out;
  }
  static fs::path* dir_;
  static tools::KnowledgeBase* kb_;
};
fs::path* TinyWorldCorpusTest::dir_ = nullptr;
tools::KnowledgeBase* TinyWorldCorpusTest::kb_ = nullptr;

std::vector<const TaskItem*> Facts() {
  std::vector<const TaskItem*> out;
  for (const auto* split : {&SmallWorld().train, &SmallWorld().test}) {
    for (const TaskItem& t : *split) {
      if (t.kind == "fact") out.push_back(&t);
    }
  }
  return out;
}

TEST_F(TinyWorldCorpusTest, EveryFactAnswerIsOnItsPageAndNotInItsQuestion) {
  const auto pages = Pages();
  ASSERT_EQ(kb_->num_documents(), pages.size());
  size_t n = 0;
  for (const TaskItem* t : Facts()) {
    ++n;
    ASSERT_TRUE(pages.count(t->page_id)) << t->id;
    EXPECT_NE(pages.at(t->page_id).text.find(t->value), std::string::npos) << t->id;
    EXPECT_EQ(t->question.find(t->value), std::string::npos) << t->id;
    // The reference tool results are the pages themselves.
    EXPECT_NE(t->steps.back().text.find(t->value), std::string::npos) << t->id;
  }
  EXPECT_GT(n, 100u);
}

TEST_F(TinyWorldCorpusTest, SearchForTheEntityFindsItsPage) {
  const auto pages = Pages();
  size_t top1 = 0, n = 0;
  for (const TaskItem* t : Facts()) {
    // The page of the entity the question names (for two-hop items, the person's page).
    std::string entity_page;
    for (const auto& [id, p] : pages) {
      if (p.title == t->entity) entity_page = id;
    }
    ASSERT_FALSE(entity_page.empty()) << t->id;
    auto hits = kb_->Search(t->entity, 5);
    ASSERT_TRUE(hits.ok()) << hits.status().ToString();
    bool found = false;
    for (const auto& h : *hits) found = found || h.id == entity_page;
    EXPECT_TRUE(found) << t->id << ": no hit for '" << t->entity << "'";
    // The query the SFT data teaches ("search <entity> <attribute>") ranks the page first.
    for (const SolutionStep& s : t->steps) {
      if (!s.uses_tool()) continue;
      ++n;
      auto q = kb_->Search(s.tool_query.substr(std::string("search ").size()), 5);
      ASSERT_TRUE(q.ok() && !q->empty()) << s.tool_query;
      const auto top = pages.at(q->front().id);
      top1 += top.text == s.tool_result;
      EXPECT_EQ(top.text, s.tool_result)
          << t->id << ": '" << s.tool_query << "' ranks " << q->front().id << " first";
    }
  }
  EXPECT_EQ(top1, n);
}

TEST_F(TinyWorldCorpusTest, NoTestEntityAppearsInTheSftData) {
  std::set<std::string> test_entities;
  for (const TaskItem& t : SmallWorld().test) {
    if (t.kind == "fact") test_entities.insert(t.entity);
  }
  ASSERT_FALSE(test_entities.empty());
  for (const SftRecord& r : SmallWorld().sft) {
    for (const std::string& e : test_entities) {
      ASSERT_EQ(r.prompt.find(e), std::string::npos) << r.item_id << " mentions " << e;
      ASSERT_EQ(r.completion.find(e), std::string::npos) << r.item_id << " mentions " << e;
    }
  }
}

}  // namespace
}  // namespace allot::tinyworld
