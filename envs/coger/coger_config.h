// Configuration of the CogER env (CogER Sec. 4.2-4.4, Algorithm 1, App. B).
//
// The env_config a worker receives is this struct as YAML: the endpoint pool, the reward terms,
// RSTKit, the limits and the prompt texts travel with it, so that a worker needs no files.
#pragma once

#include <string>
#include <vector>

#include "core/config/schema.h"
#include "envs/runtime/limits.h"
#include "llm/endpoint_config.h"
#include "rewards/composed_reward.h"
#include "tools/rstkit.h"

namespace allot::envs::coger {

// Prompt templates ({{name}} placeholders). Empty text = read `dir`/<name>.txt.
struct CogerPrompts {
  std::string dir = "configs/prompts/coger";
  std::string router;          // App. B.1: {{question}}
  std::string l1_direct;       // the L_min oracle's L1 (No_Think): {{question}}
  std::string l2_cot;          // Sec. 4.2 L2 (Think): {{question}}
  std::string l3_reasoning;    // Sec. 4.2 L3 (Extend): {{question}}
  std::string cotool;          // App. B.2 main instruction: {{question}}, {{max_tool_calls}}
  std::string reason_in_tool;  // App. B.2 task instruction: {{question}}, {{tool_query}},
                               // {{prev_reasoning}}, {{tool_output}}
  std::string tool_selection;  // App. B.2 tool selection: {{tool_list}}, {{tool_query}}

  void Describe(config::Visitor& v) {
    v.Field("dir", dir, {.doc = "folder of the <name>.txt templates used when a text is empty"});
    v.Field("router", router, {.doc = "router prompt (CogER App. B.1)"});
    v.Field("l1_direct", l1_direct, {.doc = "direct-answer prompt of the L_min oracle at L1"});
    v.Field("l2_cot", l2_cot, {.doc = "L2 chain-of-thought prompt (Sec. 4.2)"});
    v.Field("l3_reasoning", l3_reasoning, {.doc = "L3 extended reasoning prompt (Sec. 4.2)"});
    v.Field("cotool", cotool, {.doc = "CoTool main instruction (App. B.2)"});
    v.Field("reason_in_tool", reason_in_tool, {.doc = "CoTool task instruction (App. B.2)"});
    v.Field("tool_selection", tool_selection, {.doc = "tool selection instruction (App. B.2)"});
  }
};

// One level's model call (Sec. 4.2).
struct LevelModel {
  std::string endpoint;
  int64_t max_tokens = 0;  // 0 = limits.max_turn_tokens
  double temperature = 0.0;

  void Describe(config::Visitor& v) {
    v.Field("endpoint", endpoint, {.doc = "endpoint name from the pool"});
    v.Field("max_tokens", max_tokens,
            {.doc = "generation budget (0: limits.max_turn_tokens)", .min = 0});
    v.Field("temperature", temperature, {.doc = "sampling temperature", .min = 0.0, .max = 10.0});
  }
};

// CoTool (Sec. 4.4, Algorithm 1).
struct CoToolConfig {
  LevelModel model{"large", 0, 0.0};
  int64_t max_turns = 10;        // MAX_TURN (App. C); MAX_TOOL_CALLS is limits'
  std::string selector = "llm";  // tool selection: the App. B.2 prompt, or rules
  LevelModel selector_model{"large", 512, 0.0};
  // Rules selector: what a knowledge query returns. titles: wiki_search's ids and titles;
  // page: the text of the best-matching page (search, then Page Content Retrieval, App. D.2).
  std::string rules_search = "titles";
  std::string begin_query = "<|begin_tool_query|>";
  std::string end_query = "<|end_tool_query|>";
  std::string begin_result = "<|begin_tool_result|>";
  std::string end_result = "<|end_tool_result|>";
  int64_t max_tool_output_chars = 4096;
  // How the reason-in-tool step sees a tool's output: json, App. B.2's {"status", "output"}
  // object; text, the bare value (a calculator's number, a page's text), as the tiny world's
  // models were trained to read it.
  std::string tool_output = "json";
  bool fatal_tool_errors = false;  // false: the model reads the error (App. B.2)

  void Describe(config::Visitor& v) {
    v.Field("model", model, {.doc = "the reasoning model that runs CoTool"});
    v.Field("max_turns", max_turns,
            {.doc = "MAX_TURN: deliberate -> tool -> integrate cycles before CoTool stops and "
                    "returns what it has",
             .min = 1});
    v.Field("selector", selector,
            {.doc = "tool selection: the strict-JSON selection prompt, or rule-based",
             .choices = {"llm", "rules"}});
    v.Field("selector_model", selector_model, {.doc = "model answering the selection prompt"});
    v.Field("rules_search", rules_search,
            {.doc = "selector rules: a knowledge query returns the matching titles "
                    "(wiki_search) or the best-matching page's text (wiki_get_page on the top "
                    "hit)",
             .choices = {"titles", "page"}});
    v.Field("begin_query", begin_query, {.doc = "tool query start marker (Algorithm 1)"});
    v.Field("end_query", end_query, {.doc = "tool query end marker; generation stops on it"});
    v.Field("begin_result", begin_result, {.doc = "tool result start marker"});
    v.Field("end_result", end_result, {.doc = "tool result end marker"});
    v.Field("max_tool_output_chars", max_tool_output_chars,
            {.doc = "tool output shown to the reason-in-tool step", .min = 64});
    v.Field("tool_output", tool_output,
            {.doc = "tool output as the reason-in-tool step sees it: json ({status, output}, "
                    "App. B.2) or text (the bare value or page text)",
             .choices = {"json", "text"}});
    v.Field("fatal_tool_errors", fatal_tool_errors,
            {.doc = "end the episode on a tool error instead of showing it to the model"});
  }
};

// L_min: the lowest level whose answer is correct (notes.md), computed once per query.
struct LminConfig {
  // solver: run L1..L4 on the query (cached on disk); dataset: the item's "min_level";
  // none: no oracle, and a hierarchy term in the rewards is then a configuration error.
  std::string oracle = "solver";
  std::string cache_path;  // JSON lines; empty = in memory only
  std::string l1_endpoint = "router";

  void Describe(config::Visitor& v) {
    v.Field("oracle", oracle,
            {.doc = "where L_min comes from", .choices = {"solver", "dataset", "none"}});
    v.Field("cache_path", cache_path,
            {.doc = "file caching each query's per-level outcomes (empty: memory only)"});
    v.Field("l1_endpoint", l1_endpoint,
            {.doc = "the model answering directly at L1 for the solver (the router's base)"});
  }
};

// The recipe's env.coger section; CogerEnvConfig adds the other sections the env reads.
struct CogerSection {
  std::string router_endpoint = "router";  // the policy (GRPO + LoRA)
  int64_t router_max_tokens = 512;
  LevelModel l2{"medium", 0, 0.0};  // Think: medium model, chain of thought
  LevelModel l3{"large", 0, 0.0};   // Extend: large reasoning model
  CoToolConfig cotool;              // Delegate
  LminConfig lmin;
  std::string answer_format = "boxed";
  CogerPrompts prompts;
  // MAX_TOOL_CALLS is limits.max_tool_calls; limits.max_turns counts every model call.
  runtime::EpisodeLimits limits{.max_turns = 64, .max_tool_calls = 5};

  void Describe(config::Visitor& v) {
    v.Field("router_endpoint", router_endpoint, {.doc = "the router policy's endpoint"});
    v.Field("router_max_tokens", router_max_tokens,
            {.doc = "router generation budget unless the request sets one", .min = 1});
    v.Field("l2", l2, {.doc = "L2 (Think): medium model with chain of thought"});
    v.Field("l3", l3, {.doc = "L3 (Extend): large reasoning model"});
    v.Field("cotool", cotool, {.doc = "L4 (Delegate): CoTool"});
    v.Field("lmin", lmin, {.doc = "the hierarchy reward's L_min oracle"});
    v.Field("answer_format", answer_format,
            {.doc = "dataset answer format unless the item names one",
             .choices = {"boxed", "number", "choice", "yesno"}});
    v.Field("prompts", prompts);
    v.Field("limits", limits,
            {.doc = "episode limits: model calls, MAX_TOOL_CALLS, tokens, wall time"});
  }
};

// What the env is built from: the recipe's sections that concern it.
struct CogerEnvConfig {
  CogerSection coger;
  std::vector<llm::EndpointConfig> endpoints;
  llm::GpuProfile gpu;
  rewards::RewardConfig rewards;
  tools::ToolsConfig tools;

  void Describe(config::Visitor& v) {
    v.Field("coger", coger);
    v.Field("endpoints", endpoints, {.doc = "the endpoint pool"});
    v.Field("gpu", gpu, {.doc = "GPU profile for energy estimates"});
    v.Field("rewards", rewards);
    v.Field("tools", tools, {.doc = "RSTKit"});
  }
};

}  // namespace allot::envs::coger
