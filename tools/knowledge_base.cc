#include "tools/knowledge_base.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "core/random.h"

namespace allot::tools {
namespace {

constexpr int kIndexFormat = 1;  // bump when the schema below changes

struct CorpusStamp {
  int64_t size = 0;
  int64_t mtime_ns = 0;
  std::string hash;  // ByteHash64 (core/random.h), hex
};

std::string HexByteHash(std::string_view data) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(ByteHash64(data)));
  return buf;
}

Result<CorpusStamp> StatCorpus(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return NotFound("knowledge corpus not found: " + path);
  CorpusStamp s;
  s.size = static_cast<int64_t>(st.st_size);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return s;
}

// RAII for one prepared statement.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() const { return s_; }
  void Bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  int Step() { return sqlite3_step(s_); }
  std::string Text(int col) const {
    const unsigned char* t = sqlite3_column_text(s_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

Status Exec(sqlite3* db, const char* sql, const std::string& where) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Internal(where + ": sqlite: " + msg);
  }
  return Status::Ok();
}

std::string Meta(sqlite3* db, const char* key) {
  Stmt s(db, "SELECT value FROM meta WHERE key = ?");
  if (!s.ok()) return "";
  s.Bind(1, std::string_view(key));
  return s.Step() == SQLITE_ROW ? s.Text(0) : "";
}

Status WriteMeta(sqlite3* db, const CorpusStamp& stamp, size_t docs) {
  Stmt s(db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
  if (!s.ok()) return Internal(std::string("sqlite: ") + sqlite3_errmsg(db));
  const std::pair<const char*, std::string> rows[] = {
      {"format", std::to_string(kIndexFormat)},
      {"corpus_size", std::to_string(stamp.size)},
      {"corpus_mtime_ns", std::to_string(stamp.mtime_ns)},
      {"corpus_hash", stamp.hash},
      {"documents", std::to_string(docs)}};
  for (const auto& [k, v] : rows) {
    sqlite3_reset(s.get());
    s.Bind(1, std::string_view(k));
    s.Bind(2, v);
    if (s.Step() != SQLITE_DONE) return Internal(std::string("sqlite: ") + sqlite3_errmsg(db));
  }
  return Status::Ok();
}

// Builds the index for `corpus` (already read into `data`) at `path`.
Result<size_t> BuildIndex(const std::string& corpus, const std::string& data,
                          const CorpusStamp& stamp, const std::string& path) {
  ::unlink(path.c_str());
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Unavailable("cannot create index " + path + ": " + msg);
  }
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> guard(db, sqlite3_close);
  ALLOT_RETURN_IF_ERROR(
      Exec(db,
           "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
           "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
           "CREATE TABLE pages(doc_id TEXT NOT NULL UNIQUE, title TEXT, body TEXT);"
           "CREATE INDEX pages_title ON pages(title COLLATE NOCASE);"
           "CREATE VIRTUAL TABLE docs USING fts5(title, body, content='pages',"
           " content_rowid='rowid', tokenize='porter unicode61');"
           "BEGIN;",
           path));
  Stmt insert(db, "INSERT INTO pages(doc_id, title, body) VALUES (?, ?, ?)");
  if (!insert.ok()) return Internal(std::string("sqlite: ") + sqlite3_errmsg(db));
  size_t line_no = 0, docs = 0;
  std::istringstream lines(data);
  std::string line;
  std::set<std::string> ids;
  while (std::getline(lines, line)) {
    ++line_no;
    const std::string where = corpus + ":" + std::to_string(line_no);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + ": not a JSON object");
    auto field = [&](const char* key, bool allow_number) -> Result<std::string> {
      auto it = j.find(key);
      if (it == j.end()) return InvalidArgument(where + ": missing field '" + key + "'");
      if (it->is_string()) return it->get<std::string>();
      if (allow_number && it->is_number_integer()) return it->dump();
      return InvalidArgument(where + ": field '" + key + "' must be a string");
    };
    ALLOT_ASSIGN_OR_RETURN(std::string id, field("id", true));
    ALLOT_ASSIGN_OR_RETURN(std::string title, field("title", false));
    ALLOT_ASSIGN_OR_RETURN(std::string text, field("text", false));
    if (!ids.insert(id).second) return InvalidArgument(where + ": duplicate id '" + id + "'");
    sqlite3_reset(insert.get());
    insert.Bind(1, id);
    insert.Bind(2, title);
    insert.Bind(3, text);
    if (insert.Step() != SQLITE_DONE) {
      return Internal(where + ": sqlite: " + sqlite3_errmsg(db));
    }
    ++docs;
  }
  ALLOT_RETURN_IF_ERROR(Exec(db, "INSERT INTO docs(docs) VALUES('rebuild');", path));
  ALLOT_RETURN_IF_ERROR(WriteMeta(db, stamp, docs));
  ALLOT_RETURN_IF_ERROR(Exec(db, "COMMIT;", path));
  return docs;
}

// The query as FTS5 input: each word quoted (so operators and punctuation mean nothing),
// joined by OR so that bm25 ranks documents matching more words first.
std::string FtsQuery(std::string_view q) {
  std::string out, word;
  int words = 0;
  auto flush = [&] {
    if (!word.empty() && words < 32) {
      out += (out.empty() ? "\"" : " OR \"") + word + "\"";
      ++words;
    }
    word.clear();
  };
  for (unsigned char c : q) {
    if (std::isalnum(c) || c >= 0x80) {
      word += static_cast<char>(c);
    } else {
      flush();
    }
  }
  flush();
  return out;
}

}  // namespace

Result<std::unique_ptr<KnowledgeBase>> KnowledgeBase::Open(const KnowledgeBaseConfig& config) {
  if (config.corpus.empty()) return InvalidArgument("knowledge_base.corpus is empty");
  std::unique_ptr<KnowledgeBase> kb(new KnowledgeBase());
  kb->config_ = config;
  const std::string index =
      config.index_path.empty() ? config.corpus + ".fts5.sqlite" : config.index_path;
  ALLOT_ASSIGN_OR_RETURN(CorpusStamp stamp, StatCorpus(config.corpus));

  // Fast path: the stored size and mtime match. Otherwise compare content hashes, and only
  // rebuild when the content really changed.
  bool fresh = false, touch_only = false;
  std::string data;
  {
    sqlite3* db = nullptr;
    if (::access(index.c_str(), R_OK) == 0 &&
        sqlite3_open_v2(index.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      const bool same_format = Meta(db, "format") == std::to_string(kIndexFormat);
      if (same_format && Meta(db, "corpus_size") == std::to_string(stamp.size) &&
          Meta(db, "corpus_mtime_ns") == std::to_string(stamp.mtime_ns)) {
        fresh = true;
      } else if (same_format) {
        ALLOT_RETURN_IF_ERROR(ReadFile(config.corpus, &data));
        stamp.hash = HexByteHash(data);
        touch_only = Meta(db, "corpus_hash") == stamp.hash;
      }
    }
    sqlite3_close(db);
  }
  if (!fresh && !touch_only) {
    if (data.empty()) {
      ALLOT_RETURN_IF_ERROR(ReadFile(config.corpus, &data));
      stamp.hash = HexByteHash(data);
    }
    static std::atomic<int> counter{0};
    const std::string tmp =
        index + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    Result<size_t> built = BuildIndex(config.corpus, data, stamp, tmp);
    if (!built.ok()) {
      ::unlink(tmp.c_str());
      return built.status();
    }
    if (std::rename(tmp.c_str(), index.c_str()) != 0) {
      ::unlink(tmp.c_str());
      return Unavailable("cannot move index into place at " + index);
    }
    kb->rebuilt_ = true;
  }
  const int flags = touch_only ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2(index.c_str(), &kb->db_, flags, nullptr) != SQLITE_OK) {
    return Unavailable("cannot open index " + index + ": " + sqlite3_errmsg(kb->db_));
  }
  if (touch_only) {
    Stmt count(kb->db_, "SELECT value FROM meta WHERE key='documents'");
    const size_t docs = count.Step() == SQLITE_ROW ? std::stoul(count.Text(0)) : 0;
    ALLOT_RETURN_IF_ERROR(WriteMeta(kb->db_, stamp, docs));
  }
  const std::string docs = Meta(kb->db_, "documents");
  kb->num_documents_ = docs.empty() ? 0 : std::stoul(docs);
  return kb;
}

KnowledgeBase::~KnowledgeBase() { sqlite3_close(db_); }

Result<std::vector<SearchHit>> KnowledgeBase::Search(std::string_view query, int top_k) const {
  const std::string fts = FtsQuery(query);
  if (fts.empty()) return InvalidArgument("the query has no searchable words");
  top_k = std::clamp(top_k, 1, static_cast<int>(config_.max_top_k));
  std::lock_guard<std::mutex> lock(mu_);
  Stmt s(db_,
         "SELECT p.doc_id, p.title, bm25(docs, 2.0, 1.0) AS score FROM docs "
         "JOIN pages p ON p.rowid = docs.rowid WHERE docs MATCH ? ORDER BY score LIMIT ?");
  if (!s.ok()) return Internal(std::string("sqlite: ") + sqlite3_errmsg(db_));
  s.Bind(1, fts);
  s.Bind(2, static_cast<int64_t>(top_k));
  std::vector<SearchHit> hits;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    hits.push_back({s.Text(0), s.Text(1), sqlite3_column_double(s.get(), 2)});
  }
  if (rc != SQLITE_DONE) return Internal(std::string("sqlite: ") + sqlite3_errmsg(db_));
  return hits;
}

Result<Page> KnowledgeBase::GetPage(std::string_view id_or_title) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const char* sql : {"SELECT doc_id, title, body FROM pages WHERE doc_id = ?",
                          "SELECT doc_id, title, body FROM pages WHERE title = ?",
                          "SELECT doc_id, title, body FROM pages WHERE title = ? COLLATE NOCASE"}) {
    Stmt s(db_, sql);
    if (!s.ok()) return Internal(std::string("sqlite: ") + sqlite3_errmsg(db_));
    s.Bind(1, id_or_title);
    if (s.Step() == SQLITE_ROW) {
      Page p{s.Text(0), s.Text(1), s.Text(2)};
      if (static_cast<int64_t>(p.text.size()) > config_.max_page_chars) {
        p.text.resize(static_cast<size_t>(config_.max_page_chars));
        p.text += " ... [page truncated]";
      }
      return p;
    }
  }
  return NotFound("no page with id or title '" + std::string(id_or_title) + "'");
}

Result<Page> KnowledgeBase::GetSummary(std::string_view id_or_title, int sentences) const {
  ALLOT_ASSIGN_OR_RETURN(Page p, GetPage(id_or_title));
  p.text = FirstSentences(p.text, sentences);
  return p;
}

std::string FirstSentences(std::string_view text, int n) {
  static const std::set<std::string> kAbbrev = {"e.g", "i.e", "etc", "Mr", "Mrs", "Ms",     "Dr",
                                                "St",  "vs",  "Jr",  "Sr", "No",  "approx", "ca"};
  size_t i = 0;
  int found = 0;
  while (i < text.size()) {
    const char c = text[i];
    const bool boundary =
        i + 1 == text.size() || std::isspace(static_cast<unsigned char>(text[i + 1]));
    if ((c == '.' || c == '!' || c == '?') && boundary) {
      size_t w = i;
      while (w > 0 && !std::isspace(static_cast<unsigned char>(text[w - 1]))) --w;
      const std::string word(text.substr(w, i - w));
      const bool abbrev =
          c == '.' && (kAbbrev.count(word) ||
                       (word.size() == 1 && std::isupper(static_cast<unsigned char>(word[0]))));
      if (!abbrev && ++found == n) return std::string(text.substr(0, i + 1));
    }
    ++i;
  }
  return std::string(text);
}

}  // namespace allot::tools
