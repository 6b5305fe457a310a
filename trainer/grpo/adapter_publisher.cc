#include "trainer/grpo/adapter_publisher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "core/sha256.h"
#include "models/peft.h"

namespace allot::trainer::grpo {

std::string AdapterPublisher::AdapterName(uint64_t version) const {
  return options_.prefix + "-v" + std::to_string(version);
}

uint64_t AdapterPublisher::VersionOf(const std::string& model_name) const {
  const std::string head = options_.prefix + "-v";
  if (model_name.size() <= head.size() || model_name.compare(0, head.size(), head) != 0) return 0;
  uint64_t v = 0;
  for (size_t i = head.size(); i < model_name.size(); ++i) {
    const char c = model_name[i];
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

std::string AdapterPublisher::AdapterDir(uint64_t version) const {
  return options_.root + "/v" + std::to_string(version);
}

std::string AdapterPublisher::url() const {
  const llm::EndpointConfig* ep = client_->endpoint(options_.endpoint);
  return ep == nullptr ? "<endpoint '" + options_.endpoint + "' not configured>" : ep->base_url;
}

Status AdapterPublisher::Publish(models::CausalLMImpl& model, uint64_t version) {
  const std::string dir = AdapterDir(version);
  ALLOT_RETURN_IF_ERROR(models::SaveAdapter(model, dir, options_.base_model));
  if (auto it = loaded_.find(version); it != loaded_.end()) {
    // Served already (adopted from an earlier learner process): the endpoint refuses a second
    // load under one name, so the old one goes first and ours is loaded and proven in its place.
    Status s = client_->UnloadLoraAdapter(options_.endpoint, it->second).get();
    if (!s.ok())
      spdlog::warn("grpo: could not unload {} from {}: {}", it->second, url(), s.message());
    loaded_.erase(it);
  }
  last_probe_.reset();
  ALLOT_RETURN_IF_ERROR(LoadAndVerify(version));
  return ProbeDelivery(model, version);
}

Status AdapterPublisher::ProbeDelivery(models::CausalLMImpl& model, uint64_t version) {
  if (options_.probe == nullptr || !options_.probe->ready()) return Status::Ok();
  const std::string name = AdapterName(version);
  ALLOT_ASSIGN_OR_RETURN(std::string sha,
                         Sha256File(AdapterDir(version) + "/adapter_model.safetensors"));
  ALLOT_ASSIGN_OR_RETURN(ProbeResult r, options_.probe->Check(*client_, options_.endpoint, url(),
                                                              name, model, sha, last_learner_));
  ProbeReport report{.adapter = name,
                     .max_abs_diff = r.max_abs_diff,
                     .mean_abs_diff = r.mean_abs_diff,
                     .step_change = std::nullopt};
  if (last_learner_.size() == r.learner.size() && !r.learner.empty()) {
    double sum = 0.0;
    for (size_t i = 0; i < r.learner.size(); ++i) sum += std::abs(r.learner[i] - last_learner_[i]);
    report.step_change = sum / static_cast<double>(r.learner.size());
  }
  last_learner_ = std::move(r.learner);
  last_probe_ = report;
  return Status::Ok();
}

Status AdapterPublisher::LoadAndVerify(uint64_t version) {
  const std::string name = AdapterName(version);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(options_.timeout_s, 0.001));
  Status last = Status::Ok();
  auto backoff = std::chrono::milliseconds(50);
  for (int attempt = 0; attempt < std::max(options_.retries, 1); ++attempt) {
    if (attempt > 0) {
      ++load_retries_;
      if (std::chrono::steady_clock::now() + backoff > deadline) break;
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
    llm::LoraAdapter adapter{.name = name, .path = AdapterDir(version), .load_inplace = true};
    last = client_->LoadLoraAdapter(options_.endpoint, adapter).get();
    if (!last.ok()) continue;
    // Proof of delivery: the endpoint must list the new version among its models.
    auto models = client_->Models(options_.endpoint).get();
    if (!models.ok()) {
      last = models.status();
      continue;
    }
    bool listed = false;
    for (const auto& m : *models) listed = listed || m.id == name;
    if (listed) {
      loaded_[version] = name;
      ++loads_;
      return Status::Ok();
    }
    last = Unavailable("the adapter was accepted but /v1/models does not list it");
  }
  return Unavailable("policy endpoint " + url() + " does not serve adapter '" + name +
                     "' (version " + std::to_string(version) + ") after " +
                     std::to_string(options_.retries) + " attempts: " + last.message());
}

Status AdapterPublisher::Serve(uint64_t version) {
  if (loaded_.count(version) > 0) return Status::Ok();
  return LoadAndVerify(version);
}

void AdapterPublisher::AdoptServed() {
  auto models = client_->Models(options_.endpoint).get();
  if (!models.ok()) return;
  for (const auto& m : *models) {
    const uint64_t v = VersionOf(m.id);
    if (v > 0 && loaded_.count(v) == 0) loaded_[v] = m.id;
  }
}

int AdapterPublisher::UnloadStale() {
  auto models = client_->Models(options_.endpoint).get();
  if (!models.ok()) return 0;  // the first Publish reports an unreachable endpoint
  int unloaded = 0;
  for (const auto& m : *models) {
    const uint64_t v = VersionOf(m.id);
    if (v == 0 || loaded_.count(v) > 0) continue;
    Status s = client_->UnloadLoraAdapter(options_.endpoint, m.id).get();
    if (!s.ok()) {
      spdlog::warn("grpo: could not unload stale adapter {} from {}: {}", m.id, url(), s.message());
      continue;
    }
    spdlog::info("grpo: unloaded adapter {} from {}: an earlier run named '{}' left it loaded",
                 m.id, url(), options_.prefix);
    ++unloaded;
  }
  return unloaded;
}

void AdapterPublisher::UnloadBelow(uint64_t keep_from) {
  for (auto it = loaded_.begin(); it != loaded_.end() && it->first < keep_from;) {
    Status s = client_->UnloadLoraAdapter(options_.endpoint, it->second).get();
    if (!s.ok()) {
      spdlog::warn("grpo: could not unload adapter {} from {}: {}", it->second, url(), s.message());
    } else {
      ++unloads_;
    }
    it = loaded_.erase(it);
  }
}

}  // namespace allot::trainer::grpo
