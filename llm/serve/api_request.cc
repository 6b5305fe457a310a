#include "llm/serve/api_request.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace allot::llm::serve {
namespace {

using nlohmann::json;

// Reads optional fields of one body, stopping at the first error.
class Fields {
 public:
  Fields(const json& body, ApiError* error) : body_(body), error_(error) {}

  bool ok() const { return ok_; }

  bool Fail(const std::string& key, const std::string& message) {
    if (ok_) *error_ = BadRequest(message, key);
    ok_ = false;
    return false;
  }

  // Absent or null leaves *out unchanged and returns false.
  const json* Get(const std::string& key) {
    auto it = body_.find(key);
    if (it == body_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  bool Bool(const std::string& key, bool* out) {
    const json* v = Get(key);
    if (v == nullptr || !ok_) return false;
    if (!v->is_boolean()) return Fail(key, "'" + key + "' must be a boolean");
    *out = v->get<bool>();
    return true;
  }

  bool Int(const std::string& key, int64_t* out, int64_t min, int64_t max) {
    const json* v = Get(key);
    if (v == nullptr || !ok_) return false;
    if (!v->is_number_integer()) {
      // 2.0 is accepted as 2, as Python clients may send floats.
      if (!v->is_number_float() || std::floor(v->get<double>()) != v->get<double>()) {
        return Fail(key, "'" + key + "' must be an integer");
      }
    }
    // The range is checked in the value's own type: as doubles, 2^63 would pass a check
    // against INT64_MAX (which rounds up to 2^63), and converting it back is undefined.
    bool in_range = false;
    int64_t value = 0;
    if (v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      in_range = max >= 0 && u <= static_cast<uint64_t>(max) &&
                 (min <= 0 || u >= static_cast<uint64_t>(min));
      value = in_range ? static_cast<int64_t>(u) : 0;
    } else if (v->is_number_integer()) {
      value = v->get<int64_t>();
      in_range = value >= min && value <= max;
    } else {
      const double d = v->get<double>();
      // max + 1.0 is exact where it matters: 2^63 for INT64_MAX, small integers otherwise.
      in_range = d >= static_cast<double>(min) && d < static_cast<double>(max) + 1.0;
      value = in_range ? static_cast<int64_t>(d) : 0;
    }
    if (!in_range) {
      return Fail(key, "'" + key + "' must be in [" + std::to_string(min) + ", " +
                           std::to_string(max) + "], got " + v->dump());
    }
    *out = value;
    return true;
  }

  bool Double(const std::string& key, double* out, double min, double max) {
    const json* v = Get(key);
    if (v == nullptr || !ok_) return false;
    if (!v->is_number()) return Fail(key, "'" + key + "' must be a number");
    const double d = v->get<double>();
    if (!(d >= min && d <= max)) {
      return Fail(key, "'" + key + "' must be in [" + std::to_string(min) + ", " +
                           std::to_string(max) + "], got " + v->dump());
    }
    *out = d;
    return true;
  }

  bool String(const std::string& key, std::string* out) {
    const json* v = Get(key);
    if (v == nullptr || !ok_) return false;
    if (!v->is_string()) return Fail(key, "'" + key + "' must be a string");
    *out = v->get<std::string>();
    return true;
  }

 private:
  const json& body_;
  ApiError* error_;
  bool ok_ = true;
};

bool IsTokenList(const json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const auto& x : v) {
    if (!x.is_number_integer()) return false;
  }
  return true;
}

bool TokenIds(const json& v, std::vector<int32_t>* out) {
  for (const auto& x : v) {
    const int64_t id = x.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) return false;
    out->push_back(static_cast<int32_t>(id));
  }
  return true;
}

bool ParsePrompt(const json& v, Fields& f, std::vector<Prompt>* out) {
  const std::string bad =
      "'prompt' must be a string, a list of strings, a list of token ids or a list of lists of "
      "token ids";
  if (v.is_string()) {
    out->push_back({false, v.get<std::string>(), {}});
    return true;
  }
  if (!v.is_array() || v.empty()) return f.Fail("prompt", bad);
  if (IsTokenList(v)) {
    std::vector<int32_t> ids;
    if (!TokenIds(v, &ids)) return f.Fail("prompt", "prompt token ids must be non-negative");
    out->push_back({true, {}, std::move(ids)});
    return true;
  }
  for (const auto& item : v) {
    if (item.is_string()) {
      out->push_back({false, item.get<std::string>(), {}});
    } else if (IsTokenList(item)) {
      std::vector<int32_t> ids;
      if (!TokenIds(item, &ids)) return f.Fail("prompt", "prompt token ids must be non-negative");
      out->push_back({true, {}, std::move(ids)});
    } else {
      return f.Fail("prompt", bad);
    }
  }
  return true;
}

bool ParseMessages(const json& v, Fields& f, std::vector<models::ChatMessage>* out) {
  if (!v.is_array() || v.empty()) return f.Fail("messages", "'messages' must be a non-empty list");
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const json& m = v[i];
    if (!m.is_object()) return f.Fail(at, at + " must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return f.Fail(at + ".role", at + ".role missing");
    models::ChatMessage msg;
    msg.role = role->get<std::string>();
    if (msg.role == "developer") msg.role = "system";
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" &&
        msg.role != "tool") {
      return f.Fail(at + ".role",
                    at + ".role must be system, user, assistant or tool, got '" + msg.role + "'");
    }
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      msg.content.clear();
    } else if (content->is_string()) {
      msg.content = content->get<std::string>();
    } else if (content->is_array()) {
      // [{"type": "text", "text": "..."}]: text parts only.
      for (const auto& part : *content) {
        auto type = part.is_object() ? part.find("type") : part.end();
        auto text = part.is_object() ? part.find("text") : part.end();
        if (type == part.end() || *type != "text" || text == part.end() || !text->is_string()) {
          return f.Fail(at + ".content", at + ".content: only text parts are supported");
        }
        msg.content += text->get<std::string>();
      }
    } else {
      return f.Fail(at + ".content", at + ".content must be a string or a list of text parts");
    }
    out->push_back(std::move(msg));
  }
  return true;
}

}  // namespace

bool ParseGenerateRequest(const json& body, bool chat, int64_t default_max_tokens,
                          GenerateRequest* out, ApiError* error) {
  if (!body.is_object()) {
    *error = BadRequest("the request body must be a JSON object");
    return false;
  }
  Fields f(body, error);
  out->chat = chat;
  f.String("model", &out->model);
  if (chat) {
    const json* m = f.Get("messages");
    if (m == nullptr) return f.Fail("messages", "'messages' is required");
    if (!ParseMessages(*m, f, &out->messages)) return false;
    f.Bool("add_generation_prompt", &out->add_generation_prompt);
  } else {
    const json* p = f.Get("prompt");
    if (p == nullptr) return f.Fail("prompt", "'prompt' is required");
    if (!ParsePrompt(*p, f, &out->prompts)) return false;
    f.Bool("echo", &out->echo);
  }
  models::SamplingParams& sp = out->params;
  constexpr int64_t kBig = std::numeric_limits<int32_t>::max();
  sp.max_tokens = default_max_tokens;
  out->max_tokens_set = f.Int("max_tokens", &sp.max_tokens, 1, kBig);
  if (chat && f.Int("max_completion_tokens", &sp.max_tokens, 1, kBig)) out->max_tokens_set = true;
  f.Int("n", &sp.n, 1, 128);
  f.Double("temperature", &sp.temperature, 0.0, 100.0);
  f.Double("top_p", &sp.top_p, 0.0, 1.0);
  if (f.ok() && sp.top_p <= 0.0) return f.Fail("top_p", "'top_p' must be in (0, 1], got 0");
  f.Int("top_k", &sp.top_k, -1, kBig);
  int64_t seed = 0;
  if (f.Int("seed", &seed, std::numeric_limits<int64_t>::min(),
            std::numeric_limits<int64_t>::max())) {
    sp.seed = static_cast<uint64_t>(seed);
  }
  if (const json* stop = f.Get("stop"); stop != nullptr && f.ok()) {
    if (stop->is_string()) {
      sp.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const auto& s : *stop) {
        if (!s.is_string()) return f.Fail("stop", "'stop' must be a string or a list of strings");
        sp.stop.push_back(s.get<std::string>());
      }
    } else {
      return f.Fail("stop", "'stop' must be a string or a list of strings");
    }
    for (const auto& s : sp.stop) {
      if (s.empty()) return f.Fail("stop", "stop strings must not be empty");
    }
  }
  if (const json* ids = f.Get("stop_token_ids"); ids != nullptr && f.ok()) {
    if (!ids->is_array() || (!ids->empty() && !IsTokenList(*ids)) ||
        !TokenIds(*ids, &sp.stop_token_ids)) {
      return f.Fail("stop_token_ids", "'stop_token_ids' must be a list of token ids");
    }
  }
  f.Bool("ignore_eos", &sp.ignore_eos);
  f.Bool("include_stop_str_in_output", &sp.include_stop_str_in_output);
  f.Bool("stream", &out->stream);
  if (const json* so = f.Get("stream_options"); so != nullptr && f.ok()) {
    if (!so->is_object()) return f.Fail("stream_options", "'stream_options' must be an object");
    Fields g(*so, error);
    g.Bool("include_usage", &out->include_usage);
    if (!g.ok()) return false;
  }
  if (chat) {
    bool want = false;
    f.Bool("logprobs", &want);
    int64_t top = 0;
    f.Int("top_logprobs", &top, 0, kMaxLogprobs);
    if (want) out->logprobs = static_cast<int>(top);
  } else {
    int64_t k = -1;
    if (f.Int("logprobs", &k, 0, kMaxLogprobs)) out->logprobs = static_cast<int>(k);
  }
  int64_t pk = -1;
  if (f.Int("prompt_logprobs", &pk, 0, kMaxLogprobs)) {
    if (chat) return f.Fail("prompt_logprobs", "'prompt_logprobs' is served on /v1/completions");
    if (out->stream) {
      return f.Fail("prompt_logprobs", "'prompt_logprobs' is not served with 'stream': true");
    }
    out->prompt_logprobs = static_cast<int>(pk);
  }
  f.Bool("return_token_ids", &out->return_token_ids);
  f.Bool("return_tokens_as_token_ids", &out->return_tokens_as_token_ids);
  if (!f.ok()) return false;
  if (Status s = sp.Validate(); !s.ok()) {
    *error = BadRequest(s.message());
    return false;
  }
  return true;
}

}  // namespace allot::llm::serve
