#include "trainer/dqn/navigator_eval.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/atomic_file.h"
#include "core/progress_bar.h"
#include "envs/rlot/logic_block.h"
#include "envs/rlot/rlot_eval.h"
#include "envs/synthetic/chain_episode.h"
#include "trainer/dqn/navigator_weights.h"

namespace allot::trainer {
namespace {

struct Trail {
  std::vector<int> actions;  // applied
  double ret = 0;
};

Trail RunTrail(const models::NavigatorMlp& nav, const envs::ChainMdpConfig& config, double epsilon,
               std::mt19937_64& rng) {
  envs::ChainMdp env(config);
  std::uniform_real_distribution<double> coin(0, 1);
  std::uniform_int_distribution<int> any(0, envs::ChainMdp::kNumActions - 1);
  Trail t;
  t.ret = envs::RunChainEpisode(
      env,
      [&](const envs::ChainMdp::State& s) {
        return (epsilon > 0 && coin(rng) < epsilon) ? any(rng) : nav.Greedy(s);
      },
      [&](const envs::ChainEpisodeStep& s) { t.actions.push_back(s.step.applied_action); });
  return t;
}

std::string Encode(const std::vector<int>& actions, int terminate) {
  std::string out;
  for (int a : actions) {
    if (a != terminate) out += static_cast<char>('1' + a);
  }
  return out.empty() ? "9" : out;  // "9": terminated at once
}

}  // namespace

rewards::VoteResult SelfConsistentAnswer(int trails, const std::function<std::string(int)>& trail,
                                         const rewards::EquivalenceOptions& options) {
  std::vector<std::string> answers;
  for (int i = 0; i < trails; ++i) answers.push_back(trail(i));
  return rewards::MajorityVote(answers, options);
}

std::string BlockPattern(const std::vector<int>& actions) {
  return envs::rlot::BlockPattern(actions);
}

NavigatorEvalReport EvaluateNavigatorOnChain(const models::NavigatorMlp& nav,
                                             const envs::ChainMdpConfig& config,
                                             const NavigatorEvalOptions& options) {
  NavigatorEvalReport r;
  r.episodes = options.episodes;
  r.trails = std::max(1, options.trails);
  r.optimal_return = envs::ChainMdp(config).OptimalReturn();
  std::vector<int> optimal(config.sequence.begin(), config.sequence.end());
  optimal.push_back(config.terminate_action);
  const std::string correct = Encode(optimal, config.terminate_action);
  std::mt19937_64 rng(options.seed);
  int64_t trails_total = 0, trails_correct = 0, voted_correct = 0, steps = 0;
  for (int e = 0; e < r.episodes; ++e) {
    auto vote = SelfConsistentAnswer(r.trails, [&](int) {
      Trail t = RunTrail(nav, config, options.epsilon, rng);
      ++trails_total;
      r.mean_return += t.ret;
      steps += static_cast<int64_t>(t.actions.size());
      for (int a : t.actions) ++r.action_histogram[static_cast<size_t>(a) % 5];
      std::vector<int> blocks;
      for (int a : t.actions) {
        if (a != config.terminate_action) blocks.push_back(a);
      }
      if (!blocks.empty()) ++r.patterns[static_cast<int>(blocks.size())][BlockPattern(blocks)];
      const std::string answer = Encode(t.actions, config.terminate_action);
      if (answer == correct) ++trails_correct;
      return answer;
    });
    if (vote.found && vote.answer == correct) ++voted_correct;
  }
  if (trails_total > 0) {
    r.mean_return /= static_cast<double>(trails_total);
    r.trail_accuracy = static_cast<double>(trails_correct) / static_cast<double>(trails_total);
    r.mean_steps = static_cast<double>(steps) / static_cast<double>(trails_total);
  }
  if (r.episodes > 0) r.voted_accuracy = static_cast<double>(voted_correct) / r.episodes;
  return r;
}

namespace {

std::vector<std::pair<std::string, int64_t>> Top(const std::map<std::string, int64_t>& m, int k) {
  std::vector<std::pair<std::string, int64_t>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (static_cast<int>(v.size()) > k) v.resize(static_cast<size_t>(k));
  return v;
}

}  // namespace

std::string FormatEvalReport(const NavigatorEvalReport& r) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(3);
  o << "episodes: " << r.episodes << " x " << r.trails << " trails\n"
    << "mean return: " << r.mean_return << " (optimal " << r.optimal_return << ")\n"
    << "trail accuracy: " << r.trail_accuracy << "\n"
    << "self-consistent accuracy: " << r.voted_accuracy << "\n"
    << "mean steps: " << r.mean_steps << "\n"
    << "actions:";
  for (int a = 0; a < 5; ++a)
    o << " " << envs::rlot::LogicBlockTitle(a) << "=" << r.action_histogram[static_cast<size_t>(a)];
  o << "\n";
  // RLoT Table 5: the major k-step patterns.
  for (const auto& [len, counts] : r.patterns) {
    o << "major " << len << "-step pattern:";
    for (const auto& [p, n] : Top(counts, 2)) o << " " << p << " (" << n << ")";
    o << "\n";
  }
  return o.str();
}

std::string EvalReportJson(const NavigatorEvalReport& r) {
  nlohmann::ordered_json j;
  j["episodes"] = r.episodes;
  j["trails"] = r.trails;
  j["mean_return"] = r.mean_return;
  j["optimal_return"] = r.optimal_return;
  j["trail_accuracy"] = r.trail_accuracy;
  j["self_consistent_accuracy"] = r.voted_accuracy;
  j["mean_steps"] = r.mean_steps;
  nlohmann::ordered_json actions = nlohmann::ordered_json::object();
  for (int a = 0; a < 5; ++a) {
    actions[envs::rlot::LogicBlockTitle(a)] = r.action_histogram[static_cast<size_t>(a)];
  }
  j["actions"] = actions;
  nlohmann::ordered_json patterns = nlohmann::ordered_json::object();
  for (const auto& [len, counts] : r.patterns) patterns[std::to_string(len)] = counts;
  j["patterns"] = patterns;
  return j.dump(2) + "\n";
}

int RunNavigatorEval(const std::string& run_dir_or_checkpoint, const envs::ChainMdpConfig& env,
                     const NavigatorEvalOptions& options, const std::string& json_out) {
  auto weights = LoadNavigatorWeights(run_dir_or_checkpoint);
  if (!weights.ok()) {
    std::cerr << "allot eval: " << weights.status().message() << "\n";
    return 1;
  }
  auto nav = weights->Mlp();
  if (!nav.ok()) {
    std::cerr << "allot eval: " << nav.status().message() << "\n";
    return 1;
  }
  if (nav->shape().state_dim != envs::ChainMdp::kStateDim ||
      nav->shape().num_actions != envs::ChainMdp::kNumActions) {
    std::cerr << "allot eval: " << weights->source << ": the chain env needs a 7 -> 5 navigator\n";
    return 1;
  }
  if (options.episodes < 1 || options.trails < 1) {
    std::cerr << "allot eval: episodes and trails must be >= 1\n";
    return 1;
  }
  NavigatorEvalReport report = EvaluateNavigatorOnChain(*nav, env, options);
  std::cout << "navigator: " << weights->source << "\n" << FormatEvalReport(report);
  if (!json_out.empty()) {
    Status s = WriteFileAtomic(json_out, EvalReportJson(report));
    if (!s.ok()) {
      std::cerr << "allot eval: " << s.message() << "\n";
      return 1;
    }
  }
  return 0;
}

namespace {

Result<envs::rlot::ChooserFactory> RlotChooser(const std::string& run, const std::string& method,
                                               double epsilon) {
  if (method == "direct") return envs::rlot::FixedChooser({});
  if (method.rfind("fixed:", 0) == 0) {
    std::vector<int> blocks;
    std::stringstream in(method.substr(6));
    for (std::string name; std::getline(in, name, '-');) {
      int found = -1;
      for (int a = 0; a < envs::rlot::kNumLogicBlocks; ++a) {
        if (name == envs::rlot::LogicBlockName(a)) found = a;
      }
      if (found < 0) return InvalidArgument("--method " + method + ": no block named '" + name + "'");
      blocks.push_back(found);
    }
    return envs::rlot::FixedChooser(std::move(blocks));
  }
  if (method != "navigator") {
    return InvalidArgument("--method " + method +
                           ": expected navigator, direct, cot, cot-sc or fixed:...");
  }
  ALLOT_ASSIGN_OR_RETURN(NavigatorWeights weights, LoadNavigatorWeights(run));
  ALLOT_ASSIGN_OR_RETURN(models::NavigatorMlp mlp, weights.Mlp());
  if (mlp.shape().state_dim != envs::rlot::kStateDim ||
      mlp.shape().num_actions != envs::rlot::kNumLogicBlocks) {
    return InvalidArgument(weights.source + ": the rlot env needs a 7 -> 5 navigator");
  }
  return envs::rlot::NavigatorChooser(
      std::make_shared<const models::NavigatorMlp>(std::move(mlp)), epsilon);
}

}  // namespace

int RunRlotEval(const std::string& run_dir_or_checkpoint, const envs::rlot::RlotEnvConfig& env,
                const std::vector<datasets::Example>& problems, const NavigatorEvalOptions& options,
                const std::string& method, const std::string& json_out) {
  // The CoT baselines need no navigator (RLoT Sec. 4.1).
  const bool cot = envs::rlot::IsChainOfThoughtMethod(method);
  auto chooser = cot ? Result<envs::rlot::ChooserFactory>(envs::rlot::FixedChooser({}))
                     : RlotChooser(run_dir_or_checkpoint, method, options.epsilon);
  if (!chooser.ok()) {
    std::cerr << "allot eval: " << chooser.status().message() << "\n";
    return 1;
  }
  auto rlot = envs::rlot::RlotEnv::Create(env);
  if (!rlot.ok()) {
    std::cerr << "allot eval: " << rlot.status().message() << "\n";
    return 1;
  }
  std::vector<datasets::Example> subset = problems;
  if (options.episodes > 0 && subset.size() > static_cast<size_t>(options.episodes)) {
    subset.resize(static_cast<size_t>(options.episodes));
  }
  envs::rlot::RlotEvalOptions eo;
  eo.trails = options.trails;
  eo.seed = options.seed;
  ProgressBar progress(0, "eval rlot " + method + ": trails", stderr);
  eo.progress = &progress;
  auto report = cot ? envs::rlot::EvaluateChainOfThought(**rlot, subset, method, eo)
                    : envs::rlot::EvaluateRlot(**rlot, subset, *chooser, method, eo);
  progress.Finish();
  if (!report.ok()) {
    std::cerr << "allot eval: " << report.status().message() << "\n";
    return 1;
  }
  std::cout << report->ToText();
  if (!json_out.empty()) {
    Status s = WriteFileAtomic(json_out, report->ToJson());
    if (!s.ok()) {
      std::cerr << "allot eval: " << s.message() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace allot::trainer
