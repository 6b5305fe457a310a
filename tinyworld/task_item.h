// One tiny-world problem with its reference solution, written as one JSONL line that
// datasets/' loader reads (question, answer, choices, solution; the rest lands in extra).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace allot::tinyworld {

// One line of the reference solution. A step either computes (text only) or asks a tool
// (tool_query and tool_result set; text says what is missing).
struct SolutionStep {
  std::string subtask;  // what the step achieves, in words ("Multiply 47 by the tens of 36.")
  std::string text;     // the step itself ("47 * 30 = 1410")
  std::string tool_query;
  std::string tool_result;
  bool uses_tool() const { return !tool_query.empty(); }
};

struct TaskItem {
  std::string id;          // "tw-<split>-<bucket>-<n>", "-mc" appended for choice variants
  std::string split;       // "train" | "test"
  std::string kind;        // "arith" | "word" | "fact"
  std::string difficulty;  // the bucket: add1, add2, mul21, mul22, mul33, word, fact, fact2
  // The smallest CogER level that solves the item by construction: 1 the small model answers
  // directly, 2 a short chain of thought, 3 a longer chain, 4 a tool is needed. For analysis
  // only: no policy sees it.
  int min_level = 1;
  std::string question;
  std::string answer;                // canonical: digits, a name, or the letter of a choice
  std::string value;                 // the answer's text (equals answer for open items)
  std::vector<std::string> choices;  // multiple-choice variant only, A first
  std::vector<SolutionStep> steps;
  std::string expression;  // arithmetic items: the whole computation ("7 * 12 - 15")
  std::string entity;      // fact items: the entity the question is about
  std::string page_id;     // fact items: the corpus page that holds the answer
  std::string key;         // what must not repeat across splits (the question of the open item)

  bool multiple_choice() const { return !choices.empty(); }
  // "boxed" for open items, "choice" for multiple choice (the rewards module's formats).
  std::string answer_format() const { return multiple_choice() ? "choice" : "boxed"; }
  // The reference steps; a multiple-choice item adds the step that maps the value to its
  // letter ("28 is option C.").
  std::vector<SolutionStep> AllSteps() const;
  // AllSteps() as "Step i: ..." lines (tool steps with their markers), then the final answer.
  std::string SolutionText() const;
  nlohmann::json ToJson() const;
};

}  // namespace allot::tinyworld
