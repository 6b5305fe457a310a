#include "llm/openai_json.h"

#include <charconv>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace allot::llm {
namespace {

using json = nlohmann::json;

// Reads typed fields out of untrusted JSON, turning every mismatch into a DataLoss status that
// names the endpoint and the JSON path.
class Reader {
 public:
  explicit Reader(const std::string& where) : where_(where) {}

  Status Error(const std::string& path, const std::string& what) const {
    return DataLoss(where_ + ": " + path + ": " + what);
  }
  Status TypeError(const std::string& path, const char* expected, const json& got) const {
    return Error(path, std::string("expected ") + expected + ", got " + got.type_name());
  }

  // Optional fields: absent or null leaves `out` unchanged.
  Status Str(const json& obj, const char* key, const std::string& path, std::string* out) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Status::Ok();
    if (!it->is_string()) return TypeError(path + "." + key, "a string", *it);
    *out = it->get_ref<const std::string&>();
    return Status::Ok();
  }
  Status Int(const json& v, const std::string& path, int64_t* out) const {
    if (v.is_number_integer()) {
      *out = v.get<int64_t>();
      return Status::Ok();
    }
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
        *out = static_cast<int64_t>(d);
        return Status::Ok();
      }
    }
    return TypeError(path, "an integer", v);
  }
  Status IntField(const json& obj, const char* key, const std::string& path, int64_t* out) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Status::Ok();
    return Int(*it, path + "." + key, out);
  }
  Status Num(const json& v, const std::string& path, double* out) const {
    if (v.is_null()) {  // vLLM sends null for the logprob of an unscored (first) token
      *out = -std::numeric_limits<double>::infinity();
      return Status::Ok();
    }
    if (!v.is_number()) return TypeError(path, "a number", v);
    *out = v.get<double>();
    return Status::Ok();
  }
  Status IntArray(const json& obj, const char* key, const std::string& path,
                  std::vector<int64_t>* out) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Status::Ok();
    const std::string p = path + "." + key;
    if (!it->is_array()) return TypeError(p, "an array", *it);
    out->clear();
    out->reserve(it->size());
    for (size_t i = 0; i < it->size(); ++i) {
      int64_t v = 0;
      ALLOT_RETURN_IF_ERROR(Int((*it)[i], p + "[" + std::to_string(i) + "]", &v));
      out->push_back(v);
    }
    return Status::Ok();
  }

 private:
  const std::string& where_;
};

Status ParseBody(std::string_view body, const std::string& where, json* out) {
  *out = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (!out->is_discarded()) return Status::Ok();
  if (body.empty()) return DataLoss(where + ": empty response body");
  if (!IsValidUtf8(body)) return DataLoss(where + ": response body is not valid UTF-8");
  return DataLoss(where + ": response body is not valid JSON (truncated or malformed, " +
                  std::to_string(body.size()) + " bytes)");
}

// Completions logprobs: {"tokens": [...], "token_logprobs": [...], "top_logprobs": [{tok: lp}]}.
Status ParseCompletionLogprobs(const Reader& r, const json& lp, const std::string& path,
                               std::vector<TokenLogprob>* out) {
  if (lp.is_null()) return Status::Ok();
  if (!lp.is_object()) return r.TypeError(path, "an object", lp);
  auto tokens = lp.find("tokens");
  auto values = lp.find("token_logprobs");
  if (tokens == lp.end() || tokens->is_null()) return Status::Ok();
  if (!tokens->is_array()) return r.TypeError(path + ".tokens", "an array", *tokens);
  if (values == lp.end() || !values->is_array()) {
    return r.Error(path + ".token_logprobs", "missing or not an array");
  }
  if (values->size() != tokens->size()) {
    return r.Error(path, "tokens and token_logprobs differ in length (" +
                             std::to_string(tokens->size()) + " vs " +
                             std::to_string(values->size()) + ")");
  }
  auto tops = lp.find("top_logprobs");
  const bool has_tops = tops != lp.end() && tops->is_array();
  out->resize(tokens->size());
  for (size_t i = 0; i < tokens->size(); ++i) {
    const std::string pi = "[" + std::to_string(i) + "]";
    TokenLogprob& t = (*out)[i];
    if (!(*tokens)[i].is_string())
      return r.TypeError(path + ".tokens" + pi, "a string", (*tokens)[i]);
    t.token = (*tokens)[i].get<std::string>();
    t.token_id = TokenIdFromString(t.token);
    ALLOT_RETURN_IF_ERROR(r.Num((*values)[i], path + ".token_logprobs" + pi, &t.logprob));
    if (has_tops && i < tops->size() && (*tops)[i].is_object()) {
      for (const auto& [tok, v] : (*tops)[i].items()) {
        TopLogprob top;
        top.token = tok;
        top.token_id = TokenIdFromString(tok);
        ALLOT_RETURN_IF_ERROR(r.Num(v, path + ".top_logprobs" + pi + "." + tok, &top.logprob));
        t.top.push_back(std::move(top));
      }
    }
  }
  return Status::Ok();
}

// Chat logprobs: {"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]}.
Status ParseChatLogprobs(const Reader& r, const json& lp, const std::string& path,
                         std::vector<TokenLogprob>* out) {
  if (lp.is_null()) return Status::Ok();
  if (!lp.is_object()) return r.TypeError(path, "an object", lp);
  auto content = lp.find("content");
  if (content == lp.end() || content->is_null()) return Status::Ok();
  if (!content->is_array()) return r.TypeError(path + ".content", "an array", *content);
  out->resize(content->size());
  for (size_t i = 0; i < content->size(); ++i) {
    const std::string pi = path + ".content[" + std::to_string(i) + "]";
    const json& e = (*content)[i];
    if (!e.is_object()) return r.TypeError(pi, "an object", e);
    TokenLogprob& t = (*out)[i];
    ALLOT_RETURN_IF_ERROR(r.Str(e, "token", pi, &t.token));
    t.token_id = TokenIdFromString(t.token);
    auto v = e.find("logprob");
    if (v == e.end()) return r.Error(pi + ".logprob", "missing");
    ALLOT_RETURN_IF_ERROR(r.Num(*v, pi + ".logprob", &t.logprob));
    auto tops = e.find("top_logprobs");
    if (tops != e.end() && tops->is_array()) {
      for (size_t k = 0; k < tops->size(); ++k) {
        const std::string pk = pi + ".top_logprobs[" + std::to_string(k) + "]";
        const json& te = (*tops)[k];
        if (!te.is_object()) return r.TypeError(pk, "an object", te);
        TopLogprob top;
        ALLOT_RETURN_IF_ERROR(r.Str(te, "token", pk, &top.token));
        top.token_id = TokenIdFromString(top.token);
        auto tv = te.find("logprob");
        if (tv == te.end()) return r.Error(pk + ".logprob", "missing");
        ALLOT_RETURN_IF_ERROR(r.Num(*tv, pk + ".logprob", &top.logprob));
        t.top.push_back(std::move(top));
      }
    }
  }
  return Status::Ok();
}

// vLLM prompt_logprobs: [null, {"<id>": {"logprob": x, "rank": r, "decoded_token": s}}, ...].
// Each position keeps the entry of the actual prompt token when the ids are known.
Status ParsePromptLogprobs(const Reader& r, const json& arr, const std::string& path,
                           const std::vector<int64_t>& prompt_ids,
                           std::vector<std::optional<TopLogprob>>* out) {
  if (arr.is_null()) return Status::Ok();
  if (!arr.is_array()) return r.TypeError(path, "an array", arr);
  out->assign(arr.size(), std::nullopt);
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& pos = arr[i];
    if (pos.is_null()) continue;
    const std::string pi = path + "[" + std::to_string(i) + "]";
    if (!pos.is_object()) return r.TypeError(pi, "an object or null", pos);
    const json* chosen = nullptr;
    std::string chosen_key;
    for (const auto& [key, v] : pos.items()) {
      int64_t id = -1;
      auto [p, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || p != key.data() + key.size()) id = TokenIdFromString(key);
      const bool match = i < prompt_ids.size() && id == prompt_ids[i];
      if (chosen == nullptr || match) {
        chosen = &v;
        chosen_key = key;
        if (match) break;
      }
    }
    if (chosen == nullptr) continue;
    TopLogprob t;
    auto [p, ec] =
        std::from_chars(chosen_key.data(), chosen_key.data() + chosen_key.size(), t.token_id);
    if (ec != std::errc()) t.token_id = TokenIdFromString(chosen_key);
    if (chosen->is_object()) {
      auto lv = chosen->find("logprob");
      if (lv == chosen->end()) return r.Error(pi + "." + chosen_key + ".logprob", "missing");
      ALLOT_RETURN_IF_ERROR(r.Num(*lv, pi + "." + chosen_key + ".logprob", &t.logprob));
      ALLOT_RETURN_IF_ERROR(r.Str(*chosen, "decoded_token", pi + "." + chosen_key, &t.token));
    } else {
      ALLOT_RETURN_IF_ERROR(r.Num(*chosen, pi + "." + chosen_key, &t.logprob));
    }
    (*out)[i] = std::move(t);
  }
  return Status::Ok();
}

Status ParseUsage(const Reader& r, const json& root, Usage* usage, bool* has_usage) {
  auto it = root.find("usage");
  if (it == root.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return r.TypeError("usage", "an object", *it);
  ALLOT_RETURN_IF_ERROR(r.IntField(*it, "prompt_tokens", "usage", &usage->prompt_tokens));
  ALLOT_RETURN_IF_ERROR(r.IntField(*it, "completion_tokens", "usage", &usage->completion_tokens));
  if (usage->prompt_tokens < 0 || usage->completion_tokens < 0) {
    return r.Error("usage", "negative token count");
  }
  if (has_usage != nullptr) *has_usage = true;
  return Status::Ok();
}

Status ParseChoice(const Reader& r, const json& c, const std::string& path, bool chat,
                   Choice* out) {
  if (!c.is_object()) return r.TypeError(path, "an object", c);
  int64_t index = 0;
  ALLOT_RETURN_IF_ERROR(r.IntField(c, "index", path, &index));
  out->index = static_cast<int>(index);
  if (chat) {
    auto msg = c.find("message");
    if (msg == c.end() || !msg->is_object()) {
      return r.Error(path + ".message", "missing or not an object");
    }
    ALLOT_RETURN_IF_ERROR(r.Str(*msg, "content", path + ".message", &out->text));
    ALLOT_RETURN_IF_ERROR(r.Str(*msg, "role", path + ".message", &out->role));
  } else {
    auto text = c.find("text");
    if (text == c.end()) return r.Error(path + ".text", "missing");
    ALLOT_RETURN_IF_ERROR(r.Str(c, "text", path, &out->text));
  }
  ALLOT_RETURN_IF_ERROR(r.Str(c, "finish_reason", path, &out->finish_reason));
  auto stop = c.find("stop_reason");
  if (stop != c.end() && stop->is_string()) out->stop_reason = stop->get<std::string>();
  if (stop != c.end() && stop->is_number_integer())
    out->stop_reason = std::to_string(stop->get<int64_t>());
  ALLOT_RETURN_IF_ERROR(r.IntArray(c, "token_ids", path, &out->token_ids));
  ALLOT_RETURN_IF_ERROR(r.IntArray(c, "prompt_token_ids", path, &out->prompt_token_ids));
  auto lp = c.find("logprobs");
  if (lp != c.end()) {
    ALLOT_RETURN_IF_ERROR(
        chat ? ParseChatLogprobs(r, *lp, path + ".logprobs", &out->logprobs)
             : ParseCompletionLogprobs(r, *lp, path + ".logprobs", &out->logprobs));
  }
  auto plp = c.find("prompt_logprobs");
  if (plp != c.end()) {
    ALLOT_RETURN_IF_ERROR(ParsePromptLogprobs(r, *plp, path + ".prompt_logprobs",
                                              out->prompt_token_ids, &out->prompt_logprobs));
  }
  // Ids recovered from "token_id:N" logprob tokens when the server sent no token_ids.
  if (out->token_ids.empty() && !out->logprobs.empty()) {
    std::vector<int64_t> ids;
    for (const auto& t : out->logprobs) {
      if (t.token_id < 0) {
        ids.clear();
        break;
      }
      ids.push_back(t.token_id);
    }
    out->token_ids = std::move(ids);
  }
  // Fill per-token ids from token_ids when the logprob tokens were text.
  if (out->token_ids.size() == out->logprobs.size()) {
    for (size_t i = 0; i < out->logprobs.size(); ++i) {
      if (out->logprobs[i].token_id < 0) out->logprobs[i].token_id = out->token_ids[i];
    }
  }
  return Status::Ok();
}

void PutParams(const SamplingParams& p, bool chat, json& j) {
  if (p.n) j["n"] = *p.n;
  if (p.max_tokens) j["max_tokens"] = *p.max_tokens;
  if (p.temperature) j["temperature"] = *p.temperature;
  if (p.top_p) j["top_p"] = *p.top_p;
  if (p.top_k) j["top_k"] = *p.top_k;
  if (p.seed) j["seed"] = *p.seed;
  if (!p.stop.empty()) j["stop"] = p.stop;
  if (!p.stop_token_ids.empty()) j["stop_token_ids"] = p.stop_token_ids;
  if (p.logprobs) {
    if (chat) {
      j["logprobs"] = true;
      j["top_logprobs"] = *p.logprobs;
    } else {
      j["logprobs"] = *p.logprobs;
    }
  }
  if (p.prompt_logprobs) j["prompt_logprobs"] = *p.prompt_logprobs;
  if (p.echo) j["echo"] = *p.echo;
  if (p.return_token_ids) j["return_token_ids"] = *p.return_token_ids;
  if (p.return_tokens_as_token_ids) j["return_tokens_as_token_ids"] = *p.return_tokens_as_token_ids;
  if (p.include_stop_str_in_output) j["include_stop_str_in_output"] = *p.include_stop_str_in_output;
  if (p.skip_special_tokens) j["skip_special_tokens"] = *p.skip_special_tokens;
}

std::string Dump(const json& j) {
  // Replace invalid UTF-8 from callers instead of throwing.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

int64_t TokenIdFromString(std::string_view token) {
  constexpr std::string_view kPrefix = "token_id:";
  if (token.size() <= kPrefix.size() || token.substr(0, kPrefix.size()) != kPrefix) return -1;
  int64_t id = -1;
  const char* begin = token.data() + kPrefix.size();
  const char* end = token.data() + token.size();
  auto [p, ec] = std::from_chars(begin, end, id);
  if (ec != std::errc() || p != end || id < 0) return -1;
  return id;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

std::string EncodeCompletionRequest(const CompletionRequest& req, const std::string& model,
                                    bool stream) {
  json j;
  j["model"] = req.model.empty() ? model : req.model;
  if (!req.prompt_token_ids.empty()) {
    j["prompt"] = req.prompt_token_ids;
  } else {
    j["prompt"] = req.prompt;
  }
  PutParams(req.params, false, j);
  if (stream) {
    j["stream"] = true;
    j["stream_options"] = {{"include_usage", true}};
  }
  return Dump(j);
}

std::string EncodeChatRequest(const ChatRequest& req, const std::string& model, bool stream) {
  json j;
  j["model"] = req.model.empty() ? model : req.model;
  json msgs = json::array();
  for (const auto& m : req.messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  j["messages"] = std::move(msgs);
  PutParams(req.params, true, j);
  if (stream) {
    j["stream"] = true;
    j["stream_options"] = {{"include_usage", true}};
  }
  return Dump(j);
}

Result<Completion> ParseCompletion(std::string_view body, bool chat, const std::string& where) {
  json root;
  ALLOT_RETURN_IF_ERROR(ParseBody(body, where, &root));
  Reader r(where);
  if (!root.is_object()) return r.TypeError("$", "an object", root);
  Completion out;
  ALLOT_RETURN_IF_ERROR(r.Str(root, "id", "$", &out.id));
  ALLOT_RETURN_IF_ERROR(r.Str(root, "model", "$", &out.model));
  auto choices = root.find("choices");
  if (choices == root.end() || choices->is_null()) return r.Error("choices", "missing");
  if (!choices->is_array()) return r.TypeError("choices", "an array", *choices);
  if (choices->empty()) return r.Error("choices", "empty");
  ALLOT_RETURN_IF_ERROR(r.IntArray(root, "prompt_token_ids", "$", &out.prompt_token_ids));
  ALLOT_RETURN_IF_ERROR(r.Str(root, "adapter_sha256", "$", &out.adapter_sha256));
  out.choices.resize(choices->size());
  for (size_t i = 0; i < choices->size(); ++i) {
    ALLOT_RETURN_IF_ERROR(
        ParseChoice(r, (*choices)[i], "choices[" + std::to_string(i) + "]", chat, &out.choices[i]));
  }
  auto plp = root.find("prompt_logprobs");  // chat puts it at the top level
  if (plp != root.end() && !plp->is_null() && out.choices[0].prompt_logprobs.empty()) {
    ALLOT_RETURN_IF_ERROR(ParsePromptLogprobs(r, *plp, "prompt_logprobs", out.prompt_token_ids,
                                              &out.choices[0].prompt_logprobs));
  }
  ALLOT_RETURN_IF_ERROR(ParseUsage(r, root, &out.usage, nullptr));
  return out;
}

Status ParseStreamChunk(std::string_view data, bool chat, const std::string& where,
                        std::vector<StreamChunk>* chunks, Usage* usage, bool* has_usage) {
  json root;
  ALLOT_RETURN_IF_ERROR(ParseBody(data, where, &root));
  Reader r(where);
  if (!root.is_object()) return r.TypeError("$", "an object", root);
  if (auto err = root.find("error"); err != root.end() && !err->is_null()) {
    return Unavailable(where + ": stream error: " + Dump(*err).substr(0, 300));
  }
  auto choices = root.find("choices");
  if (choices != root.end() && !choices->is_null()) {
    if (!choices->is_array()) return r.TypeError("choices", "an array", *choices);
    for (size_t i = 0; i < choices->size(); ++i) {
      const json& c = (*choices)[i];
      const std::string path = "choices[" + std::to_string(i) + "]";
      if (!c.is_object()) return r.TypeError(path, "an object", c);
      StreamChunk chunk;
      int64_t index = 0;
      ALLOT_RETURN_IF_ERROR(r.IntField(c, "index", path, &index));
      chunk.index = static_cast<int>(index);
      if (chat) {
        auto delta = c.find("delta");
        if (delta != c.end() && delta->is_object()) {
          ALLOT_RETURN_IF_ERROR(r.Str(*delta, "content", path + ".delta", &chunk.text));
        }
      } else {
        ALLOT_RETURN_IF_ERROR(r.Str(c, "text", path, &chunk.text));
      }
      ALLOT_RETURN_IF_ERROR(r.Str(c, "finish_reason", path, &chunk.finish_reason));
      ALLOT_RETURN_IF_ERROR(r.IntArray(c, "token_ids", path, &chunk.token_ids));
      auto lp = c.find("logprobs");
      if (lp != c.end()) {
        ALLOT_RETURN_IF_ERROR(
            chat ? ParseChatLogprobs(r, *lp, path + ".logprobs", &chunk.logprobs)
                 : ParseCompletionLogprobs(r, *lp, path + ".logprobs", &chunk.logprobs));
      }
      chunks->push_back(std::move(chunk));
    }
  }
  return ParseUsage(r, root, usage, has_usage);
}

Result<std::vector<ModelInfo>> ParseModels(std::string_view body, const std::string& where) {
  json root;
  ALLOT_RETURN_IF_ERROR(ParseBody(body, where, &root));
  Reader r(where);
  if (!root.is_object()) return r.TypeError("$", "an object", root);
  auto data = root.find("data");
  if (data == root.end() || !data->is_array()) return r.Error("data", "missing or not an array");
  std::vector<ModelInfo> out;
  for (size_t i = 0; i < data->size(); ++i) {
    const std::string path = "data[" + std::to_string(i) + "]";
    const json& m = (*data)[i];
    if (!m.is_object()) return r.TypeError(path, "an object", m);
    ModelInfo info;
    ALLOT_RETURN_IF_ERROR(r.Str(m, "id", path, &info.id));
    if (info.id.empty()) return r.Error(path + ".id", "missing");
    ALLOT_RETURN_IF_ERROR(r.Str(m, "owned_by", path, &info.owned_by));
    ALLOT_RETURN_IF_ERROR(r.Str(m, "parent", path, &info.parent));
    ALLOT_RETURN_IF_ERROR(r.IntField(m, "max_model_len", path, &info.max_model_len));
    out.push_back(std::move(info));
  }
  return out;
}

Result<std::vector<int64_t>> ParseTokenize(std::string_view body, const std::string& where) {
  json root;
  ALLOT_RETURN_IF_ERROR(ParseBody(body, where, &root));
  Reader r(where);
  if (!root.is_object()) return r.TypeError("$", "an object", root);
  if (root.find("tokens") == root.end()) return r.Error("tokens", "missing");
  std::vector<int64_t> ids;
  ALLOT_RETURN_IF_ERROR(r.IntArray(root, "tokens", "$", &ids));
  return ids;
}

Result<std::string> ParseDetokenize(std::string_view body, const std::string& where) {
  json root;
  ALLOT_RETURN_IF_ERROR(ParseBody(body, where, &root));
  Reader r(where);
  if (!root.is_object()) return r.TypeError("$", "an object", root);
  auto it = root.find("prompt");
  if (it == root.end()) return r.Error("prompt", "missing");
  if (!it->is_string()) return r.TypeError("prompt", "a string", *it);
  return it->get<std::string>();
}

bool SseParser::Feed(std::string_view bytes, const std::function<bool(std::string_view)>& on_data) {
  buf_.append(bytes.data(), bytes.size());
  for (;;) {
    // An event ends at a blank line ("\n\n"; "\r\n" line ends are normalised on the fly).
    size_t end = std::string::npos;
    size_t sep_len = 0;
    for (size_t i = scanned_; i + 1 < buf_.size(); ++i) {
      if (buf_[i] == '\n' && buf_[i + 1] == '\n') {
        end = i, sep_len = 2;
        break;
      }
      if (buf_[i] == '\n' && buf_[i + 1] == '\r' && i + 2 < buf_.size() && buf_[i + 2] == '\n') {
        end = i, sep_len = 3;
        break;
      }
    }
    if (end == std::string::npos) {
      scanned_ = buf_.size() >= 2 ? buf_.size() - 2 : 0;  // "\n\r\n" may straddle reads
      if (buf_.size() > max_event_bytes) {
        overflowed_ = true;
        return false;
      }
      return true;
    }
    std::string data;
    size_t pos = 0;
    while (pos < end) {
      size_t nl = buf_.find('\n', pos);
      if (nl == std::string::npos || nl > end) nl = end;
      std::string_view line(buf_.data() + pos, nl - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.substr(0, 5) == "data:") {
        line.remove_prefix(5);
        if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        if (!data.empty()) data.push_back('\n');
        data.append(line);
      }
      pos = nl + 1;
    }
    buf_.erase(0, end + sep_len);
    scanned_ = 0;
    if (!data.empty() && !on_data(data)) return false;
  }
}

}  // namespace allot::llm
