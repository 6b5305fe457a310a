// A tiny model directory that `allot serve` can load (weights, byte-level tokenizer.json,
// ChatML tokenizer_config.json), PEFT adapters for it, and a loopback HTTP helper.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace allot::llm::serve::testing {

// Writes the model into a fresh temp directory and returns it.
std::string WriteServableTinyModel(const std::string& name, uint32_t seed = 7);
// The same model written into `dir` (made if missing), for a process that cannot remove its
// own temp directories (a death-test child killed by a signal); returns `dir`.
std::string WriteServableTinyModelIn(const std::string& dir, uint32_t seed = 7);

// Writes a LoRA adapter for the model in `model_dir` (q_proj and v_proj, rank 4). With
// `zero_b` the adapter is the identity (B = 0); otherwise B is random.
std::string WriteAdapter(const std::string& model_dir, const std::string& name, bool zero_b);

struct Reply {
  int status = 0;
  std::string body;
  httplib::Headers headers;
  nlohmann::json json;  // discarded when the body is not JSON
};

Reply Post(int port, const std::string& path, const std::string& body,
           const std::string& api_key = "");
Reply Post(int port, const std::string& path, const nlohmann::json& body);
Reply Get(int port, const std::string& path);

// The `data:` payloads of an SSE body, in order.
std::vector<std::string> SseEvents(const std::string& body);

}  // namespace allot::llm::serve::testing
