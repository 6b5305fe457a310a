#include "tests/trainer/tag_env.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "llm/client.h"
#include "models/tokenizer/byte_tokenizer.h"

namespace allot::trainer::testing {

namespace {

namespace rt = envs::runtime;

class TagEnv : public rt::Env {
 public:
  TagEnv(std::unique_ptr<llm::Client> client, std::string base_model, std::string prefix,
         std::vector<std::string> roles)
      : client_(std::move(client)),
        base_model_(std::move(base_model)),
        prefix_(std::move(prefix)),
        roles_(std::move(roles)) {}

  Result<rt::Trajectory> Run(const rt::EpisodeInput& in) override {
    rt::Trajectory t;
    const auto item = nlohmann::json::parse(in.dataset_item, nullptr, false);
    const std::string prompt = item.is_object()
                                   ? item.value("prompt", std::string("<question_level>L"))
                                   : std::string("<question_level>L");
    ALLOT_ASSIGN_OR_RETURN(std::vector<int32_t> prompt_ids, tokenizer_.Encode(prompt));
    if (!roles_.empty()) return RunRoles(in, std::move(t), prompt_ids);

    llm::CompletionRequest cr;
    cr.model = in.policy != nullptr && !in.policy->adapter_name.empty() ? in.policy->adapter_name
                                                                        : base_model_;
    cr.prompt_token_ids.assign(prompt_ids.begin(), prompt_ids.end());
    // The request's max_tokens if it names one, else the env's own budget: 8, or the item's
    // "max_tokens" (per-role budget tests: the learner sends none).
    const int64_t own = item.is_object() ? item.value("max_tokens", int64_t{8}) : 8;
    cr.params.max_tokens =
        static_cast<int>(in.sampling.max_tokens > 0 ? in.sampling.max_tokens : own);
    cr.params.temperature = in.sampling.temperature;
    cr.params.seed = static_cast<int64_t>(in.sampling.seed);
    cr.params.logprobs = 0;
    cr.params.return_token_ids = true;
    auto done = client_->Complete("policy", cr).get();
    if (!done.ok() || done->choices.empty()) {
      t.failure = {rt::FailureReason::kEndpointError,
                   done.ok() ? "no choices" : done.status().message()};
      return t;
    }
    const llm::Choice& choice = done->choices[0];
    rt::Segment p;
    p.role = rt::SegmentRole::kPrompt;
    p.ids.assign(prompt_ids.begin(), prompt_ids.end());
    t.segments.push_back(std::move(p));
    rt::Segment s;
    s.role = rt::SegmentRole::kPolicy;
    s.trainable = true;
    s.source = "policy";
    s.policy_version = VersionOf(done->model);
    s.max_tokens = cr.params.max_tokens.value_or(0);
    for (size_t k = 0; k < choice.token_ids.size(); ++k) {
      s.ids.push_back(choice.token_ids[k]);
      s.logprobs.push_back(
          k < choice.logprobs.size() ? static_cast<float>(choice.logprobs[k].logprob) : 0.0f);
    }
    static const std::string kAlphabet = "<question_level>/L1234";
    double hits = 0.0;
    for (int64_t id : choice.token_ids) {
      if (id < 256 && kAlphabet.find(static_cast<char>(id)) != std::string::npos) hits += 1.0;
    }
    const double n = static_cast<double>(std::max<size_t>(choice.token_ids.size(), 1));
    const double alphabet = hits / n;
    const double accuracy = !choice.token_ids.empty() && choice.token_ids[0] == '2' ? 1.0 : 0.0;
    t.rewards = {{"tag_alphabet", alphabet}, {"accuracy", accuracy}};
    // An item with "flat": true rewards every episode 0: its group has zero variance (dynamic
    // sampling tests).
    const bool flat = item.is_object() && item.value("flat", false);
    t.reward = flat ? 0.0 : alphabet;
    // "step_reward": true makes the completion one step whose step reward is tag_alphabet, as
    // DeepTool's step-wise instances carry their signal (with "flat": an outcome of 0).
    if (item.is_object() && item.value("step_reward", false)) {
      s.step = 1;
      t.step_rewards.push_back(alphabet);
    }
    t.segments.push_back(std::move(s));
    // "oracle_cost_usd": x reports x USD of a reward oracle's calls, as CogER's L_min solver
    // does, apart from the episode's accounting.
    if (item.is_object() && item.contains("oracle_cost_usd")) {
      t.info["oracle_cost_usd"] = item["oracle_cost_usd"].dump();
    }
    // "policy_failure_index": k makes the group's k-th episode a policy failure its env scored
    // (format error, every reward term 0, its tokens kept); "endpoint_failure_index": k an
    // endpoint failure, with no reward (failure tests).
    const int64_t index = static_cast<int64_t>(in.group_index);
    if (item.is_object() && item.value("policy_failure_index", int64_t{-1}) == index) {
      t.failure = {rt::FailureReason::kFormatError, "runaway output"};
      t.rewards = {{"tag_alphabet", 0.0}, {"accuracy", 0.0}};
      t.reward = 0.0;
    }
    if (item.is_object() && item.value("endpoint_failure_index", int64_t{-1}) == index) {
      t.failure = {rt::FailureReason::kEndpointError, "endpoint down"};
      t.rewards.clear();
      t.reward = 0.0;
    }
    t.usage.total.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
    t.usage.total.completion_tokens = static_cast<int64_t>(choice.token_ids.size());
    t.usage.total.calls = 1;
    t.policy_version = VersionOf(done->model);
    return t;
  }

 private:
  // One turn per role, in order, each sampled from the role's own adapter (the snapshot's
  // role_adapters) and reading the turns before it; segments tagged "<role>@policy".
  Result<rt::Trajectory> RunRoles(const rt::EpisodeInput& in, rt::Trajectory t,
                                  const std::vector<int32_t>& prompt_ids) {
    rt::Segment p;
    p.role = rt::SegmentRole::kPrompt;
    p.ids.assign(prompt_ids.begin(), prompt_ids.end());
    t.segments.push_back(std::move(p));
    std::vector<int32_t> context = prompt_ids;
    static const std::string kAlphabet = "<question_level>/L1234";
    double hits = 0.0, n = 0.0;
    for (const std::string& role : roles_) {
      const rt::RoleAdapter* adapter = in.policy != nullptr ? in.policy->AdapterOf(role) : nullptr;
      llm::CompletionRequest cr;
      cr.model = adapter != nullptr ? adapter->adapter_name : base_model_;
      cr.prompt_token_ids.assign(context.begin(), context.end());
      cr.params.max_tokens =
          static_cast<int>(in.sampling.max_tokens > 0 ? in.sampling.max_tokens : 8);
      cr.params.temperature = in.sampling.temperature;
      cr.params.seed = static_cast<int64_t>(in.sampling.seed);
      cr.params.logprobs = 0;
      cr.params.return_token_ids = true;
      auto done = client_->Complete("policy", cr).get();
      if (!done.ok() || done->choices.empty()) {
        t.failure = {rt::FailureReason::kEndpointError,
                     done.ok() ? "no choices" : done.status().message()};
        return t;
      }
      const llm::Choice& choice = done->choices[0];
      rt::Segment s;
      s.role = rt::SegmentRole::kPolicy;
      s.trainable = true;
      s.source = role + "@policy";
      s.policy_version =
          adapter != nullptr && done->model == adapter->adapter_name ? adapter->version : 0;
      for (size_t k = 0; k < choice.token_ids.size(); ++k) {
        s.ids.push_back(choice.token_ids[k]);
        s.logprobs.push_back(
            k < choice.logprobs.size() ? static_cast<float>(choice.logprobs[k].logprob) : 0.0f);
        context.push_back(static_cast<int32_t>(choice.token_ids[k]));
        const int64_t id = choice.token_ids[k];
        if (id < 256 && kAlphabet.find(static_cast<char>(id)) != std::string::npos) hits += 1.0;
        n += 1.0;
      }
      t.segments.push_back(std::move(s));
    }
    t.reward = hits / std::max(n, 1.0);
    t.policy_version = in.policy_version();
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

void RegisterTagEnv(envs::runtime::EnvRegistrar& registry) {
  registry.Register(kTagEnvName,
                    [](const std::string& text) -> Result<std::unique_ptr<envs::runtime::Env>> {
                      const auto j = nlohmann::json::parse(text, nullptr, false);
                      if (!j.is_object() || !j.contains("base_url")) {
                        return InvalidArgument("grpo_tag env_config: needs base_url");
                      }
                      llm::EndpointConfig ep;
                      ep.name = "policy";
                      ep.base_url = j.at("base_url").get<std::string>();
                      ep.model = j.value("base_model", std::string());
                      ALLOT_ASSIGN_OR_RETURN(auto client, llm::Client::Create({ep}));
                      return std::unique_ptr<envs::runtime::Env>(
                          new TagEnv(std::move(client), j.value("base_model", std::string()),
                                     j.value("prefix", std::string("policy")),
                                     j.value("roles", std::vector<std::string>())));
                    });
}

}  // namespace allot::trainer::testing
