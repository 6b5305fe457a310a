#include "models/tokenizer/bpe_tokenizer.h"

#include <cstdio>
#include <functional>
#include <queue>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/json_field.h"
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
Status ParsePostProcessor(const json& node, const std::string& where, const std::string& field,
                          const std::function<std::optional<int32_t>(const std::string&)>& lookup,
                          std::vector<int32_t>* before, std::vector<int32_t>* after) {
  if (node.is_null()) return Status::Ok();
  if (!node.is_object()) {
    return InvalidArgument(where + ": " + field + ": expected an object, got " + node.dump());
  }
  ALLOT_ASSIGN_OR_RETURN(const std::string type,
                         OptionalField<std::string>(node, "type", "", where, field + ".type"));
  if (type == "ByteLevel") return Status::Ok();  // offsets only
  if (type == "Sequence") {
    static const json kEmptyArray = json::array();
    auto it = node.find("processors");
    const json& processors = it == node.end() ? kEmptyArray : *it;
    if (!processors.is_array()) {
      return InvalidArgument(where + ": " + field + ".processors: expected an array");
    }
    for (size_t i = 0; i < processors.size(); ++i) {
      ALLOT_RETURN_IF_ERROR(ParsePostProcessor(processors[i], where,
                                               field + ".processors[" + std::to_string(i) + "]",
                                               lookup, before, after));
    }
    return Status::Ok();
  }
  if (type == "TemplateProcessing") {
    static const json kEmptyArray = json::array();
    static const json kEmptyObject = json::object();
    auto it_special = node.find("special_tokens");
    auto it_single = node.find("single");
    const json& special = it_special == node.end() ? kEmptyObject : *it_special;
    const json& single = it_single == node.end() ? kEmptyArray : *it_single;
    if (!special.is_object()) {
      return InvalidArgument(where + ": " + field + ".special_tokens: expected an object");
    }
    if (!single.is_array()) {
      return InvalidArgument(where + ": " + field + ".single: expected an array");
    }
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const json& item = single[i];
      const std::string item_field = field + ".single[" + std::to_string(i) + "]";
      if (item.is_object() && item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      if (!item.is_object() || !item.contains("SpecialToken") ||
          !item["SpecialToken"].is_object()) {
        return InvalidArgument(where + ": " + item_field + ": unexpected item " + item.dump());
      }
      ALLOT_ASSIGN_OR_RETURN(const std::string name,
                             OptionalField<std::string>(item["SpecialToken"], "id", "", where,
                                                        item_field + ".SpecialToken.id"));
      std::vector<int32_t> ids;
      if (special.contains(name) && special[name].is_object() && special[name].contains("ids")) {
        const json& list = special[name]["ids"];
        const std::string ids_field = field + ".special_tokens[\"" + name + "\"].ids";
        if (!list.is_array()) {
          return InvalidArgument(where + ": " + ids_field + ": expected an array of token ids");
        }
        for (size_t k = 0; k < list.size(); ++k) {
          ALLOT_ASSIGN_OR_RETURN(
              const int32_t id,
              TokenIdField(list[k], where, ids_field + "[" + std::to_string(k) + "]"));
          ids.push_back(id);
        }
      } else if (auto id = lookup(name)) {
        ids = {*id};
      } else {
        return InvalidArgument(where + ": " + item_field + ": unknown special token \"" + name +
                               "\"");
      }
      auto& dst = seen_sequence ? *after : *before;
      dst.insert(dst.end(), ids.begin(), ids.end());
    }
    return Status::Ok();
  }
  return Unimplemented(where + ": " + field + ".type \"" + type +
                       "\" is not supported (supported: ByteLevel, TemplateProcessing, Sequence)");
}

}  // namespace

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromFile(const std::string& path) {
  std::string text;
  if (Status s = ReadFile(path, &text); !s.ok()) {
    return Status(s.code(), s.message() + " (tokenizer file)");
  }
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
  // Every field is read through a typed check; this catch is only the last line of defence
  // against a nlohmann exception from a path no check covers.
  try {
    return FromCheckedJson(root, where);
  } catch (const json::exception& e) {
    return InvalidArgument(where + ": malformed tokenizer.json: " + e.what());
  }
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromCheckedJson(const json& root,
                                                                    const std::string& where) {
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object()) {
    return InvalidArgument(where + ": expected a tokenizer.json object with a \"model\"");
  }
  if (JsonDeeperThan(root, 32)) {
    return InvalidArgument(where +
                           ": nests deeper than 32 levels (real tokenizer.json files "
                           "use fewer than 10)");
  }
  const json& model = root["model"];
  ALLOT_ASSIGN_OR_RETURN(const std::string type,
                         OptionalField<std::string>(model, "type", "BPE", where, "model.type"));
  if (type != "BPE") {
    return Unimplemented(where + ": model.type \"" + type + "\" is not supported (only BPE)");
  }
  ALLOT_ASSIGN_OR_RETURN(
      const bool byte_fallback,
      OptionalField<bool>(model, "byte_fallback", false, where, "model.byte_fallback"));
  if (byte_fallback) {
    return Unimplemented(where +
                         ": model.byte_fallback (SentencePiece-style BPE) is not supported");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    ALLOT_ASSIGN_OR_RETURN(
        const std::string value,
        OptionalField<std::string>(model, key, "", where, std::string("model.") + key));
    if (!value.empty()) return Unimplemented(where + ": model." + key + " is not supported");
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return InvalidArgument(where + ": model.vocab: expected an object of token -> id");
  }
  // Without copying: a ternary between obj[key] and a temporary would copy the member.
  static const json kNull;
  static const json kEmptyArray = json::array();
  const auto member = [](const json& obj, const char* key) -> const json& {
    auto it = obj.find(key);
    return it == obj.end() ? kNull : *it;
  };

  std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer());
  ALLOT_ASSIGN_OR_RETURN(tok->normalizer_, Normalizer::FromJson(member(root, "normalizer"), where));
  ALLOT_ASSIGN_OR_RETURN(tok->pre_tokenizer_,
                         PreTokenizer::FromJson(member(root, "pre_tokenizer"), where));
  const json& decoder = member(root, "decoder");
  if (!decoder.is_null() && !decoder.is_object()) {
    return InvalidArgument(where + ": decoder: expected an object, got " + decoder.dump());
  }
  ALLOT_ASSIGN_OR_RETURN(const std::string decoder_type,
                         OptionalField<std::string>(decoder, "type", "", where, "decoder.type"));
  const bool byte_level_decoder = decoder_type == "ByteLevel";
  if (!tok->pre_tokenizer_.byte_level() && !byte_level_decoder) {
    return Unimplemented(where +
                         ": only byte-level BPE is supported (no ByteLevel pre_tokenizer or "
                         "decoder found)");
  }
  if (!decoder.is_null() && !byte_level_decoder) {
    return Unimplemented(where + ": decoder.type \"" + decoder_type +
                         "\" is not supported (only ByteLevel)");
  }
  ALLOT_ASSIGN_OR_RETURN(tok->ignore_merges_, OptionalField<bool>(model, "ignore_merges", false,
                                                                  where, "model.ignore_merges"));

  // Vocabulary: the file spells tokens with the byte-level alphabet; keep raw bytes.
  std::unordered_map<std::string, int32_t> spelling_to_id;
  spelling_to_id.reserve(model["vocab"].size());
  int32_t max_id = -1;
  for (const auto& [spelling, id_node] : model["vocab"].items()) {
    ALLOT_ASSIGN_OR_RETURN(const int32_t id,
                           TokenIdField(id_node, where, "model.vocab[\"" + spelling + "\"]"));
    spelling_to_id.emplace(spelling, id);
    max_id = std::max(max_id, id);
  }
  const json& added =
      member(root, "added_tokens").is_null() ? kEmptyArray : member(root, "added_tokens");
  if (!added.is_array()) {
    return InvalidArgument(where + ": added_tokens: expected an array, got " + added.dump());
  }
  // Added tokens are matched by their content and decode to it verbatim.
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < added.size(); ++i) {
    const json& a = added[i];
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    if (!a.is_object() || !a.contains("id") || !a.contains("content") ||
        !a["content"].is_string()) {
      return InvalidArgument(where + ": " + field + ": expected {\"id\": n, \"content\": s}, got " +
                             a.dump());
    }
    AddedToken t;
    ALLOT_ASSIGN_OR_RETURN(t.id, TokenIdField(a["id"], where, field + ".id"));
    t.content = a["content"].get<std::string>();
    ALLOT_ASSIGN_OR_RETURN(t.special,
                           OptionalField<bool>(a, "special", false, where, field + ".special"));
    ALLOT_ASSIGN_OR_RETURN(t.lstrip,
                           OptionalField<bool>(a, "lstrip", false, where, field + ".lstrip"));
    ALLOT_ASSIGN_OR_RETURN(t.rstrip,
                           OptionalField<bool>(a, "rstrip", false, where, field + ".rstrip"));
    ALLOT_ASSIGN_OR_RETURN(
        t.single_word, OptionalField<bool>(a, "single_word", false, where, field + ".single_word"));
    ALLOT_RETURN_IF_ERROR(
        OptionalField<bool>(a, "normalized", false, where, field + ".normalized").status());
    if (FindInvalidUtf8(t.content) != std::string::npos || t.content.empty()) {
      return InvalidArgument(where + ": " + field + ".content: id " + std::to_string(t.id) +
                             " has empty or invalid UTF-8 content");
    }
    max_id = std::max(max_id, t.id);
    tokens.push_back(std::move(t));
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
  ALLOT_ASSIGN_OR_RETURN(
      const std::string unk_token,
      OptionalField<std::string>(model, "unk_token", "", where, "model.unk_token"));
  if (!unk_token.empty()) {
    auto it = spelling_to_id.find(unk_token);
    if (it != spelling_to_id.end()) tok->unk_id_ = it->second;
  }

  // Merges: rank = position in the list.
  const json& merges = member(model, "merges").is_null() ? kEmptyArray : member(model, "merges");
  if (!merges.is_array()) {
    return InvalidArgument(where + ": model.merges: expected an array, got " +
                           std::string(merges.type_name()));
  }
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

  for (const AddedToken& t : tokens) {
    tok->id_to_bytes_[t.id] = t.content;
    tok->id_kind_[t.id] = t.special ? kAddedSpecial : kAdded;
  }
  tok->added_ = AddedVocabulary(std::move(tokens));

  const auto lookup = [&](const std::string& s) -> std::optional<int32_t> {
    if (const AddedToken* t = tok->added_.FindByContent(s)) return t->id;
    auto it = spelling_to_id.find(s);
    if (it != spelling_to_id.end()) return it->second;
    return std::nullopt;
  };
  ALLOT_RETURN_IF_ERROR(ParsePostProcessor(member(root, "post_processor"), where, "post_processor",
                                           lookup, &tok->bos_ids_, &tok->eos_ids_));
  for (const auto* ids : {&tok->bos_ids_, &tok->eos_ids_}) {
    for (int32_t id : *ids) {
      if (id < 0 || id >= tok->vocab_size()) {
        return InvalidArgument(where + ": post_processor: id " + std::to_string(id) +
                               " is outside the vocabulary");
      }
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
