// One RSTKit tool (CogER App. D.2): its metadata for the tool-selection prompt and its
// implementation.
//
// Every call ends in a ToolResult, `status: success|error` plus output, so that the LLM reads
// an error message instead of the episode crashing.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace allot::tools {

struct ToolSpec {
  std::string name;         // what the LLM writes as "tool_name"
  std::string family;       // "qa", "arithmetic", "symbolic", "statistics", "code"
  std::string description;  // one or two sentences for the tool list
  nlohmann::json input_schema = nlohmann::json::object();  // tools/json_schema.h subset
  std::vector<nlohmann::json> examples;                    // example "parameters" objects
};

struct ToolResult {
  bool ok = false;
  nlohmann::json output;  // the tool's value; on error, a string saying what went wrong

  static ToolResult Success(nlohmann::json output) { return {true, std::move(output)}; }
  static ToolResult Error(std::string message) { return {false, std::move(message)}; }

  // {"status": "success"|"error", "output": ...}
  nlohmann::json ToJson() const;
  // The text the LLM sees, capped to `max_chars` (a note says when it was cut).
  std::string Render(size_t max_chars = 8192) const;
  // The same as plain text, for models trained on bare tool outputs (the tiny world): a string
  // output as is, an object's "value" (calculators) or "text" (pages), other JSON dumped;
  // an error as "error: <message>". Capped like Render().
  std::string RenderText(size_t max_chars = 8192) const;
};

// Tools are called from one episode at a time unless their class comment says otherwise.
class Tool {
 public:
  virtual ~Tool() = default;
  virtual const ToolSpec& spec() const = 0;
  // `params` already passed spec().input_schema. Expected failures return a non-OK Result.
  virtual Result<nlohmann::json> Run(const nlohmann::json& params) = 0;
  // What the registry calls. The default turns Run()'s error into an error result; a tool
  // whose failures carry structured output (the code sandbox) overrides it.
  virtual ToolResult Invoke(const nlohmann::json& params) {
    Result<nlohmann::json> r = Run(params);
    if (!r.ok()) return ToolResult::Error(r.status().message());
    return ToolResult::Success(std::move(r).value());
  }
};

// A tool made of a spec and a function; the common case.
class FunctionTool : public Tool {
 public:
  using Fn = std::function<Result<nlohmann::json>(const nlohmann::json& params)>;
  FunctionTool(ToolSpec spec, Fn fn) : spec_(std::move(spec)), fn_(std::move(fn)) {}
  const ToolSpec& spec() const override { return spec_; }
  Result<nlohmann::json> Run(const nlohmann::json& params) override { return fn_(params); }

 private:
  ToolSpec spec_;
  Fn fn_;
};

}  // namespace allot::tools
