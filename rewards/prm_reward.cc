#include "rewards/prm_reward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace allot::rewards {
namespace {

using nlohmann::json;

std::string RemoveAll(std::string s, const std::string& needle) {
  if (needle.empty()) return s;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p)) {
    s.erase(p, needle.size());
  }
  return s;
}

std::string OneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

// A token's text without the tokenizer's space markers ("Ġ", "▁") and whitespace.
std::string StripToken(std::string t) {
  for (const char* marker : {"\xC4\xA0", "\xE2\x96\x81"}) t = RemoveAll(t, marker);
  size_t b = 0, e = t.size();
  while (b < e && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(t[e - 1]))) --e;
  return t.substr(b, e - b);
}

// log(sum(exp)) of the logprobs of every alternative that is `token` once stripped.
std::optional<double> TokenLogprob(const json& alternatives, const std::string& token) {
  double best = -std::numeric_limits<double>::infinity();
  bool found = false;
  for (auto it = alternatives.begin(); it != alternatives.end(); ++it) {
    if (!it.value().is_number() || StripToken(it.key()) != token) continue;
    double lp = it.value().get<double>();
    best = found ? std::max(best, lp) + std::log1p(std::exp(-std::abs(best - lp))) : lp;
    found = true;
  }
  if (!found) return std::nullopt;
  return best;
}

}  // namespace

Result<PrmPrompt> BuildPrmPrompt(const std::string& question, const std::vector<std::string>& steps,
                                 const PrmRewardConfig& config, const TokenCounter& count_tokens) {
  if (steps.empty()) return InvalidArgument("PRM input: no steps");
  std::vector<std::string> lines;
  lines.reserve(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string text = OneLine(RemoveAll(steps[i], config.step_tag));
    lines.push_back("Step " + std::to_string(i + 1) + ": " + text + " " + config.step_tag);
  }
  const std::string head = RemoveAll(question, config.step_tag) + " ";
  auto render = [&](size_t first) {
    PrmPrompt p;
    p.first_step = first;
    p.num_steps = steps.size() - first;
    p.text = head;
    for (size_t i = first; i < steps.size(); ++i) {
      if (i > first) p.text += "\n";
      p.text += lines[i];
    }
    return p;
  };
  PrmPrompt all = render(0);
  if (!count_tokens || config.max_prompt_tokens <= 0) return all;
  auto fits = [&](const PrmPrompt& p) -> Result<bool> {
    ALLOT_ASSIGN_OR_RETURN(int64_t n, count_tokens(p.text));
    return n <= config.max_prompt_tokens;
  };
  ALLOT_ASSIGN_OR_RETURN(bool whole, fits(all));
  if (whole) return all;
  // Dropping steps only shortens the prompt: find the smallest first step that fits.
  size_t lo = 1, hi = steps.size() - 1;  // the answer lies in [lo, hi] if anything fits
  bool last_fits = false;
  if (hi >= lo) {
    ALLOT_ASSIGN_OR_RETURN(last_fits, fits(render(hi)));
  }
  if (!last_fits) {
    return ResourceExhausted("PRM input: the question and the last step alone exceed " +
                             std::string("max_prompt_tokens ") +
                             std::to_string(config.max_prompt_tokens));
  }
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    ALLOT_ASSIGN_OR_RETURN(bool ok, fits(render(mid)));
    if (ok) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return render(lo);
}

Result<std::vector<double>> ParsePoolingStepScores(const json& reply, size_t num_steps) {
  if (!reply.is_object() || !reply.contains("data") || !reply["data"].is_array() ||
      reply["data"].empty() || !reply["data"][0].is_object() ||
      !reply["data"][0].contains("data") || !reply["data"][0]["data"].is_array()) {
    return DataLoss("PRM pooling reply: no data[0].data (is the endpoint a step-pooling PRM?)");
  }
  const json& rows = reply["data"][0]["data"];
  if (rows.size() < num_steps) {
    return DataLoss("PRM pooling reply: " + std::to_string(rows.size()) +
                    " step-tag rows, expected " + std::to_string(num_steps));
  }
  std::vector<double> probs;
  for (size_t i = rows.size() - num_steps; i < rows.size(); ++i) {
    const json& r = rows[i];
    if (!r.is_array() || r.size() < 2 || !r[0].is_number() || !r[1].is_number()) {
      return DataLoss("PRM pooling reply: data[0].data[" + std::to_string(i) +
                      "] is not [P(+), P(-)]");
    }
    const double good = r[0].get<double>(), bad = r[1].get<double>();
    if (!(good >= 0) || !(bad >= 0) || !(good + bad > 0)) {
      return DataLoss("PRM pooling reply: data[0].data[" + std::to_string(i) +
                      "] holds no probabilities");
    }
    probs.push_back(good / (good + bad));  // already normalised by a STEP pooler
  }
  return probs;
}

Result<std::vector<double>> ParseStepProbabilities(const json& reply, const PrmRewardConfig& config,
                                                   size_t num_steps) {
  if (!reply.is_object() || !reply.contains("choices") || !reply["choices"].is_array() ||
      reply["choices"].empty()) {
    return DataLoss("PRM reply: no choices[0]");
  }
  const json& choice = reply["choices"][0];
  if (!choice.is_object() || !choice.contains("logprobs") || !choice["logprobs"].is_object()) {
    return DataLoss(
        "PRM reply: choices[0].logprobs missing (does the endpoint support echo "
        "with logprobs?)");
  }
  const json& lp = choice["logprobs"];
  if (!lp.contains("tokens") || !lp["tokens"].is_array() || !lp.contains("top_logprobs") ||
      !lp["top_logprobs"].is_array()) {
    return DataLoss("PRM reply: choices[0].logprobs.tokens/top_logprobs missing");
  }
  const json& tokens = lp["tokens"];
  const json& top = lp["top_logprobs"];
  std::vector<size_t> tags;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].is_string() && StripToken(tokens[i].get<std::string>()) == config.step_tag) {
      tags.push_back(i);
    }
  }
  if (tags.size() < num_steps) {
    return DataLoss("PRM reply: " + std::to_string(tags.size()) + " step tags among the echoed " +
                    "tokens, expected " + std::to_string(num_steps));
  }
  std::vector<double> probs;
  for (size_t t = tags.size() - num_steps; t < tags.size(); ++t) {
    const size_t at = tags[t] + 1;
    if (at >= top.size() || !top[at].is_object()) {
      return DataLoss("PRM reply: no top_logprobs after the step tag at token " +
                      std::to_string(tags[t]));
    }
    std::optional<double> good = TokenLogprob(top[at], config.good_token);
    std::optional<double> bad = TokenLogprob(top[at], config.bad_token);
    if (!good && !bad) {
      return DataLoss("PRM reply: neither '" + config.good_token + "' nor '" + config.bad_token +
                      "' among top_logprobs[" + std::to_string(at) + "]");
    }
    if (!good) {
      probs.push_back(0.0);
    } else if (!bad) {
      probs.push_back(1.0);
    } else {
      probs.push_back(1.0 / (1.0 + std::exp(*bad - *good)));  // softmax over {+, -}
    }
  }
  return probs;
}

Result<double> ParseClassifyScore(const json& reply, const PrmRewardConfig& config) {
  if (!reply.is_object() || !reply.contains("data") || !reply["data"].is_array() ||
      reply["data"].empty() || !reply["data"][0].is_object()) {
    return DataLoss("PRM classify reply: no data[0]");
  }
  const json& d = reply["data"][0];
  if (d.contains("probs") && d["probs"].is_array()) {
    const json& probs = d["probs"];
    size_t idx = probs.size() == 1 ? 0 : static_cast<size_t>(config.positive_index);
    if (idx >= probs.size() || !probs[idx].is_number()) {
      return DataLoss("PRM classify reply: data[0].probs has no number at index " +
                      std::to_string(idx));
    }
    return probs[idx].get<double>();
  }
  if (d.contains("score") && d["score"].is_number()) return d["score"].get<double>();
  if (d.contains("data")) {
    // Pooling: a number, a vector (class scores), or per-token rows (take the last row).
    const json* v = &d["data"];
    if (v->is_array() && !v->empty() && (*v)[0].is_array()) v = &v->back();
    if (v->is_number()) return v->get<double>();
    if (v->is_array() && !v->empty()) {
      size_t idx = v->size() == 1 ? 0 : static_cast<size_t>(config.positive_index);
      if (idx < v->size() && (*v)[idx].is_number()) return (*v)[idx].get<double>();
    }
    return DataLoss("PRM pooling reply: data[0].data holds no score");
  }
  return DataLoss("PRM classify reply: data[0] has none of probs, score, data");
}

PrmReward::PrmReward(PrmRewardConfig config, JsonTransport transport)
    : config_(std::move(config)), transport_(std::move(transport)) {}

Result<std::vector<double>> PrmReward::StepScores(const std::string& question,
                                                  const std::vector<std::string>& steps) const {
  if (!transport_) return Internal("PRM reward: no transport");
  TokenCounter count = [this](const std::string& text) -> Result<int64_t> {
    json body = {{"model", config_.model}, {"prompt", text}};
    ALLOT_ASSIGN_OR_RETURN(json reply, transport_(config_.tokenize_path, body));
    if (reply.is_object() && reply.contains("count") && reply["count"].is_number_integer()) {
      return reply["count"].get<int64_t>();
    }
    if (reply.is_object() && reply.contains("tokens") && reply["tokens"].is_array()) {
      return static_cast<int64_t>(reply["tokens"].size());
    }
    return DataLoss("PRM tokenize reply (" + config_.tokenize_path + "): no count or tokens");
  };
  ALLOT_ASSIGN_OR_RETURN(PrmPrompt prompt, BuildPrmPrompt(question, steps, config_, count));
  if (config_.mode == "pooling") {
    json body = {{"model", config_.model},
                 {"input", prompt.text},
                 {"step_tag", config_.step_tag},
                 {"returned_tokens", {config_.good_token, config_.bad_token}}};
    ALLOT_ASSIGN_OR_RETURN(json reply,
                           transport_(config_.path.empty() ? "/pooling" : config_.path, body));
    return ParsePoolingStepScores(reply, prompt.num_steps);
  }
  if (config_.mode == "classify") {
    json body = {{"model", config_.model}, {"input", prompt.text}};
    const std::string path = config_.path.empty() ? "/classify" : config_.path;
    ALLOT_ASSIGN_OR_RETURN(json reply, transport_(path, body));
    ALLOT_ASSIGN_OR_RETURN(double score, ParseClassifyScore(reply, config_));
    return std::vector<double>{score};
  }
  json body = {{"model", config_.model},
               {"prompt", prompt.text},
               {"max_tokens", 1},
               {"echo", true},
               {"logprobs", config_.top_logprobs},
               {"temperature", 0.0}};
  const std::string path = config_.path.empty() ? "/v1/completions" : config_.path;
  ALLOT_ASSIGN_OR_RETURN(json reply, transport_(path, body));
  return ParseStepProbabilities(reply, config_, prompt.num_steps);
}

Result<double> PrmReward::Compute(const RewardInput& input) const {
  ALLOT_ASSIGN_OR_RETURN(std::vector<double> scores, StepScores(input.question, input.steps));
  if (scores.empty()) return DataLoss("PRM reward: no step scores");
  if (config_.aggregate == "min") return *std::min_element(scores.begin(), scores.end());
  if (config_.aggregate == "mean") {
    double s = 0;
    for (double v : scores) s += v;
    return s / static_cast<double>(scores.size());
  }
  if (config_.aggregate == "product") {
    double p = 1;
    for (double v : scores) p *= v;
    return p;
  }
  return scores.back();
}

}  // namespace allot::rewards
