#include "envs/coger/tool_selector.h"

#include <algorithm>
#include <cctype>

#include "envs/runtime/prompt_template.h"

namespace allot::envs::coger {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Strips one leading "calculate"/"compute"/"evaluate"/"what is" and a trailing "?" or ".".
std::string StripVerb(const std::string& query) {
  std::string q = Trim(query);
  const std::string lower = Lower(q);
  for (const char* verb : {"calculate", "compute", "evaluate", "what is", "what's"}) {
    const std::string v = verb;
    if (lower.rfind(v, 0) == 0) {
      q = Trim(q.substr(v.size()));
      if (!q.empty() && q[0] == ':') q = Trim(q.substr(1));
      break;
    }
  }
  while (!q.empty() && (q.back() == '?' || q.back() == '.')) q.pop_back();
  return Trim(q);
}

// Drops one leading "search for", "search" or "look up" (the query verbs of CoTool's tool
// queries in the tiny world: "search Vemere founded").
std::string StripSearchVerb(const std::string& query) {
  const std::string q = Trim(query);
  const std::string lower = Lower(q);
  for (const char* verb : {"search for ", "search ", "look up "}) {
    const std::string v = verb;
    if (lower.rfind(v, 0) == 0 && q.size() > v.size()) return Trim(q.substr(v.size()));
  }
  return q;
}

bool IsArithmetic(const std::string& s) {
  if (s.empty()) return false;
  bool digit = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else if (std::string_view("+-*/^().,% ").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return digit;
}

}  // namespace

Result<tools::ToolCall> LlmToolSelector::Select(runtime::Episode& episode,
                                                const std::string& query) {
  ALLOT_ASSIGN_OR_RETURN(
      std::string prompt,
      runtime::RenderTemplate(prompt_,
                              {{"tool_list", registry_->RenderToolList()}, {"tool_query", query}},
                              "prompts.tool_selection"));
  runtime::GenerateOptions o;
  o.role = runtime::SegmentRole::kOtherModel;
  o.max_tokens = model_.max_tokens;
  o.temperature = model_.temperature;
  ALLOT_ASSIGN_OR_RETURN(runtime::Turn turn, episode.CompleteText(model_.endpoint, prompt, o));
  Result<tools::ToolCall> call = tools::ParseToolCall(turn.text);
  if (!call.ok()) return call.status().Annotate("tool selection answer");
  return call;
}

Result<tools::ToolCall> RuleToolSelector::Select(runtime::Episode&, const std::string& query) {
  const std::string expr = StripVerb(query);
  tools::ToolCall call;
  if (IsArithmetic(expr) && registry_->Find("calculate") != nullptr) {
    call.tool_name = "calculate";
    call.parameters = {{"expression", expr}};
    return call;
  }
  const std::string lower = Lower(expr);
  if (lower.rfind("solve", 0) == 0 && expr.find('=') != std::string::npos &&
      registry_->Find("solve") != nullptr) {
    call.tool_name = "solve";
    call.parameters = {{"equations", {Trim(expr.substr(5))}}};
    return call;
  }
  if (registry_->Find("wiki_search") != nullptr) return KnowledgeCall(StripSearchVerb(query));
  return NotFound("no tool rule matches the query");
}

Result<tools::ToolCall> RuleToolSelector::KnowledgeCall(const std::string& query) const {
  tools::ToolCall call;
  call.tool_name = "wiki_search";
  call.parameters = {{"query", query}};
  if (search_ == "titles") return call;
  // "page": search, then Page Content Retrieval on the top hit (CogER App. D.2). The QA tools
  // are thread-safe (the knowledge base holds its own lock).
  call.parameters["top_k"] = 1;
  const tools::ToolResult found = registry_->Call(call);
  if (!found.ok) return InvalidArgument("wiki_search: " + found.Render(512));
  const nlohmann::json& results =
      found.output.contains("results") ? found.output["results"] : nlohmann::json::array();
  if (!results.is_array() || results.empty() || !results[0].contains("id")) {
    return NotFound("no page matches '" + query + "'");
  }
  tools::ToolCall page;
  page.tool_name = "wiki_get_page";
  page.parameters = {{"page", results[0]["id"]}};
  return page;
}

Result<std::unique_ptr<ToolSelector>> MakeToolSelector(const CoToolConfig& config,
                                                       const tools::ToolRegistry* registry,
                                                       const std::string& selection_prompt) {
  if (config.selector == "rules") {
    if (config.rules_search == "page" && registry->Find("wiki_get_page") == nullptr) {
      return InvalidArgument(
          "coger.cotool.rules_search: 'page' needs the QA tools (tools.knowledge_base.corpus)");
    }
    return std::unique_ptr<ToolSelector>(new RuleToolSelector(registry, config.rules_search));
  }
  if (config.selector == "llm") {
    return std::unique_ptr<ToolSelector>(
        new LlmToolSelector(registry, config.selector_model, selection_prompt));
  }
  return InvalidArgument("coger.cotool.selector: unknown '" + config.selector + "'");
}

}  // namespace allot::envs::coger
