// Policy sync with proof of delivery (design.md: LoRA sync goes by adapter only).
//
// After each update the learner writes the adapter in PEFT format as a new version under
// `root`/v<N>, loads it into the policy endpoint with /v1/load_lora_adapter under the name
// "<prefix>-v<N>" (the versioned model name vLLM and allot serve both answer with; the prefix
// is the run's name, so that runs sharing one long-lived endpoint never collide), and then
// checks /v1/models until the name is listed. Loads are retried with backoff within a timeout;
// an endpoint that never lists the new version fails the run with an error naming its URL
// (adapters silently never reaching the engine is verl #7495). Old versions are unloaded once
// no episode that may still sample them is outstanding.
//
// A listed name proves only that the load was announced. With a DeliveryProbe (delivery_probe.h)
// each publish is then proven by what the endpoint computes: the probe's prompt_logprobs under
// the new name must match the learner's under the weights just written, and an endpoint that
// reports the sha256 of the adapter it applied must report the written file's.
//
// The last part of the proof is per token: each policy segment's TokenSegment.policy_version
// is the version in the model name the endpoint answered with, and the learner measures
// staleness from it (grpo_trainer.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "llm/client.h"
#include "models/causal_lm.h"
#include "trainer/grpo/delivery_probe.h"

namespace allot::trainer::grpo {

struct PublisherOptions {
  std::string endpoint;           // logical endpoint name in the llm::Client
  std::string root;               // directory that receives v<N>/
  std::string prefix = "policy";  // served as "<prefix>-v<N>"; the run name
  std::string base_model;         // base_model_name_or_path in adapter_config.json
  double timeout_s = 30.0;
  int retries = 3;
  // Checks every publish once ready() (null, or not drawn yet: no check). Owned by the trainer;
  // it outlives the publisher.
  const DeliveryProbe* probe = nullptr;
};

// What the probe of the last publish measured.
struct ProbeReport {
  std::string adapter;
  double max_abs_diff = 0.0;
  double mean_abs_diff = 0.0;
  // Mean |learner log-prob now - at this publisher's previous publish| over the probe: how far
  // the update moved the probe, i.e. the smallest fault the tolerance can tell apart (absent
  // at the first publish).
  std::optional<double> step_change;
};

class AdapterPublisher {
 public:
  AdapterPublisher(llm::Client* client, PublisherOptions options)
      : client_(client), options_(std::move(options)) {}

  // Writes the model's adapter as version `version`, loads it and proves it is served (and, with
  // a probe, computed with: `model` is put in eval mode for the probe and back). A version the
  // endpoint already serves under this name (adopted) is unloaded and loaded again.
  Status Publish(models::CausalLMImpl& model, uint64_t version);
  // Makes sure version `version`, written earlier under `root`, is served: loads it again when
  // the endpoint does not serve it (a resumed asynchronous run samples older versions, which a
  // restarted endpoint lost). No probe: the weights are not the learner's any more.
  Status Serve(uint64_t version);
  // The probe of the last Publish (nullopt: none ran).
  const std::optional<ProbeReport>& last_probe() const { return last_probe_; }

  // Unloads every loaded version below `keep_from` (best effort; failures are logged).
  void UnloadBelow(uint64_t keep_from);

  // Takes over the versions of this publisher's prefix that the endpoint already serves (an
  // earlier learner process of the run loaded them), so that UnloadBelow unloads them too. A
  // resumed learner calls it before its first Publish; an unreachable endpoint adopts nothing.
  void AdoptServed();

  // Unloads the versions of this prefix that the endpoint serves but this publisher did not
  // load: an earlier run of the same name (its directory deleted, or under another output
  // directory) left them there, and they would collide with this run's names. A fresh run calls
  // it before publishing v1; it logs what it unloads and returns how many.
  int UnloadStale();

  // "<prefix>-v<N>" and the inverse (0 when `model_name` is not one of ours).
  std::string AdapterName(uint64_t version) const;
  uint64_t VersionOf(const std::string& model_name) const;
  std::string AdapterDir(uint64_t version) const;
  // The endpoint's URL, for error messages.
  std::string url() const;

  int64_t loads() const { return loads_; }
  int64_t load_retries() const { return load_retries_; }
  int64_t unloads() const { return unloads_; }

 private:
  Status LoadAndVerify(uint64_t version);
  Status ProbeDelivery(models::CausalLMImpl& model, uint64_t version);

  llm::Client* client_;
  PublisherOptions options_;
  std::map<uint64_t, std::string> loaded_;  // version -> adapter name
  int64_t loads_ = 0;
  int64_t load_retries_ = 0;
  int64_t unloads_ = 0;
  std::optional<ProbeReport> last_probe_;
  std::vector<double> last_learner_;  // the learner's probe log-probs at the previous publish
};

}  // namespace allot::trainer::grpo
