#include "trainer/grpo/advantage_estimators.h"

#include "trainer/grpo/advantages.h"
#include "trainer/grpo/variant_registry.h"

namespace allot::trainer::grpo {

namespace {

// Both built-ins: the group's outcome advantages and, where step rewards are given, the
// return-to-go of the group-normalised step rewards.
AdvantageOutputs GroupRelative(const AdvantageInputs& in, bool normalize_std) {
  const AdvantageOptions options{.normalize_std = normalize_std};
  AdvantageOutputs out;
  out.outcome = GroupAdvantages(in.rewards, in.group, options);
  if (!in.step_rewards.empty()) out.step = StepAdvantages(in.step_rewards, in.group, options);
  return out;
}

VariantRegistry<AdvantageEstimator>& Registry() {
  static VariantRegistry<AdvantageEstimator>* registry = [] {
    auto* r = new VariantRegistry<AdvantageEstimator>("grpo.advantage_estimator");
    (void)r->Register({
        .name = "grpo",
        .doc = "(r - group mean) / (group std + eps) (GRPO; CogER, R2-Reasoner)",
        .compute = [](const AdvantageInputs& in) { return GroupRelative(in, true); },
    });
    (void)r->Register({
        .name = "dr_grpo",
        .doc = "r - group mean, no division by the group std (Dr.GRPO)",
        .compute = [](const AdvantageInputs& in) { return GroupRelative(in, false); },
    });
    return r;
  }();
  return *registry;
}

}  // namespace

Status RegisterAdvantageEstimator(AdvantageEstimator estimator) {
  if (!estimator.compute) {
    return InvalidArgument("grpo.advantage_estimator: '" + estimator.name +
                           "' has no compute function");
  }
  return Registry().Register(std::move(estimator));
}

Result<const AdvantageEstimator*> FindAdvantageEstimator(const std::string& name) {
  return Registry().Find(name);
}

std::vector<std::string> AdvantageEstimatorNames() { return Registry().Names(); }

}  // namespace allot::trainer::grpo
