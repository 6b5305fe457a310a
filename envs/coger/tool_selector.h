// Tool selection for CoTool (CogER App. B.2, "Tool Selection Instruction"): from the model's
// tool query to one RSTKit call. Either an LLM answers the selection prompt with strict JSON,
// or a rule-based selector maps the query to a tool without a model call (config `selector`).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "envs/coger/coger_config.h"
#include "envs/runtime/episode.h"
#include "envs/tools/tool_registry.h"

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
// anything else to `wiki_search` when a corpus is registered. Otherwise no tool matches.
class RuleToolSelector : public ToolSelector {
 public:
  explicit RuleToolSelector(const tools::ToolRegistry* registry) : registry_(registry) {}
  Result<tools::ToolCall> Select(runtime::Episode& episode, const std::string& query) override;

 private:
  const tools::ToolRegistry* registry_;
};

Result<std::unique_ptr<ToolSelector>> MakeToolSelector(const CoToolConfig& config,
                                                       const tools::ToolRegistry* registry,
                                                       const std::string& selection_prompt);

}  // namespace allot::envs::coger
