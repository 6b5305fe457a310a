// CoTool, Cognitive Tool-Assisted Reasoning (CogER Sec. 4.4, Algorithm 1, App. B.2, App. C):
//
//   generate until <|end_tool_query|> or EOS; on a query: extract it, select a tool (strict JSON
//   selection prompt or rules), run it in RSTKit, run the reason-in-tool step over its output,
//   insert <|begin_tool_result|> r <|end_tool_result|>, continue.
//
// MAX_TOOL_CALLS (limits.max_tool_calls): a call over the limit is not run; the model reads a
// "limit reached" result instead. MAX_TURN (cotool.max_turns): CoTool stops and returns what it
// has. The conversation is kept in the CoTool model's tokens, never re-tokenized.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "envs/coger/coger_config.h"
#include "envs/coger/tool_selector.h"
#include "envs/runtime/episode.h"
#include "envs/runtime/trajectory.h"
#include "tools/tool_registry.h"

namespace allot::envs::coger {

struct CoToolResult {
  std::string text;                        // the reasoning chain with the inserted results
  std::vector<runtime::Segment> segments;  // in the CoTool model's token space
  std::vector<std::string> queries;        // extracted tool queries, in order
  std::vector<std::string> tools;          // tool run per query ("" when none ran)
  int turns = 0;
  bool hit_max_turns = false;
  runtime::Failure failure;  // set when the episode must end (endpoint, runaway, fatal tool)
};

class CoTool {
 public:
  // `main_prompt` and `reason_prompt` are the App. B.2 templates.
  CoTool(const CoToolConfig& config, const tools::ToolRegistry* registry, ToolSelector* selector,
         std::string main_prompt, std::string reason_prompt)
      : config_(config),
        registry_(registry),
        selector_(selector),
        main_prompt_(std::move(main_prompt)),
        reason_prompt_(std::move(reason_prompt)) {}

  // Algorithm 1 for one question. Segments are numbered from `first_step`.
  CoToolResult Run(runtime::Episode& episode, const std::string& question,
                   uint32_t first_step = 1) const;

  // The text between the last begin marker and the end marker of `text`; empty when absent.
  std::string ExtractQuery(const std::string& text) const;

 private:
  Result<std::string> ToolOutput(runtime::Episode& episode, const std::string& query,
                                 std::string* tool_name, runtime::Failure* fatal) const;
  // `result` as the reason-in-tool step sees it (config_.tool_output: json or text).
  std::string Shown(const tools::ToolResult& result) const;

  const CoToolConfig& config_;
  const tools::ToolRegistry* registry_;
  ToolSelector* selector_;
  std::string main_prompt_;
  std::string reason_prompt_;
  // RSTKit tools are not thread-safe; episodes of one env share them.
  mutable std::mutex tool_mu_;
};

}  // namespace allot::envs::coger
