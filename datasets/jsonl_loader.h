// JSONL dataset loading with a configurable field mapping and presets for the formats the
// papers evaluate on (CogER Sec. 5 / App. C, RLoT Sec. 4, R2-Reasoner Sec. 5.1): GSM8K,
// MATH / MATH-500, CommonsenseQA, MedQA, MAWPS, CollegeMath, GPQA, StrategyQA, MMLU-STEM,
// AIME / AMC and LIMO / OpenR1-style trajectories.
//
// A line that does not fit is an error naming <file>:<line> and the field; with
// skip_bad_lines the line is counted, its message kept, and loading goes on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/schema.h"
#include "core/status.h"
#include "datasets/example.h"

namespace allot::datasets {

// Where each Example field comes from. Every entry is a list of candidate keys, tried in
// order; a key may be a dotted path into nested objects ("question.stem").
struct FieldMapping {
  std::vector<std::string> id = {"id"};
  std::vector<std::string> question = {"question"};
  std::vector<std::string> answer = {"answer"};
  std::vector<std::string> solution;
  // A list of strings, a list of {label, text}, an object {"A": text, ...}, or an object of
  // parallel lists {"label": [...], "text": [...]}.
  std::vector<std::string> options;
  // GPQA style: `answer` holds the correct option's text and these hold the wrong ones; the
  // options are then shuffled with a seeded RNG and the answer becomes a letter.
  std::vector<std::string> distractors;
  std::vector<std::string> trajectories;         // list of reference trajectories
  std::vector<std::string> trajectory_verdicts;  // parallel list of bools: keep the true ones
  std::vector<std::string> extra;                // copied into Example::extra when present
  // none | gsm8k (text after "####", commas dropped; the text before is the solution) |
  // index_to_letter (0 -> A) | bool_to_yesno | first_element (a one-item list).
  std::string answer_transform = "none";
  // When no answer field is present, use the last \boxed{...} of the solution (MATH).
  bool answer_from_solution_boxed = false;
  std::string answer_format = "text";

  void Describe(config::Visitor& v) {
    v.Field("id", id, {.doc = "candidate keys for the id"});
    v.Field("question", question, {.doc = "candidate keys for the question"});
    v.Field("answer", answer, {.doc = "candidate keys for the gold answer"});
    v.Field("solution", solution, {.doc = "candidate keys for a reference solution"});
    v.Field("options", options, {.doc = "candidate keys for multiple-choice options"});
    v.Field("distractors", distractors, {.doc = "keys of wrong options (GPQA style)"});
    v.Field("trajectories", trajectories, {.doc = "keys of a list of reference trajectories"});
    v.Field("trajectory_verdicts", trajectory_verdicts, {.doc = "parallel list of bools"});
    v.Field("extra", extra, {.doc = "keys copied into the example's extra data"});
    v.Field("answer_transform", answer_transform,
            {.doc = "how the raw answer becomes the gold answer",
             .choices = {"none", "gsm8k", "index_to_letter", "bool_to_yesno", "first_element"}});
    v.Field("answer_from_solution_boxed", answer_from_solution_boxed,
            {.doc = "take the last \\boxed{} of the solution when there is no answer field"});
    v.Field("answer_format", answer_format,
            {.doc = "grading format", .choices = {"boxed", "choice", "number", "yesno", "text"}});
  }
};

// Config section `dataset` (one per split: `train_data`, `eval_data`, ...).
struct DatasetConfig {
  std::string path;
  std::string preset = "custom";  // see PresetNames(); "custom" uses `fields`
  FieldMapping fields;
  bool skip_bad_lines = false;
  int64_t max_examples = 0;           // 0 = all
  int64_t seed = 42;                  // GPQA option shuffling
  std::vector<std::string> subjects;  // keep only these extra.subject values (MMLU-STEM)

  void Describe(config::Visitor& v) {
    v.Field("path", path, {.doc = "JSONL file"});
    v.Field("preset", preset, {.doc = "dataset format", .choices = PresetChoices()});
    v.Field("fields", fields, {.doc = "field mapping for preset: custom"});
    v.Field("skip_bad_lines", skip_bad_lines, {.doc = "count and skip lines that do not fit"});
    v.Field("max_examples", max_examples, {.doc = "keep the first N (0 = all)", .min = 0});
    v.Field("seed", seed, {.doc = "seed for option shuffling (GPQA)"});
    v.Field("subjects", subjects, {.doc = "keep only these subjects (empty = all)"});
  }
  static std::vector<std::string> PresetChoices();
};

struct Dataset {
  std::string path;
  std::vector<Example> examples;
  size_t skipped = 0;                         // bad lines skipped under skip_bad_lines
  size_t filtered = 0;                        // lines dropped by the subject filter
  std::vector<std::string> skipped_messages;  // the first 20, each "<file>:<line>: ..."
};

// The mapping of a named preset ("gsm8k", "math", "math500", "commonsenseqa", "medqa",
// "mawps", "collegemath", "gpqa", "strategyqa", "mmlu_stem", "aime", "amc", "limo", "openr1").
Result<FieldMapping> PresetMapping(std::string_view preset);
std::vector<std::string> PresetNames();

Result<Dataset> LoadJsonl(const DatasetConfig& config);

// Parses one JSON line; `where` is "<file>:<line>" for messages and the fallback id.
Result<Example> ParseExample(std::string_view line, const FieldMapping& mapping,
                             const std::string& where, uint64_t seed);

// The content of the last \boxed{...} (or \fbox{...}) in `text`, nested braces included;
// empty when there is none.
std::string LastBoxed(std::string_view text);

}  // namespace allot::datasets
