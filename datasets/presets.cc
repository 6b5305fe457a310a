// Field mappings of the dataset formats used by the papers. The shapes are those of the
// public releases (HF datasets JSONL exports); see tests/testdata/datasets/ for a few
// invented lines of each.
#include "datasets/jsonl_loader.h"

namespace allot::datasets {

std::vector<std::string> PresetNames() {
  return {"gsm8k",       "math",   "math500",    "commonsenseqa", "medqa", "mawps",
          "collegemath", "gpqa",   "strategyqa", "mmlu_stem",     "aime",  "amc",
          "limo",        "openr1", "p3",         "scan",          "champ", "musique"};
}

std::vector<std::string> DatasetConfig::PresetChoices() {
  std::vector<std::string> out = PresetNames();
  out.insert(out.begin(), "custom");
  return out;
}

Result<FieldMapping> PresetMapping(std::string_view preset) {
  FieldMapping m;
  if (preset == "custom") return m;
  if (preset == "gsm8k") {
    // {"question": ..., "answer": "<reasoning> #### 72"}
    m.answer_transform = "gsm8k";
    m.answer_format = "number";
  } else if (preset == "math" || preset == "math500") {
    // {"problem", "solution", "answer"?, "level", "type"|"subject", "unique_id"?}
    m.id = {"unique_id", "id"};
    m.question = {"problem", "question"};
    m.solution = {"solution"};
    m.answer_from_solution_boxed = true;
    m.answer_format = "boxed";
    m.extra = {"level", "type", "subject"};
  } else if (preset == "commonsenseqa") {
    // {"id", "question": {"stem", "choices": [{"label", "text"}]}, "answerKey"} or the flat
    // HF form {"id", "question", "choices": {"label": [...], "text": [...]}, "answerKey"}.
    m.question = {"question.stem", "question"};
    m.options = {"question.choices", "choices"};
    m.answer = {"answerKey"};
    m.answer_format = "choice";
  } else if (preset == "medqa") {
    // {"question", "options": {"A": ...}, "answer_idx": "C", "answer": "<text>"}
    m.options = {"options"};
    m.answer = {"answer_idx"};
    m.answer_format = "choice";
    m.extra = {"meta_info"};
  } else if (preset == "mawps") {
    // Several releases: {"question"|"Question"|"original_text"|"sQuestion",
    //                    "answer"|"Answer"|"ans"|"lSolutions": [x]}
    m.id = {"id", "iIndex"};
    m.question = {"question", "Question", "original_text", "sQuestion"};
    m.answer = {"answer", "Answer", "ans", "lSolutions"};
    m.answer_transform = "first_element";
    m.answer_format = "number";
  } else if (preset == "collegemath") {
    m.question = {"question", "problem"};
    m.answer = {"answer"};
    m.solution = {"solution"};
    m.answer_from_solution_boxed = true;
    m.answer_format = "boxed";
    m.extra = {"data_topic", "subject"};
  } else if (preset == "gpqa") {
    // {"Record ID", "Question", "Correct Answer", "Incorrect Answer 1..3", "Explanation"}
    m.id = {"Record ID", "id"};
    m.question = {"Question", "question"};
    m.answer = {"Correct Answer"};
    m.distractors = {"Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"};
    m.solution = {"Explanation"};
    m.answer_format = "choice";
    m.extra = {"Subdomain", "High-level domain"};
  } else if (preset == "strategyqa") {
    // {"qid", "question", "answer": true|false, "facts": [...]}
    m.id = {"qid", "id"};
    m.answer_transform = "bool_to_yesno";
    m.answer_format = "yesno";
    m.extra = {"facts"};
  } else if (preset == "mmlu_stem") {
    // {"question", "choices": [4 strings], "answer": 0..3, "subject"}
    m.options = {"choices"};
    m.answer_transform = "index_to_letter";
    m.answer_format = "choice";
    m.extra = {"subject"};
  } else if (preset == "aime" || preset == "amc") {
    m.id = {"id", "ID", "url"};
    m.question = {"problem", "question", "Problem"};
    m.answer = {"answer", "Answer"};
    m.solution = {"solution", "Solution"};
    m.answer_format = "number";
    m.extra = {"year", "url"};
  } else if (preset == "limo" || preset == "openr1") {
    // LIMO: {"question", "solution", "answer"}; OpenR1-Math: {"problem", "solution", "answer",
    // "generations": [...], "correctness_math_verify": [...]}
    m.id = {"uuid", "id"};
    m.question = {"question", "problem"};
    m.solution = {"solution"};
    m.answer_from_solution_boxed = true;
    m.answer_format = "boxed";
    m.trajectories = {"generations"};
    m.trajectory_verdicts = {"correctness_math_verify"};
    m.extra = {"problem_type", "question_type", "source"};
  } else if (preset == "p3") {
    // R2-Reasoner's P3 (Python Programming Puzzles): {"name", "sat": "def sat(...)", "sols",
    // "ans_type", ...} or an exported {"question", "answer"}; graded as text.
    m.id = {"name", "id"};
    m.question = {"question", "sat"};
    m.answer = {"answer"};
    m.extra = {"ans_type", "sol_header", "sol_docstring", "sols"};
    m.answer_format = "text";
  } else if (preset == "scan") {
    // SCAN: {"commands": "jump twice", "actions": "I_JUMP I_JUMP"}.
    m.question = {"commands", "command", "question"};
    m.answer = {"actions", "action", "answer"};
    m.answer_format = "text";
  } else if (preset == "champ") {
    // CHAMP (competition maths with concepts and hints): {"problem_identifier"|"id",
    // "problem_text"|"problem", "problem_answer"|"answer", "solution"?}.
    m.id = {"problem_identifier", "id"};
    m.question = {"problem_text", "problem", "question"};
    m.answer = {"problem_answer", "answer"};
    m.solution = {"solution", "solution_text"};
    m.answer_format = "text";
    m.extra = {"concepts", "hints"};
  } else if (preset == "musique") {
    // MuSiQue: {"id", "question", "answer", "answer_aliases", "paragraphs", "answerable",
    // "question_decomposition"}.
    m.question = {"question"};
    m.answer = {"answer"};
    m.answer_format = "text";
    m.extra = {"answer_aliases", "paragraphs", "question_decomposition", "answerable"};
  } else {
    std::string names;
    for (const auto& n : PresetNames()) names += (names.empty() ? "" : ", ") + n;
    return InvalidArgument("unknown dataset preset '" + std::string(preset) + "' (known: custom, " +
                           names + ")");
  }
  return m;
}

}  // namespace allot::datasets
