// POST /pooling with step pooling: a process reward model's P(+) at every step tag from one
// forward pass (Math-Shepherd, Wang et al. 2024; RLoT Sec. 3.2 uses it as the per-step reward).
//
// The request and reply follow vLLM's /pooling API for a reward model served with
// `pooling_type: STEP` (vLLM takes step_tag_id and returned_token_ids from the server's pooler
// config; allot serve, serving a generative model, takes them per request):
//
//   {"model": "tiny", "input": "question Step 1: ... ки\nStep 2: ... ки",
//    "step_tag": "ки" | "step_tag_id": 12902,
//    "returned_tokens": ["+", "-"] | "returned_token_ids": [648, 387]}
//   -> {"object": "list", "model", "data": [{"index": 0, "object": "pooling",
//                                            "data": [[p_plus, p_minus], ...]}], "usage"}
//
// `input` is a string, a list of token ids, or a list of either (one entry of `data` each).
// Each row of data[i].data is the softmax over just the returned tokens' logits at one tag,
// in the order of the tags. A tag that is several tokens long (the byte tokenizer's ки) is
// scored at its last token. Inputs longer than the model's context are refused (400), never
// cut: dropping the earliest steps is the client's decision (rewards/prm_reward.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "llm/serve/api_error.h"
#include "llm/serve/engine.h"

namespace allot::llm::serve {

// Fills `reply` (200) or `error`; false on error.
bool ScoreStepPooling(Engine& engine, const std::string& served_name, const nlohmann::json& body,
                      nlohmann::json* reply, ApiError* error);

}  // namespace allot::llm::serve
