#include "envs/deeptool/deeptool_env.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "envs/runtime/episode.h"
#include "envs/runtime/prompt_template.h"
#include "llm/client.h"

namespace allot::envs::deeptool {
namespace {

using nlohmann::json;
using runtime::FailureReason;
using runtime::SegmentRole;

constexpr size_t kInfoChars = 4000;
constexpr const char* kCodeTool = "execute_python";

std::string Cut(const std::string& s, size_t n = kInfoChars) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

}  // namespace

Status ResolvePrompts(DeepToolPrompts& p) {
  if (p.tir.empty()) {
    Result<std::string> loaded = runtime::LoadTemplateFile(p.dir + "/tir.txt");
    if (!loaded.ok()) return loaded.status().Annotate("deeptool.prompts.tir");
    p.tir = std::move(loaded).value();
  }
  ALLOT_RETURN_IF_ERROR(
      runtime::RenderTemplate(p.tir, {{"question", "x"}}, "deeptool.prompts.tir").status());
  if (p.tir.find("{{question}}") == std::string::npos) {
    return InvalidArgument("deeptool.prompts.tir: the template never uses {{question}}");
  }
  return Status::Ok();
}

std::string ObservationText(const tools::ToolResult& r, size_t max_chars) {
  std::string out;
  if (r.output.is_object()) {
    auto text = [&](const char* key) {
      auto it = r.output.find(key);
      return it != r.output.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    out = text("stdout");
    const std::string err = text("stderr");
    if (!err.empty()) out += (out.empty() || out.back() == '\n' ? "" : "\n") + err;
    if (r.output.value("timed_out", false)) {
      out += (out.empty() || out.back() == '\n' ? "" : "\n") +
             std::string("TimeoutError: the program ran past the sandbox's time limit");
    }
  } else if (r.output.is_string()) {
    out = r.output.get<std::string>();
  } else {
    out = r.output.dump();
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  if (out.empty()) out = "(no output)";
  if (out.size() > max_chars) {
    out = out.substr(0, max_chars) + "\n[output cut at " + std::to_string(max_chars) + " chars]";
  }
  return out;
}

DeepToolEnv::~DeepToolEnv() = default;

Result<std::unique_ptr<DeepToolEnv>> DeepToolEnv::Create(
    DeepToolEnvConfig config, std::shared_ptr<llm::Client> client,
    std::shared_ptr<tools::ToolRegistry> tools) {
  auto env = std::unique_ptr<DeepToolEnv>(new DeepToolEnv(std::move(config)));
  DeepToolEnvConfig& c = env->config_;
  DeepToolSection& s = c.deeptool;
  ALLOT_RETURN_IF_ERROR(ResolvePrompts(s.prompts));
  if (client == nullptr) {
    llm::ClientOptions options;
    options.gpu = c.gpu;
    ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<llm::Client> made,
                           llm::Client::Create(c.endpoints, options));
    client = std::move(made);
  }
  env->client_ = std::move(client);
  if (env->client_->endpoint(s.policy_endpoint) == nullptr) {
    return InvalidArgument("deeptool.policy_endpoint: endpoint '" + s.policy_endpoint +
                           "' is not in the endpoint pool");
  }
  Result<rewards::AnswerFormat> format = rewards::ParseAnswerFormat(s.answer_format);
  if (!format.ok()) return format.status().Annotate("deeptool.answer_format");
  env->default_format_ = *format;
  ALLOT_ASSIGN_OR_RETURN(env->grade_, c.rewards.answer.ToGradeOptions());

  // DeepTool's reward: the action-centric process reward per step (Eq. 6-8) and the outcome.
  for (const rewards::RewardTermConfig& t : c.rewards.terms) {
    if (t.name == "action" && !env->has_action_) {
      env->has_action_ = true;
      env->action_weight_ = t.weight;
    } else if (t.name == "accuracy" && !env->has_accuracy_) {
      env->has_accuracy_ = true;
      env->accuracy_weight_ = t.weight;
    } else {
      return InvalidArgument("rewards.terms: '" + t.name +
                             "' is listed twice or is not a DeepTool term (action, accuracy)");
    }
  }
  const rewards::ActionRewardConfig& tags = c.rewards.action;
  if (tags.think_tag.empty() || tags.tool_tag.empty() || tags.answer_tag.empty() ||
      s.observation_tag.empty() || tags.tool_tag == tags.answer_tag) {
    return InvalidArgument(
        "rewards.action / deeptool.observation_tag: tags must be distinct and "
        "non-empty");
  }
  env->action_reward_ = std::make_unique<rewards::ActionCentricReward>(tags);

  if (s.mode == "interleaved") {
    if (tools == nullptr) {
      if (!c.tools.code) {
        return InvalidArgument("tools.code: false, but interleaved DeepTool episodes run code");
      }
      ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<tools::ToolRegistry> built,
                             tools::BuildRstKit(c.tools));
      tools = std::move(built);
    }
    if (tools->Find(kCodeTool) == nullptr) {
      return InvalidArgument("tools: the registry has no execute_python tool for code steps");
    }
  } else if (s.mode != "stepwise") {
    return InvalidArgument("deeptool.mode: unknown '" + s.mode + "'");
  }
  env->tools_ = std::move(tools);
  return env;
}

Result<std::unique_ptr<DeepToolEnv>> DeepToolEnv::FromConfigText(const std::string& text) {
  ALLOT_ASSIGN_OR_RETURN(DeepToolEnvConfig config,
                         runtime::LoadEnvConfig<DeepToolEnvConfig>(text, DeepToolEnvDescriptor()));
  return Create(std::move(config));
}

std::string DeepToolEnv::ConfigText() const {
  DeepToolEnvConfig copy = config_;
  return config::ToYaml(copy);
}

Result<runtime::Trajectory> DeepToolEnv::Run(const runtime::EpisodeInput& input) {
  runtime::Trajectory traj;
  traj.policy_version = input.policy_version();
  Result<DeepToolItem> item = ParseDeepToolItem(input.dataset_item, default_format_);
  if (!item.ok()) {
    traj.failure = {FailureReason::kEnvError, item.status().ToString()};
    return traj;
  }
  const DeepToolSection& s = config_.deeptool;
  const rewards::ActionRewardConfig& tags = config_.rewards.action;
  runtime::Episode ep(client_.get(), s.limits, input);
  runtime::Conversation conv(s.policy_endpoint);
  auto finish = [&](const Status& st, FailureReason otherwise) {
    if (!st.ok() && !traj.failure.failed())
      traj.failure = runtime::Episode::FailureFrom(st, otherwise);
    traj.segments = conv.TakeSegments();
    ep.Finish(traj);
    return traj;
  };
  auto fail = [&](FailureReason reason, std::string message) {
    traj.failure = {reason, std::move(message)};
  };
  auto fail_status = [&](const Status& status, FailureReason otherwise) {
    traj.failure = runtime::Episode::FailureFrom(status, otherwise);
  };
  // The policy broke the schema or ran into a limit: by default the episode ends scored (the
  // gate of Eq. 7 is 0), so that the learner trains on it; format_errors: fail drops it.
  bool ended = false;
  auto policy_end = [&](const std::string& message) {
    ended = true;
    if (s.format_errors == "fail") {
      fail(FailureReason::kFormatError, message);
    } else {
      traj.info["failure"] = Cut("format_error: " + message);
    }
  };

  // The TIR prompt (Sec. 2.2) and the ground-truth history (Eq. 5): context, masked.
  Result<std::string> prompt =
      runtime::RenderTemplate(s.prompts.tir, {{"question", item->question}}, "prompts.tir");
  if (!prompt.ok()) return finish(prompt.status(), FailureReason::kEnvError);
  Status st = ep.AppendText(conv, SegmentRole::kPrompt, *prompt);
  if (!st.ok()) return finish(st, FailureReason::kEndpointError);
  if (!item->history.empty()) {
    st = ep.AppendText(conv, SegmentRole::kEnv,
                       RenderHistory(item->history, tags, s.observation_tag), 0, "history");
    if (!st.ok()) return finish(st, FailureReason::kEndpointError);
  }
  traj.info["history_steps"] = std::to_string(item->history.size());

  runtime::GenerateOptions o;
  o.role = SegmentRole::kPolicy;
  const runtime::SamplingSpec& sp = input.sampling;
  o.max_tokens = sp.max_tokens > 0 ? sp.max_tokens : s.step_max_tokens;
  o.temperature = sp.temperature;
  if (sp.top_p > 0) o.top_p = sp.top_p;
  if (sp.top_k > 0) o.top_k = sp.top_k;
  if (sp.seed != 0) o.seed = static_cast<int64_t>(sp.seed);
  const std::string close_code = "</" + tags.tool_tag + ">";
  const std::string close_answer = "</" + tags.answer_tag + ">";
  o.stop = sp.stop;
  o.stop.push_back(close_code);
  o.stop.push_back(close_answer);
  if (input.policy != nullptr &&
      input.policy->kind == runtime::PolicySnapshot::Kind::kLoraAdapter) {
    o.model = input.policy->adapter_name;
  }
  o.policy_version = input.policy_version();

  const bool stepwise = s.mode == "stepwise";
  const bool scored = has_action_ && !item->reference_steps.empty();
  const int64_t max_steps = stepwise ? 1 : s.max_steps;
  std::vector<double> action_values;
  std::string answer;
  bool answered = false;
  int64_t steps = 0;
  for (int64_t k = 1; k <= max_steps && !traj.failure.failed() && !ended; ++k) {
    const int64_t context = static_cast<int64_t>(conv.num_ids());
    if (context > s.max_prompt_tokens) {
      // An instance that does not fit is bad data; a context that grew past it is a limit.
      const std::string message =
          "step " + std::to_string(k) + ": context of " + std::to_string(context) +
          " tokens exceeds deeptool.max_prompt_tokens " + std::to_string(s.max_prompt_tokens);
      if (k == 1) {
        fail(FailureReason::kEnvError, message);
      } else {
        policy_end(message);
      }
      break;
    }
    o.step = static_cast<uint32_t>(k);
    Result<runtime::Turn> turn = ep.Generate(conv, o);
    if (!turn.ok()) {
      if (turn.status().code() == StatusCode::kResourceExhausted) {
        policy_end("step " + std::to_string(k) + ": " + turn.status().message());
      } else {
        fail_status(turn.status(), FailureReason::kEndpointError);
      }
      break;
    }
    steps = k;
    std::string text = turn->text;
    // A server that leaves the stop string out still reports it: the closing tag joins the
    // context as env tokens, so that the next step sees a well-formed one.
    for (const std::string* close : {&close_code, &close_answer}) {
      if (turn->stop_reason == *close && text.find(*close) == std::string::npos) {
        st = ep.AppendText(conv, SegmentRole::kEnv, *close, o.step, "stop");
        text += *close;
      }
    }
    if (!st.ok()) {
      fail_status(st, FailureReason::kEndpointError);
      break;
    }
    traj.info["step" + std::to_string(k)] = Cut(text, 1000);
    Result<rewards::ToolStep> parsed = rewards::ParseToolStep(text, tags);
    // Eq. 6-8 against the expert's step k (0 beyond the expert's last step).
    if (scored) {
      double r = 0.0;
      const size_t i = static_cast<size_t>(k - 1);
      if (i < item->reference_steps.size()) {
        rewards::RewardInput in;
        in.response = text;
        in.reference_step = RenderStepAction(item->reference_steps[i], tags);
        Result<double> v = action_reward_->Compute(in);
        if (!v.ok()) {
          fail_status(v.status(), FailureReason::kEnvError);
          break;
        }
        r = *v;
      }
      action_values.push_back(r);
      traj.step_rewards.push_back(action_weight_ * r);
    }
    if (turn->truncated()) {
      policy_end("step " + std::to_string(k) + ": runaway output (ran into max_tokens " +
                 std::to_string(o.max_tokens) + ")");
      break;
    }
    if (!parsed.ok()) {
      policy_end("step " + std::to_string(k) + ": malformed: " + parsed.status().message());
      break;
    }
    if (parsed->terminal) {
      answer = parsed->action;
      answered = true;
      break;
    }
    if (stepwise) break;  // Eq. 5: one step per instance; its action is scored, not run
    if (Status call = ep.BeginToolCall(); !call.ok()) {
      policy_end("step " + std::to_string(k) + ": " + call.message());
      break;
    }
    tools::ToolResult result = tools_->Call({kCodeTool, {{"code", parsed->action}}});
    if (!result.ok && result.output.is_string()) {
      // The sandbox could not run the program at all (not the program's own error).
      fail(FailureReason::kToolError, "step " + std::to_string(k) + ": " + kCodeTool + ": " +
                                          result.output.get<std::string>());
      break;
    }
    const std::string obs = ObservationText(result, static_cast<size_t>(s.max_observation_chars));
    st = ep.AppendText(conv, SegmentRole::kTool, RenderObservation(obs, s.observation_tag), o.step,
                       kCodeTool);
    if (!st.ok()) {
      fail_status(st, FailureReason::kEndpointError);
      break;
    }
  }
  if (!traj.failure.failed() && !ended && !stepwise && !answered) {
    policy_end("no answer step within deeptool.max_steps " + std::to_string(s.max_steps));
  }
  traj.info["mode"] = s.mode;
  traj.info["steps"] = std::to_string(steps);
  if (answered) traj.info["answer"] = Cut(answer);

  // The outcome: the answer step graded against the reference.
  double accuracy = 0.0;
  if (answered) {
    accuracy = rewards::Grade(answer, item->reference, item->format, grade_).correct ? 1.0 : 0.0;
  }
  if (scored) {
    double sum = 0.0;
    for (double v : action_values) sum += v;
    traj.SetReward("action", action_values.empty() ? 0.0 : sum / action_values.size());
  }
  if (has_accuracy_) traj.SetReward("accuracy", accuracy);
  traj.reward = accuracy_weight_ * accuracy;
  return finish(Status::Ok(), FailureReason::kEnvError);
}

void RegisterDeepToolEnv(runtime::EnvRegistrar& registry) {
  registry.Register("deeptool",
                    [](const std::string& env_config) -> Result<std::unique_ptr<runtime::Env>> {
                      ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<DeepToolEnv> env,
                                             DeepToolEnv::FromConfigText(env_config));
                      return std::unique_ptr<runtime::Env>(std::move(env));
                    });
}

}  // namespace allot::envs::deeptool
