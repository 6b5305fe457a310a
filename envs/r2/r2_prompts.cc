#include "envs/r2/r2_prompts.h"

#include "envs/runtime/prompt_template.h"

namespace allot::envs::r2 {
namespace {

struct PromptSlot {
  const char* name;
  std::string R2Prompts::*text;
  std::vector<std::string> vars;
};

const std::vector<PromptSlot>& PromptSlots() {
  static const std::vector<PromptSlot> slots = {
      {"decomposer", &R2Prompts::decomposer, {"question"}},
      {"allocator", &R2Prompts::allocator, {"pool", "num_subtasks"}},
      {"subtask",
       &R2Prompts::subtask,
       // Not "question" first: a subtask may stand alone ({{subtask_filled}}); ResolvePrompts
       // requires {{subtask}} or {{subtask_filled}} instead.
       {"subtask", "subtask_filled", "question", "previous", "index", "subtasks", "done"}},
      {"integrate", &R2Prompts::integrate, {"question", "results", "steps"}},
      {"review", &R2Prompts::review, {"question", "previous", "subtask", "answer"}},
      {"single", &R2Prompts::single, {"question"}},
  };
  return slots;
}

}  // namespace

std::string Trimmed(std::string s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// "Step 1: <subtask>\nResult: <r_1>\n\n..." for the results so far.
std::string StepsText(const std::vector<std::string>& subtasks,
                      const std::vector<std::string>& results) {
  std::string out;
  for (size_t i = 0; i < results.size(); ++i) {
    out += "Step " + std::to_string(i + 1) + ": " + subtasks[i] + "\nResult: " + results[i] + "\n";
    if (i + 1 < results.size()) out += "\n";
  }
  return out.empty() ? "(none)" : out;
}

// "Subtask1: <t^1>\n..." for every subtask (the tiny world's solve_subtask layout).
std::string SubtaskListText(const std::vector<std::string>& subtasks) {
  std::string out;
  for (size_t i = 0; i < subtasks.size(); ++i) {
    out += "Subtask" + std::to_string(i + 1) + ": " + subtasks[i] + "\n";
  }
  return out;
}

// "Subtask1: <t^1>\nResult: <r_1>\n..." for the results so far, "(none yet)\n" before any.
std::string DoneText(const std::vector<std::string>& subtasks,
                     const std::vector<std::string>& results) {
  std::string out;
  for (size_t i = 0; i < results.size(); ++i) {
    out +=
        "Subtask" + std::to_string(i + 1) + ": " + subtasks[i] + "\nResult: " + results[i] + "\n";
  }
  return out.empty() ? "(none yet)\n" : out;
}

// "Step 1: <r_1>\n..." for every result (the tiny world's final-answer layout).
std::string ResultStepsText(const std::vector<std::string>& results) {
  std::string out;
  for (size_t i = 0; i < results.size(); ++i) {
    out += "Step " + std::to_string(i + 1) + ": " + results[i] + "\n";
  }
  return out;
}

std::string FillResults(const std::string& subtask, const std::vector<std::string>& results,
                        rewards::AnswerFormat format) {
  std::string out;
  for (size_t i = 0; i < subtask.size();) {
    size_t j = i + 1;
    while (subtask[i] == '#' && j < subtask.size() && subtask[j] >= '0' && subtask[j] <= '9') ++j;
    const size_t k = j > i + 1 && j - i <= 4 ? std::stoul(subtask.substr(i + 1, j - i - 1)) : 0;
    if (k >= 1 && k <= results.size()) {
      const rewards::ExtractedAnswer a = rewards::ExtractAnswer(results[k - 1], format);
      out += a.found ? a.text : Trimmed(results[k - 1]);
    } else {
      out.append(subtask, i, j - i);
    }
    i = j;
  }
  return out;
}

Status ResolvePrompts(R2Prompts& p) {
  std::vector<runtime::PromptSlotRef> refs;
  for (const PromptSlot& slot : PromptSlots())
    refs.push_back({slot.name, &(p.*slot.text), slot.vars});
  ALLOT_RETURN_IF_ERROR(runtime::ResolvePromptSlots(p.dir, "r2.prompts", refs));
  if (p.subtask.find("{{subtask}}") == std::string::npos &&
      p.subtask.find("{{subtask_filled}}") == std::string::npos) {
    return InvalidArgument(
        "r2.prompts.subtask: the template uses neither {{subtask}} nor "
        "{{subtask_filled}}");
  }
  return Status::Ok();
}

}  // namespace allot::envs::r2
