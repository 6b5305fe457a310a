#include "envs/atlas/atlas_env.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <utility>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "datasets/example_json.h"
#include "envs/atlas/explore_action.h"
#include "envs/runtime/episode.h"
#include "envs/runtime/prompt_template.h"
#include "llm/client.h"
#include "rewards/grader.h"

namespace allot::envs::atlas {
namespace {

using runtime::FailureReason;
using runtime::SegmentRole;

constexpr size_t kInfoChars = 2000;
constexpr const char* kObservation = "Observation:";

std::string Cut(const std::string& s, size_t n = kInfoChars) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

struct PromptSlot {
  const char* name;
  std::string AtlasPrompts::*text;
  std::vector<std::string> vars;
};

const std::vector<PromptSlot>& PromptSlots() {
  static const std::vector<std::string> kOrchestrator = {
      "question", "budget", "solvers", "effort", "effort_guidance", "format_instruction"};
  static const std::vector<PromptSlot> slots = {
      {"orchestrator", &AtlasPrompts::orchestrator, kOrchestrator},
      {"orchestrator_multi", &AtlasPrompts::orchestrator_multi, kOrchestrator},
      {"solver", &AtlasPrompts::solver, {"question", "effort", "strategy", "format_instruction"}},
      {"integrator", &AtlasPrompts::integrator, {"question", "candidates", "format_instruction"}},
      {"effort_low", &AtlasPrompts::effort_low, {}},
      {"effort_medium", &AtlasPrompts::effort_medium, {}},
      {"effort_high", &AtlasPrompts::effort_high, {}},
  };
  return slots;
}

struct Item {
  std::string question;
  std::string reference;
  rewards::AnswerFormat format = rewards::AnswerFormat::kText;
};

Result<Item> ParseItem(const std::string& text, rewards::AnswerFormat default_format) {
  ALLOT_ASSIGN_OR_RETURN(datasets::Example e, datasets::ExampleFromJson(text));
  Item item;
  item.question = e.PromptText();
  item.reference = e.answer;
  ALLOT_ASSIGN_OR_RETURN(item.format, rewards::ParseAnswerFormat(datasets::GradingFormat(
                                          e, rewards::AnswerFormatName(default_format))));
  return item;
}

std::string FormatInstruction(rewards::AnswerFormat f) {
  switch (f) {
    case rewards::AnswerFormat::kBoxed:
      return "Write the answer inside \\boxed{}.";
    case rewards::AnswerFormat::kNumber:
      return "The answer is a number.";
    case rewards::AnswerFormat::kChoice:
      return "The answer is the letter of the correct option, as (X).";
    case rewards::AnswerFormat::kYesNo:
      return "The answer is yes or no.";
    case rewards::AnswerFormat::kText:
      return "The answer is a short phrase.";
  }
  return "";
}

// The final answer as the grader reads it: a bare "10" is "\boxed{10}" or "The answer is 10".
std::string Gradable(const std::string& answer, rewards::AnswerFormat f) {
  if (f == rewards::AnswerFormat::kBoxed) {
    return answer.find("\\boxed{") != std::string::npos ? answer : "\\boxed{" + answer + "}";
  }
  std::string lower = answer;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("answer is") != std::string::npos ? answer : "The answer is " + answer;
}

std::string Price(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", usd);
  return buf;
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

}  // namespace

Status ResolvePrompts(AtlasPrompts& p) {
  std::vector<runtime::PromptSlotRef> refs;
  for (const PromptSlot& slot : PromptSlots())
    refs.push_back({slot.name, &(p.*slot.text), slot.vars});
  return runtime::ResolvePromptSlots(p.dir, "atlas.prompts", refs);
}

AtlasEnv::~AtlasEnv() = default;

Result<std::unique_ptr<AtlasEnv>> AtlasEnv::Create(AtlasEnvConfig config,
                                                   std::shared_ptr<llm::Client> client) {
  AtlasSection& s = config.atlas;
  ALLOT_RETURN_IF_ERROR(ResolvePrompts(s.prompts));
  ALLOT_RETURN_IF_ERROR(
      rewards::ParseAnswerFormat(s.answer_format).status().Annotate("atlas.answer_format"));
  if (s.solvers.empty()) return InvalidArgument("atlas.solvers: no solver endpoint");
  if (s.variant == "single" && s.solvers.size() > 1) {
    return InvalidArgument(
        "atlas.solvers: the single variant has one solver model; list several with variant: "
        "multi_model");
  }
  if (s.variant != "single" && s.variant != "multi_model") {
    return InvalidArgument("atlas.variant: '" + s.variant + "' is not single or multi_model");
  }
  // The explore budget is the runtime's tool-call limit: an explore is the env's one tool.
  s.limits.max_tool_calls = s.ExploreBudget();
  if (client == nullptr) {
    ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<llm::Client> c,
                           llm::Client::Create(config.endpoints, {.gpu = config.gpu}));
    client = std::move(c);
  }
  auto check = [&](const std::string& name, const std::string& field) -> Status {
    if (client->endpoint(name) != nullptr) return Status::Ok();
    return InvalidArgument(field + ": no endpoint named '" + name + "' in endpoints");
  };
  ALLOT_RETURN_IF_ERROR(check(s.orchestrator_endpoint, "atlas.orchestrator_endpoint"));
  for (const std::string& solver : s.solvers) ALLOT_RETURN_IF_ERROR(check(solver, "atlas.solvers"));
  if (s.finalize == "integrator" && !s.integrator_endpoint.empty()) {
    ALLOT_RETURN_IF_ERROR(check(s.integrator_endpoint, "atlas.integrator_endpoint"));
  }
  auto env = std::unique_ptr<AtlasEnv>(new AtlasEnv(std::move(config)));
  env->client_ = std::move(client);
  return env;
}

Result<std::unique_ptr<AtlasEnv>> AtlasEnv::FromConfigText(const std::string& text) {
  ALLOT_ASSIGN_OR_RETURN(AtlasEnvConfig config,
                         runtime::LoadEnvConfig<AtlasEnvConfig>(text, AtlasEnvDescriptor()));
  return Create(std::move(config));
}

std::string AtlasEnv::ConfigText() const {
  AtlasEnvConfig copy = config_;
  return config::ToYaml(copy);
}

Result<runtime::Trajectory> AtlasEnv::Run(const runtime::EpisodeInput& input) {
  const AtlasSection& s = config_.atlas;
  runtime::Trajectory traj;
  traj.policy_version = input.policy_version();
  const rewards::AnswerFormat default_format = *rewards::ParseAnswerFormat(s.answer_format);
  Result<Item> item = ParseItem(input.dataset_item, default_format);
  if (!item.ok()) {
    traj.failure = {FailureReason::kEnvError, item.status().ToString()};
    return traj;
  }
  runtime::Episode ep(client_.get(), s.limits, input);
  runtime::Conversation conv(s.orchestrator_endpoint);
  std::vector<SolverReport> pool;
  std::vector<std::string> used_solvers, used_efforts;
  std::string final_answer, stopped;
  int malformed = 0;
  const std::string format_instruction = FormatInstruction(item->format);
  auto finish = [&](const Status& st, FailureReason otherwise) {
    if (!st.ok()) traj.failure = runtime::Episode::FailureFrom(st, otherwise);
    traj.info["explore_calls"] = std::to_string(pool.size());
    traj.info["solvers"] = Joined(used_solvers);
    traj.info["efforts"] = Joined(used_efforts);
    traj.info["malformed_turns"] = std::to_string(malformed);
    traj.info["finalize"] = s.finalize;
    if (!stopped.empty()) traj.info["stopped"] = stopped;
    traj.info["final_answer"] = Cut(final_answer);
    traj.segments = conv.TakeSegments();
    ep.Finish(traj);
    return traj;
  };

  auto score_failure = [&] {
    traj.SetReward("accuracy", 0.0);
    traj.reward = s.failure_reward;
  };

  // The orchestrator's instructions (masked).
  const int budget = s.ExploreBudget();
  const bool multi = s.variant == "multi_model";
  std::string solvers;
  for (size_t i = 0; i < (multi ? s.solvers.size() : 1); ++i) {
    const llm::EndpointConfig* e = client_->endpoint(s.solvers[i]);
    solvers += "- " + s.solvers[i];
    if (multi) {
      solvers += ": $" + Price(e->usd_per_m_input) + " per 1M input tokens, $" +
                 Price(e->usd_per_m_output) + " per 1M output tokens";
    }
    solvers += "\n";
  }
  const std::string& guidance = s.effort == "low"    ? s.prompts.effort_low
                                : s.effort == "high" ? s.prompts.effort_high
                                                     : s.prompts.effort_medium;
  Result<std::string> prompt =
      runtime::RenderTemplate(multi ? s.prompts.orchestrator_multi : s.prompts.orchestrator,
                              {{"question", item->question},
                               {"budget", std::to_string(budget)},
                               {"solvers", solvers},
                               {"effort", s.effort},
                               {"effort_guidance", guidance},
                               {"format_instruction", format_instruction}},
                              "atlas.prompts.orchestrator");
  if (!prompt.ok()) return finish(prompt.status(), FailureReason::kEnvError);
  if (Status st = ep.AppendText(conv, SegmentRole::kPrompt, *prompt); !st.ok()) {
    return finish(st, FailureReason::kEndpointError);
  }

  runtime::GenerateOptions o;
  o.role = SegmentRole::kPolicy;
  const runtime::SamplingSpec& sp = input.sampling;
  o.max_tokens = sp.max_tokens > 0 ? sp.max_tokens : s.orchestrator_max_tokens;
  o.temperature = sp.temperature;
  if (sp.top_p > 0) o.top_p = sp.top_p;
  if (sp.top_k > 0) o.top_k = sp.top_k;
  if (sp.seed != 0) o.seed = static_cast<int64_t>(sp.seed);
  o.stop = sp.stop;
  o.stop.push_back(kObservation);
  if (input.policy != nullptr &&
      input.policy->kind == runtime::PolicySnapshot::Kind::kLoraAdapter) {
    o.model = input.policy->adapter_name;
  }
  o.policy_version = input.policy_version();

  bool warned_budget = false;
  for (uint32_t turn = 1;; ++turn) {
    o.step = turn;
    Result<runtime::Turn> t = ep.Generate(conv, o);
    if (!t.ok()) {
      // The episode's turn or token limit: the orchestrator kept going (a format error).
      if (t.status().code() == StatusCode::kResourceExhausted) score_failure();
      return finish(t.status(), FailureReason::kEndpointError);
    }
    // The env's reply continues the trace after the "Observation:" the turn stopped at.
    auto observe = [&](SegmentRole role, const std::string& text, const std::string& source) {
      const bool stopped_there =
          t->text.size() >= 12 && t->text.compare(t->text.size() - 12, 12, kObservation) == 0;
      const std::string lead = stopped_there ? " " : std::string("\n") + kObservation + " ";
      return ep.AppendText(conv, role, lead + text + (text.ends_with("\n") ? "" : "\n"), turn,
                           source);
    };
    const OrchestratorTurn parsed = ParseOrchestratorTurn(t->text);
    if (parsed.kind == OrchestratorTurn::Kind::kFinal) {
      final_answer = parsed.final_answer;
      stopped = "final_answer";
      break;
    }
    std::string problem = parsed.error;
    if (parsed.kind == OrchestratorTurn::Kind::kExplore) {
      const std::string solver = parsed.explore.solver.value_or(s.solvers[0]);
      const std::string effort = parsed.explore.effort.value_or(s.effort);
      const bool known = std::find(s.solvers.begin(), s.solvers.end(), solver) != s.solvers.end() &&
                         (multi || solver == s.solvers[0]);
      if (ep.tool_calls() >= budget) {
        if (warned_budget) {  // asked to answer and explored again: no final answer
          stopped = "budget";
          break;
        }
        warned_budget = true;
        Status st = observe(SegmentRole::kEnv,
                            "The explore budget is spent (" + std::to_string(budget) + " of " +
                                std::to_string(budget) +
                                " calls). Write your Final Answer now from the candidates.",
                            "atlas");
        if (!st.ok()) return finish(st, FailureReason::kEndpointError);
        continue;
      }
      if (!known) {
        problem = "there is no solver '" + solver + "'";
      } else if (effort != "low" && effort != "medium" && effort != "high") {
        problem = "effort must be low, medium or high, not '" + effort + "'";
      } else {
        if (Status st = ep.BeginToolCall(); !st.ok()) return finish(st, FailureReason::kEnvError);
        SolverReport report;
        report.index = static_cast<int>(pool.size()) + 1;
        report.solver = solver;
        report.effort = effort;
        report.strategy = parsed.explore.strategy.value_or("");
        Result<std::string> solver_prompt = runtime::RenderTemplate(
            s.prompts.solver,
            {{"question", item->question},
             {"effort", effort},
             {"strategy", report.strategy.empty() ? "any method you choose" : report.strategy},
             {"format_instruction", format_instruction}},
            "atlas.prompts.solver");
        if (!solver_prompt.ok()) return finish(solver_prompt.status(), FailureReason::kEnvError);
        runtime::GenerateOptions so;
        so.role = SegmentRole::kOtherModel;
        so.max_tokens = effort == "low"    ? s.effort_tokens.low
                        : effort == "high" ? s.effort_tokens.high
                                           : s.effort_tokens.medium;
        so.temperature = s.solver_temperature;
        so.step = turn;
        Result<runtime::Turn> reply = ep.CompleteText(solver, *solver_prompt, so);
        if (!reply.ok()) {
          const StatusCode code = reply.status().code();
          // The episode's own end (cancelled, deadline, limits) is not a solver's failure.
          if (code == StatusCode::kCancelled || code == StatusCode::kResourceExhausted ||
              (code == StatusCode::kDeadlineExceeded && !ep.Check().ok())) {
            return finish(reply.status(), FailureReason::kEnvError);
          }
          report.failure = reply.status().message().substr(0, 300);
        } else if (reply->truncated()) {
          SolverReport parsed_reply = ParseSolverReply(reply->text);
          report.reasoning = std::move(parsed_reply.reasoning);
          report.failure = "cut off at its " + std::to_string(so.max_tokens) +
                           "-token budget (effort " + effort + ") before an answer";
        } else {
          SolverReport parsed_reply = ParseSolverReply(reply->text);
          report.answer = std::move(parsed_reply.answer);
          report.reasoning = std::move(parsed_reply.reasoning);
          report.approach = std::move(parsed_reply.approach);
          report.confidence = parsed_reply.confidence;
        }
        used_solvers.push_back(solver);
        used_efforts.push_back(effort);
        pool.push_back(report);
        Status st = observe(SegmentRole::kOtherModel,
                            RenderObservation(report, s.observation_reasoning_chars), solver);
        if (!st.ok()) return finish(st, FailureReason::kEndpointError);
        continue;
      }
    }
    // A malformed turn: a cut-off one is runaway output; otherwise the orchestrator is told.
    // Either failure is the policy's own: scored (failure_reward, accuracy 0) so that GRPO keeps
    // it in its group, where the advantage penalises it.
    ++malformed;
    if (t->truncated()) {
      score_failure();
      return finish(
          ResourceExhausted("runaway output: an orchestrator turn reached its " +
                            std::to_string(o.max_tokens) + "-token budget without an action"),
          FailureReason::kFormatError);
    }
    if (malformed > s.max_malformed_turns) {
      score_failure();
      return finish(InvalidArgument("malformed orchestrator output " + std::to_string(malformed) +
                                    " times (max_malformed_turns " +
                                    std::to_string(s.max_malformed_turns) + "): " + problem),
                    FailureReason::kFormatError);
    }
    Status st = observe(SegmentRole::kEnv,
                        "Invalid action: " + problem +
                            ". Reply with 'Action: explore {...}' or 'Final Answer: ...'.",
                        "atlas");
    if (!st.ok()) return finish(st, FailureReason::kEndpointError);
  }

  // The integrator ablation: a separate step synthesizes the pool.
  if (s.finalize == "integrator") {
    Result<std::string> iprompt = runtime::RenderTemplate(
        s.prompts.integrator,
        {{"question", item->question},
         {"candidates", RenderCandidatePool(pool, s.observation_reasoning_chars)},
         {"format_instruction", format_instruction}},
        "atlas.prompts.integrator");
    if (!iprompt.ok()) return finish(iprompt.status(), FailureReason::kEnvError);
    runtime::GenerateOptions io;
    io.role = SegmentRole::kOtherModel;
    io.max_tokens = s.integrator_max_tokens;
    io.temperature = s.integrator_temperature;
    const std::string& endpoint =
        s.integrator_endpoint.empty() ? s.orchestrator_endpoint : s.integrator_endpoint;
    Result<runtime::Turn> r = ep.CompleteText(endpoint, *iprompt, io);
    if (!r.ok()) return finish(r.status(), FailureReason::kEndpointError);
    traj.info["orchestrator_answer"] = Cut(final_answer);
    const OrchestratorTurn parsed = ParseOrchestratorTurn(r->text);
    final_answer = parsed.kind == OrchestratorTurn::Kind::kFinal ? parsed.final_answer : r->text;
    while (!final_answer.empty() && std::isspace(static_cast<unsigned char>(final_answer.back()))) {
      final_answer.pop_back();
    }
  }

  const bool correct =
      !final_answer.empty() &&
      rewards::Grade(Gradable(final_answer, item->format), item->reference, item->format).correct;
  traj.SetReward("accuracy", correct ? 1.0 : 0.0);
  traj.reward = correct ? 1.0 : 0.0;
  return finish(Status::Ok(), FailureReason::kEnvError);
}

void RegisterAtlasEnv(runtime::EnvRegistrar& registrar) {
  registrar.Register(
      "atlas", [](const std::string& env_config) -> Result<std::unique_ptr<runtime::Env>> {
        ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<AtlasEnv> env, AtlasEnv::FromConfigText(env_config));
        return std::unique_ptr<runtime::Env>(std::move(env));
      });
}

}  // namespace allot::envs::atlas
