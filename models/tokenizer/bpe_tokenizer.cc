#include "models/tokenizer/bpe_tokenizer.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <queue>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/utf8.h"

namespace allot::models {
namespace {

using nlohmann::json;

enum IdKind : int8_t { kUnused = 0, kVocab = 1, kAdded = 2, kAddedSpecial = 3 };

Status ParseMerge(const json& m, size_t index, const std::string& where, std::string* a,
                  std::string* b) {
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    *a = m[0].get<std::string>();
    *b = m[1].get<std::string>();
    return Status::Ok();
  }
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const size_t space = s.find(' ');
    if (space != std::string::npos && space > 0 && space + 1 < s.size() &&
        s.find(' ', space + 1) == std::string::npos) {
      *a = s.substr(0, space);
      *b = s.substr(space + 1);
      return Status::Ok();
    }
  }
  return InvalidArgument(where + ": model.merges[" + std::to_string(index) +
                         "]: expected [\"a\", \"b\"] or \"a b\", got " + m.dump());
}

// Reads the ids a post-processor adds around a single sequence.
Status ParsePostProcessor(const json& node, const std::string& where,
                          const std::function<std::optional<int32_t>(const std::string&)>& lookup,
                          std::vector<int32_t>* before, std::vector<int32_t>* after) {
  if (node.is_null()) return Status::Ok();
  const std::string type = node.value("type", std::string());
  if (type == "ByteLevel") return Status::Ok();  // offsets only
  if (type == "Sequence") {
    for (const auto& child : node.value("processors", json::array())) {
      ALLOT_RETURN_IF_ERROR(ParsePostProcessor(child, where, lookup, before, after));
    }
    return Status::Ok();
  }
  if (type == "TemplateProcessing") {
    const json& special = node.value("special_tokens", json::object());
    bool seen_sequence = false;
    for (const auto& item : node.value("single", json::array())) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      if (!item.contains("SpecialToken")) {
        return InvalidArgument(where + ": post_processor.single: unexpected item " + item.dump());
      }
      const std::string name = item["SpecialToken"].value("id", std::string());
      std::vector<int32_t> ids;
      if (special.contains(name) && special[name].contains("ids")) {
        ids = special[name]["ids"].get<std::vector<int32_t>>();
      } else if (auto id = lookup(name)) {
        ids = {*id};
      } else {
        return InvalidArgument(where + ": post_processor.single: unknown special token \"" + name +
                               "\"");
      }
      auto& dst = seen_sequence ? *after : *before;
      dst.insert(dst.end(), ids.begin(), ids.end());
    }
    return Status::Ok();
  }
  return Unimplemented(where + ": post_processor.type \"" + type +
                       "\" is not supported (supported: ByteLevel, TemplateProcessing, Sequence)");
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open tokenizer file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromFile(const std::string& path) {
  ALLOT_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidArgument(path + ": invalid JSON at byte " + std::to_string(e.byte) + ": " +
                           e.what());
  }
  return FromJson(root, path);
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromJson(const json& root,
                                                             const std::string& where) {
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object()) {
    return InvalidArgument(where + ": expected a tokenizer.json object with a \"model\"");
  }
  const json& model = root["model"];
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") {
    return Unimplemented(where + ": model.type \"" + type + "\" is not supported (only BPE)");
  }
  if (model.value("byte_fallback", false)) {
    return Unimplemented(where +
                         ": model.byte_fallback (SentencePiece-style BPE) is not supported");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty()) {
      return Unimplemented(where + ": model." + key + " is not supported");
    }
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return InvalidArgument(where + ": model.vocab: expected an object of token -> id");
  }

  std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer());
  ALLOT_ASSIGN_OR_RETURN(tok->normalizer_,
                         Normalizer::FromJson(root.value("normalizer", json()), where));
  ALLOT_ASSIGN_OR_RETURN(tok->pre_tokenizer_,
                         PreTokenizer::FromJson(root.value("pre_tokenizer", json()), where));
  const json& decoder = root.value("decoder", json());
  const bool byte_level_decoder = decoder.is_object() && decoder.value("type", "") == "ByteLevel";
  if (!tok->pre_tokenizer_.byte_level() && !byte_level_decoder) {
    return Unimplemented(where +
                         ": only byte-level BPE is supported (no ByteLevel pre_tokenizer or "
                         "decoder found)");
  }
  if (!decoder.is_null() && !byte_level_decoder) {
    return Unimplemented(where + ": decoder.type \"" + decoder.value("type", std::string()) +
                         "\" is not supported (only ByteLevel)");
  }
  tok->ignore_merges_ = model.value("ignore_merges", false);

  // Vocabulary: the file spells tokens with the byte-level alphabet; keep raw bytes.
  std::unordered_map<std::string, int32_t> spelling_to_id;
  spelling_to_id.reserve(model["vocab"].size());
  int32_t max_id = -1;
  for (const auto& [spelling, id_node] : model["vocab"].items()) {
    if (!id_node.is_number_integer() || id_node.get<int64_t>() < 0 ||
        id_node.get<int64_t>() > (1 << 30)) {
      return InvalidArgument(where + ": model.vocab[\"" + spelling + "\"]: expected an id >= 0");
    }
    const int32_t id = id_node.get<int32_t>();
    spelling_to_id.emplace(spelling, id);
    max_id = std::max(max_id, id);
  }
  const json& added = root.value("added_tokens", json::array());
  for (const auto& a : added) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
        !a.contains("content") || !a["content"].is_string() || a["id"].get<int64_t>() < 0 ||
        a["id"].get<int64_t>() > (1 << 30)) {
      return InvalidArgument(where + ": added_tokens: expected {\"id\": n, \"content\": s}, got " +
                             a.dump());
    }
    max_id = std::max(max_id, a["id"].get<int32_t>());
  }
  tok->id_to_bytes_.assign(static_cast<size_t>(max_id + 1), std::string());
  tok->id_kind_.assign(static_cast<size_t>(max_id + 1), kUnused);
  tok->bytes_to_id_.reserve(spelling_to_id.size());
  for (const auto& [spelling, id] : spelling_to_id) {
    std::optional<std::string> bytes = TokenSpellingToBytes(spelling);
    std::string raw = bytes ? std::move(*bytes) : spelling;
    tok->bytes_to_id_.emplace(raw, id);
    tok->id_to_bytes_[id] = std::move(raw);
    tok->id_kind_[id] = kVocab;
  }
  for (int b = 0; b < 256; ++b) {
    auto it = tok->bytes_to_id_.find(std::string(1, static_cast<char>(b)));
    tok->byte_id_[b] = it == tok->bytes_to_id_.end() ? -1 : it->second;
  }
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = spelling_to_id.find(model["unk_token"].get<std::string>());
    if (it != spelling_to_id.end()) tok->unk_id_ = it->second;
  }

  // Merges: rank = position in the list.
  static const json kEmpty = json::array();
  const json& merges = model.contains("merges") ? model["merges"] : kEmpty;
  tok->merges_.reserve(merges.size());
  std::string a, b;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    ALLOT_RETURN_IF_ERROR(ParseMerge(merges[rank], rank, where, &a, &b));
    auto ia = spelling_to_id.find(a);
    auto ib = spelling_to_id.find(b);
    auto im = spelling_to_id.find(a + b);
    if (ia == spelling_to_id.end() || ib == spelling_to_id.end() || im == spelling_to_id.end()) {
      return InvalidArgument(where + ": model.merges[" + std::to_string(rank) + "]: \"" + a +
                             "\" + \"" + b + "\" refers to a token missing from model.vocab");
    }
    tok->merges_.emplace(PairKey(ia->second, ib->second),
                         MergeRule{static_cast<int32_t>(rank), im->second});
  }

  // Added tokens are matched by their content and decode to it verbatim.
  std::vector<AddedToken> tokens;
  for (const auto& a_node : added) {
    AddedToken t;
    t.id = a_node["id"].get<int32_t>();
    t.content = a_node["content"].get<std::string>();
    t.special = a_node.value("special", false);
    t.lstrip = a_node.value("lstrip", false);
    t.rstrip = a_node.value("rstrip", false);
    t.single_word = a_node.value("single_word", false);
    if (FindInvalidUtf8(t.content) != std::string::npos || t.content.empty()) {
      return InvalidArgument(where + ": added_tokens: id " + std::to_string(t.id) +
                             " has empty or invalid UTF-8 content");
    }
    tok->id_to_bytes_[t.id] = t.content;
    tok->id_kind_[t.id] = t.special ? kAddedSpecial : kAdded;
    tokens.push_back(std::move(t));
  }
  tok->added_ = AddedVocabulary(std::move(tokens));

  const auto lookup = [&](const std::string& s) -> std::optional<int32_t> {
    if (const AddedToken* t = tok->added_.FindByContent(s)) return t->id;
    auto it = spelling_to_id.find(s);
    if (it != spelling_to_id.end()) return it->second;
    return std::nullopt;
  };
  ALLOT_RETURN_IF_ERROR(ParsePostProcessor(root.value("post_processor", json()), where, lookup,
                                           &tok->bos_ids_, &tok->eos_ids_));
  for (int32_t id : tok->bos_ids_) {
    if (id < 0 || id >= tok->vocab_size()) {
      return InvalidArgument(where + ": post_processor: id " + std::to_string(id) +
                             " is outside the vocabulary");
    }
  }
  return tok;
}

void BpeTokenizer::Merge(std::vector<int32_t>* ids) const {
  // Rank-ordered merging as in tokenizers' Word::merge_all: repeatedly apply the lowest-ranked
  // adjacent pair, leftmost first among equal ranks. A heap over a linked list of symbols keeps
  // long words (a page of CJK without spaces) O(n log n).
  const size_t n = ids->size();
  if (n < 2) return;
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> syms(n);
  for (size_t i = 0; i < n; ++i) {
    syms[i] = {(*ids)[i], static_cast<int32_t>(i) - 1,
               i + 1 < n ? static_cast<int32_t>(i + 1) : -1};
  }
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t left;
    int32_t right;
    int32_t merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  const auto consider = [&](int32_t pos) {
    if (pos < 0) return;
    const int32_t next = syms[pos].next;
    if (next < 0) return;
    auto it = merges_.find(PairKey(syms[pos].id, syms[next].id));
    if (it == merges_.end()) return;
    heap.push({it->second.rank, pos, syms[pos].id, syms[next].id, it->second.merged});
  };
  for (size_t i = 0; i + 1 < n; ++i) consider(static_cast<int32_t>(i));
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& left = syms[c.pos];
    // Stale entries: a merged symbol always gets a new (longer) token, so ids tell.
    if (left.id != c.left || left.next < 0 || syms[left.next].id != c.right) continue;
    const int32_t right = left.next;
    left.id = c.merged;
    left.next = syms[right].next;
    if (left.next >= 0) syms[left.next].prev = c.pos;
    syms[right].id = -1;
    consider(left.prev);
    consider(c.pos);
  }
  ids->clear();
  for (int32_t i = 0; i >= 0; i = syms[i].next) ids->push_back(syms[i].id);
}

Status BpeTokenizer::EncodeWord(std::string_view bytes, std::vector<int32_t>* out) const {
  if (ignore_merges_) {
    // Llama 3: a pre-token that is itself in the vocabulary is emitted whole.
    auto it = bytes_to_id_.find(std::string(bytes));
    if (it != bytes_to_id_.end()) {
      out->push_back(it->second);
      return Status::Ok();
    }
  }
  const bool cacheable = bytes.size() > 1 && bytes.size() <= kMaxCachedWordBytes;
  CacheShard* shard = nullptr;
  if (cacheable) {
    shard = &cache_[std::hash<std::string_view>()(bytes) % kCacheShards];
    std::lock_guard<std::mutex> lock(shard->mu);
    auto it = shard->words.find(std::string(bytes));
    if (it != shard->words.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return Status::Ok();
    }
  }
  std::vector<int32_t> ids;
  ids.reserve(bytes.size());
  for (unsigned char c : bytes) {
    int32_t id = byte_id_[c];
    if (id < 0) id = unk_id_;
    if (id < 0) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", c);
      return InvalidArgument(std::string("byte ") + hex +
                             " has no token in model.vocab and there is no unk_token");
    }
    ids.push_back(id);
  }
  Merge(&ids);
  out->insert(out->end(), ids.begin(), ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(shard->mu);
    if (shard->words.size() >= kCacheEntriesPerShard) shard->words.clear();
    shard->words.emplace(std::string(bytes), std::move(ids));
  }
  return Status::Ok();
}

Result<std::vector<int32_t>> BpeTokenizer::Encode(std::string_view text,
                                                  const EncodeOptions& options) const {
  const size_t bad = FindInvalidUtf8(text);
  if (bad != std::string_view::npos) {
    return InvalidArgument("tokenizer input is not valid UTF-8 at byte " + std::to_string(bad));
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (options.add_special_tokens) out.insert(out.end(), bos_ids_.begin(), bos_ids_.end());
  std::deque<std::string> arena;
  std::vector<std::string_view> pieces;
  for (const auto& segment : added_.Split(text, options.parse_special)) {
    if (segment.token != nullptr) {
      out.push_back(segment.token->id);
      continue;
    }
    std::string normalized;
    std::string_view view = segment.text;
    if (!normalizer_.is_identity()) {
      normalized = normalizer_.Apply(segment.text);
      view = normalized;
    }
    pieces.clear();
    arena.clear();
    pre_tokenizer_.Run(view, &arena, &pieces);
    for (std::string_view piece : pieces) ALLOT_RETURN_IF_ERROR(EncodeWord(piece, &out));
  }
  if (options.add_special_tokens) out.insert(out.end(), eos_ids_.begin(), eos_ids_.end());
  return out;
}

Result<std::string> BpeTokenizer::Decode(std::span<const int32_t> ids,
                                         const DecodeOptions& options) const {
  std::string bytes;
  bytes.reserve(ids.size() * 4);
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      return OutOfRange("token id " + std::to_string(id) + " is outside [0, " +
                        std::to_string(vocab_size()) + ")");
    }
    if (options.skip_special_tokens && id_kind_[id] == kAddedSpecial) continue;
    bytes += id_to_bytes_[id];
  }
  return ToValidUtf8(bytes);
}

Result<std::string> BpeTokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    return OutOfRange("token id " + std::to_string(id) + " is outside [0, " +
                      std::to_string(vocab_size()) + ")");
  }
  return id_to_bytes_[id];
}

std::optional<int32_t> BpeTokenizer::TokenId(std::string_view text) const {
  if (const AddedToken* t = added_.FindByContent(text)) return t->id;
  auto it = bytes_to_id_.find(std::string(text));
  if (it != bytes_to_id_.end()) return it->second;
  return std::nullopt;
}

bool BpeTokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < vocab_size() && id_kind_[id] == kAddedSpecial;
}

}  // namespace allot::models
