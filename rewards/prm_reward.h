// Process reward from a Math-Shepherd-style PRM (RLoT Sec. 3.2; notes.md), served by an
// OpenAI-compatible endpoint.
//
// Input: the problem, then "Step i: <text> ки" for each step, one step per line. The PRM's
// distribution at each step tag, restricted to the tokens "+" and "-" and renormalised
// (a softmax over just those two), gives P(+) for that step. With /v1/completions and
// {"echo": true, "logprobs": k, "max_tokens": 1}, the reply's choices[0].logprobs holds for
// every prompt token i the top-k alternatives *for token i*; the distribution predicted at the
// tag at token i is therefore top_logprobs[i + 1] (for the last tag, the first generated
// token). When the input is longer than max_prompt_chars, the earliest steps are dropped.
//
// Alternatively a pooling/classify endpoint (vLLM /classify, /pooling) scores the whole chain:
// the reply's data[0].probs[positive_index], data[0].score, or the last value of data[0].data.
//
// The transport is injected: a function that POSTs a JSON body to a path of the PRM endpoint
// and returns the parsed reply (the llm/ client in production, canned replies in tests).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/schema.h"
#include "rewards/reward_term.h"

namespace allot::rewards {

using JsonTransport =
    std::function<Result<nlohmann::json>(const std::string& path, const nlohmann::json& body)>;

struct PrmRewardConfig {
  std::string mode = "completions";
  std::string path;  // empty: /v1/completions or /classify by mode
  std::string model = "math-shepherd-mistral-7b-prm";
  std::string step_tag = "\xD0\xBA\xD0\xB8";  // "ки", Math-Shepherd's step tag
  std::string good_token = "+";
  std::string bad_token = "-";
  int top_logprobs = 20;
  int64_t max_prompt_chars = 12000;
  std::string aggregate = "last";  // RLoT: the last step's P(+)
  int positive_index = 1;          // classify: the class whose probability is the score

  void Describe(config::Visitor& v) {
    v.Field("mode", mode,
            {.doc = "completions: step-tag logprobs; classify: a pooling/classify endpoint",
             .choices = {"completions", "classify"}});
    v.Field("path", path, {.doc = "endpoint path; empty for /v1/completions or /classify"});
    v.Field("model", model, {.doc = "model name sent to the PRM endpoint"});
    v.Field("step_tag", step_tag, {.doc = "the tag ending every step (Math-Shepherd: ки)"});
    v.Field("good_token", good_token, {.doc = "token meaning a correct step"});
    v.Field("bad_token", bad_token, {.doc = "token meaning a wrong step"});
    v.Field("top_logprobs", top_logprobs, {.doc = "logprobs requested per position", .min = 2});
    v.Field("max_prompt_chars", max_prompt_chars,
            {.doc = "earliest steps are dropped beyond this length", .min = 64});
    v.Field("aggregate", aggregate,
            {.doc = "step scores to one reward (RLoT: last)",
             .choices = {"last", "min", "mean", "product"}});
    v.Field("positive_index", positive_index,
            {.doc = "classify: index of the good class", .min = 0});
  }
};

struct PrmPrompt {
  std::string text;
  size_t first_step = 0;  // index of the first step kept (earlier ones were dropped)
  size_t num_steps = 0;   // steps in the prompt
};

// "question Step 1: a ки\nStep 2: b ки". Tags inside step text are removed so that every tag
// in the prompt ends a step. ResourceExhausted when even the last step alone does not fit.
Result<PrmPrompt> BuildPrmPrompt(const std::string& question, const std::vector<std::string>& steps,
                                 const PrmRewardConfig& config);

// P(+) for each of the last `num_steps` tags in an echoed completions reply. DataLoss names
// what is missing or malformed.
Result<std::vector<double>> ParseStepProbabilities(const nlohmann::json& reply,
                                                   const PrmRewardConfig& config, size_t num_steps);

// The score of a pooling/classify reply.
Result<double> ParseClassifyScore(const nlohmann::json& reply, const PrmRewardConfig& config);

class PrmReward : public RewardTerm {
 public:
  PrmReward(PrmRewardConfig config, JsonTransport transport);
  std::string name() const override { return "prm"; }
  // RewardInput::question and ::steps; the aggregate of the step scores.
  Result<double> Compute(const RewardInput& input) const override;
  // P(+) of each step kept in the prompt (completions mode), or the one chain score (classify).
  Result<std::vector<double>> StepScores(const std::string& question,
                                         const std::vector<std::string>& steps) const;

 private:
  PrmRewardConfig config_;
  JsonTransport transport_;
};

}  // namespace allot::rewards
