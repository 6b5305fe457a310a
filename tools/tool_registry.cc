#include "tools/tool_registry.h"

#include <exception>

#include "tools/json_schema.h"

namespace allot::tools {

using nlohmann::json;

json ToolResult::ToJson() const {
  return json{{"status", ok ? "success" : "error"}, {"output", output}};
}

namespace {

std::string Capped(std::string s, size_t max_chars) {
  if (s.size() > max_chars) {
    s.resize(max_chars);
    s += "... [truncated]";
  }
  return s;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string ToolResult::Render(size_t max_chars) const { return Capped(Dump(ToJson()), max_chars); }

std::string ToolResult::RenderText(size_t max_chars) const {
  auto text = [](const json& j) { return j.is_string() ? j.get<std::string>() : Dump(j); };
  std::string s;
  if (!ok) {
    s = "error: " + text(output);
  } else if (output.is_object() && output.contains("value")) {
    s = text(output["value"]);
  } else if (output.is_object() && output.contains("text")) {
    s = text(output["text"]);
  } else {
    s = text(output);
  }
  return Capped(std::move(s), max_chars);
}

namespace {

// Finds the first balanced {...} in `text`, honouring JSON strings, and checks nesting depth
// before the JSON parser sees it.
Result<std::string_view> FirstJsonObject(std::string_view text, int max_depth) {
  const size_t start = text.find('{');
  if (start == std::string_view::npos) return InvalidArgument("no JSON object found");
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) {
        return InvalidArgument("JSON nested deeper than " + std::to_string(max_depth));
      }
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return text.substr(start, i - start + 1);
      if (depth < 0) return InvalidArgument("unbalanced brackets in JSON");
    }
  }
  return InvalidArgument("unterminated JSON object");
}

}  // namespace

Result<ToolCall> ParseToolCall(std::string_view text, const ToolCallParseLimits& limits) {
  if (text.size() > limits.max_chars) {
    return InvalidArgument("tool call longer than " + std::to_string(limits.max_chars) +
                           " characters");
  }
  ALLOT_ASSIGN_OR_RETURN(std::string_view object, FirstJsonObject(text, limits.max_depth));
  json j = json::parse(object.begin(), object.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("tool call is not valid JSON");
  if (!j.is_object()) return InvalidArgument("tool call must be a JSON object");
  auto name = j.find("tool_name");
  if (name == j.end()) return InvalidArgument("tool call is missing 'tool_name'");
  if (!name->is_string() || name->get_ref<const std::string&>().empty()) {
    return InvalidArgument("'tool_name' must be a non-empty string");
  }
  ToolCall call;
  call.tool_name = name->get<std::string>();
  if (auto p = j.find("parameters"); p != j.end()) {
    if (!p->is_object()) return InvalidArgument("'parameters' must be a JSON object");
    call.parameters = std::move(*p);
  }
  for (const auto& [key, v] : j.items()) {
    if (key != "tool_name" && key != "parameters") {
      return InvalidArgument("tool call has an unexpected field '" + key + "'");
    }
  }
  return call;
}

Status ToolRegistry::Register(std::unique_ptr<Tool> tool) {
  if (tool == nullptr) return InvalidArgument("null tool");
  const ToolSpec& spec = tool->spec();
  if (spec.name.empty()) return InvalidArgument("a tool needs a name");
  if (by_name_.count(spec.name)) {
    return AlreadyExists("tool '" + spec.name + "' is already registered");
  }
  ALLOT_RETURN_IF_ERROR(CheckSchema(spec.input_schema, spec.name + ".input_schema"));
  for (size_t i = 0; i < spec.examples.size(); ++i) {
    Status s = ValidateJson(spec.input_schema, spec.examples[i]);
    if (!s.ok()) return s.Annotate(spec.name + " example " + std::to_string(i));
  }
  by_name_.emplace(spec.name, tool.get());
  order_.push_back(std::move(tool));
  return Status::Ok();
}

const Tool* ToolRegistry::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const ToolSpec*> ToolRegistry::Specs() const {
  std::vector<const ToolSpec*> out;
  for (const auto& t : order_) out.push_back(&t->spec());
  return out;
}

std::string ToolRegistry::RenderToolList() const {
  std::string out;
  for (const auto& t : order_) {
    const ToolSpec& s = t->spec();
    out += "- " + s.name + ": " + s.description + "\n";
    out += "  Parameters (JSON schema): " + s.input_schema.dump() + "\n";
    if (!s.examples.empty()) {
      out +=
          "  Example: " + json{{"tool_name", s.name}, {"parameters", s.examples.front()}}.dump() +
          "\n";
    }
  }
  return out;
}

ToolResult ToolRegistry::Call(const ToolCall& call) const {
  auto it = by_name_.find(call.tool_name);
  if (it == by_name_.end()) {
    std::string names;
    for (const auto& t : order_) names += (names.empty() ? "" : ", ") + t->spec().name;
    return ToolResult::Error("unknown tool '" + call.tool_name + "'; available: " + names);
  }
  Tool* tool = it->second;
  Status valid = ValidateJson(tool->spec().input_schema, call.parameters);
  if (!valid.ok()) return ToolResult::Error(valid.message());
  try {
    return tool->Invoke(call.parameters);
  } catch (const std::exception& e) {
    return ToolResult::Error(call.tool_name + " failed: " + e.what());
  }
}

ToolResult ToolRegistry::CallFromText(std::string_view llm_answer) const {
  Result<ToolCall> call = ParseToolCall(llm_answer);
  if (!call.ok()) return ToolResult::Error(call.status().message());
  return Call(*call);
}

}  // namespace allot::tools
