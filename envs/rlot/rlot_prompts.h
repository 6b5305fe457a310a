// The RLoT env's prompt templates (configs/prompts/rlot/*.txt, our own words following the
// paper's block structure, RLoT Sec. 3.2 and App. prompts) and the parsers of the formats they
// ask for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot::envs::rlot {

struct RlotPrompts {
  std::string reason;
  std::string decompose_list, decompose_solve, decompose_summarize;
  std::string debate_plans, debate_compare, debate_execute;
  std::string refine;
  std::string terminate;
  std::string finish_check;
  std::string self_evaluate;
  // The zero-shot CoT baseline ("Let's think step by step", RLoT Sec. 4.1); optional: empty
  // when DIR has no zero_shot_cot.txt, and then the cot baselines refuse to run.
  std::string zero_shot_cot;

  // Reads DIR/<name>.txt for every template; NotFound names the missing file. Templates use
  // {{name}} placeholders (core/text_template.h): one the env does not fill in that template is
  // an error naming the file and the name, and so is a template that never uses {{question}}.
  static Result<RlotPrompts> Load(const std::string& dir);
};

// The items of "### Subtask1: ..." / "### Plan2: ..." lines, in order of appearance (the
// numbers are not trusted), at most `max_items`.
std::vector<std::string> ParseNumberedItems(std::string_view text, std::string_view label,
                                            size_t max_items);

// The 1-based plan of "The most promising plan is Plan[INDEX]: ..."; 1 when it does not parse
// or is out of range (the reference code's fallback).
int ParseChosenPlan(std::string_view text, int num_plans);

// The finish check: true when the first "yes" or "no" word of the reply is "yes".
bool ParseYes(std::string_view text);

}  // namespace allot::envs::rlot
