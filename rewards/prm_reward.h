// Process reward from a Math-Shepherd-style PRM (RLoT Sec. 3.2; notes.md), served by an
// OpenAI-compatible endpoint.
//
// Input: the problem, then "Step i: <text> ки" for each step, one step per line. The PRM's
// distribution at each step tag, restricted to the tokens "+" and "-" and renormalised
// (a softmax over just those two), gives P(+) for that step. With /v1/completions and
// {"echo": true, "logprobs": k, "max_tokens": 1}, the reply's choices[0].logprobs holds for
// every prompt token i the top-k alternatives *for token i*; the distribution predicted at the
// tag at token i is therefore top_logprobs[i + 1] (for the last tag, the first generated
// token).
//
// Alternatively a pooling/classify endpoint (vLLM /classify, /pooling) scores the whole chain:
// the reply's data[0].probs[positive_index], data[0].score, or the last value of data[0].data.
//
// The transport is injected: a function that POSTs a JSON body to a path of the PRM endpoint
// and returns the parsed reply (the llm/ client in production, canned replies in tests).
//
// Pooling mode (the default of RLoT's recipe) is the PRM as a real endpoint: POST /pooling with
// step pooling, the route vLLM serves for a reward model run with `pooling_type: STEP` and
// allot serve serves for any local model (llm/serve/step_pooling.h). One forward pass returns
// [P(+), P(-)] at every step tag; nothing depends on the top-k of completion log-probs.
//
// Truncation is by tokens: with max_prompt_tokens > 0 the prompt is measured with the
// endpoint's /tokenize (vLLM and allot serve), and the earliest steps are dropped until it
// fits (a binary search over the first kept step, so log2(steps) + 1 requests at most).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/schema.h"
#include "rewards/reward_term.h"
#include "rewards/step_scorer.h"

namespace allot::rewards {

using JsonTransport =
    std::function<Result<nlohmann::json>(const std::string& path, const nlohmann::json& body)>;

// Tokens of a text as the PRM's tokenizer counts them.
using TokenCounter = std::function<Result<int64_t>(const std::string& text)>;

struct PrmRewardConfig {
  std::string mode = "completions";
  std::string path;  // empty: /v1/completions or /classify by mode
  std::string model = "math-shepherd-mistral-7b-prm";
  std::string step_tag = "\xD0\xBA\xD0\xB8";  // "ки", Math-Shepherd's step tag
  std::string good_token = "+";
  std::string bad_token = "-";
  int top_logprobs = 20;
  int64_t max_prompt_tokens = 0;  // 0: never truncate (the endpoint refuses long input)
  std::string tokenize_path = "/tokenize";
  std::string aggregate = "last";  // RLoT: the last step's P(+)
  int positive_index = 1;          // classify: the class whose probability is the score

  void Describe(config::Visitor& v) {
    v.Field("mode", mode,
            {.doc = "pooling: P(+) at every step tag from /pooling (vLLM STEP pooling, allot "
                    "serve); completions: echoed top logprobs; classify: one chain score",
             .choices = {"pooling", "completions", "classify"}});
    v.Field("path", path,
            {.doc = "endpoint path; empty for /pooling, /v1/completions or /classify by mode"});
    v.Field("model", model, {.doc = "model name sent to the PRM endpoint"});
    v.Field("step_tag", step_tag, {.doc = "the tag ending every step (Math-Shepherd: ки)"});
    v.Field("good_token", good_token, {.doc = "token meaning a correct step"});
    v.Field("bad_token", bad_token, {.doc = "token meaning a wrong step"});
    v.Field("top_logprobs", top_logprobs, {.doc = "logprobs requested per position", .min = 2});
    v.Field("max_prompt_tokens", max_prompt_tokens,
            {.doc = "earliest steps are dropped beyond this many tokens (0: never)", .min = 0});
    v.Field("tokenize_path", tokenize_path,
            {.doc = "the endpoint's tokenizer route, for max_prompt_tokens"});
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
// in the prompt ends a step. With `count_tokens` and max_prompt_tokens > 0 the earliest steps
// are dropped until the prompt fits; ResourceExhausted when even the last step alone does not.
Result<PrmPrompt> BuildPrmPrompt(const std::string& question, const std::vector<std::string>& steps,
                                 const PrmRewardConfig& config,
                                 const TokenCounter& count_tokens = nullptr);

// P(+) for each of the last `num_steps` rows of a step-pooling reply (data[0].data holds
// [P(+), P(-)] per tag); DataLoss names what is missing.
Result<std::vector<double>> ParsePoolingStepScores(const nlohmann::json& reply, size_t num_steps);

// P(+) for each of the last `num_steps` tags in an echoed completions reply. DataLoss names
// what is missing or malformed.
Result<std::vector<double>> ParseStepProbabilities(const nlohmann::json& reply,
                                                   const PrmRewardConfig& config, size_t num_steps);

// The score of a pooling/classify reply.
Result<double> ParseClassifyScore(const nlohmann::json& reply, const PrmRewardConfig& config);

class PrmReward : public RewardTerm, public StepScorer {
 public:
  PrmReward(PrmRewardConfig config, JsonTransport transport);
  std::string name() const override { return "prm"; }
  // RewardInput::question and ::steps; the aggregate of the step scores.
  Result<double> Compute(const RewardInput& input) const override;
  // P(+) of each step kept in the prompt (completions mode), or the one chain score (classify).
  Result<std::vector<double>> StepScores(const std::string& question,
                                         const std::vector<std::string>& steps) const override;

 private:
  PrmRewardConfig config_;
  JsonTransport transport_;
};

}  // namespace allot::rewards
