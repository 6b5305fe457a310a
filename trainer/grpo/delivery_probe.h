// Proof of delivery by what the endpoint computes.
//
// A version counter, or an adapter name listed by /v1/models, proves that an update was
// announced, not that the weights arrived: verl #7495 trained against the frozen base for two
// months under LoRA while its counters advanced. After each publish the learner therefore sends
// a fixed probe (a short token sequence drawn once per run from the training prompts) to the
// policy endpoint under the new adapter's name, asks for the probe's prompt_logprobs (vLLM's
// field; allot serve answers it too), computes the same log-probs with the weights it just
// published, and compares. Where the endpoint names the adapter that decoded by its sha256
// (allot serve's adapter_sha256, llm/serve/server.h), that is checked against the published
// file too. Either mismatch fails the run in the step of the publish, naming the URL, the
// adapter and the size of the difference.
//
// Both sides use raw log-probs (logits not divided by a temperature: the probe asks for
// temperature 0, which vLLM and allot serve report as raw), and the learner's are computed in
// eval mode (no LoRA dropout).
//
// The tolerance bounds the mean absolute difference over the probe's tokens. Defaults by the
// learner's dtype: float32 1e-3 (the same weights computed by another engine differ by about
// 1e-5 in float32 on a CPU, so this leaves room for kernels and reduction orders on a GPU),
// float16 2e-2 and bfloat16 5e-2 (half-precision rounding of the hidden states moves a token's
// log-prob by 1e-2 or so). They are to be checked against measurements on a GPU. A fault shows
// only when the update moved the probe's log-probs by more than the tolerance: the
// `delivery/probe_step_change` metric reports how far each update moved them. Measured on an
// H200 in bfloat16 (docs/benchmarks.md, 2026-11-28): allot serve and the learner agree exactly
// (difference 0), while one update at lr 1e-5 moves the probe by only 0.008-0.03, under the
// bfloat16 tolerance. So the probe also compares the reply with the learner's log-probs at the
// previous publish: a reply that matches those clearly better (at less than half the distance)
// than the weights just published comes from the previous weights, whatever the tolerance.
// Rounding noise of another engine moves both distances alike and does not trip it; a fault
// shows once an update moves the probe by more than that noise.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "llm/client.h"
#include "models/causal_lm.h"
#include "models/tokenizer/tokenizer.h"

namespace allot::trainer::grpo {

inline constexpr double kDefaultProbeToleranceFloat32 = 1e-3;
inline constexpr double kDefaultProbeToleranceFloat16 = 2e-2;
inline constexpr double kDefaultProbeToleranceBFloat16 = 5e-2;

// The default tolerance for a learner whose weights are `dtype`.
double DefaultProbeTolerance(c10::ScalarType dtype);

// What one probe measured.
struct ProbeResult {
  double max_abs_diff = 0.0;    // over the probe's tokens, |served - learner|
  double mean_abs_diff = 0.0;   // the quantity the tolerance bounds
  std::vector<double> learner;  // the learner's log-probs of probe tokens 1..n-1
};

// Not thread-safe; one per learner, shared by its publishers (adapter_publisher.h), which
// call Check after each load.
class DeliveryProbe {
 public:
  explicit DeliveryProbe(double tolerance) : tolerance_(tolerance) {}

  // Draws the probe from the run seed alone: one training prompt, and up to `tokens`
  // consecutive token ids of its text (at least 2, at most `max_tokens`). InvalidArgument when
  // no prompt has two tokens.
  Status Draw(const models::Tokenizer& tokenizer, const std::vector<std::string>& prompts,
              uint64_t seed, int tokens, int64_t max_tokens);

  bool ready() const { return tokens_.size() >= 2; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  double tolerance() const { return tolerance_; }

  // The learner's log-probs of tokens 1..n-1 of the probe under `model` as it is now.
  std::vector<double> LearnerLogprobs(models::CausalLMImpl& model) const;

  // Asks `endpoint` (at `url`, for messages) for the probe's prompt_logprobs under `adapter`
  // and compares them with `model`'s; `published_sha256` is the published
  // adapter_model.safetensors' digest, checked against the reply's adapter_sha256 when the
  // endpoint sends one. `previous`: the learner's log-probs at the previous publish (empty at
  // the first), for the previous-weights check above. Fails naming the URL, the adapter and
  // the size of the difference.
  Result<ProbeResult> Check(llm::Client& client, const std::string& endpoint,
                            const std::string& url, const std::string& adapter,
                            models::CausalLMImpl& model, const std::string& published_sha256,
                            const std::vector<double>& previous = {}) const;

  // The comparison alone: `served` is a reply's prompt_logprobs (entry 0 is not read).
  Result<ProbeResult> Compare(const std::vector<std::optional<llm::TopLogprob>>& served,
                              std::vector<double> learner, const std::string& url,
                              const std::string& adapter,
                              const std::vector<double>& previous = {}) const;

 private:
  double tolerance_;
  std::vector<int32_t> tokens_;
};

}  // namespace allot::trainer::grpo
