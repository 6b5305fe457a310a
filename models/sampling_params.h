// Sampling parameters of a generation request: the OpenAI / vLLM fields and their validation.
//
// Plain C++ (no LibTorch) and header-only, so that request parsing (llm/serve/api_request.h)
// and its fuzz target build without the model code. The sampler that uses them is
// models/sampling.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::models {

// Field names and meanings follow the OpenAI / vLLM sampling parameters.
struct SamplingParams {
  double temperature = 1.0;  // 0 = greedy
  double top_p = 1.0;        // (0, 1]
  int64_t top_k = 0;         // 0 or -1 = off
  int64_t max_tokens = 16;
  int64_t n = 1;
  std::optional<uint64_t> seed;   // unset = nondeterministic
  std::vector<std::string> stop;  // stop strings (need a tokenizer)
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;

  // Messages name the field ("top_p must be in (0, 1], got 0").
  Status Validate() const {
    if (!(temperature >= 0.0) || !std::isfinite(temperature)) {
      return InvalidArgument("temperature must be >= 0, got " + std::to_string(temperature));
    }
    if (!(top_p > 0.0 && top_p <= 1.0)) {
      return InvalidArgument("top_p must be in (0, 1], got " + std::to_string(top_p));
    }
    if (top_k < -1) {
      return InvalidArgument("top_k must be -1, 0 or positive, got " + std::to_string(top_k));
    }
    if (max_tokens < 1) {
      return InvalidArgument("max_tokens must be at least 1, got " + std::to_string(max_tokens));
    }
    if (n < 1) return InvalidArgument("n must be at least 1, got " + std::to_string(n));
    for (const auto& s : stop) {
      if (s.empty()) return InvalidArgument("stop strings must not be empty");
    }
    return Status::Ok();
  }
};

}  // namespace allot::models
