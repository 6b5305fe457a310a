#include "envs/r2/sft_data.h"

#include <nlohmann/json.hpp>

#include "envs/runtime/prompt_template.h"
#include "llm/client.h"
#include "rewards/grader.h"

namespace allot::envs::r2 {
namespace {

Result<nlohmann::json> ParseLine(const std::string& line, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + ": not a JSON object");
  if (!j.contains("question") || !j["question"].is_string()) {
    return InvalidArgument(where + ": 'question' missing or not a string");
  }
  return j;
}

Result<std::vector<std::string>> Strings(const nlohmann::json& j, const std::string& field) {
  if (!j.is_array()) return InvalidArgument(field + ": not a list");
  std::vector<std::string> out;
  for (const auto& s : j) {
    if (!s.is_string()) return InvalidArgument(field + ": not a list of strings");
    out.push_back(s.get<std::string>());
  }
  if (out.empty()) return InvalidArgument(field + ": empty");
  return out;
}

Result<std::string> DecomposerPrompt(const R2Env& env, const std::string& question) {
  return runtime::RenderTemplate(env.config().r2.prompts.decomposer, {{"question", question}},
                                 "r2.prompts.decomposer");
}

}  // namespace

std::string SftLine(const std::string& prompt, const std::string& completion) {
  return nlohmann::json{{"prompt", prompt}, {"completion", completion}}.dump();
}

Result<DecomposerExample> DecomposerExampleFromLine(const std::string& line, const R2Env& env,
                                                    const DecompositionWeights& weights,
                                                    const std::string& where) {
  ALLOT_ASSIGN_OR_RETURN(nlohmann::json j, ParseLine(line, where));
  auto it = j.find("candidates");
  if (it == j.end() || !it->is_array() || it->empty()) {
    return InvalidArgument(where + ": 'candidates' missing or empty");
  }
  std::vector<DecompositionCandidate> candidates;
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& c = (*it)[i];
    const std::string field = where + ": candidates[" + std::to_string(i) + "]";
    if (!c.is_object()) return InvalidArgument(field + ": not an object");
    DecompositionCandidate d;
    if (c.contains("subtasks")) {
      ALLOT_ASSIGN_OR_RETURN(d.subtasks, Strings(c["subtasks"], field + ".subtasks"));
    } else if (c.contains("text") && c["text"].is_string()) {
      Result<std::vector<std::string>> parsed =
          ParseSubtasks(c["text"].get<std::string>(), env.config().r2.max_subtasks);
      if (!parsed.ok()) return parsed.status().Annotate(field + ".text");
      d.subtasks = std::move(parsed).value();
    } else {
      return InvalidArgument(field + ": neither 'subtasks' nor 'text'");
    }
    if (!c.contains("tokens") || !c["tokens"].is_number_integer() || c["tokens"] < 0) {
      return InvalidArgument(field + ".tokens: missing or not a count (Eq. 2)");
    }
    d.tokens = c["tokens"].get<int64_t>();
    const nlohmann::json a = c.value("incoherent_pairs", nlohmann::json(0));
    if (!a.is_number_integer() || a < 0 ||
        (d.subtasks.size() > 1 && a.get<int64_t>() > static_cast<int64_t>(d.subtasks.size()) - 1)) {
      return InvalidArgument(field + ".incoherent_pairs: not a count of adjacent pairs");
    }
    d.incoherent_pairs = a.get<int64_t>();
    const nlohmann::json ok = c.value("correct", nlohmann::json(false));
    if (!ok.is_boolean()) return InvalidArgument(field + ".correct: not a boolean");
    d.correct = ok.get<bool>();
    candidates.push_back(std::move(d));
  }
  const size_t best = *SelectDecomposition(candidates, weights);
  DecomposerExample out;
  ALLOT_ASSIGN_OR_RETURN(out.prompt, DecomposerPrompt(env, j["question"].get<std::string>()));
  out.completion = FormatSubtasks(candidates[best].subtasks);
  out.chosen = best;
  out.score = DecompositionScore(candidates[best], weights);
  out.correct = candidates[best].correct;
  return out;
}

Result<std::vector<float>> BaselineLogprobs(const R2Env& env, const std::string& baseline,
                                            const std::string& question,
                                            const std::vector<std::string>& subtasks,
                                            size_t index,
                                            const std::vector<std::string>& results) {
  const R2Section& r2 = env.config().r2;
  // The earlier reference results when there are, else none.
  const std::vector<std::string> earlier =
      results.size() >= index ? std::vector<std::string>(results.begin(), results.begin() + index)
                              : std::vector<std::string>();
  ALLOT_ASSIGN_OR_RETURN(std::string prompt,
                         env.SubtaskPrompt(question, subtasks, index, earlier));
  llm::CompletionRequest req;
  req.prompt = prompt;
  req.params.max_tokens = static_cast<int>(r2.subtask_max_tokens);
  req.params.temperature = 0.0;
  req.params.logprobs = 1;
  Result<llm::Completion> c = env.client().Complete(baseline, req).get();
  if (!c.ok()) return c.status().Annotate("baseline '" + baseline + "'");
  if (c->choices.empty() || c->choices[0].logprobs.empty()) {
    return DataLoss("baseline '" + baseline + "': the reply has no token log-probs");
  }
  std::vector<float> out;
  for (const llm::TokenLogprob& t : c->choices[0].logprobs) {
    out.push_back(static_cast<float>(t.logprob));
  }
  return out;
}

Result<AllocatorExample> AllocatorExampleFromLine(const std::string& line, const R2Env& env,
                                                  const DifficultyConfig& difficulty,
                                                  const GroupedSearchConfig& search,
                                                  const std::string& where,
                                                  const std::string& baseline) {
  ALLOT_RETURN_IF_ERROR(difficulty.Validate());
  ALLOT_ASSIGN_OR_RETURN(nlohmann::json j, ParseLine(line, where));
  const std::string question = j["question"].get<std::string>();
  Result<R2Item> item = ParseR2Item(line, env.default_format());
  if (!item.ok()) return item.status().Annotate(where);
  if (!j.contains("subtasks")) return InvalidArgument(where + ": 'subtasks' missing");
  ALLOT_ASSIGN_OR_RETURN(std::vector<std::string> subtasks,
                         Strings(j["subtasks"], where + ": subtasks"));
  AllocatorExample out;
  if (auto lp = j.find("logprobs"); lp != j.end()) {
    // Eq. 7 on the alpha-quantile of each subtask's baseline token probabilities.
    if (!lp->is_array() || lp->size() != subtasks.size()) {
      return InvalidArgument(where + ": 'logprobs' needs one list per subtask");
    }
    for (size_t i = 0; i < subtasks.size(); ++i) {
      std::vector<float> v;
      for (const auto& x : (*lp)[i]) {
        if (!x.is_number()) return InvalidArgument(where + ": logprobs[" + std::to_string(i) + "]");
        v.push_back(x.get<float>());
      }
      Result<double> p = AlphaQuantileProbability(v, difficulty.alpha);
      if (!p.ok()) return p.status().Annotate(where + ": logprobs[" + std::to_string(i) + "]");
      out.difficulty.push_back(ClassifyDifficulty(*p, difficulty));
    }
  } else if (auto d = j.find("difficulty"); d != j.end()) {
    ALLOT_ASSIGN_OR_RETURN(std::vector<std::string> names, Strings(*d, where + ": difficulty"));
    if (names.size() != subtasks.size()) {
      return InvalidArgument(where + ": 'difficulty' needs one label per subtask");
    }
    for (const std::string& n : names) {
      if (n == "easy")
        out.difficulty.push_back(Difficulty::kEasy);
      else if (n == "medium")
        out.difficulty.push_back(Difficulty::kMedium);
      else if (n == "hard")
        out.difficulty.push_back(Difficulty::kHard);
      else
        return InvalidArgument(where + ": difficulty '" + n + "' (easy, medium or hard)");
    }
  } else if (!baseline.empty()) {
    std::vector<std::string> results;
    if (j.contains("results")) {
      ALLOT_ASSIGN_OR_RETURN(results, Strings(j["results"], where + ": results"));
      if (results.size() != subtasks.size()) {
        return InvalidArgument(where + ": 'results' needs one per subtask");
      }
    }
    for (size_t i = 0; i < subtasks.size(); ++i) {
      Result<std::vector<float>> lp =
          BaselineLogprobs(env, baseline, question, subtasks, i, results);
      if (!lp.ok()) return lp.status().Annotate(where + ": subtask " + std::to_string(i + 1));
      ALLOT_ASSIGN_OR_RETURN(double p, AlphaQuantileProbability(*lp, difficulty.alpha));
      out.difficulty.push_back(ClassifyDifficulty(p, difficulty));
    }
  } else {
    return InvalidArgument(where + ": neither 'logprobs' nor 'difficulty' (or give a baseline)");
  }

  std::vector<PoolModel> pool;
  for (const std::string& name : env.pool()) {
    const llm::EndpointConfig* e = env.client().endpoint(name);
    pool.push_back({name, e != nullptr ? e->group : ""});
  }
  // Acc(M_A): execute on the pool, grade the integrated answer (Eq. 6's constraint).
  AccuracyFn accuracy = [&](const std::vector<std::string>& models) -> Result<bool> {
    std::vector<Assignment> allocation;
    for (const std::string& m : models) allocation.push_back({0, m});
    runtime::EpisodeInput input;
    runtime::Episode ep(&env.client(), env.config().r2.limits, input);
    Execution ex = env.Execute(ep, item->question, subtasks, allocation);
    if (ex.failure.failed()) return Unavailable(ex.failure.message);
    return rewards::Grade(ex.final_answer, item->reference, item->format).correct;
  };
  ALLOT_ASSIGN_OR_RETURN(out.search, GroupedSearch(out.difficulty, pool, accuracy, search));

  std::vector<Assignment> best;
  for (size_t i = 0; i < subtasks.size(); ++i) {
    best.push_back({DifficultyLabel(out.difficulty[i], difficulty), out.search.allocation[i]});
  }
  ALLOT_ASSIGN_OR_RETURN(std::string decomposer, DecomposerPrompt(env, question));
  ALLOT_ASSIGN_OR_RETURN(std::string allocator, env.AllocatorPrompt(subtasks.size()));
  out.prompt = decomposer + FormatSubtasks(subtasks) + allocator;
  out.completion = FormatAllocation(best);
  return out;
}

}  // namespace allot::envs::r2
