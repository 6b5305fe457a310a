// Tool selection for CoTool (CogER App. B.2, "Tool Selection Instruction"): from the model's
// tool query to one RSTKit call. Either an LLM answers the selection prompt with strict JSON,
// or a rule-based selector maps the query to a tool without a model call (config `selector`).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "envs/coger/coger_config.h"
#include "envs/runtime/episode.h"
#include "tools/tool_registry.h"

namespace allot::envs::coger {

class ToolSelector {
 public:
  virtual ~ToolSelector() = default;
  // The call for `query`; an error when no call can be made (the caller shows it to the model).
  virtual Result<tools::ToolCall> Select(runtime::Episode& episode, const std::string& query) = 0;
};

// The App. B.2 selection prompt answered by `model`, parsed as {"tool_name", "parameters"}.
class LlmToolSelector : public ToolSelector {
 public:
  LlmToolSelector(const tools::ToolRegistry* registry, LevelModel model, std::string prompt)
      : registry_(registry), model_(std::move(model)), prompt_(std::move(prompt)) {}
  Result<tools::ToolCall> Select(runtime::Episode& episode, const std::string& query) override;

 private:
  const tools::ToolRegistry* registry_;
  LevelModel model_;
  std::string prompt_;
};

// Rules: a query that is an arithmetic expression (optionally after "calculate", "compute",
// "evaluate" or "what is") goes to `calculate`; "solve ... = ..." to `solve` when registered;
// anything else (a leading "search", "search for" or "look up" dropped) is a knowledge query
// when a corpus is registered. With `search` = "titles" it becomes a `wiki_search` call (ids
// and titles); with "page" the selector searches first and the call is `wiki_get_page` on the
// best-ranked page, so the model reads the passage itself (the tiny world's fact questions
// are answered by a page's text). Otherwise no tool matches.
class RuleToolSelector : public ToolSelector {
 public:
  RuleToolSelector(const tools::ToolRegistry* registry, std::string search = "titles")
      : registry_(registry), search_(std::move(search)) {}
  Result<tools::ToolCall> Select(runtime::Episode& episode, const std::string& query) override;

 private:
  Result<tools::ToolCall> KnowledgeCall(const std::string& query) const;

  const tools::ToolRegistry* registry_;
  std::string search_;  // "titles" | "page"
};

Result<std::unique_ptr<ToolSelector>> MakeToolSelector(const CoToolConfig& config,
                                                       const tools::ToolRegistry* registry,
                                                       const std::string& selection_prompt);

}  // namespace allot::envs::coger
