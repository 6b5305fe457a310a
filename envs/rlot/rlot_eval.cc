#include "envs/rlot/rlot_eval.h"

#include <algorithm>
#include <fstream>
#include <ostream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/progress_bar.h"
#include "core/random.h"
#include "envs/runtime/eval_output.h"
#include "rewards/majority_vote.h"

namespace allot::envs::rlot {
namespace {

std::vector<int> Blocks(const std::string& joined) {
  std::vector<int> out;
  std::stringstream in(joined);
  for (std::string name; std::getline(in, name, '-');) {
    for (int a = 0; a < kNumLogicBlocks; ++a) {
      if (name == LogicBlockName(a)) out.push_back(a);
    }
  }
  return out;
}

}  // namespace

std::string DatasetItem(const datasets::Example& e) {
  return nlohmann::json{
      {"question", e.PromptText()}, {"answer", e.answer}, {"format", e.answer_format}, {"id", e.id}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ChooserFactory NavigatorChooser(std::shared_ptr<const models::NavigatorMlp> navigator,
                                double epsilon) {
  return {[navigator, epsilon](uint64_t seed) -> BlockChooser {
            auto rng = std::make_shared<std::mt19937_64>(seed);
            return [navigator, epsilon, rng](const State& s, int) {
              std::uniform_real_distribution<double> coin(0.0, 1.0);
              if (epsilon > 0 && coin(*rng) < epsilon) {
                return std::uniform_int_distribution<int>(0, kNumLogicBlocks - 1)(*rng);
              }
              return navigator->Greedy(s);
            };
          },
          true};
}

ChooserFactory FixedChooser(std::vector<int> blocks) {
  return {[blocks](uint64_t) -> BlockChooser {
            return [blocks](const State&, int decision) {
              const size_t i = static_cast<size_t>(decision - 1);
              return i < blocks.size() ? blocks[i] : static_cast<int>(LogicBlock::kTerminate);
            };
          },
          false};
}

Result<RlotEvalReport> EvaluateRlot(RlotEnv& env, const std::vector<datasets::Example>& problems,
                                    const ChooserFactory& chooser, const std::string& method,
                                    const RlotEvalOptions& options) {
  return EvaluateTrails(
      problems,
      [&](const runtime::EpisodeInput& in) {
        return env.RunWith(in, chooser(in.seed), chooser.reads_state);
      },
      method, options);
}

bool IsChainOfThoughtMethod(const std::string& method) {
  return method == "cot" || method == "cot-sc";
}

Result<RlotEvalReport> EvaluateChainOfThought(RlotEnv& env,
                                              const std::vector<datasets::Example>& problems,
                                              const std::string& method,
                                              const RlotEvalOptions& options) {
  if (!IsChainOfThoughtMethod(method)) {
    return InvalidArgument("eval: '" + method + "' is not a CoT baseline (cot, cot-sc)");
  }
  RlotEvalOptions o = options;
  if (method == "cot-sc") o.trails = env.config().cot_sc_samples;
  return EvaluateTrails(
      problems, [&](const runtime::EpisodeInput& in) { return env.RunChainOfThought(in); }, method,
      o);
}

Result<RlotEvalReport> EvaluateTrails(const std::vector<datasets::Example>& problems,
                                      const TrailRunner& run, const std::string& method,
                                      const RlotEvalOptions& options) {
  if (options.trails < 1) return InvalidArgument("eval: trails must be >= 1");
  RlotEvalReport r;
  r.method = method;
  r.trails = options.trails;
  if (options.progress != nullptr) {
    options.progress->AddTotal(static_cast<int64_t>(problems.size()) * options.trails);
  }
  uint64_t n = 0;
  for (const datasets::Example& ex : problems) {
    RlotProblemRecord item;
    item.id = ex.id;
    item.difficulty = runtime::ExampleDifficulty(ex);
    std::vector<std::string> answers;
    for (int k = 0; k < options.trails; ++k) {
      runtime::EpisodeInput in;
      in.episode_id = ex.id + "#" + std::to_string(k);
      in.dataset_item = DatasetItem(ex);
      in.seed = SplitMix64Draw(options.seed, n++);
      ALLOT_ASSIGN_OR_RETURN(runtime::Trajectory t, run(in));
      ++r.trail_total;
      if (options.progress != nullptr) options.progress->Advance();
      r.usage.Merge(t.usage.total);
      const std::vector<int> blocks = Blocks(t.info["blocks"]);
      r.blocks += static_cast<int64_t>(blocks.size());
      for (int a : blocks) ++r.actions[static_cast<size_t>(a)];
      std::vector<int> body;
      for (int a : blocks) {
        if (a != static_cast<int>(LogicBlock::kTerminate)) body.push_back(a);
      }
      if (!body.empty()) ++r.patterns[static_cast<int>(body.size())][BlockPattern(body)];
      const bool failed = t.failure.failed();
      if (failed) ++r.failed_trails;
      double outcome = 0;
      for (const auto& [name, v] : t.rewards) {
        if (name == "outcome") outcome = v;
      }
      const bool ok = !failed && outcome > 0.5;
      if (ok) ++r.trail_correct;
      answers.push_back(failed ? "" : t.info["answer"]);
      RlotTrailRecord trail;
      trail.blocks = t.info["blocks"];
      trail.answer = answers.back();
      trail.correct = ok;
      if (failed) {
        trail.failure =
            std::string(runtime::FailureReasonName(t.failure.reason)) + ": " + t.failure.message;
      }
      item.trails.push_back(std::move(trail));
    }
    // RLoT Sec. 4.1: majority over equivalent answers; a seeded coin breaks ties.
    const rewards::VoteResult vote =
        rewards::MajorityVoteSeeded(answers, SplitMix64Draw(options.seed, ~n));
    item.voted_correct = vote.found && item.trails[static_cast<size_t>(vote.index)].correct;
    if (item.voted_correct) ++r.voted_correct;
    if (vote.tied_groups > 1) ++r.tied_votes;
    ++r.problems;
    r.items.push_back(std::move(item));
  }
  return r;
}

Result<std::vector<datasets::Example>> KeepHardProblems(RlotEnv& env,
                                                        const std::vector<datasets::Example>& all,
                                                        uint64_t seed, int64_t* failed) {
  std::vector<datasets::Example> hard;
  if (failed != nullptr) *failed = 0;
  const BlockChooser direct = FixedChooser({})(0);
  uint64_t n = 0;
  for (const datasets::Example& ex : all) {
    runtime::EpisodeInput in;
    in.episode_id = ex.id + "#direct";
    in.dataset_item = DatasetItem(ex);
    in.seed = SplitMix64Draw(seed, n++);
    ALLOT_ASSIGN_OR_RETURN(runtime::Trajectory t, env.RunWith(in, direct, false));
    if (t.failure.failed()) {
      if (failed != nullptr) ++*failed;
      continue;
    }
    double outcome = 0;
    for (const auto& [name, v] : t.rewards) {
      if (name == "outcome") outcome = v;
    }
    if (outcome < 0.5) hard.push_back(ex);
  }
  return hard;
}

int RunKeepHardCommand(RlotEnv& env, const datasets::DatasetConfig& data,
                       const std::string& out_path, uint64_t seed, std::ostream& out,
                       std::ostream& err) {
  auto ds = datasets::LoadJsonl(data);
  if (!ds.ok()) {
    err << "allot eval: " << ds.status().message() << "\n";
    return 1;
  }
  int64_t failed = 0;
  auto hard = KeepHardProblems(env, ds->examples, seed, &failed);
  if (!hard.ok()) {
    err << "allot eval: " << hard.status().message() << "\n";
    return 1;
  }
  // Example::source is "<file>:<line>": copy those lines verbatim.
  std::vector<bool> keep;
  for (const datasets::Example& e : *hard) {
    const size_t colon = e.source.rfind(':');
    const size_t line = colon == std::string::npos ? 0 : std::stoul(e.source.substr(colon + 1));
    if (line == 0) continue;
    if (keep.size() < line) keep.resize(line, false);
    keep[line - 1] = true;
  }
  std::ifstream in(data.path);
  std::string text, l;
  for (size_t n = 0; std::getline(in, l); ++n) {
    if (n < keep.size() && keep[n]) text += l + "\n";
  }
  if (Status s = WriteFileAtomic(out_path, text); !s.ok()) {
    err << "allot eval: " << s.message() << "\n";
    return 1;
  }
  out << "hard problems: " << hard->size() << " of " << ds->examples.size() << " (" << failed
      << " episodes failed and were left out) -> " << out_path << "\n";
  return 0;
}

std::string RlotEvalReport::ToJson() const {
  nlohmann::ordered_json j;
  j["method"] = method;
  j["problems"] = problems;
  j["trails"] = trails;
  j["trail_accuracy"] = trail_accuracy();
  j["self_consistent_accuracy"] = voted_accuracy();
  j["failed_trails"] = failed_trails;
  j["tied_votes"] = tied_votes;
  j["mean_blocks"] = trail_total > 0 ? static_cast<double>(blocks) / trail_total : 0.0;
  nlohmann::ordered_json a = nlohmann::ordered_json::object();
  for (int i = 0; i < kNumLogicBlocks; ++i) a[LogicBlockTitle(i)] = actions[static_cast<size_t>(i)];
  j["actions"] = a;
  nlohmann::ordered_json p = nlohmann::ordered_json::object();
  for (const auto& [len, counts] : patterns) p[std::to_string(len)] = counts;
  j["patterns"] = p;
  j["calls"] = usage.calls;
  j["prompt_tokens"] = usage.prompt_tokens;
  j["completion_tokens"] = usage.completion_tokens;
  j["cost_usd"] = usage.cost_usd;
  j["energy_j"] = usage.energy_j;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const RlotProblemRecord& item : items) {
    nlohmann::ordered_json one;
    one["id"] = item.id;
    if (!item.difficulty.empty()) one["difficulty"] = item.difficulty;
    one["voted_correct"] = item.voted_correct;
    nlohmann::ordered_json trails_json = nlohmann::ordered_json::array();
    for (const RlotTrailRecord& t : item.trails) {
      nlohmann::ordered_json tj = {
          {"blocks", t.blocks}, {"answer", t.answer}, {"correct", t.correct}};
      if (!t.failure.empty()) tj["failure"] = t.failure;
      trails_json.push_back(std::move(tj));
    }
    one["trails"] = std::move(trails_json);
    list.push_back(std::move(one));
  }
  j["items"] = std::move(list);
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string RlotEvalReport::ToText() const {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(3);
  o << method << ": " << problems << " problems x " << trails << " trails\n"
    << "  trail accuracy: " << trail_accuracy() << " (" << failed_trails << " failed)\n"
    << "  self-consistent accuracy: " << voted_accuracy() << " (" << tied_votes
    << " ties broken by the seed)\n"
    << "  calls: " << usage.calls << ", tokens: " << usage.prompt_tokens + usage.completion_tokens
    << ", cost $" << usage.cost_usd << "\n";
  return o.str();
}

}  // namespace allot::envs::rlot
