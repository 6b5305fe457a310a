#include "tests/rollout/echo_env.h"

#include <chrono>
#include <functional>
#include <thread>

#include "core/config/binder.h"
#include "core/config/node.h"

namespace allot::rollout::testing {
namespace {

struct EchoConfig {
  int delay_ms = 0;
  int tokens = 8;
  bool fail = false;
  void Describe(config::Visitor& v) {
    v.Field("delay_ms", delay_ms, {.min = 0, .max = 600000});
    v.Field("tokens", tokens, {.min = 0, .max = 1 << 20});
    v.Field("fail", fail);
  }
};

namespace rt = envs::runtime;

class EchoEnv : public rt::Env {
 public:
  explicit EchoEnv(EchoConfig cfg) : cfg_(cfg) {}

  Result<rt::Trajectory> Run(const rt::EpisodeInput& in) override {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg_.delay_ms);
    while (std::chrono::steady_clock::now() < until && !in.Cancelled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (cfg_.fail) return Unavailable("echo: configured to fail");
    rt::Trajectory t;
    rt::Segment prompt;
    prompt.role = rt::SegmentRole::kPrompt;
    for (unsigned char c : in.dataset_item) prompt.ids.push_back(c);
    t.segments.push_back(std::move(prompt));
    rt::Segment policy;
    policy.role = rt::SegmentRole::kPolicy;
    policy.trainable = true;
    policy.source = "echo";
    for (int i = 0; i < cfg_.tokens; ++i) {
      policy.ids.push_back(EchoToken(in.episode_id, i));
      policy.logprobs.push_back(-0.125f);
    }
    t.segments.push_back(std::move(policy));
    rt::Transition tr;
    tr.state = {static_cast<float>(in.dataset_item.size()), static_cast<float>(in.group_size)};
    tr.action = in.group_index % 4;
    tr.num_actions = 4;
    tr.reward = 1.0f;
    tr.done = true;
    t.transitions.push_back(std::move(tr));
    const double accuracy = in.dataset_item.size() % 2 == 0 ? 1.0 : 0.0;
    t.rewards = {{"format", 1.0}, {"accuracy", accuracy}};
    t.reward = 1.0 + accuracy;
    t.usage.total.prompt_tokens = static_cast<int64_t>(in.dataset_item.size());
    t.usage.total.completion_tokens = cfg_.tokens;
    t.usage.total.calls = 1;
    llm::UsageTotals& e = t.usage.by_endpoint["echo"];
    e.calls = 1;
    e.latency_s = cfg_.delay_ms / 1000.0;
    if (in.policy != nullptr) t.info["policy_bytes"] = std::to_string(in.policy->bytes.size());
    return t;
  }

 private:
  EchoConfig cfg_;
};

}  // namespace

uint32_t EchoToken(const std::string& episode_id, int i) {
  return static_cast<uint32_t>(
      (std::hash<std::string>{}(episode_id) + static_cast<size_t>(i) * 31) % 151000);
}

void RegisterEchoEnv(rt::EnvRegistrar& registry) {
  registry.Register("echo", [](const std::string& text) -> Result<std::unique_ptr<rt::Env>> {
    EchoConfig cfg;
    if (!text.empty()) {
      ALLOT_ASSIGN_OR_RETURN(config::ConfigNode node, config::ParseYaml(text, "<env_config>"));
      ALLOT_RETURN_IF_ERROR(config::Load(node, cfg));
    }
    return std::unique_ptr<rt::Env>(new EchoEnv(cfg));
  });
}

}  // namespace allot::rollout::testing
