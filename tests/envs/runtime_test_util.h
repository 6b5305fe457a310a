// Helpers for the episode-runtime and LLM-env tests: a scripted OpenAI-compatible endpoint
// with a byte-level fake tokenizer on /tokenize (id = 1000 + byte), so that a test can tell
// env-inserted ids from sampled ones, and completion bodies with ids and log-probs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "llm/endpoint_config.h"
#include "tests/llm/scripted_server.h"

namespace allot::envs::testing {

inline std::vector<int64_t> FakeTokenize(const std::string& text) {
  std::vector<int64_t> ids;
  for (unsigned char c : text) ids.push_back(1000 + c);
  return ids;
}

// /tokenize answers with FakeTokenize; everything else unscripted is a 404.
inline void ServeFakeTokenizer(llm::testing::ScriptedServer& server) {
  server.SetHandler([](const llm::testing::ServerRequest& r) {
    if (r.path == "/tokenize") {
      nlohmann::json j = nlohmann::json::parse(r.body);
      return llm::testing::Reply::Json(
          nlohmann::json{{"tokens", FakeTokenize(j.at("prompt").get<std::string>())}}.dump());
    }
    return llm::testing::Reply::Json(R"({"error":"not scripted"})", 404);
  });
}

// A /v1/completions reply sampling `ids` (log-prob -0.5 each) that decode to `text`.
inline std::string Sampled(const std::string& text, const std::vector<int64_t>& ids,
                           const std::string& finish = "stop", const std::string& stop = "") {
  nlohmann::json tokens = nlohmann::json::array(), lps = nlohmann::json::array();
  for (int64_t id : ids) {
    tokens.push_back("token_id:" + std::to_string(id));
    lps.push_back(-0.5);
  }
  nlohmann::json choice = {{"index", 0},
                           {"text", text},
                           {"finish_reason", finish},
                           {"token_ids", ids},
                           {"logprobs", {{"tokens", tokens}, {"token_logprobs", lps}}}};
  if (!stop.empty()) choice["stop_reason"] = stop;
  return nlohmann::json{{"id", "cmpl-1"},
                        {"object", "text_completion"},
                        {"model", "m"},
                        {"choices", {choice}},
                        {"usage", {{"prompt_tokens", 10}, {"completion_tokens", ids.size()}}}}
      .dump();
}

inline llm::EndpointConfig ScriptedEndpoint(const llm::testing::ScriptedServer& s,
                                            const std::string& name) {
  llm::EndpointConfig e;
  e.name = name;
  e.base_url = s.url();
  e.model = name + "-model";
  e.params_b = 1.0;
  e.usd_per_m_input = 1.0;
  e.usd_per_m_output = 2.0;
  e.limits.max_attempts = 1;  // a 500 fails at once
  e.limits.timeout_s = 5;
  e.limits.deadline_s = 10;
  e.limits.backoff_initial_s = 0.01;
  e.limits.backoff_max_s = 0.02;
  return e;
}

// The requests made to `path`, as parsed JSON bodies, in order.
inline std::vector<nlohmann::json> Bodies(const llm::testing::ScriptedServer& s,
                                          const std::string& path) {
  std::vector<nlohmann::json> out;
  for (const auto& r : s.requests()) {
    if (r.path == path) out.push_back(nlohmann::json::parse(r.body));
  }
  return out;
}

}  // namespace allot::envs::testing
