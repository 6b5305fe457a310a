// The RSTKit QA Toolkit's store (CogER App. D.2: Wiki Search, Page Content Retrieval, Page
// Summary Retrieval) over a local JSONL corpus of {"id", "title", "text"} lines, searched with
// SQLite FTS5 and ranked by bm25.
//
// The index is built once and cached next to the corpus (<corpus>.fts5.sqlite by default). It
// records the corpus size, mtime and content hash, and is rebuilt when any of them changes.
// Building writes a temporary file and renames it into place, so concurrent workers never see
// half an index.
//
// Thread-safe: one connection guarded by a mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/schema.h"
#include "core/status.h"

struct sqlite3;

namespace allot::tools {

struct KnowledgeBaseConfig {
  std::string corpus;         // JSONL path; empty disables the QA tools
  std::string index_path;     // default: <corpus>.fts5.sqlite
  int64_t default_top_k = 5;  // CogER App. D.2: "default top-5"
  int64_t max_top_k = 50;
  int64_t summary_sentences = 3;
  int64_t max_page_chars = 8000;  // longer pages are cut with a note

  void Describe(config::Visitor& v) {
    v.Field("corpus", corpus, {.doc = "JSONL corpus of {id, title, text}; empty disables"});
    v.Field("index_path", index_path, {.doc = "FTS5 index file; default <corpus>.fts5.sqlite"});
    v.Field("default_top_k", default_top_k, {.doc = "results per search", .min = 1});
    v.Field("max_top_k", max_top_k, {.doc = "largest top_k a call may ask for", .min = 1});
    v.Field("summary_sentences", summary_sentences, {.doc = "sentences in a summary", .min = 1});
    v.Field("max_page_chars", max_page_chars, {.doc = "page content cap", .min = 100});
  }
};

struct SearchHit {
  std::string id;
  std::string title;
  double score = 0;  // bm25: lower is better
};

struct Page {
  std::string id;
  std::string title;
  std::string text;
};

class KnowledgeBase {
 public:
  // Opens (building or rebuilding the index when needed). Bad corpus lines are errors that
  // name file:line.
  static Result<std::unique_ptr<KnowledgeBase>> Open(const KnowledgeBaseConfig& config);
  ~KnowledgeBase();
  KnowledgeBase(const KnowledgeBase&) = delete;
  KnowledgeBase& operator=(const KnowledgeBase&) = delete;

  // Free text query; punctuation and FTS5 syntax in the query are treated as plain words.
  Result<std::vector<SearchHit>> Search(std::string_view query, int top_k) const;
  // By exact id, then exact title, then case-insensitive title.
  Result<Page> GetPage(std::string_view id_or_title) const;
  // The first `sentences` sentences of the page.
  Result<Page> GetSummary(std::string_view id_or_title, int sentences) const;

  size_t num_documents() const { return num_documents_; }
  bool rebuilt() const { return rebuilt_; }  // whether Open() had to (re)build the index
  const KnowledgeBaseConfig& config() const { return config_; }

 private:
  KnowledgeBase() = default;
  KnowledgeBaseConfig config_;
  sqlite3* db_ = nullptr;
  mutable std::mutex mu_;
  size_t num_documents_ = 0;
  bool rebuilt_ = false;
};

// The first `n` sentences of `text` (a sentence ends at . ! or ? followed by space or end;
// common abbreviations such as "e.g." and single capitals do not end one).
std::string FirstSentences(std::string_view text, int n);

}  // namespace allot::tools
