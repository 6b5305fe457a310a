// Per-episode limits of the runtime: turns, tool calls, tokens and a deadline.
#pragma once

#include <cstdint>

#include "core/config/schema.h"

namespace allot::envs::runtime {

struct EpisodeLimits {
  int64_t max_turns = 16;            // generation calls of the episode (CogER Alg. 1: MAX_TURN)
  int64_t max_tool_calls = 8;        // CogER Alg. 1: MAX_TOOL_CALLS
  int64_t max_total_tokens = 65536;  // prompt + sampled ids of all conversations
  int64_t max_turn_tokens = 4096;    // default generation budget of one turn
  double deadline_s = 0.0;           // wall time of the episode; 0 = the host's only

  void Describe(config::Visitor& v) {
    v.Field("max_turns", max_turns, {.doc = "generation calls per episode", .min = 1});
    v.Field("max_tool_calls", max_tool_calls, {.doc = "tool calls per episode", .min = 0});
    v.Field("max_total_tokens", max_total_tokens,
            {.doc = "context + sampled tokens over all calls of an episode", .min = 1});
    v.Field("max_turn_tokens", max_turn_tokens,
            {.doc = "default max_tokens of one generation call", .min = 1});
    v.Field("deadline_s", deadline_s,
            {.doc = "episode wall-time limit in seconds (0: only the host's)", .min = 0.0});
  }
};

}  // namespace allot::envs::runtime
