#include "trainer/grpo/delivery_probe.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/random.h"

namespace allot::trainer::grpo {

double DefaultProbeTolerance(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::BFloat16:
      return kDefaultProbeToleranceBFloat16;
    case c10::ScalarType::Half:
      return kDefaultProbeToleranceFloat16;
    default:
      return kDefaultProbeToleranceFloat32;
  }
}

Status DeliveryProbe::Draw(const models::Tokenizer& tokenizer,
                           const std::vector<std::string>& prompts, uint64_t seed, int tokens,
                           int64_t max_tokens) {
  tokens_.clear();
  if (prompts.empty()) return InvalidArgument("grpo.delivery_probe: no training prompts");
  const int64_t want = std::min<int64_t>(std::max(tokens, 2), std::max<int64_t>(max_tokens, 2));
  // core/random.h: the same seed draws the same probe on every platform and in a resumed run.
  SplitMix64 rng(SplitMix64Hash(seed ^ 0x70726F6265ull));  // "probe"
  const size_t first = static_cast<size_t>(rng.Below(prompts.size()));
  for (size_t k = 0; k < prompts.size(); ++k) {
    const std::string& text = prompts[(first + k) % prompts.size()];
    auto ids = tokenizer.Encode(text, {.parse_special = false, .add_special_tokens = false});
    if (!ids.ok() || ids->size() < 2) continue;
    const int64_t n = std::min<int64_t>(want, static_cast<int64_t>(ids->size()));
    const uint64_t starts = ids->size() - static_cast<uint64_t>(n) + 1;
    const int64_t start = static_cast<int64_t>(rng.Below(starts));
    tokens_.assign(ids->begin() + start, ids->begin() + start + n);
    return Status::Ok();
  }
  return InvalidArgument(
      "grpo.delivery_probe: no training prompt has two tokens to probe the endpoint with");
}

std::vector<double> DeliveryProbe::LearnerLogprobs(models::CausalLMImpl& model) const {
  torch::NoGradGuard no_grad;
  const bool training = model.is_training();
  model.eval();  // no LoRA dropout: the served adapter has none either
  std::vector<int64_t> ids(tokens_.begin(), tokens_.end());
  at::Tensor input = torch::tensor(ids, torch::kLong).view({1, -1});
  at::Tensor lp = model.TokenLogProbs(input, {}, 512, /*temperature=*/1.0)
                      .to(torch::kCPU)
                      .to(torch::kDouble)
                      .contiguous();
  if (training) model.train();
  const double* p = lp.data_ptr<double>();
  return std::vector<double>(p, p + lp.numel());
}

Result<ProbeResult> DeliveryProbe::Compare(
    const std::vector<std::optional<llm::TopLogprob>>& served, std::vector<double> learner,
    const std::string& url, const std::string& adapter, const std::vector<double>& previous) const {
  const std::string where =
      "grpo: delivery probe: policy endpoint " + url + ", adapter '" + adapter + "'";
  if (served.empty()) {
    return Unimplemented(
        where +
        ": the reply holds no prompt_logprobs, so the learner cannot check that the endpoint "
        "computes with the adapter it just published (vLLM and allot serve return them); set "
        "grpo.delivery_probe.enabled: false to train without this check");
  }
  if (served.size() != tokens_.size()) {
    return DataLoss(fmt::format("{}: prompt_logprobs has {} entries for a probe of {} tokens",
                                where, served.size(), tokens_.size()));
  }
  ProbeResult out;
  double sum = 0.0, sum_previous = 0.0;
  size_t worst = 0;
  const bool has_previous = previous.size() == learner.size() && !previous.empty();
  for (size_t t = 1; t < tokens_.size(); ++t) {
    if (!served[t].has_value()) {
      return DataLoss(fmt::format("{}: prompt_logprobs[{}] is null", where, t));
    }
    if (served[t]->token_id >= 0 && served[t]->token_id != tokens_[t]) {
      return DataLoss(fmt::format("{}: prompt_logprobs[{}] is for token {}, the probe has {}",
                                  where, t, served[t]->token_id, tokens_[t]));
    }
    const double d = std::abs(served[t]->logprob - learner[t - 1]);
    if (!std::isfinite(d)) {
      return DataLoss(fmt::format("{}: prompt_logprobs[{}] is {}, the learner's {}", where, t,
                                  served[t]->logprob, learner[t - 1]));
    }
    sum += d;
    if (has_previous) sum_previous += std::abs(served[t]->logprob - previous[t - 1]);
    if (d > out.max_abs_diff) {
      out.max_abs_diff = d;
      worst = t;
    }
  }
  out.mean_abs_diff = sum / static_cast<double>(tokens_.size() - 1);
  if (out.mean_abs_diff > tolerance_) {
    return Unavailable(fmt::format(
        "{}: the served log-probs of the probe differ from the learner's under the weights it "
        "just published by {:.3g} on average over {} tokens (max {:.3g} at token {}), above the "
        "tolerance {:.3g} (grpo.delivery_probe.tolerance): the endpoint is not computing with "
        "the published adapter (it may keep the previous weights, or serve the base model or "
        "another adapter under this name)",
        where, out.mean_abs_diff, tokens_.size() - 1, out.max_abs_diff, worst, tolerance_));
  }
  // The previous weights: the reply sits clearly nearer the learner's log-probs at the last
  // publish than the ones just published (an update that moved nothing ties and passes).
  const double mean_previous = sum_previous / static_cast<double>(tokens_.size() - 1);
  if (has_previous && mean_previous < 0.5 * out.mean_abs_diff) {
    return Unavailable(fmt::format(
        "{}: the served log-probs of the probe match the weights of the previous publish (mean "
        "difference {:.3g}) better than the weights just published ({:.3g}, within the "
        "tolerance {:.3g}): the endpoint keeps the previous weights under the new name",
        where, mean_previous, out.mean_abs_diff, tolerance_));
  }
  out.learner = std::move(learner);
  return out;
}

Result<ProbeResult> DeliveryProbe::Check(llm::Client& client, const std::string& endpoint,
                                         const std::string& url, const std::string& adapter,
                                         models::CausalLMImpl& model,
                                         const std::string& published_sha256,
                                         const std::vector<double>& previous) const {
  llm::CompletionRequest req;
  req.model = adapter;
  req.prompt_token_ids.assign(tokens_.begin(), tokens_.end());
  req.params.max_tokens = 1;
  req.params.temperature = 0.0;    // raw log-probs in vLLM (V0 and V1) and allot serve
  req.params.prompt_logprobs = 0;  // the prompt token alone at each position
  auto reply = client.Complete(endpoint, req).get();
  if (!reply.ok()) {
    return Status(reply.status().code(), "grpo: delivery probe: policy endpoint " + url +
                                             ", adapter '" + adapter +
                                             "': " + reply.status().message());
  }
  if (!reply->adapter_sha256.empty() && reply->adapter_sha256 != published_sha256) {
    return Unavailable("grpo: delivery probe: policy endpoint " + url + " answered for '" +
                       adapter + "' with the adapter of sha256 " + reply->adapter_sha256 +
                       ", but the published adapter_model.safetensors has sha256 " +
                       published_sha256 + ": it decodes with other weights");
  }
  return Compare(reply->choices.front().prompt_logprobs, LearnerLogprobs(model), url, adapter,
                 previous);
}

}  // namespace allot::trainer::grpo
