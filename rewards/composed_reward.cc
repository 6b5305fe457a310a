#include "rewards/composed_reward.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace allot::rewards {
namespace {

bool IsCostTerm(const std::string& name) {
  return name == "api_cost" || name == "energy" || name == "tokens";
}

}  // namespace

std::string RewardBreakdown::ToString() const {
  std::ostringstream os;
  os << "total=" << total;
  for (const auto& [name, value] : values) os << " " << name << "=" << value;
  return os.str();
}

Result<GradeOptions> AnswerCheckConfig::ToGradeOptions() const {
  GradeOptions o;
  if (max_choice.size() != 1 || max_choice[0] < 'B' || max_choice[0] > 'Z') {
    return InvalidArgument("rewards.answer.max_choice: '" + max_choice + "' is not a letter B..Z");
  }
  Result<AnswerFormat> f = ParseAnswerFormat(format);
  if (!f.ok()) return f.status().Annotate("rewards.answer.format");
  o.extract.max_choice = max_choice[0];
  o.extract.last_number_fallback = last_number_fallback;
  o.equivalence.math.rel_tol = rel_tol;
  o.equivalence.max_input_chars = static_cast<size_t>(max_input_chars);
  return o;
}

Result<std::unique_ptr<ComposedReward>> ComposedReward::Create(const RewardConfig& config,
                                                               RewardDeps deps) {
  ALLOT_ASSIGN_OR_RETURN(GradeOptions grade, config.answer.ToGradeOptions());
  Result<AnswerFormat> default_format = ParseAnswerFormat(config.answer.format);
  if (!default_format.ok()) return default_format.status().Annotate("rewards.answer.format");
  auto composed = std::unique_ptr<ComposedReward>(new ComposedReward());
  std::set<std::string> seen;
  for (size_t i = 0; i < config.terms.size(); ++i) {
    const RewardTermConfig& t = config.terms[i];
    const std::string where = "rewards.terms[" + std::to_string(i) + "]";
    if (!seen.insert(t.name).second) {
      return InvalidArgument(where + ".name: '" + t.name + "' is listed twice");
    }
    std::unique_ptr<RewardTerm> term;
    if (t.name == "format") {
      term = std::make_unique<FormatReward>(config.format);
    } else if (t.name == "accuracy") {
      term = std::make_unique<AccuracyReward>(grade, *default_format, config.format);
    } else if (t.name == "hierarchy") {
      std::shared_ptr<const MinLevelOracle> oracle;
      if (config.hierarchy.oracle == "dataset") {
        oracle = std::make_shared<DatasetMinLevelOracle>();
      } else if (config.hierarchy.oracle == "solver") {
        if (!deps.level_solver) {
          return InvalidArgument(
              "rewards.hierarchy.oracle: 'solver' needs a level solver from "
              "the environment");
        }
        oracle =
            std::make_shared<SolvingMinLevelOracle>(deps.level_solver, config.format.num_levels);
      } else if (config.hierarchy.oracle == "outcomes") {
        oracle = std::make_shared<OutcomeMinLevelOracle>();
      } else {
        return InvalidArgument("rewards.hierarchy.oracle: unknown '" + config.hierarchy.oracle +
                               "'");
      }
      term = std::make_unique<HierarchyReward>(config.hierarchy, config.format, oracle);
    } else if (t.name == "prm") {
      if (!deps.prm_transport) {
        return InvalidArgument(where + ": the prm term needs a PRM endpoint (transport)");
      }
      term = std::make_unique<PrmReward>(config.prm, deps.prm_transport);
    } else if (t.name == "action") {
      term = std::make_unique<ActionCentricReward>(config.action);
    } else if (t.name == "api_cost") {
      term = std::make_unique<ApiCostReward>(config.cost);
    } else if (t.name == "energy") {
      term = std::make_unique<EnergyReward>(config.cost);
    } else if (t.name == "tokens") {
      term = std::make_unique<TokenReward>(config.cost);
    } else {
      return InvalidArgument(where + ".name: unknown reward term '" + t.name + "'");
    }
    composed->terms_.push_back({std::move(term), t.weight});
  }
  if (config.cost.when == "correct") {
    if (std::none_of(seen.begin(), seen.end(), IsCostTerm)) {
      return InvalidArgument(
          "rewards.cost.when: 'correct' has no effect without an api_cost, energy or tokens term");
    }
    if (seen.count("accuracy") == 0) {
      return InvalidArgument(
          "rewards.cost.when: 'correct' needs the accuracy term in rewards.terms (it decides "
          "which episodes pay their cost)");
    }
    composed->cost_when_correct_ = true;
  } else if (config.cost.when != "always") {
    return InvalidArgument("rewards.cost.when: '" + config.cost.when +
                           "' is not always or correct");
  }
  return composed;
}

Result<RewardBreakdown> ComposedReward::Compute(const RewardInput& input) const {
  RewardBreakdown b;
  for (const Weighted& w : terms_) {
    Result<double> v = w.term->Compute(input);
    if (!v.ok()) return v.status().Annotate("reward term '" + w.term->name() + "'");
    b.values[w.term->name()] = *v;
    b.weights[w.term->name()] = w.weight;
  }
  // rewards.cost.when: correct. A wrong answer pays no cost, so that answering nothing (a
  // malformed plan that calls no model) is worth no more than a wrong answer that did the work.
  const bool correct = !cost_when_correct_ || b.values["accuracy"] >= 1.0;
  for (const Weighted& w : terms_) {
    double& value = b.values[w.term->name()];
    if (!correct && IsCostTerm(w.term->name())) value = 0.0;
    b.total += w.weight * value;
  }
  return b;
}

}  // namespace allot::rewards
