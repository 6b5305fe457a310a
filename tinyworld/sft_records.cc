#include "tinyworld/sft_records.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/text_template.h"
#include "datasets/example.h"
#include "tinyworld/formats.h"
#include "tinyworld/rlot_templates.h"

namespace allot::tinyworld {
namespace {

std::string N(int64_t v) { return std::to_string(v); }

// The question as datasets/ shows it to a model (options as "A) ..." lines).
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

// {steps} as the RLoT env fills it: "Step i: <text>" lines of the first k steps, or
// "(none yet)".
std::string RlotSteps(const std::vector<SolutionStep>& steps, size_t k) {
  if (k == 0) return "(none yet)";
  std::string out;
  for (size_t i = 0; i < k; ++i)
    out += (i ? "\n" : "") + StepLine(static_cast<int>(i) + 1, steps[i].text);
  return out;
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
    out.reason = std::string("use ") + op + ", not " + wrong_op;
  }
  return out;
}

// RLoT Table 1, B1 ("complexity to the final answer": True = the answer is still far) from
// the steps left; `graded` (SftConfig::problem_evaluation) keeps 3 for four or more.
int StepsLeftScore(size_t left, bool graded) {
  if (left >= (graded ? 4u : 2u)) return 3;
  if (left >= (graded ? 2u : 1u)) return 2;
  return 1;
}

std::string StepsLeftReason(size_t left) {
  return left == 0 ? "done" : (left == 1 ? "one step left" : N(left) + " steps left");
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() ? "\n" : "");
  return out;
}

// RLoT Table 1: the seven scored lines for the newest of `k` steps. `calc_error` and
// `model_error` say how the newest step was corrupted (at most one is set).
std::string SelfEvaluation(size_t k, size_t n, bool computes, bool model_error, bool calc_error,
                           const std::string& reason, bool graded) {
  const bool ok = !model_error && !calc_error;
  const size_t left = n - k;
  return JoinLines(
      {SelfEvalLine("A1", model_error ? 1 : 3, model_error ? reason : "right operation"),
       SelfEvalLine("A2", 3, "clear"),
       computes ? SelfEvalLine("A3", calc_error ? 1 : 3, calc_error ? reason : "right result")
                : SelfEvalLine("A3", 0, "no arithmetic"),
       SelfEvalLine("B1", StepsLeftScore(left, graded), StepsLeftReason(left)),
       SelfEvalLine("B2", ok ? 1 : 3, ok ? "not needed" : "redo the step"),
       SelfEvalLine("C1", !ok ? 1 : (left == 0 ? 3 : (left == 1 ? 2 : 1)),
                    !ok ? "wrong step" : (left == 0 ? "answer reached" : "not yet")),
       SelfEvalLine("C2", 3, "complete")});
}

// The same seven lines for the problem before any step (SftConfig::problem_evaluation): no
// step to judge (A1-A3, B2, C2 "not involved"), B1 graded by the problem's `n` steps.
std::string ProblemEvaluation(size_t n) {
  return JoinLines({SelfEvalLine("A1", 0, "no step yet"), SelfEvalLine("A2", 0, "no step yet"),
                    SelfEvalLine("A3", 0, "no step yet"),
                    SelfEvalLine("B1", StepsLeftScore(n, true), StepsLeftReason(n)),
                    SelfEvalLine("B2", 0, "no step yet"), SelfEvalLine("C1", 1, "not yet"),
                    SelfEvalLine("C2", 0, "no step yet")});
}

const std::vector<std::string> kBadArithmeticPlans = {
    "Guess the answer from the size of the numbers.", "Answer with the first number given.",
    "Count up one by one from zero.", "Repeat the question in other words."};
}  // namespace

nlohmann::json SftRecord::ToJson() const {
  return {{"prompt", prompt}, {"completion", completion}, {"format", format}, {"id", item_id}};
}

std::vector<std::string> SftFormats() {
  return {"direct",        "cot",       "step",        "tool",        "reason_in_tool", "route",
          "self_eval",     "refine",    "reason_step", "has_answer",  "final",          "decompose",
          "solve_subtask", "summarize", "plans",       "choose_plan", "follow_plan",    "numbered"};
}

std::vector<SftRecord> PracticeRecords(const std::vector<SftRecord>& sft, int64_t others_percent,
                                       SplitMix64& rng) {
  std::vector<bool> keep(sft.size(), false);  // the drill now, the draw below
  std::vector<size_t> others;
  size_t drill = 0;
  for (size_t i = 0; i < sft.size(); ++i) {
    if (sft[i].format == "step") {
      keep[i] = true;
      ++drill;
    } else {
      others.push_back(i);
    }
  }
  const size_t draw = std::min(
      others.size(), drill * static_cast<size_t>(std::max<int64_t>(others_percent, 0)) / 100);
  rng.Shuffle(others);
  for (size_t i = 0; i < draw; ++i) keep[others[i]] = true;
  std::vector<SftRecord> out;
  out.reserve(drill + draw);
  for (size_t i = 0; i < sft.size(); ++i) {
    if (keep[i]) out.push_back(sft[i]);
  }
  return out;
}

Result<std::vector<SftRecord>> MakeSftRecords(const TaskItem& item, const SftConfig& config,
                                              SplitMix64& rng,
                                              const std::set<std::string>& held_out) {
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
  if (on("step") && !tool) {
    // Each step of the chain on its own, so that the operations the chains (and R2's subtasks,
    // and RLoT's blocks) are made of are seen far more often than the items they come from.
    for (const SolutionStep& s : reference) {
      int64_t a = 0, b = 0, c = 0;
      char op = 0;
      if (!ParseEquation(s.text, &a, &op, &b, &c)) continue;
      const std::string sq = "What is " + N(a) + " " + op + " " + N(b) + "?";
      if (held_out.count(sq)) continue;
      out.push_back({Prompt(sq, "", kAskDirect), FinalAnswer(N(c)), "step", item.id});
      out.push_back({Prompt(sq, "", kAskChainOfThought),
                     StepLine(1, s.text) + "\n" + FinalAnswer(N(c)), "step", item.id});
    }
  }
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
  if (n >= 2 && on("numbered")) {
    // R2-Reasoner's decomposition: numbered subtasks.
    std::string lines;
    for (size_t i = 0; i < n; ++i) {
      lines += NumberedLine(static_cast<int>(i) + 1, steps[i].subtask) + (i + 1 < n ? "\n" : "");
    }
    add("numbered", "", kAskNumberedSubtasks, lines);
  }
  // RLoT (App. K.2): every record is one of the env's template calls, rendered from the tiny
  // world's templates (rlot_templates.h) with the values the env would fill in. The navigator
  // works without tools, so items that need one get none of these.
  if (n == 0 || tool || !rng.Percent(config.rlot_percent)) return out;
  Status failed = Status::Ok();  // the first RLoT template that did not render
  auto rlot = [&](const char* format, const RlotTemplate& t, size_t k,
                  std::map<std::string, std::string> vars, std::string completion) {
    vars["question"] = q;
    if (!vars.count("steps")) vars["steps"] = RlotSteps(steps, k);
    // The env drops a template's trailing newline and trims the reply: the prompt ends at the
    // instruction and the completion starts on the next line.
    Result<std::string> rendered =
        RenderTemplate(t.text, vars, "tinyworld rlot " + std::string(t.name));
    if (!rendered.ok()) {
      if (failed.ok()) failed = rendered.status();
      return;
    }
    std::string prompt = std::move(rendered).value();
    while (!prompt.empty() && prompt.back() == '\n') prompt.pop_back();
    out.push_back({std::move(prompt), "\n" + completion, format, item.id});
  };
  if (on("self_eval") || on("refine")) {
    // RLoT Table 1 state and the Refine block on the same prefix: the newest step is either
    // the reference or a corrupted copy of it.
    const size_t k = static_cast<size_t>(rng.Range(1, static_cast<int64_t>(n)));
    std::vector<SolutionStep> shown(steps.begin(), steps.begin() + static_cast<ptrdiff_t>(k));
    const Corruption bad = Corrupt(shown.back().text, config.corrupt_percent, rng);
    if (bad.kind != Corruption::kNone) shown.back().text = bad.text;
    const std::map<std::string, std::string> vars = {{"steps", RlotSteps(shown, k)},
                                                     {"last_step", shown.back().text}};
    if (on("self_eval")) {
      rlot("self_eval", kRlotSelfEvaluate, k, vars,
           SelfEvaluation(k, n, bad.computes, bad.kind == Corruption::kModel,
                          bad.kind == Corruption::kCalculation, bad.reason,
                          config.problem_evaluation));
      if (config.problem_evaluation) {
        rlot("self_eval", kRlotSelfEvaluate, 0, {}, ProblemEvaluation(n));
      }
    }
    if (on("refine") && bad.kind != Corruption::kNone) {
      rlot("refine", kRlotRefine, k, vars, steps[k - 1].text);  // rewritten in place
    }
  }
  if (on("reason_step")) {
    const size_t k = rng.Below(n);
    rlot("reason_step", kRlotReason, k, {}, steps[k].text);
  }
  if (on("has_answer")) {
    const size_t k = static_cast<size_t>(rng.Range(1, static_cast<int64_t>(n)));
    rlot("has_answer", kRlotFinishCheck, k, {}, k == n ? "yes" : "no");
  }
  if (on("final")) rlot("final", kRlotTerminate, n, {}, final_answer);
  if (n >= 2) {
    // Decompose: (a) list, (b) solve each with the earlier results, (c) summarize; only the
    // summary joins the chain, so the decomposition starts from an empty chain here.
    std::string listing, results;
    for (size_t i = 0; i < n; ++i) {
      listing +=
          "Subtask" + std::to_string(i + 1) + ": " + steps[i].subtask + (i + 1 < n ? "\n" : "");
    }
    // After `shown` reference steps with decompose_drill (drawn only then, so that the other
    // records' draws stay as they were).
    const size_t shown = config.decompose_drill ? rng.Below(n) : 0;
    if (on("decompose")) rlot("decompose", kRlotDecomposeList, shown, {}, SubtaskList(steps));
    const size_t solve = rng.Below(n);
    for (size_t i = 0; i < n; ++i) {
      if (on("solve_subtask") && (i == solve || config.decompose_drill)) {
        rlot("solve_subtask", kRlotDecomposeSolve, 0,
             {{"subtasks", listing},
              {"subtask", steps[i].subtask},
              {"results", results.empty() ? "(none yet)" : results}},
             steps[i].text);
      }
      results += (results.empty() ? "" : "\n") + std::string("Subtask") + std::to_string(i + 1) +
                 ": " + steps[i].subtask + "\nResult: " + steps[i].text;
    }
    if (on("summarize")) {
      std::string summary(kSummaryPrefix);
      for (size_t i = 0; i < n; ++i) summary += steps[i].text + (i + 1 < n ? "; " : "");
      summary += ". So the answer is " + item.answer + ".";
      rlot("summarize", kRlotDecomposeSummarize, 0, {{"results", results}}, summary);
      if (config.decompose_drill) {
        // The chain the env holds after that block: the steps before it, then the summary.
        std::vector<SolutionStep> chain(steps.begin(),
                                        steps.begin() + static_cast<ptrdiff_t>(shown));
        chain.push_back(steps.back());
        chain.back().text = summary;
        const std::map<std::string, std::string> vars = {{"steps", RlotSteps(chain, chain.size())}};
        if (on("has_answer")) rlot("has_answer", kRlotFinishCheck, 0, vars, "yes");
        if (on("final")) rlot("final", kRlotTerminate, 0, vars, final_answer);
      }
    }
  }
  if (on("plans") || on("choose_plan") || on("follow_plan")) {
    // Debate: three plans, one of which is the reference's next subtask; compare; one step
    // along the chosen plan.
    const size_t k = rng.Below(n);
    std::vector<std::string> plans = {steps[k].subtask};
    std::vector<size_t> order = {0, 1, 2, 3};
    rng.Shuffle(order);
    plans.push_back(kBadArithmeticPlans[order[0]]);
    plans.push_back(kBadArithmeticPlans[order[1]]);
    rng.Shuffle(plans);
    const size_t best = std::find(plans.begin(), plans.end(), steps[k].subtask) - plans.begin();
    std::string proposed, listing;
    for (size_t i = 0; i < 3; ++i) {
      proposed += PlanLine(static_cast<int>(i) + 1, plans[i]) + (i < 2 ? "\n" : "");
      listing += "Plan" + std::to_string(i + 1) + ": " + plans[i] + (i < 2 ? "\n" : "");
    }
    if (on("plans")) rlot("plans", kRlotDebatePlans, k, {}, proposed);
    if (on("choose_plan")) {
      rlot(
          "choose_plan", kRlotDebateCompare, k, {{"plans", listing}},
          PromisingPlanLine(static_cast<int>(best) + 1, "it will " + LowerFirst(steps[k].subtask)));
    }
    if (on("follow_plan")) {
      rlot("follow_plan", kRlotDebateExecute, k, {{"plan", steps[k].subtask}}, steps[k].text);
    }
  }
  if (!failed.ok()) return failed;
  return out;
}

}  // namespace allot::tinyworld
