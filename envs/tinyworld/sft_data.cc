#include "envs/tinyworld/sft_data.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "envs/datasets/example.h"
#include "envs/tinyworld/formats.h"

namespace allot::envs::tinyworld {
namespace {

std::string N(int64_t v) { return std::to_string(v); }

// The question as envs/datasets shows it to a model (options as "A) ..." lines).
std::string FullQuestion(const TaskItem& item) {
  datasets::Example ex;
  ex.question = item.question;
  ex.options = item.choices;
  return ex.PromptText();
}

bool UsesTool(const std::vector<SolutionStep>& steps) {
  return std::any_of(steps.begin(), steps.end(), [](const auto& s) { return s.uses_tool(); });
}

// The step lines of the first k steps (tool steps with their query and result), one per line.
std::string StepLines(const std::vector<SolutionStep>& steps, size_t k) {
  std::string out;
  for (size_t i = 0; i < k; ++i) {
    out += StepLine(static_cast<int>(i) + 1, steps[i].text) + "\n";
    if (steps[i].uses_tool()) {
      out += ToolQuery(steps[i].tool_query) + "\n" + ToolResult(steps[i].tool_result) + "\n";
    }
  }
  return out;
}

// "Reasoning so far:\n<lines>" without the final newline; empty for k = 0.
std::string SoFar(const std::vector<SolutionStep>& steps, size_t k) {
  if (k == 0) return "";
  std::string lines = StepLines(steps, k);
  lines.pop_back();
  return std::string(kSoFar) + "\n" + lines;
}

std::string SubtaskList(const std::vector<SolutionStep>& steps) {
  std::string out;
  for (size_t i = 0; i < steps.size(); ++i) {
    out +=
        SubtaskLine(static_cast<int>(i) + 1, steps[i].subtask) + (i + 1 < steps.size() ? "\n" : "");
  }
  return out;
}

std::string LowerFirst(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// Parses "a op b = c"; false for any other text.
bool ParseEquation(const std::string& text, int64_t* a, char* op, int64_t* b, int64_t* c) {
  long long x = 0, y = 0, z = 0;
  char o = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%lld %c %lld = %lld%n", &x, &o, &y, &z, &used) != 4) return false;
  if (static_cast<size_t>(used) != text.size()) return false;
  *a = x, *op = o, *b = y, *c = z;
  return true;
}

int64_t Apply(int64_t a, char op, int64_t b) {
  return op == '+' ? a + b : op == '-' ? a - b : a * b;
}

std::string Eq(int64_t a, char op, int64_t b, int64_t c) {
  return N(a) + " " + op + " " + N(b) + " = " + N(c);
}

// A copy of the step "a op b = c" with one mistake, or kNone (with `computes` telling whether
// the step is an equation at all).
struct Corruption {
  enum Kind { kNone, kCalculation, kModel } kind = kNone;
  bool computes = false;
  std::string text, reason;
};

Corruption Corrupt(const std::string& step, int64_t percent, SplitMix64& rng) {
  Corruption out;
  int64_t a = 0, b = 0, c = 0;
  char op = 0;
  out.computes = ParseEquation(step, &a, &op, &b, &c);
  if (!out.computes || !rng.Percent(percent)) return out;
  if (rng.Percent(50)) {
    // A calculation error: the right operation, a wrong result.
    int64_t wrong = c + (rng.Percent(50) ? 1 : -1) * rng.Range(1, 9);
    if (wrong < 0) wrong = c + rng.Range(1, 9);
    out.kind = Corruption::kCalculation;
    out.text = Eq(a, op, b, wrong);
    out.reason = N(a) + " " + op + " " + N(b) + " is " + N(c) + ", not " + N(wrong);
  } else {
    // A modeling error: the wrong operation, computed correctly.
    const char wrong_op = op == '*' ? '+' : (op == '+' ? '*' : '+');
    out.kind = Corruption::kModel;
    out.text = Eq(a, wrong_op, b, Apply(a, wrong_op, b));
    out.reason = std::string("the step should use ") + op + ", not " + wrong_op;
  }
  return out;
}

// RLoT Table 1: the seven scored lines for the newest of `k` steps. `calc_error` and
// `model_error` say how the newest step was corrupted (at most one is set).
std::string SelfEvaluation(size_t k, size_t n, bool computes, bool model_error, bool calc_error,
                           const std::string& reason) {
  const bool ok = !model_error && !calc_error;
  const size_t left = n - k;
  std::vector<std::string> lines = {
      SelfEvalLine("A1", model_error ? 1 : 3,
                   model_error ? reason : "the step does what the question needs"),
      SelfEvalLine("A2", 3, "the step is stated clearly"),
      computes
          ? SelfEvalLine("A3", calc_error ? 1 : 3, calc_error ? reason : "the arithmetic is right")
          : SelfEvalLine("A3", 0, "no arithmetic in this step"),
      // B1 True = the answer is still far (RLoT Table 1 as configs/prompts/rlot words it).
      SelfEvalLine("B1", left >= 2 ? 3 : (left == 1 ? 2 : 1),
                   left == 0 ? "nothing is left to do"
                             : (left == 1 ? "one step is left" : N(left) + " steps are left")),
      SelfEvalLine("B2", ok ? 1 : 3,
                   ok ? "no other method is needed" : "the step should be redone"),
      SelfEvalLine("C1", !ok ? 1 : (left == 0 ? 3 : (left == 1 ? 2 : 1)),
                   !ok ? "a wrong step moves away from the answer"
                       : (left == 0 ? "the answer is reached" : "the answer is not reached yet")),
      SelfEvalLine("C2", 3, "the step is complete")};
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() ? "\n" : "");
  return out;
}

const std::vector<std::string> kBadArithmeticPlans = {
    "Guess the answer from the size of the numbers.", "Answer with the first number given.",
    "Count up one by one from zero.", "Repeat the question in other words."};
const std::vector<std::string> kBadFactPlans = {
    "Guess a likely answer.", "Answer with a name that sounds right.",
    "Compute a number from the words of the question.", "Repeat the question in other words."};

}  // namespace

nlohmann::json SftRecord::ToJson() const {
  return {{"prompt", prompt}, {"completion", completion}, {"format", format}, {"id", item_id}};
}

std::vector<std::string> SftFormats() {
  return {"direct",    "cot",         "tool",        "reason_in_tool", "route",     "self_eval",
          "refine",    "reason_step", "has_answer",  "final",          "decompose", "solve_subtask",
          "summarize", "plans",       "choose_plan", "numbered"};
}

Result<std::vector<SftRecord>> MakeSftRecords(const TaskItem& item, const SftConfig& config,
                                              SplitMix64& rng) {
  const std::vector<std::string> all = SftFormats();
  for (const auto& f : config.formats) {
    if (std::find(all.begin(), all.end(), f) == all.end()) {
      return InvalidArgument("tiny world: sft.formats: unknown format '" + f + "'");
    }
  }
  if (config.tool_results != "reasoned" && config.tool_results != "raw") {
    return InvalidArgument("tiny world: sft.tool_results must be reasoned or raw, got '" +
                           config.tool_results + "'");
  }
  if (config.route_labels != "random" && config.route_labels != "true") {
    return InvalidArgument("tiny world: sft.route_labels must be random or true, got '" +
                           config.route_labels + "'");
  }
  auto on = [&](const char* f) {
    return config.formats.empty() ||
           std::find(config.formats.begin(), config.formats.end(), f) != config.formats.end();
  };
  const std::string q = FullQuestion(item);
  const std::vector<SolutionStep> reference = item.AllSteps();
  // What each tool step's result reads like inside a trajectory (SftConfig::tool_results): the
  // reading is the step that follows the tool call.
  std::vector<SolutionStep> steps = reference;
  std::vector<std::string> readings(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!steps[i].uses_tool()) continue;
    const bool next_reads = i + 1 < steps.size() && !steps[i + 1].uses_tool();
    readings[i] = next_reads ? steps[i + 1].text : steps[i].tool_result;
    if (config.tool_results == "reasoned") steps[i].tool_result = readings[i];
  }
  const size_t n = steps.size();
  const bool tool = UsesTool(steps);
  const std::string final_answer = FinalAnswer(item.answer);
  std::vector<SftRecord> out;
  auto add = [&](const char* format, std::string context, std::string_view ask,
                 std::string completion) {
    out.push_back({Prompt(q, context, ask), std::move(completion), format, item.id});
  };

  // Answering without a tool is only taught where no tool is needed (L1-L3).
  if (on("direct") && !tool) add("direct", "", kAskDirect, final_answer);
  if (on("cot") && !tool) add("cot", "", kAskChainOfThought, StepLines(steps, n) + final_answer);
  if (on("tool")) {
    // CoTool (CogER App. B.2), cut after every <|end_tool_query|>.
    // The conversation continues after the prompt: each record's prompt is the first prompt
    // plus everything generated and inserted so far.
    const std::string start = Prompt(q, "", kAskTool);
    std::string done;  // the steps and tool results before the current segment
    std::string segment;
    for (size_t i = 0; i < n; ++i) {
      segment += StepLine(static_cast<int>(i) + 1, steps[i].text) + "\n";
      if (steps[i].uses_tool()) {
        segment += ToolQuery(steps[i].tool_query);
        out.push_back({start + done, segment, "tool", item.id});
        // Exactly what CoTool inserts after <|end_tool_query|>: "\n<result markers>\n".
        done += segment + "\n" + ToolResult(steps[i].tool_result) + "\n";
        segment.clear();
      }
    }
    out.push_back({start + done, segment + final_answer, "tool", item.id});
  }
  if (on("reason_in_tool")) {
    // CoTool reads each tool output before it joins the chain (CogER App. B.2).
    for (size_t i = 0; i < n; ++i) {
      if (!steps[i].uses_tool()) continue;
      add("reason_in_tool",
          std::string(kToolQueryLine) + steps[i].tool_query + "\n" + std::string(kToolOutputLine) +
              reference[i].tool_result,
          kAskReadTool, readings[i]);
    }
  }
  if (on("route")) {
    const int level =
        config.route_labels == "true" ? item.min_level : static_cast<int>(rng.Range(1, 4));
    add("route", "", kAskRoute, level == 1 ? item.answer + " " + LevelTag(1) : LevelTag(level));
  }
  if ((on("self_eval") || on("refine")) && n > 0) {
    // RLoT Table 1 state and the Refine block (App. K.2) on the same prefix: the newest step
    // is either the reference or a corrupted copy of it.
    const size_t k = static_cast<size_t>(rng.Range(1, static_cast<int64_t>(n)));
    std::vector<SolutionStep> shown(steps.begin(), steps.begin() + static_cast<ptrdiff_t>(k));
    const Corruption bad = Corrupt(shown.back().text, config.corrupt_percent, rng);
    if (bad.kind != Corruption::kNone) shown.back().text = bad.text;
    if (on("self_eval")) {
      add("self_eval", SoFar(shown, k), kAskSelfEval,
          SelfEvaluation(k, n, bad.computes, bad.kind == Corruption::kModel,
                         bad.kind == Corruption::kCalculation, bad.reason));
    }
    if (on("refine") && bad.kind != Corruption::kNone) {
      add("refine", SoFar(shown, k), kAskRefine, StepLine(static_cast<int>(k), steps[k - 1].text));
    }
  }
  if (n > 0 && !tool) {
    if (on("reason_step")) {
      const size_t k = rng.Below(n);
      add("reason_step", SoFar(steps, k), kAskReasonStep,
          StepLine(static_cast<int>(k) + 1, steps[k].text));
    }
    if (on("has_answer")) {
      const size_t k = static_cast<size_t>(rng.Range(1, static_cast<int64_t>(n)));
      add("has_answer", SoFar(steps, k), kAskHasAnswer, k == n ? "yes" : "no");
    }
    if (on("final")) add("final", SoFar(steps, n), kAskFinal, final_answer);
  }
  if (n >= 2) {
    if (on("decompose")) add("decompose", "", kAskDecompose, SubtaskList(steps));
    if (on("numbered")) {
      std::string lines;
      for (size_t i = 0; i < n; ++i) {
        lines += NumberedLine(static_cast<int>(i) + 1, steps[i].subtask) + (i + 1 < n ? "\n" : "");
      }
      add("numbered", "", kAskNumberedSubtasks, lines);
    }
    if (!tool && on("solve_subtask")) {
      // RLoT Decompose (b): subtasks in turn, later ones seeing the earlier results.
      const size_t k = rng.Below(n);
      std::string context = SubtaskList(steps);
      if (k > 0) context += "\n" + SoFar(steps, k);
      add("solve_subtask", context, kAskSolveSubtask,
          StepLine(static_cast<int>(k) + 1, steps[k].text));
    }
    if (!tool && on("summarize")) {
      // RLoT Decompose (c): only the summary joins the chain.
      std::string summary(kSummaryPrefix);
      for (size_t i = 0; i < n; ++i) summary += steps[i].text + (i + 1 < n ? "; " : "");
      add("summarize", SubtaskList(steps) + "\n" + SoFar(steps, n), kAskSummarize,
          summary + ". So the answer is " + item.answer + ".");
    }
  }
  if (n > 0 && (on("plans") || on("choose_plan"))) {
    // RLoT Debate: three plans, one of which is the reference's next subtask.
    const size_t k = rng.Below(n);
    const auto& bad = item.kind == "fact" ? kBadFactPlans : kBadArithmeticPlans;
    std::vector<std::string> plans = {steps[k].subtask};
    std::vector<size_t> order = {0, 1, 2, 3};
    rng.Shuffle(order);
    plans.push_back(bad[order[0]]);
    plans.push_back(bad[order[1]]);
    rng.Shuffle(plans);
    const size_t best = std::find(plans.begin(), plans.end(), steps[k].subtask) - plans.begin();
    std::string plan_lines;
    for (size_t i = 0; i < 3; ++i) {
      plan_lines += PlanLine(static_cast<int>(i) + 1, plans[i]) + (i < 2 ? "\n" : "");
    }
    const std::string so_far = SoFar(steps, k);
    if (on("plans")) add("plans", so_far, kAskPlans, plan_lines);
    if (on("choose_plan")) {
      add("choose_plan", so_far.empty() ? plan_lines : so_far + "\n" + plan_lines, kAskChoosePlan,
          PromisingPlanLine(static_cast<int>(best) + 1, "the next step toward the answer is to " +
                                                            LowerFirst(steps[k].subtask)));
    }
  }
  return out;
}

}  // namespace allot::envs::tinyworld
