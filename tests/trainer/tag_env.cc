#include "tests/trainer/tag_env.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "llm/client.h"
#include "models/tokenizer/byte_tokenizer.h"

namespace allot::trainer::testing {

namespace {

class TagEnv : public rollout::Env {
 public:
  TagEnv(std::unique_ptr<llm::Client> client, std::string base_model, std::string prefix,
         std::vector<std::string> roles)
      : client_(std::move(client)),
        base_model_(std::move(base_model)),
        prefix_(std::move(prefix)),
        roles_(std::move(roles)) {}

  Result<v1::Trajectory> RunEpisode(const rollout::EpisodeContext& ctx) override {
    const v1::EpisodeRequest& req = *ctx.request;
    v1::Trajectory t;
    t.set_episode_id(req.episode_id());
    t.set_env(req.env());
    t.set_group_id(req.group_id());
    t.set_group_index(req.group_index());
    const auto item = nlohmann::json::parse(req.dataset_item(), nullptr, false);
    const std::string prompt = item.is_object()
                                   ? item.value("prompt", std::string("<question_level>L"))
                                   : std::string("<question_level>L");
    ALLOT_ASSIGN_OR_RETURN(std::vector<int32_t> prompt_ids, tokenizer_.Encode(prompt));
    if (!roles_.empty()) return RunRoles(ctx, std::move(t), prompt_ids);

    llm::CompletionRequest cr;
    cr.model = ctx.policy != nullptr && !ctx.policy->adapter_name.empty() ? ctx.policy->adapter_name
                                                                          : base_model_;
    cr.prompt_token_ids.assign(prompt_ids.begin(), prompt_ids.end());
    // The request's max_tokens if it names one, else the env's own budget: 8, or the item's
    // "max_tokens" (per-role budget tests: the learner sends none).
    const int64_t own = item.is_object() ? item.value("max_tokens", int64_t{8}) : 8;
    cr.params.max_tokens =
        static_cast<int>(req.sampling().max_tokens() > 0 ? req.sampling().max_tokens() : own);
    cr.params.temperature = req.sampling().temperature();
    cr.params.seed = static_cast<int64_t>(req.sampling().seed());
    cr.params.logprobs = 0;
    cr.params.return_token_ids = true;
    auto done = client_->Complete("policy", cr).get();
    if (!done.ok() || done->choices.empty()) {
      t.mutable_failure()->set_reason(v1::FAILURE_REASON_ENDPOINT_ERROR);
      t.mutable_failure()->set_message(done.ok() ? "no choices" : done.status().message());
      return t;
    }
    const llm::Choice& choice = done->choices[0];
    auto* p = t.add_segments();
    p->set_role(v1::SEGMENT_ROLE_PROMPT);
    for (int32_t id : prompt_ids) p->add_ids(static_cast<uint32_t>(id));
    auto* s = t.add_segments();
    s->set_role(v1::SEGMENT_ROLE_POLICY);
    s->set_trainable(true);
    s->set_source("policy");
    s->set_policy_version(VersionOf(done->model));
    s->set_max_tokens(static_cast<uint32_t>(cr.params.max_tokens.value_or(0)));
    for (size_t k = 0; k < choice.token_ids.size(); ++k) {
      s->add_ids(static_cast<uint32_t>(choice.token_ids[k]));
      s->add_logprobs(k < choice.logprobs.size() ? static_cast<float>(choice.logprobs[k].logprob)
                                                 : 0.0f);
    }
    static const std::string kAlphabet = "<question_level>/L1234";
    double hits = 0.0;
    for (int64_t id : choice.token_ids) {
      if (id < 256 && kAlphabet.find(static_cast<char>(id)) != std::string::npos) hits += 1.0;
    }
    const double n = static_cast<double>(std::max<size_t>(choice.token_ids.size(), 1));
    const double alphabet = hits / n;
    const double accuracy = !choice.token_ids.empty() && choice.token_ids[0] == '2' ? 1.0 : 0.0;
    auto* r1 = t.add_rewards();
    r1->set_name("tag_alphabet");
    r1->set_value(alphabet);
    auto* r2 = t.add_rewards();
    r2->set_name("accuracy");
    r2->set_value(accuracy);
    // An item with "flat": true rewards every episode 0: its group has zero variance (dynamic
    // sampling tests).
    const bool flat = item.is_object() && item.value("flat", false);
    t.set_reward(flat ? 0.0 : alphabet);
    // "step_reward": true makes the completion one step whose step reward is tag_alphabet, as
    // DeepTool's step-wise instances carry their signal (with "flat": an outcome of 0).
    if (item.is_object() && item.value("step_reward", false)) {
      s->set_step(1);
      t.add_step_rewards(alphabet);
    }
    // "oracle_cost_usd": x reports x USD of a reward oracle's calls, as CogER's L_min solver
    // does, apart from the episode's accounting.
    if (item.is_object() && item.contains("oracle_cost_usd")) {
      (*t.mutable_info())["oracle_cost_usd"] = item["oracle_cost_usd"].dump();
    }
    // "policy_failure_index": k makes the group's k-th episode a policy failure its env scored
    // (format error, every reward term 0, its tokens kept); "endpoint_failure_index": k an
    // endpoint failure, with no reward (failure tests).
    const int64_t index = static_cast<int64_t>(req.group_index());
    if (item.is_object() && item.value("policy_failure_index", int64_t{-1}) == index) {
      t.mutable_failure()->set_reason(v1::FAILURE_REASON_FORMAT_ERROR);
      t.mutable_failure()->set_message("runaway output");
      r1->set_value(0.0);
      r2->set_value(0.0);
      t.set_reward(0.0);
    }
    if (item.is_object() && item.value("endpoint_failure_index", int64_t{-1}) == index) {
      t.mutable_failure()->set_reason(v1::FAILURE_REASON_ENDPOINT_ERROR);
      t.mutable_failure()->set_message("endpoint down");
      t.clear_rewards();
      t.set_reward(0.0);
    }
    auto* acc = t.mutable_accounting();
    acc->set_prompt_tokens(static_cast<uint64_t>(prompt_ids.size()));
    acc->set_completion_tokens(static_cast<uint64_t>(choice.token_ids.size()));
    acc->set_llm_calls(1);
    t.set_policy_version(VersionOf(done->model));
    return t;
  }

 private:
  // One turn per role, in order, each sampled from the role's own adapter (the snapshot's
  // role_adapters) and reading the turns before it; segments tagged "<role>@policy".
  Result<v1::Trajectory> RunRoles(const rollout::EpisodeContext& ctx, v1::Trajectory t,
                                  const std::vector<int32_t>& prompt_ids) {
    const v1::EpisodeRequest& req = *ctx.request;
    auto* p = t.add_segments();
    p->set_role(v1::SEGMENT_ROLE_PROMPT);
    for (int32_t id : prompt_ids) p->add_ids(static_cast<uint32_t>(id));
    std::vector<int32_t> context = prompt_ids;
    static const std::string kAlphabet = "<question_level>/L1234";
    double hits = 0.0, n = 0.0;
    for (const std::string& role : roles_) {
      const envs::runtime::RoleAdapter* adapter = nullptr;
      if (ctx.policy != nullptr) {
        for (const auto& a : ctx.policy->role_adapters) {
          if (a.role == role) adapter = &a;
        }
      }
      llm::CompletionRequest cr;
      cr.model = adapter != nullptr ? adapter->adapter_name : base_model_;
      cr.prompt_token_ids.assign(context.begin(), context.end());
      cr.params.max_tokens = req.sampling().max_tokens() > 0 ? req.sampling().max_tokens() : 8;
      cr.params.temperature = req.sampling().temperature();
      cr.params.seed = static_cast<int64_t>(req.sampling().seed());
      cr.params.logprobs = 0;
      cr.params.return_token_ids = true;
      auto done = client_->Complete("policy", cr).get();
      if (!done.ok() || done->choices.empty()) {
        t.mutable_failure()->set_reason(v1::FAILURE_REASON_ENDPOINT_ERROR);
        t.mutable_failure()->set_message(done.ok() ? "no choices" : done.status().message());
        return t;
      }
      const llm::Choice& choice = done->choices[0];
      auto* s = t.add_segments();
      s->set_role(v1::SEGMENT_ROLE_POLICY);
      s->set_trainable(true);
      s->set_source(role + "@policy");
      s->set_policy_version(
          adapter != nullptr && done->model == adapter->adapter_name ? adapter->version : 0);
      for (size_t k = 0; k < choice.token_ids.size(); ++k) {
        s->add_ids(static_cast<uint32_t>(choice.token_ids[k]));
        s->add_logprobs(k < choice.logprobs.size() ? static_cast<float>(choice.logprobs[k].logprob)
                                                   : 0.0f);
        context.push_back(static_cast<int32_t>(choice.token_ids[k]));
        const int64_t id = choice.token_ids[k];
        if (id < 256 && kAlphabet.find(static_cast<char>(id)) != std::string::npos) hits += 1.0;
        n += 1.0;
      }
    }
    t.set_reward(hits / std::max(n, 1.0));
    t.set_policy_version(ctx.policy != nullptr ? ctx.policy->version : 0);
    return t;
  }

  uint64_t VersionOf(const std::string& model) const {
    const std::string head = prefix_ + "-v";
    if (model.rfind(head, 0) != 0) return 0;
    try {
      return std::stoull(model.substr(head.size()));
    } catch (...) {
      return 0;
    }
  }

  std::unique_ptr<llm::Client> client_;
  std::string base_model_;
  std::string prefix_;
  std::vector<std::string> roles_;  // empty: one policy turn
  models::ByteTokenizer tokenizer_;
};

}  // namespace

std::string TagEnvConfig(const std::string& base_url, const std::string& base_model) {
  return nlohmann::json{{"base_url", base_url}, {"base_model", base_model}, {"prefix", "policy"}}
      .dump();
}

void RegisterTagEnv(rollout::EnvRegistry& registry) {
  registry.Register(
      kTagEnvName, [](const std::string& text) -> Result<std::unique_ptr<rollout::Env>> {
        const auto j = nlohmann::json::parse(text, nullptr, false);
        if (!j.is_object() || !j.contains("base_url")) {
          return InvalidArgument("grpo_tag env_config: needs base_url");
        }
        llm::EndpointConfig ep;
        ep.name = "policy";
        ep.base_url = j.at("base_url").get<std::string>();
        ep.model = j.value("base_model", std::string());
        ALLOT_ASSIGN_OR_RETURN(auto client, llm::Client::Create({ep}));
        return std::unique_ptr<rollout::Env>(
            new TagEnv(std::move(client), j.value("base_model", std::string()),
                       j.value("prefix", std::string("policy")),
                       j.value("roles", std::vector<std::string>())));
      });
}

}  // namespace allot::trainer::testing
