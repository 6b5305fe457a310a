// Every output format the tiny world's models learn, in one place, so that the SFT data written
// here and the environments that parse model outputs use the same strings.
//
// The markers are the papers' own: the router's level tag (CogER App. B.1), the CoTool markers
// (CogER App. B.2), the self-evaluation lines and logic-block outputs (RLoT Table 1, App. K,
// and the authors' code as summarized in the seeds' notes), and numbered subtasks
// (R2-Reasoner Sec. 3). The instructions are the tiny world's own short wording: byte-level
// models with short contexts cannot afford the papers' page-long system prompts, so each task
// is named by one line after the question (see Prompt()).
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace allot::tinyworld {

// CogER App. B.1: <question_level>Lk</question_level>; an L1 answer comes before the tag.
inline constexpr std::string_view kLevelOpen = "<question_level>";
inline constexpr std::string_view kLevelClose = "</question_level>";

// CogER App. B.2: the CoTool markers.
inline constexpr std::string_view kToolQueryOpen = "<|begin_tool_query|>";
inline constexpr std::string_view kToolQueryClose = "<|end_tool_query|>";
inline constexpr std::string_view kToolResultOpen = "<|begin_tool_result|>";
inline constexpr std::string_view kToolResultClose = "<|end_tool_result|>";
// How a tiny-world tool query names its tool: "search <words>" for the knowledge base,
// "calculate <expression>" for the calculator (CogER App. D.2 lets the system pick the tool;
// the tiny world makes the choice explicit so a small model can learn it).
inline constexpr std::string_view kSearchVerb = "search ";
inline constexpr std::string_view kCalculateVerb = "calculate ";

// The final answer of every open question, graded with the rewards module's "boxed" format.
inline constexpr std::string_view kBoxedOpen = "\\boxed{";
inline constexpr std::string_view kAnswerLead = "The answer is ";

// Chain of thought: one "Step i: ..." line per step (the PRM's step split, Math-Shepherd style).
inline constexpr std::string_view kStepPrefix = "Step ";

// RLoT Table 1: the seven self-evaluation aspects in state order, scored 1 = False,
// 2 = Unsure, 3 = True, 0 = not involved, one line each: "A1 score=3 reason=...".
inline constexpr std::array<std::string_view, 7> kSelfEvalKeys = {"A1", "A2", "A3", "B1",
                                                                  "B2", "C1", "C2"};
inline constexpr std::string_view kScoreField = " score=";
inline constexpr std::string_view kReasonField = " reason=";

// RLoT App. K.2 logic blocks: Decompose lists "### Subtask1: ...", Debate lists
// "### Plan1: ..." and picks with "The most promising plan is Plan2: <reason>".
inline constexpr std::string_view kSubtaskPrefix = "### Subtask";
inline constexpr std::string_view kPlanPrefix = "### Plan";
inline constexpr std::string_view kPromisingPlan = "The most promising plan is Plan";
inline constexpr std::string_view kSummaryPrefix = "Summary: ";

// The one-line instructions that name each task (the last line of a prompt). RLoT's block
// prompts are templates of their own: rlot_templates.h.
inline constexpr std::string_view kAskDirect = "Answer directly.";
inline constexpr std::string_view kAskChainOfThought = "Think step by step.";
inline constexpr std::string_view kAskRoute = "Classify the level L1-L4.";
inline constexpr std::string_view kAskTool = "Think step by step; use a tool when needed.";
inline constexpr std::string_view kAskNumberedSubtasks = "List the subtasks, numbered.";
// CoTool's reading of a tool output (CogER App. B.2 task instruction), and the context lines
// of its prompt: "Tool query: ..." and "Tool output: ...".
inline constexpr std::string_view kAskReadTool = "Say what the tool output tells.";
inline constexpr std::string_view kToolQueryLine = "Tool query: ";
inline constexpr std::string_view kToolOutputLine = "Tool output: ";

// "<question>\n[<context>\n]<instruction>\n": the layout of every tiny-world prompt.
std::string Prompt(std::string_view question, std::string_view context,
                   std::string_view instruction);

// "<question_level>L2</question_level>"; level in 1..4.
std::string LevelTag(int level);
// "<|begin_tool_query|> q <|end_tool_query|>"
std::string ToolQuery(std::string_view query);
// "<|begin_tool_result|> r <|end_tool_result|>"
std::string ToolResult(std::string_view result);
// "\boxed{a}"
std::string Boxed(std::string_view answer);
// "The answer is \boxed{a}"
std::string FinalAnswer(std::string_view answer);
// "Step 3: text"
std::string StepLine(int index, std::string_view text);
// "A1 score=3 reason=text"
std::string SelfEvalLine(std::string_view key, int score, std::string_view reason);
// "### Subtask2: text"
std::string SubtaskLine(int index, std::string_view text);
// "### Plan1: text"
std::string PlanLine(int index, std::string_view text);
// "The most promising plan is Plan2: reason"
std::string PromisingPlanLine(int index, std::string_view reason);
// "2. text" (R2-Reasoner's numbered decomposition)
std::string NumberedLine(int index, std::string_view text);

}  // namespace allot::tinyworld
