#include "llm/serve/api_response.h"

#include <algorithm>

namespace allot::llm::serve {
namespace {

using nlohmann::json;

std::string RawToken(const models::Tokenizer& tokenizer, int32_t id) {
  auto bytes = tokenizer.TokenBytes(id);
  return bytes.ok() ? *bytes : std::string();
}

json Bytes(const std::string& raw) {
  json out = json::array();
  for (unsigned char c : raw) out.push_back(static_cast<int>(c));
  return out;
}

}  // namespace

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string TokenString(const models::Tokenizer& tokenizer, int32_t id, bool as_ids) {
  if (as_ids) return "token_id:" + std::to_string(id);
  return RawToken(tokenizer, id);
}

json CompletionLogprobs(const models::Tokenizer& tokenizer, const models::GeneratedSequence& seq,
                        size_t from, size_t to, const std::vector<std::vector<TopToken>>* top,
                        bool as_ids, size_t text_offset) {
  json tokens = json::array(), values = json::array(), tops = json::array(),
       offsets = json::array();
  for (size_t i = from; i < to && i < seq.token_ids.size(); ++i) {
    const std::string tok = TokenString(tokenizer, seq.token_ids[i], as_ids);
    tokens.push_back(tok);
    values.push_back(seq.logprobs[i]);
    offsets.push_back(text_offset);
    text_offset += RawToken(tokenizer, seq.token_ids[i]).size();
    if (top != nullptr && i < top->size()) {
      json alt = json::object();
      // The sampled token is always listed, as in OpenAI's responses.
      alt[tok] = seq.logprobs[i];
      for (const auto& t : (*top)[i]) {
        const std::string s = TokenString(tokenizer, t.id, as_ids);
        if (!alt.contains(s)) alt[s] = t.logprob;
      }
      tops.push_back(std::move(alt));
    } else {
      tops.push_back(nullptr);
    }
  }
  return {{"tokens", tokens},
          {"token_logprobs", values},
          {"top_logprobs", top != nullptr ? tops : json()},
          {"text_offset", offsets}};
}

json ChatLogprobs(const models::Tokenizer& tokenizer, const models::GeneratedSequence& seq,
                  size_t from, size_t to, const std::vector<std::vector<TopToken>>* top,
                  bool as_ids) {
  json content = json::array();
  for (size_t i = from; i < to && i < seq.token_ids.size(); ++i) {
    json e = {{"token", TokenString(tokenizer, seq.token_ids[i], as_ids)},
              {"logprob", seq.logprobs[i]},
              {"bytes", Bytes(RawToken(tokenizer, seq.token_ids[i]))}};
    json alts = json::array();
    if (top != nullptr && i < top->size()) {
      for (const auto& t : (*top)[i]) {
        alts.push_back({{"token", TokenString(tokenizer, t.id, as_ids)},
                        {"logprob", t.logprob},
                        {"bytes", Bytes(RawToken(tokenizer, t.id))}});
      }
    }
    e["top_logprobs"] = std::move(alts);
    content.push_back(std::move(e));
  }
  return {{"content", content}};
}

json PromptLogprobsJson(const models::Tokenizer& tokenizer,
                        const std::vector<PromptTokenLogprob>& entries, bool as_ids) {
  json out = json::array({nullptr});
  for (const auto& e : entries) {
    json pos = json::object();
    pos[std::to_string(e.id)] = {{"logprob", e.logprob},
                                 {"rank", e.rank},
                                 {"decoded_token", TokenString(tokenizer, e.id, as_ids)}};
    for (size_t j = 0; j < e.top.size(); ++j) {
      const std::string key = std::to_string(e.top[j].id);
      if (pos.contains(key)) continue;
      pos[key] = {{"logprob", e.top[j].logprob},
                  {"rank", static_cast<int64_t>(j) + 1},
                  {"decoded_token", TokenString(tokenizer, e.top[j].id, as_ids)}};
    }
    out.push_back(std::move(pos));
  }
  return out;
}

json StopReason(const models::GeneratedSequence& seq, const models::SamplingParams& params) {
  if (seq.stop_string) return *seq.stop_string;
  if (seq.stop_token && std::find(params.stop_token_ids.begin(), params.stop_token_ids.end(),
                                  *seq.stop_token) != params.stop_token_ids.end()) {
    return *seq.stop_token;
  }
  return nullptr;
}

std::string StreamDetokenizer::Push(int32_t id) {
  ids_.push_back(id);
  auto decoded = tokenizer_->Decode(ids_);
  if (!decoded.ok()) return {};
  std::string text = std::move(*decoded);
  // A trailing U+FFFD may be a character still being completed by the next tokens.
  static const std::string kReplacement = "\xEF\xBF\xBD";
  while (text.size() >= 3 && text.compare(text.size() - 3, 3, kReplacement) == 0) {
    text.resize(text.size() - 3);
  }
  size_t safe = text.size() > hold_back_ ? text.size() - hold_back_ : 0;
  while (safe > 0 && safe < text.size() &&
         (static_cast<unsigned char>(text[safe]) & 0xC0) == 0x80) {
    --safe;
  }
  if (safe <= emitted_) return {};
  std::string delta = text.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  return delta;
}

std::string StreamDetokenizer::Finish(const std::string& final_text) {
  if (emitted_ >= final_text.size()) return {};
  std::string rest = final_text.substr(emitted_);
  emitted_ = final_text.size();
  return rest;
}

}  // namespace allot::llm::serve
