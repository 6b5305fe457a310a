#include "envs/coger/cotool.h"

#include <cctype>
#include <string_view>

#include "envs/runtime/prompt_template.h"

namespace allot::envs::coger {
namespace {

using runtime::Failure;
using runtime::FailureReason;
using runtime::SegmentRole;

bool EndsWith(std::string_view s, std::string_view suffix) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Statuses that end the episode whatever the tool step was doing.
bool Fatal(const Status& s) {
  return s.code() == StatusCode::kCancelled || s.code() == StatusCode::kDeadlineExceeded ||
         s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDataLoss ||
         s.code() == StatusCode::kResourceExhausted;
}

}  // namespace

std::string CoTool::ExtractQuery(const std::string& text) const {
  const size_t end = text.rfind(config_.end_query);
  if (end == std::string::npos) return "";
  const size_t begin = text.rfind(config_.begin_query, end);
  if (begin == std::string::npos) return "";
  std::string q =
      text.substr(begin + config_.begin_query.size(), end - begin - config_.begin_query.size());
  size_t b = 0, e = q.size();
  while (b < e && std::isspace(static_cast<unsigned char>(q[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(q[e - 1]))) --e;
  return q.substr(b, e - b);
}

Result<std::string> CoTool::ToolOutput(runtime::Episode& episode, const std::string& query,
                                       std::string* tool_name, Failure* fatal) const {
  Result<tools::ToolCall> call = selector_->Select(episode, query);
  if (!call.ok()) {
    if (Fatal(call.status())) return call.status();
    // The model reads why no tool ran (App. B.2: "status: error").
    return Shown(tools::ToolResult::Error("tool selection failed: " + call.status().message()));
  }
  *tool_name = call->tool_name;
  tools::ToolResult result;
  {
    std::lock_guard<std::mutex> lock(tool_mu_);
    result = registry_->Call(*call);
  }
  if (!result.ok && config_.fatal_tool_errors) {
    *fatal = {FailureReason::kToolError,
              "tool '" + call->tool_name + "' failed: " + result.Render(512)};
  }
  return Shown(result);
}

std::string CoTool::Shown(const tools::ToolResult& result) const {
  const auto max_chars = static_cast<size_t>(config_.max_tool_output_chars);
  return config_.tool_output == "text" ? result.RenderText(max_chars) : result.Render(max_chars);
}

CoToolResult CoTool::Run(runtime::Episode& episode, const std::string& question,
                         uint32_t first_step) const {
  CoToolResult out;
  runtime::Conversation conv(config_.model.endpoint);
  auto fail = [&](const Status& s, FailureReason otherwise) {
    out.failure = runtime::Episode::FailureFrom(s, otherwise);
    out.segments = conv.TakeSegments();
    return out;
  };
  Result<std::string> prompt = runtime::RenderTemplate(
      main_prompt_,
      {{"question", question}, {"max_tool_calls", std::to_string(episode.limits().max_tool_calls)}},
      "prompts.cotool");
  if (!prompt.ok()) return fail(prompt.status(), FailureReason::kEnvError);
  Status s = episode.AppendText(conv, SegmentRole::kPrompt, *prompt, first_step);
  if (!s.ok()) return fail(s, FailureReason::kEndpointError);

  for (int64_t turn = 1; turn <= config_.max_turns; ++turn) {
    const uint32_t step = first_step + static_cast<uint32_t>(turn - 1);
    out.turns = static_cast<int>(turn);
    // Algorithm 1, line 3: generate until EOS or <|end_tool_query|>.
    runtime::GenerateOptions o;
    o.role = SegmentRole::kOtherModel;
    o.max_tokens = config_.model.max_tokens;
    o.temperature = config_.model.temperature;
    o.stop = {config_.end_query};
    o.step = step;
    Result<runtime::Turn> t = episode.Generate(conv, o);
    if (!t.ok()) return fail(t.status(), FailureReason::kEndpointError);
    out.text += t->text;
    const bool query_end = EndsWith(t->text, config_.end_query) ||
                           (t->stop_reason == config_.end_query && t->finish_reason == "stop");
    if (!query_end) {
      if (t->truncated()) {
        return fail(ResourceExhausted("runaway generation: CoTool turn " + std::to_string(turn) +
                                      " reached its token budget without EOS or a tool query"),
                    FailureReason::kFormatError);
      }
      out.segments = conv.TakeSegments();  // EOS: finished (line 11-12)
      return out;
    }
    // Lines 6-8: extract the query and run a tool; over MAX_TOOL_CALLS the call is not run.
    // A server that leaves the stop string out of the text still reports it as stop_reason.
    std::string seen = t->text;
    if (seen.find(config_.end_query) == std::string::npos) seen += config_.end_query;
    const std::string query = ExtractQuery(seen);
    out.queries.push_back(query);
    out.tools.emplace_back();
    std::string result_text;
    if (query.empty()) {
      result_text = "status: error. The tool query was malformed: write " + config_.begin_query +
                    " your request " + config_.end_query + ".";
    } else if (Status call = episode.BeginToolCall(); !call.ok()) {
      if (call.code() != StatusCode::kResourceExhausted) {
        return fail(call, FailureReason::kEnvError);
      }
      result_text = "Tool call limit reached (" + std::to_string(episode.limits().max_tool_calls) +
                    " calls): no more tools can be used. Continue reasoning without tools, or "
                    "summarize what you have and give the final answer.";
    } else {
      Failure fatal;
      Result<std::string> output = ToolOutput(episode, query, &out.tools.back(), &fatal);
      if (!output.ok()) return fail(output.status(), FailureReason::kEndpointError);
      if (fatal.failed()) {
        out.failure = fatal;
        out.segments = conv.TakeSegments();
        return out;
      }
      // Lines 9-15: reason-in-tool over the output (App. B.2 task instruction).
      Result<std::string> reason = runtime::RenderTemplate(reason_prompt_,
                                                           {{"question", question},
                                                            {"tool_query", query},
                                                            {"prev_reasoning", out.text},
                                                            {"tool_output", *output}},
                                                           "prompts.reason_in_tool");
      if (!reason.ok()) return fail(reason.status(), FailureReason::kEnvError);
      runtime::GenerateOptions ro;
      ro.role = SegmentRole::kOtherModel;
      ro.max_tokens = config_.model.max_tokens;
      ro.temperature = config_.model.temperature;
      ro.step = step;
      Result<runtime::Turn> r = episode.CompleteText(config_.model.endpoint, *reason, ro);
      if (!r.ok()) return fail(r.status(), FailureReason::kEndpointError);
      result_text = r->text;
    }
    // Lines 18-19: insert the result between the markers and continue.
    const std::string inserted =
        "\n" + config_.begin_result + " " + result_text + " " + config_.end_result + "\n";
    out.text += inserted;
    s = episode.AppendText(conv, SegmentRole::kTool, inserted, step, "tool");
    if (!s.ok()) return fail(s, FailureReason::kEndpointError);
  }
  // MAX_TURN (App. C): stop and return the reasoning so far.
  out.hit_max_turns = true;
  out.segments = conv.TakeSegments();
  return out;
}

}  // namespace allot::envs::coger
