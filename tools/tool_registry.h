// The RSTKit tool registry (CogER App. D.2, "Dynamic Tool Registration and Invocation"): tools
// register their metadata once; the registry renders the tool list for the Tool Selection
// Instruction (CogER App. B.2), parses the JSON call the LLM answers with, checks its
// parameters against the tool's schema and runs it.
//
// Not thread-safe for registration; Call() is as thread-safe as the tools it runs.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tools/tool.h"

namespace allot::tools {

// {"tool_name": "...", "parameters": {...}}
struct ToolCall {
  std::string tool_name;
  nlohmann::json parameters = nlohmann::json::object();
};

struct ToolCallParseLimits {
  size_t max_chars = 65536;
  int max_depth = 32;
};

// Parses an LLM's answer to the tool-selection prompt. Tolerates surrounding text and
// ```json fences: the first balanced {...} object is taken. Errors say what is wrong
// ("no JSON object found", "missing 'tool_name'", "'parameters' must be an object").
Result<ToolCall> ParseToolCall(std::string_view text, const ToolCallParseLimits& limits = {});

class ToolRegistry {
 public:
  ToolRegistry() = default;
  ToolRegistry(const ToolRegistry&) = delete;
  ToolRegistry& operator=(const ToolRegistry&) = delete;

  // Fails on a duplicate name or a schema outside the supported subset.
  Status Register(std::unique_ptr<Tool> tool);

  const Tool* Find(std::string_view name) const;
  std::vector<const ToolSpec*> Specs() const;  // in registration order
  size_t size() const { return order_.size(); }

  // The {TOOL_LIST} block of the tool-selection prompt: one entry per tool with its name,
  // description, parameter schema and an example call.
  std::string RenderToolList() const;

  // Validates and runs; never throws. Unknown tools, schema violations, tool errors and
  // exceptions escaping a tool all become error results.
  ToolResult Call(const ToolCall& call) const;
  // ParseToolCall + Call.
  ToolResult CallFromText(std::string_view llm_answer) const;

 private:
  std::vector<std::unique_ptr<Tool>> order_;
  std::map<std::string, Tool*, std::less<>> by_name_;
};

}  // namespace allot::tools
