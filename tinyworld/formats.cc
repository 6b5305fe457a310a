#include "tinyworld/formats.h"

namespace allot::tinyworld {

std::string Prompt(std::string_view question, std::string_view context,
                   std::string_view instruction) {
  std::string out(question);
  out += '\n';
  if (!context.empty()) {
    out += context;
    out += '\n';
  }
  out += instruction;
  out += '\n';
  return out;
}

std::string LevelTag(int level) {
  return std::string(kLevelOpen) + "L" + std::to_string(level) + std::string(kLevelClose);
}

std::string ToolQuery(std::string_view query) {
  return std::string(kToolQueryOpen) + " " + std::string(query) + " " +
         std::string(kToolQueryClose);
}

std::string ToolResult(std::string_view result) {
  return std::string(kToolResultOpen) + " " + std::string(result) + " " +
         std::string(kToolResultClose);
}

std::string Boxed(std::string_view answer) {
  return std::string(kBoxedOpen) + std::string(answer) + "}";
}

std::string FinalAnswer(std::string_view answer) {
  return std::string(kAnswerLead) + Boxed(answer);
}

std::string StepLine(int index, std::string_view text) {
  return std::string(kStepPrefix) + std::to_string(index) + ": " + std::string(text);
}

std::string SelfEvalLine(std::string_view key, int score, std::string_view reason) {
  return std::string(key) + std::string(kScoreField) + std::to_string(score) +
         std::string(kReasonField) + std::string(reason);
}

std::string SubtaskLine(int index, std::string_view text) {
  return std::string(kSubtaskPrefix) + std::to_string(index) + ": " + std::string(text);
}

std::string PlanLine(int index, std::string_view text) {
  return std::string(kPlanPrefix) + std::to_string(index) + ": " + std::string(text);
}

std::string PromisingPlanLine(int index, std::string_view reason) {
  return std::string(kPromisingPlan) + std::to_string(index) + ": " + std::string(reason);
}

std::string NumberedLine(int index, std::string_view text) {
  return std::to_string(index) + ". " + std::string(text);
}

}  // namespace allot::tinyworld
