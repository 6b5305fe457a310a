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

class EchoEnv : public Env {
 public:
  explicit EchoEnv(EchoConfig cfg) : cfg_(cfg) {}

  Result<v1::Trajectory> RunEpisode(const EpisodeContext& ctx) override {
    const v1::EpisodeRequest& req = *ctx.request;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg_.delay_ms);
    while (std::chrono::steady_clock::now() < until && !ctx.Cancelled()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (cfg_.fail) return Unavailable("echo: configured to fail");
    v1::Trajectory t;
    v1::TokenSegment* prompt = t.add_segments();
    prompt->set_role(v1::SEGMENT_ROLE_PROMPT);
    for (unsigned char c : req.dataset_item()) prompt->add_ids(c);
    v1::TokenSegment* policy = t.add_segments();
    policy->set_role(v1::SEGMENT_ROLE_POLICY);
    policy->set_trainable(true);
    policy->set_source("echo");
    for (int i = 0; i < cfg_.tokens; ++i) {
      policy->add_ids(EchoToken(req.episode_id(), i));
      policy->add_logprobs(-0.125f);
    }
    v1::Transition* tr = t.add_transitions();
    tr->add_state(static_cast<float>(req.dataset_item().size()));
    tr->add_state(static_cast<float>(req.attempt()));
    tr->set_action(req.group_index() % 4);
    tr->set_num_actions(4);
    tr->set_reward(1.0f);
    tr->set_done(true);
    auto* format = t.add_rewards();
    format->set_name("format");
    format->set_value(1.0);
    auto* accuracy = t.add_rewards();
    accuracy->set_name("accuracy");
    accuracy->set_value(req.dataset_item().size() % 2 == 0 ? 1.0 : 0.0);
    t.set_reward(format->value() + accuracy->value());
    v1::Accounting* a = t.mutable_accounting();
    a->set_prompt_tokens(req.dataset_item().size());
    a->set_completion_tokens(static_cast<uint64_t>(cfg_.tokens));
    a->set_llm_calls(1);
    v1::EndpointUsage* e = a->add_endpoints();
    e->set_endpoint("echo");
    e->set_calls(1);
    e->set_latency_ms(cfg_.delay_ms);
    if (ctx.policy != nullptr) {
      (*t.mutable_info())["policy_bytes"] = std::to_string(ctx.policy->bytes.size());
    }
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

void RegisterEchoEnv(EnvRegistry& registry) {
  registry.Register("echo", [](const std::string& text) -> Result<std::unique_ptr<Env>> {
    EchoConfig cfg;
    if (!text.empty()) {
      ALLOT_ASSIGN_OR_RETURN(config::ConfigNode node, config::ParseYaml(text, "<env_config>"));
      ALLOT_RETURN_IF_ERROR(config::Load(node, cfg));
    }
    return std::unique_ptr<Env>(new EchoEnv(cfg));
  });
}

}  // namespace allot::rollout::testing
