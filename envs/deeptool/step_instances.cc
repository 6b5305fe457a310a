#include "envs/deeptool/step_instances.h"

#include <fstream>

#include "envs/runtime/prompt_template.h"

namespace allot::envs::deeptool {

std::vector<nlohmann::json> ExpandStepInstances(const ExpertTrajectory& t,
                                                const StepInstanceOptions& options) {
  std::vector<nlohmann::json> out;
  for (size_t k = 0; k < t.steps.size(); ++k) {
    if (options.skip_intrinsic_targets && t.steps[k].perturbation == "intrinsic") continue;
    nlohmann::json j = t.extra;
    j["id"] = t.id + "#" + std::to_string(k + 1);
    j["question"] = t.question;
    j["answer"] = t.answer;
    j["step"] = k + 1;
    // Eq. 5: the ground-truth history before step k, and step k as the target.
    j["history"] = StepsToJson({t.steps.begin(), t.steps.begin() + static_cast<ptrdiff_t>(k)});
    j["reference_steps"] = StepsToJson({t.steps[k]});
    out.push_back(std::move(j));
  }
  return out;
}

Result<std::vector<nlohmann::json>> StepSftRecords(const ExpertTrajectory& t,
                                                   const SftLayout& layout,
                                                   const StepInstanceOptions& options) {
  ALLOT_ASSIGN_OR_RETURN(
      std::string prompt,
      runtime::RenderTemplate(layout.tir_template, {{"question", t.question}}, "prompts.tir"));
  std::vector<nlohmann::json> out;
  for (size_t k = 0; k < t.steps.size(); ++k) {
    if (options.skip_intrinsic_targets && t.steps[k].perturbation == "intrinsic") continue;
    const std::vector<ExpertStep> history(t.steps.begin(),
                                          t.steps.begin() + static_cast<ptrdiff_t>(k));
    out.push_back({{"id", t.id + "#" + std::to_string(k + 1)},
                   {"prompt", prompt + RenderHistory(history, layout.tags, layout.observation_tag)},
                   {"completion", RenderStepAction(t.steps[k], layout.tags)}});
  }
  return out;
}

Result<StepInstanceStats> WriteStepSftRecords(const std::string& in_path,
                                              const std::string& out_path, const SftLayout& layout,
                                              const StepInstanceOptions& options) {
  ALLOT_ASSIGN_OR_RETURN(std::vector<ExpertTrajectory> trajectories,
                         ReadExpertTrajectories(in_path));
  std::ofstream out(out_path);
  if (!out) return InvalidArgument(out_path + ": cannot write");
  StepInstanceStats stats;
  for (const ExpertTrajectory& t : trajectories) {
    ++stats.trajectories;
    ALLOT_ASSIGN_OR_RETURN(std::vector<nlohmann::json> records, StepSftRecords(t, layout, options));
    stats.skipped_targets += static_cast<int64_t>(t.steps.size() - records.size());
    for (const nlohmann::json& j : records) {
      out << j.dump() << "\n";
      ++stats.instances;
    }
  }
  out.flush();
  if (!out) return Internal(out_path + ": write failed");
  return stats;
}

Result<std::vector<ExpertTrajectory>> ReadExpertTrajectories(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open");
  std::vector<ExpertTrajectory> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return InvalidArgument(where + ": not valid JSON");
    ALLOT_ASSIGN_OR_RETURN(ExpertTrajectory t, ParseExpertTrajectory(j, where));
    if (t.id.empty()) t.id = std::to_string(n);
    out.push_back(std::move(t));
  }
  return out;
}

Result<StepInstanceStats> WriteStepInstances(const std::string& in_path,
                                             const std::string& out_path,
                                             const StepInstanceOptions& options) {
  ALLOT_ASSIGN_OR_RETURN(std::vector<ExpertTrajectory> trajectories,
                         ReadExpertTrajectories(in_path));
  std::ofstream out(out_path);
  if (!out) return InvalidArgument(out_path + ": cannot write");
  StepInstanceStats stats;
  for (const ExpertTrajectory& t : trajectories) {
    ++stats.trajectories;
    std::vector<nlohmann::json> instances = ExpandStepInstances(t, options);
    stats.skipped_targets += static_cast<int64_t>(t.steps.size() - instances.size());
    for (const nlohmann::json& j : instances) {
      out << j.dump() << "\n";
      ++stats.instances;
    }
  }
  out.flush();
  if (!out) return Internal(out_path + ": write failed");
  return stats;
}

}  // namespace allot::envs::deeptool
