// Supervised data that teaches the tiny models the task formats of formats.h: direct answers,
// chain of thought, CoTool tool queries (CogER App. B.2), the router's level tag (CogER App.
// B.1), RLoT's self-evaluation lines and logic blocks (RLoT Table 1, App. K.2) and numbered
// decomposition (R2-Reasoner). One {"prompt", "completion"} JSONL line per record.
//
// Tool trajectories are cut at every tool call: a record's completion ends with the
// <|end_tool_query|> marker, and the next record's prompt is the previous prompt and completion
// followed by "\n<|begin_tool_result|> ... <|end_tool_result|>\n", as CoTool builds it. The models
// therefore never learn to write tool results themselves, and at inference the environment
// supplies them exactly where training put them.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "core/random.h"
#include "core/status.h"
#include "tinyworld/task_item.h"

namespace allot::tinyworld {

struct SftRecord {
  std::string prompt;
  std::string completion;
  std::string format;   // one of SftFormats()
  std::string item_id;  // the task item it was made from
  nlohmann::json ToJson() const;
};

struct SftConfig {
  // Which formats to write; empty = all of SftFormats().
  std::vector<std::string> formats;
  // The level in a router record: "random" (uniform L1..L4) leaves the routing for GRPO to
  // learn, so that the SFT router starts as a random router that knows the format; "true" uses
  // the item's min_level (a supervised router, for comparison).
  std::string route_labels = "random";
  // Share of self-evaluation records whose newest step is corrupted (a wrong operation or a
  // wrong result), so that the scores 1 and 3 both occur.
  int64_t corrupt_percent = 40;
  // What a tool trajectory shows between the result markers: "reasoned" is what envs/coger's
  // CoTool inserts (CogER App. B.2: the model's own reading of the tool output, taught by the
  // reason_in_tool records), "raw" the tool output itself.
  std::string tool_results = "reasoned";
  // Share of the tool-free items that get the RLoT records (self_eval .. follow_plan and the
  // Decompose block's three). Those records are long and take most of the tokens at 100; the
  // half left out goes to the arithmetic the tiers answer with (direct, cot, step).
  int64_t rlot_percent = 50;
  // Share of the train fact items whose records ask about freshly named entities instead of
  // their own (FreshNames, knowledge_world.h), so that the tiers learn to copy a name into a
  // search query rather than memorise the train split's names. 0 keeps every record as is.
  int64_t fresh_names_percent = 0;
  // How many times each renamed item is written, each time with names of its own: more
  // copying to learn from without more of anything else.
  int64_t fresh_names_copies = 1;
  // sft_practice.jsonl, the pool's second training phase (scripts/make_tiny_world.sh): every
  // step-drill record of sft_train.jsonl plus this share of their number drawn from the other
  // records, so that the drill is seen several more times without the formats being forgotten.
  int64_t practice_others_percent = 100;
  // The Decompose block drilled: its listing also after 1..n-1 reference steps (still the whole
  // problem's: the block solves it from the start), every subtask solved (not one drawn), and
  // the finish check and Terminate on a chain whose newest step is a Decompose summary. Off for
  // sft_train.jsonl; on for the long sums of sft_rlot.jsonl, whose six to eight subtasks a
  // navigator may decompose after it has reasoned a few steps.
  bool decompose_drill = false;
  // RLoT's state for a navigator that decides before the first step (RLoT App. J.2, "Training
  // process": the LLM self-evaluates the problem with no reasoning yet; env.rlot.
  // evaluate_problem): every self_eval record gets a second one with no step yet (the problem
  // itself), and B1 is graded by the steps left (3: four or more, 2: two or three, 1: one or
  // none; off: 3 from two left), so that the problem's evaluation tells a long problem from a
  // short one. Off for sft_train.jsonl; on for sft_rlot.jsonl.
  bool problem_evaluation = false;

  void Describe(config::Visitor& v) {
    v.Field("formats", formats, {.doc = "SFT formats to write (empty = all)"});
    v.Field("route_labels", route_labels,
            {.doc = "router levels: random (GRPO learns routing) or true (min_level)",
             .choices = {"random", "true"}});
    v.Field("corrupt_percent", corrupt_percent,
            {.doc = "self-evaluation records with a corrupted newest step", .min = 0, .max = 100});
    v.Field("tool_results", tool_results,
            {.doc = "between the result markers: reasoned (CoTool's reading) or raw (tool output)",
             .choices = {"reasoned", "raw"}});
    v.Field("rlot_percent", rlot_percent,
            {.doc = "tool-free items that get the RLoT records", .min = 0, .max = 100});
    v.Field("fresh_names_percent", fresh_names_percent,
            {.doc = "train fact items whose records use freshly generated names",
             .min = 0,
             .max = 100});
    v.Field("fresh_names_copies", fresh_names_copies,
            {.doc = "records of each renamed fact item, each with its own names", .min = 1});
    v.Field("practice_others_percent", practice_others_percent,
            {.doc = "sft_practice.jsonl: other records drawn, as a share of the drill records",
             .min = 0,
             .max = 1000});
    v.Field("decompose_drill", decompose_drill,
            {.doc = "Decompose drilled: listed after reference steps too, every subtask solved, "
                    "the finish check and Terminate after its summary"});
    v.Field("problem_evaluation", problem_evaluation,
            {.doc = "self-evaluations also of the problem with no step yet, and B1 graded by "
                    "the steps left (3: 4+, 2: 2-3, 1: 0-1)"});
  }
};

// direct, cot, step, tool, reason_in_tool, route, self_eval, refine, reason_step,
// follow_plan, has_answer, final,
// decompose, solve_subtask, summarize, plans, choose_plan, numbered.
// "step" drills the arithmetic the chains are made of: every step "a op b = c" of a tool-free
// item becomes its own question "What is a op b?", answered directly and in one CoT step.
std::vector<std::string> SftFormats();

// The second phase's data (SftConfig::practice_others_percent): the "step" records of `sft` and
// a draw without replacement from the rest, in their order in `sft`.
std::vector<SftRecord> PracticeRecords(const std::vector<SftRecord>& sft, int64_t others_percent,
                                       SplitMix64& rng);

// The records of every enabled format that applies to `item`. A step whose question is in
// `held_out` (the test split's questions) gets no step record, so no test question is trained.
Result<std::vector<SftRecord>> MakeSftRecords(const TaskItem& item, const SftConfig& config,
                                              SplitMix64& rng,
                                              const std::set<std::string>& held_out = {});

}  // namespace allot::tinyworld
