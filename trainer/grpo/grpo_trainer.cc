#include "trainer/grpo/grpo_trainer.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/checkpoint_store.h"
#include "core/random.h"
#include "llm/client.h"
#include "models/peft.h"
#include "models/tokenizer/tokenizer.h"
#include "rollout/failure_kind.h"
#include "rollout/session.h"
#include "trainer/comm/communicator.h"
#include "trainer/grpo/adapter_publisher.h"
#include "trainer/grpo/advantage_estimators.h"
#include "trainer/grpo/advantages.h"
#include "trainer/grpo/alternation.h"
#include "trainer/grpo/delivery_probe.h"
#include "trainer/grpo/grpo_metrics.h"
#include "trainer/grpo/grpo_optim.h"
#include "trainer/grpo/lagrange_multiplier.h"
#include "trainer/grpo/overlong_shaping.h"
#include "trainer/grpo/policy_loss.h"
#include "trainer/grpo/policy_losses.h"
#include "trainer/grpo/policy_update.h"
#include "trainer/grpo/role_adapters.h"
#include "trainer/grpo/rollout_batch.h"
#include "trainer/grpo/step_batch.h"
#include "trainer/optim/adamw.h"
#include "trainer/optim/lr_schedule.h"
#include "trainer/optim/optimizer_state.h"

namespace allot::trainer::grpo {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct GrpoTrainer::State {
  GrpoRunOptions options;
  models::CausalLM model{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;  // trainer/optim: MakeAdamW
  std::unique_ptr<LrSchedule> schedule;            // over GRPO steps (trainer.total_steps)
  std::unique_ptr<llm::Client> client;
  std::unique_ptr<AdapterPublisher> publisher;
  // grpo.delivery_probe (null: off); every publisher checks its publishes with it.
  std::unique_ptr<DeliveryProbe> probe;
  LagrangeMultiplier lagrange{0.0, 0.0};
  PolicyLossOptions loss;
  int64_t step = 0;
  uint64_t version = 0;
  int64_t cursor = 0;  // groups drawn from the prompt list so far
  // grpo.async: the policy version after each recent step (0: the initial version), for the
  // versions the steps in flight sample; kept back to step - max_lag.
  std::map<int64_t, uint64_t> version_after;
  // The KL term's reference policy when the run starts from an adapter (lora.init_from): that
  // adapter's weights. Empty: the base model (a fresh adapter, B = 0, starts there).
  std::vector<at::Tensor> reference_lora;
  // grpo.alternation: one adapter per role, each with its own optimizer, version and served name
  // (R2-Reasoner Sec. 4.3); `optimizer`, `reference_lora` and `publisher`'s versions are unused.
  std::unique_ptr<RoleAdapters> roles;
};

namespace {

double EpisodeCost(const v1::Trajectory& t, const std::string& metric) {
  const auto& a = t.accounting();
  if (metric == "cost_usd") return a.cost_usd();
  if (metric == "energy_joules") return a.energy_joules();
  if (metric == "tokens") return static_cast<double>(a.prompt_tokens() + a.completion_tokens());
  return 0.0;
}

// Largest lag of a policy segment behind `current` (segments of unknown version count as 0).
int64_t PolicyLag(const v1::Trajectory& t, uint64_t current) {
  int64_t lag = 0;
  for (const auto& s : t.segments()) {
    if (!s.trainable() || s.role() != v1::SEGMENT_ROLE_POLICY) continue;
    const uint64_t v = s.policy_version();
    lag = std::max<int64_t>(lag, v >= current ? 0 : static_cast<int64_t>(current - v));
  }
  return lag;
}

constexpr const char* kOptimizerFile = "optimizer.safetensors";

// The LoRA tensors by name, in the model's order, for MakeAdamW (all of them rank 2: one group
// with weight decay).
NamedParameters LoraNamed(models::CausalLMImpl& model) {
  NamedParameters out;
  int i = 0;
  for (const at::Tensor& p : model.LoraParameters())
    out.emplace_back("lora." + std::to_string(i++), p);
  return out;
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) return Internal("cannot write " + path);
  return Status::Ok();
}

}  // namespace

GrpoTrainer::GrpoTrainer(std::unique_ptr<State> state) : s_(std::move(state)) {}
GrpoTrainer::~GrpoTrainer() = default;
int64_t GrpoTrainer::step() const { return s_->step; }
uint64_t GrpoTrainer::policy_version() const { return s_->version; }
models::CausalLMImpl& GrpoTrainer::policy() { return *s_->model; }
const RoleAdapters* GrpoTrainer::role_adapters() const { return s_->roles.get(); }
double GrpoTrainer::LearningRateAt(int64_t step) const { return s_->schedule->LrAt(step); }

Status CheckGrpoConfig(const GrpoConfig& g) {
  const int64_t step_episodes =
      static_cast<int64_t>(g.grad_accum) * g.prompts_per_step * static_cast<int64_t>(g.group_size);
  if (g.micro_batch_size > step_episodes) {
    return InvalidArgument(
        "grpo.micro_batch_size: " + std::to_string(g.micro_batch_size) +
        " episodes per pass, but a step trains on " + std::to_string(step_episodes) +
        " (grpo.grad_accum " + std::to_string(g.grad_accum) + " x prompts_per_step " +
        std::to_string(g.prompts_per_step) + " x group_size " + std::to_string(g.group_size) + ")");
  }
  if (g.async.max_lag > 0) {
    const std::string lag = "grpo.async.max_lag: " + std::to_string(g.async.max_lag);
    if (!g.async.deterministic) {
      return InvalidArgument(
          "grpo.async.deterministic: false (each group sampled by whatever version is current) "
          "is not available; asynchronous GRPO runs deterministic");
    }
    if (g.alternation.enabled) {
      return InvalidArgument(lag +
                             " with grpo.alternation: one adapter per role trains "
                             "synchronously (set grpo.async.max_lag: 0)");
    }
    if (g.dynamic_sampling) {
      return InvalidArgument(lag +
                             " with grpo.dynamic_sampling: replacement groups would make a "
                             "step's draws depend on arrival order (set one of them off)");
    }
  }
  if (!g.delivery_probe.enabled && g.delivery_probe.tolerance > 0.0) {
    return InvalidArgument(
        "grpo.delivery_probe.tolerance: set while grpo.delivery_probe.enabled is false");
  }
  return Status::Ok();
}

Result<std::unique_ptr<GrpoTrainer>> GrpoTrainer::Create(GrpoRunOptions options) {
  auto st = std::make_unique<State>();
  const GrpoConfig& g = options.grpo;
  ALLOT_RETURN_IF_ERROR(CheckGrpoConfig(g));
  if (!g.lora.enabled) {
    return InvalidArgument(
        "grpo.lora.enabled: the GRPO learner trains a LoRA adapter (policy "
        "sync goes by adapter only)");
  }
  if (options.prompts.empty()) return InvalidArgument("grpo: no prompts (train_data is empty)");
  ALLOT_ASSIGN_OR_RETURN(st->loss.aggregation, ParseAggregation(g.loss_aggregation));
  ALLOT_RETURN_IF_ERROR(FindPolicyLoss(g.policy_loss).status());
  ALLOT_RETURN_IF_ERROR(FindAdvantageEstimator(g.advantage_estimator).status());
  st->loss.policy_loss = g.policy_loss;
  ALLOT_ASSIGN_OR_RETURN(st->loss.kl_estimator, ParseKlEstimator(g.kl_estimator));
  ALLOT_RETURN_IF_ERROR(ValidateAlternation(g.alternation));
  st->loss.clip_low = g.clip_eps;
  st->loss.clip_high = g.clip_eps_high;
  st->loss.kl_coef = g.kl_coef;
  // stale_policy "importance": stale segments stay and the TIS weight corrects them, which
  // exists only with truncated_is; it is not switched on behind the recipe's back.
  if (g.stale_policy == "importance" && !g.truncated_is) {
    return InvalidArgument(
        "grpo.stale_policy: importance corrects stale segments with the truncated IS weight: it "
        "needs grpo.truncated_is: true");
  }
  st->loss.truncated_is = g.truncated_is;
  st->loss.truncated_is_cap = g.truncated_is_cap;
  st->loss.norm_len =
      static_cast<double>(g.aggregation_norm_len > 0 ? g.aggregation_norm_len : g.max_tokens);
  st->lagrange =
      LagrangeMultiplier(g.budget_metric == "none" ? 0.0 : g.budget, g.lambda_lr, g.lambda_init);
  if (g.budget_metric != "none" && g.budget <= 0.0) {
    return InvalidArgument("grpo.budget: must be > 0 when budget_metric is " + g.budget_metric);
  }

  ALLOT_ASSIGN_OR_RETURN(auto model, models::CausalLMImpl::Load(options.model_dir, options.load));
  st->model = models::CausalLM(model);
  const OptimConfig optim = GrpoOptimConfig(g);
  if (g.alternation.enabled) {
    ALLOT_ASSIGN_OR_RETURN(st->roles, RoleAdapters::Create(*st->model, g, options.comm));
  } else {
    ALLOT_RETURN_IF_ERROR(models::ApplyLoraConfig(*st->model, g.lora).Annotate("grpo"));
    if (options.comm != nullptr && options.comm->distributed()) {
      // Every rank starts from rank 0's adapter (the base weights come from the same files).
      ALLOT_RETURN_IF_ERROR(options.comm->BroadcastParameters(st->model->LoraParameters()));
    }
    // Taken before a resume restores the trained adapter: the reference stays the starting point.
    if (!g.lora.init_from.empty() && g.kl_coef > 0.0) {
      for (const at::Tensor& p : st->model->LoraParameters()) {
        st->reference_lora.push_back(p.detach().clone());
      }
    }
    ALLOT_ASSIGN_OR_RETURN(st->optimizer, MakeAdamW(optim, LoraNamed(*st->model)));
  }
  auto schedule = LrSchedule::Create(optim, options.total_steps);
  if (!schedule.ok()) {
    return InvalidArgument("grpo.lr_schedule / grpo.warmup_ratio: " + schedule.status().message());
  }
  st->schedule = std::make_unique<LrSchedule>(*schedule);

  ALLOT_ASSIGN_OR_RETURN(st->client, llm::Client::Create(options.endpoints));
  if (st->client->endpoint(g.policy_endpoint) == nullptr) {
    return InvalidArgument("grpo.policy_endpoint: no endpoint named '" + g.policy_endpoint +
                           "' in endpoints");
  }
  PublisherOptions po;
  po.endpoint = g.policy_endpoint;
  // Absolute: the endpoint resolves the path in its own working directory.
  po.root = fs::absolute(options.run_dir + "/adapters").lexically_normal().string();
  po.base_model = options.model_dir;
  po.prefix = options.adapter_prefix;
  po.timeout_s = g.sync_timeout_s;
  po.retries = g.sync_retries;
  if (g.delivery_probe.enabled) {
    // The tolerance follows the learner's dtype unless the recipe sets one (delivery_probe.h).
    const double tolerance = g.delivery_probe.tolerance > 0.0
                                 ? g.delivery_probe.tolerance
                                 : DefaultProbeTolerance(st->model->output_weight().scalar_type());
    st->probe = std::make_unique<DeliveryProbe>(tolerance);
    po.probe = st->probe.get();
  }
  st->publisher = std::make_unique<AdapterPublisher>(st->client.get(), po);
  if (st->roles != nullptr) st->roles->SetPublishers(st->client.get(), po);
  st->options = std::move(options);
  return std::unique_ptr<GrpoTrainer>(new GrpoTrainer(std::move(st)));
}

Result<int64_t> GrpoTrainer::Resume() {
  if (s_->options.checkpoint_dir.empty()) return NotFound("grpo: no checkpoint directory");
  CheckpointStore store(s_->options.checkpoint_dir, s_->options.keep_last);
  std::vector<std::string> skipped;
  ALLOT_ASSIGN_OR_RETURN(CheckpointInfo info, store.LoadLatest(&skipped));
  for (const auto& line : skipped) spdlog::warn("grpo resume: {}", line);
  int64_t schedule_step = 0;
  if (s_->roles != nullptr) {
    ALLOT_ASSIGN_OR_RETURN(schedule_step, s_->roles->Load(info.path));
  } else {
    ALLOT_RETURN_IF_ERROR(models::LoadAdapter(*s_->model, info.path + "/adapter").status());
    // LoadAdapter installs new LoRA tensors: the optimizer must point at them.
    ALLOT_ASSIGN_OR_RETURN(s_->optimizer,
                           MakeAdamW(GrpoOptimConfig(s_->options.grpo), LoraNamed(*s_->model)));
    std::string opt;
    const std::string opt_path = info.path + "/" + kOptimizerFile;
    ALLOT_RETURN_IF_ERROR(ReadFile(opt_path, &opt));
    ALLOT_ASSIGN_OR_RETURN(schedule_step, RestoreAdamWState(*s_->optimizer, opt, opt_path));
  }
  std::ifstream f(info.path + "/state.json");
  const auto j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.contains("step")) {
    return DataLoss(info.path + "/state.json: not a GRPO learner state");
  }
  // grpo.async: the groups in flight at the checkpoint are the draws of the next max_lag steps,
  // each sampled by a recorded version; they are issued again (none was trained on). Both runs
  // must agree on max_lag, or the steps would own other draws.
  const int64_t lag = s_->options.grpo.async.max_lag;
  const int64_t written_lag = j.value("async_max_lag", int64_t{0});
  if (written_lag != lag) {
    return InvalidArgument("grpo.async.max_lag: " + std::to_string(lag) + ", but " + info.path +
                           " was written with max_lag " + std::to_string(written_lag) +
                           ": its steps own other draws; resume with max_lag " +
                           std::to_string(written_lag));
  }
  s_->version_after.clear();
  if (lag > 0) {
    if (!j.contains("version_after") || !j["version_after"].is_array()) {
      return DataLoss(info.path + "/state.json: no version_after for grpo.async");
    }
    for (const auto& e : j["version_after"]) {
      s_->version_after[e.at(0).get<int64_t>()] = e.at(1).get<uint64_t>();
    }
  }
  // Synchronous steps: a checkpoint is written when every episode of its step has been
  // collected, so the dispatcher ledger holds nothing to re-issue (the episodes of a step that
  // was interrupted are drawn again from the cursor). A checkpoint that says otherwise is not one
  // this learner can resume exactly.
  if (lag == 0 && j.value("ledger_open", int64_t{0}) != 0) {
    return DataLoss(info.path + "/state.json: " + std::to_string(j.value("ledger_open", 0)) +
                    " episodes were in flight at this checkpoint");
  }
  s_->step = j.at("step").get<int64_t>();
  if (schedule_step != s_->step) {
    return DataLoss(info.path + ": optimizer (" + std::to_string(schedule_step) +
                    ") and learner state (" + std::to_string(s_->step) + ") disagree on the step");
  }
  s_->version = j.at("policy_version").get<uint64_t>();
  s_->cursor = j.at("cursor").get<int64_t>();
  s_->lagrange.set_lambda(j.at("lambda").get<double>());
  s_->options.seed = j.at("seed").get<uint64_t>();
  spdlog::info("grpo: resumed at step {} (policy version {}) from {}", s_->step, s_->version,
               info.path);
  return s_->step;
}

namespace {

// `ledger_open`: episodes the dispatcher still holds (0 at a synchronous step's end; recorded so
// that a resume can check it).
Status SaveCheckpoint(GrpoTrainer::State& s, int64_t ledger_open) {
  if (s.options.checkpoint_dir.empty()) return Status::Ok();
  CheckpointStore store(s.options.checkpoint_dir, s.options.keep_last);
  auto saved = store.Save(s.step, [&](const std::string& dir) -> Status {
    if (s.roles != nullptr) {
      ALLOT_RETURN_IF_ERROR(s.roles->Save(dir, s.options.model_dir, s.step));
    } else {
      ALLOT_RETURN_IF_ERROR(models::SaveAdapter(*s.model, dir + "/adapter", s.options.model_dir));
      ALLOT_ASSIGN_OR_RETURN(std::string opt, SerializeAdamWState(*s.optimizer, s.step));
      ALLOT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kOptimizerFile, opt));
    }
    nlohmann::json j = {
        {"step", s.step},     {"ledger_open", ledger_open},    {"policy_version", s.version},
        {"cursor", s.cursor}, {"lambda", s.lagrange.lambda()}, {"seed", s.options.seed}};
    if (s.options.grpo.async.max_lag > 0) {
      j["async_max_lag"] = s.options.grpo.async.max_lag;
      j["version_after"] = nlohmann::json::array();
      for (const auto& [step, version] : s.version_after) {
        j["version_after"].push_back({step, version});
      }
    }
    return WriteText(dir + "/state.json", j.dump(2));
  });
  return saved.status();
}

// One collected GRPO group, before advantages.
struct Group {
  int64_t cursor = 0;  // its draw from the prompt list: the order groups are trained in
  std::vector<rollout::FinishedEpisode> episodes;
  // What the group's advantages are computed from, one entry per episode (ScoreGroup).
  std::vector<double> rewards;                    // GroupAdvantages' input
  std::vector<std::vector<double>> step_rewards;  // StepAdvantages' input (empty: off)
  std::vector<double> costs;                      // budget_metric, for the dual update
};

// Fills in the rewards the advantages of `group` are computed from: the env's reward plus the
// per-turn overlong shaping (overlong_shaping.h), minus the budget term (lagrange_multiplier.h),
// and the step rewards when step_advantages is on. Dynamic sampling judges a group on exactly
// these (FlatGroup). lambda does not move while a step's groups are collected (the dual update
// runs after), so a group's rewards are final when it arrives.
void ScoreGroup(Group& group, const GrpoConfig& g, const LagrangeMultiplier& lagrange) {
  const OverlongOptions overlong{
      .max_tokens = g.max_tokens, .buffer = g.overlong_buffer, .penalty = g.overlong_penalty};
  std::vector<double> raw;
  group.costs.clear();
  group.step_rewards.clear();
  for (const auto& e : group.episodes) {
    const v1::Trajectory& t = e.trajectory;
    raw.push_back(t.reward() + EpisodeOverlongPenalty(PolicyTurns(t), overlong));
    group.costs.push_back(EpisodeCost(t, g.budget_metric));
    group.step_rewards.emplace_back();
    if (g.step_advantages) {
      group.step_rewards.back().assign(t.step_rewards().begin(), t.step_rewards().end());
    }
  }
  group.rewards = lagrange.Shape(raw, group.costs);
}

// With one adapter per role, the active role's (after FreezeInactiveRoles its segments are the
// only trainable ones); null without roles.
const RoleAdapters::Adapter* ActiveAdapter(const GrpoTrainer::State& s) {
  if (s.roles == nullptr) return nullptr;
  return s.roles->Find(ActiveRole(s.options.grpo.alternation, s.step));
}

// The version a step's trainable segments should come from: the policy's, or the active role's.
uint64_t CurrentVersion(const GrpoTrainer::State& s) {
  const RoleAdapters::Adapter* a = ActiveAdapter(s);
  return a != nullptr ? a->version : s.version;
}

// What the probe of the latest publish measured (the active role's publisher with roles).
const std::optional<ProbeReport>& LastProbe(const GrpoTrainer::State& s) {
  const RoleAdapters::Adapter* a = ActiveAdapter(s);
  return a != nullptr ? a->publisher->last_probe() : s.publisher->last_probe();
}

// The served name the step's trainable segments should come from (CurrentVersion's adapter).
std::string CurrentAdapterName(const GrpoTrainer::State& s) {
  const RoleAdapters::Adapter* a = ActiveAdapter(s);
  return a != nullptr ? a->publisher->AdapterName(a->version) : s.publisher->AdapterName(s.version);
}

comm::Communicator* DataParallel(const GrpoTrainer::State& s) {
  return s.options.comm != nullptr && s.options.comm->distributed() ? s.options.comm : nullptr;
}

// One update on this rank's shard of `samples` (all of them on a single learner).
Status TrainShard(GrpoTrainer::State& s, const std::vector<Sample>& samples, double lr,
                  StepMetrics* m) {
  comm::Communicator* comm = DataParallel(s);
  std::vector<Sample> shard;
  if (comm == nullptr) {
    shard = samples;
  } else {
    for (size_t i : ShardIndices(samples.size(), comm->rank(), comm->world_size())) {
      shard.push_back(samples[i]);
    }
  }
  RolloutBatch batch;  // empty on a rank whose shard is empty; it still joins the collectives
  if (!shard.empty()) {
    ALLOT_ASSIGN_OR_RETURN(batch, BuildRolloutBatch(shard));
  }
  const GrpoConfig& g = s.options.grpo;
  // Default micro-batch: one collected batch (TRL's per_device_train_batch_size), so that memory
  // does not grow with grad_accum.
  const int64_t micro = g.micro_batch_size > 0
                            ? g.micro_batch_size
                            : static_cast<int64_t>(g.prompts_per_step) * g.group_size;
  UpdateOptions uo{.loss = s.loss,
                   .updates = g.updates_per_batch,
                   .micro_batch_size = micro,
                   .max_grad_norm = g.max_grad_norm,
                   .temperature = g.temperature,
                   .chunk_tokens = s.options.logprob_chunk_tokens,
                   .lr = lr,
                   .dropout_seed = SplitMix64Hash(s.options.seed ^ SplitMix64Hash(s.step + 0x5EED)),
                   .comm = comm,
                   .reference_lora = s.reference_lora.empty() ? nullptr : &s.reference_lora};
  if (s.roles != nullptr) {
    // R2-Reasoner Sec. 4.3: only the active role's adapter is attached, so the update reaches
    // its tensors and optimizer alone; the other roles' adapters stay as they are.
    ALLOT_ASSIGN_OR_RETURN(RoleAdapters::Adapter * a,
                           s.roles->Activate(ActiveRole(g.alternation, s.step)));
    uo.reference_lora = a->reference.empty() ? nullptr : &a->reference;
    return UpdatePolicy(*s.model, *a->optimizer, batch, uo, m);
  }
  return UpdatePolicy(*s.model, *s.optimizer, batch, uo, m);
}

// A rank other than 0: trains on its shard of each step's batch, as rank 0 sends it.
Result<GrpoRunSummary> RunFollower(GrpoTrainer::State& s, comm::Communicator& comm) {
  const GrpoConfig& g = s.options.grpo;
  GrpoRunSummary summary;
  // Rank 0 collects a step's episodes (rollout_timeout_s at most, refills included) and proves
  // the adapter served (sync retries) while this rank waits.
  const double wait_s =
      2.0 * g.rollout_timeout_s + g.sync_timeout_s * g.sync_retries + comm.options().timeout_s;
  if (s.version == 0) s.version = 1;  // rank 0 publishes the initial adapter as version 1
  while (s.step < s.options.total_steps) {
    std::string bytes;
    ALLOT_RETURN_IF_ERROR(comm.BroadcastString(bytes, /*root=*/0, wait_s));
    ALLOT_ASSIGN_OR_RETURN(StepBatch b, DecodeStepBatch(bytes));
    if (b.kind == StepBatch::Kind::kFailed) {
      return Cancelled("rank " + std::to_string(comm.rank()) + ": rank 0 failed: " + b.error);
    }
    if (b.step != s.step) {
      return Internal("rank " + std::to_string(comm.rank()) + " is at step " +
                      std::to_string(s.step) + ", rank 0 sent step " + std::to_string(b.step));
    }
    if (!b.trajectories.empty()) {
      std::vector<Sample> samples;
      for (size_t i = 0; i < b.trajectories.size(); ++i) {
        samples.push_back({&b.trajectories[i], b.advantages[i], b.step_advantages[i]});
      }
      StepMetrics m;
      ALLOT_RETURN_IF_ERROR(TrainShard(s, samples, b.lr, &m));
      s.version += 1;
    }
    s.step += 1;
    summary.mean_rewards.push_back(0.0);  // rank 0 reports rewards
    if (s.options.on_step_end) s.options.on_step_end(s.step);
  }
  summary.steps = s.step;
  summary.steps_this_run = static_cast<int64_t>(summary.mean_rewards.size());
  summary.policy_version = s.version;
  return summary;
}

// Rank 0 (or the only learner): rollouts, update, publishing, metrics, checkpoints.
// `followers_waiting` is false while the other ranks are inside the update's collectives.
Result<GrpoRunSummary> RunLeader(GrpoTrainer::State& s, MetricsWriter* metrics,
                                 ProgressBar* progress, bool* followers_waiting) {
  const GrpoConfig& g = s.options.grpo;
  comm::Communicator* comm = DataParallel(s);
  GrpoRunSummary summary;
  if (s.step >= s.options.total_steps) {
    summary.steps = s.step;
    summary.policy_version = s.version;
    summary.already_finished = true;
    return summary;
  }

  // Rollout workers: in-process ones (two when the recipe names none), and/or the remote ones
  // of rollout.dispatcher.workers.
  rollout::SessionOptions so;
  so.rollout = s.options.rollout;
  so.registry = &rollout::EnvRegistry::Global();
  so.name = "grpo";
  so.default_in_process = 2;
  so.seed = s.options.seed;
  // grpo.async: a worker that (re)connects gets every version a step in flight may pin.
  so.policy_history = static_cast<size_t>(g.async.max_lag) + 1;
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<rollout::RolloutSession> session,
                         rollout::RolloutSession::Start(std::move(so)));

  // The adapter of `version`: written, loaded into the policy endpoint and proven served. `all`:
  // with one adapter per role, every role's (a run's first publication, or a resumed run's);
  // else only the active role's, the one adapter the step changed (R2-Reasoner Sec. 4.3).
  auto publish_adapter = [&](uint64_t version, bool all) -> Status {
    if (s.roles != nullptr) {
      return all ? s.roles->PublishAll(version) : s.roles->PublishActive(version);
    }
    return s.publisher->Publish(*s.model, version);
  };
  // Makes `version` the rollout workers' policy: the episodes they start from now on sample it.
  auto push_snapshot = [&](uint64_t version) -> Status {
    envs::runtime::PolicySnapshot snap;
    snap.version = version;
    snap.kind = envs::runtime::PolicySnapshot::Kind::kLoraAdapter;
    if (s.roles != nullptr) {
      s.roles->FillSnapshot(snap);
    } else {
      snap.adapter_name = s.publisher->AdapterName(version);
      snap.adapter_uri = s.publisher->AdapterDir(version);
    }
    return session->Publish(std::move(snap));
  };
  // A worker may start an episode before a new snapshot reaches it, and under grpo.async the
  // groups in flight sample the max_lag versions before the newest: those stay loaded.
  auto unload_old = [&](uint64_t version) {
    const uint64_t lag = static_cast<uint64_t>(std::max(g.max_policy_lag, g.async.max_lag));
    if (version <= lag) return;
    if (s.roles != nullptr) {
      s.roles->UnloadActiveBelow(version - lag);
    } else {
      s.publisher->UnloadBelow(version - lag);
    }
  };
  // Version 1 is the initial adapter; a resumed run loads its version again (the endpoint may
  // be a fresh process) and takes over the versions an earlier process left loaded there, so
  // that they are unloaded like its own. A fresh run first unloads what an earlier run of its
  // name left on a long-lived endpoint: those names would refuse its own loads.
  if (s.version == 0) s.version = 1;
  if (s.probe != nullptr) {
    // Drawn here, after a resume has restored the run's seed: the same probe for the whole run.
    ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<models::Tokenizer> tok,
                           models::LoadTokenizer(s.options.model_dir));
    ALLOT_RETURN_IF_ERROR(s.probe->Draw(*tok, s.options.prompts, s.options.seed,
                                        g.delivery_probe.tokens,
                                        s.model->config().max_position_embeddings - 1));
    spdlog::info("grpo: delivery probe of {} tokens, tolerance {} on the mean |log-prob diff|",
                 s.probe->tokens().size(), s.probe->tolerance());
  }
  if (s.step > 0) {
    s.publisher->AdoptServed();
    if (s.roles != nullptr) s.roles->AdoptServed();
  } else {
    s.publisher->UnloadStale();
    if (s.roles != nullptr) s.roles->UnloadStale();
  }
  ALLOT_RETURN_IF_ERROR(publish_adapter(s.version, /*all=*/true));
  if (g.async.max_lag == 0) {
    ALLOT_RETURN_IF_ERROR(push_snapshot(s.version));
    unload_old(s.version);
  } else {
    if (s.version_after.empty()) s.version_after[s.step] = s.version;
    // A resumed run's groups in flight sample older versions: the endpoint (maybe a fresh
    // process) serves them again from the adapters written then, and the workers get each.
    uint64_t pushed = 0;
    for (const auto& [step, version] : s.version_after) {
      if (version == pushed) continue;
      ALLOT_RETURN_IF_ERROR(s.publisher->Serve(version));
      ALLOT_RETURN_IF_ERROR(push_snapshot(version));
      pushed = version;
    }
  }

  const int64_t group_size = g.group_size;
  // Draw c of the run: the group of prompt c (mod the list), episodes seeded by the session.
  // `version` > 0 pins the episodes to it (grpo.async).
  auto submit_draw = [&](int64_t c, uint64_t version) -> Status {
    v1::EpisodeRequest r;
    r.set_env(s.options.env);
    r.set_env_config(s.options.env_config);
    r.set_dataset_item(s.options.prompts[static_cast<size_t>(c) % s.options.prompts.size()]);
    // No max_tokens: each policy turn is sampled under its env's own budget (e.g.
    // env.coger.router_max_tokens), in training as in evaluation.
    r.mutable_sampling()->set_temperature(static_cast<float>(g.temperature));
    r.set_timeout_ms(static_cast<uint32_t>(std::min(g.rollout_timeout_s, 86400.0) * 1000.0));
    return session->SubmitDraw(c, static_cast<uint32_t>(group_size), r, version).status();
  };

  // One collected group, screened for training: stale episodes and failures that are not the
  // policy's leave it, and the rest are scored (ScoreGroup). A policy failure its env scored
  // (format error, truncation, malformed call) stays with its failure reward, so that the
  // group's advantage penalises it (rollout/failure_kind.h). `expected`: the version that
  // should have sampled its policy segments; staleness is measured from it, and reported against
  // the learner's current version.
  auto screen = [&](Group done, StepMetrics& m, uint64_t expected) -> Group {
    // R2-Reasoner Sec. 4.3: only the active role's segments carry loss (alternation.h).
    if (g.alternation.enabled) {
      for (auto& e : done.episodes) {
        FreezeInactiveRoles(e.trajectory, ActiveRole(g.alternation, s.step));
      }
    }
    Group kept;
    kept.cursor = done.cursor;
    for (auto& e : done.episodes) {
      const auto& t = e.trajectory;
      m.episodes += 1;
      const bool failed = t.failure().reason() != v1::FAILURE_REASON_NONE;
      const bool trainable = TrainableTokens(t) > 0;
      if (failed) m.ObserveFailure(t, trainable && rollout::IsScoredPolicyFailure(t));
      if (!trainable || (failed && !rollout::IsScoredPolicyFailure(t))) {
        if (!failed) {
          m.failed += 1;
          if (m.failed == 1) m.first_failure = "an episode with no trainable token";
        }
        m.RecordOutcome(
            done.cursor, t, e.attempts, e.worker, "failed",
            failed ? rollout::FailureReasonLabel(t.failure().reason()) : "no trainable token");
        continue;
      }
      const int64_t behind = PolicyLag(t, CurrentVersion(s));
      m.staleness_sum += static_cast<double>(behind);
      m.staleness_max = std::max<double>(m.staleness_max, static_cast<double>(behind));
      if (PolicyLag(t, expected) > g.max_policy_lag && g.stale_policy == "drop") {
        m.stale_dropped += 1;
        m.RecordOutcome(done.cursor, t, e.attempts, e.worker, "stale",
                        "sampled " + std::to_string(PolicyLag(t, expected)) + " versions behind");
        continue;
      }
      kept.episodes.push_back(std::move(e));
    }
    ScoreGroup(kept, g, s.lagrange);
    return kept;
  };
  // A screened group that cannot train: counted, its episodes observed.
  auto drop = [&](const Group& kept, StepMetrics& m, bool flat) {
    m.groups_dropped += 1;
    if (flat) m.groups_zero_variance += 1;
    for (const auto& e : kept.episodes) {
      m.RecordOutcome(kept.cursor, e.trajectory, e.attempts, e.worker, "dropped",
                      flat ? "zero variance" : "fewer than two usable episodes in the group");
    }
    for (const auto& e : kept.episodes) m.ObserveEpisode(e.trajectory, s.options.step_shares);
  };

  int consecutive_empty = 0;
  // The ledger's counters at the end of the previous step (StepMetrics: each step's share).
  rollout::DispatcherStats ledger_before = session->stats();
  std::unique_ptr<std::ofstream> episode_log;
  if (!s.options.episode_log.empty()) {
    episode_log = std::make_unique<std::ofstream>(s.options.episode_log, std::ios::app);
    if (!*episode_log) return Internal("grpo: cannot open " + s.options.episode_log);
  }
  // Advantages, the update and the new adapter (`on_version` makes it the rollouts' policy),
  // metrics: everything of a step after its groups are collected. Advances s.step.
  auto train = [&](std::vector<Group> accepted, StepMetrics& m, Clock::time_point t_step,
                   const std::function<Status(uint64_t)>& on_version) -> Status {
    std::sort(accepted.begin(), accepted.end(),
              [](const Group& a, const Group& b) { return a.cursor < b.cursor; });
    if (m.failed == m.episodes && m.episodes > 0) {
      return Unavailable("grpo: every episode of step " + std::to_string(s.step) +
                         " failed; first failure: " + m.first_failure);
    }
    // A step with no group left trains nothing; max_empty_steps of them in a row end the run
    // with the cause of the last (a step count that advances without updates must not pass
    // for training).
    if (!accepted.empty()) {
      consecutive_empty = 0;
    } else if (++consecutive_empty >= g.max_empty_steps) {
      const std::string steps = std::to_string(consecutive_empty) + " steps in a row";
      if (m.stale_dropped > 0) {
        return Unavailable("grpo: policy endpoint " + s.publisher->url() +
                           " never served adapter " + CurrentAdapterName(s) +
                           ": every policy segment came from an older version for " + steps +
                           " (grpo.max_empty_steps)");
      }
      if (m.groups_zero_variance > 0) {
        return Unavailable(
            "grpo: dynamic sampling dropped every group for " + steps +
            " (grpo.max_empty_steps): within each group the rewards the advantages use (the "
            "env reward with overlong shaping and the budget term, and the step rewards with "
            "grpo.step_advantages) were all equal, so no episode had an advantage; last step: " +
            std::to_string(static_cast<int64_t>(m.groups_zero_variance)) + " of " +
            std::to_string(static_cast<int64_t>(m.groups_dropped)) + " groups flat");
      }
      return Unavailable(
          "grpo: no group kept two usable episodes for " + steps +
          " (grpo.max_empty_steps); last step: " + std::to_string(static_cast<int64_t>(m.failed)) +
          " of " + std::to_string(static_cast<int64_t>(m.episodes)) +
          " episodes failed (first: " + m.first_failure + ")");
    }

    // ---- Rewards, costs, advantages. Scored again under this step's lambda: under grpo.async
    // a group arrives while an earlier step's dual update is still to come.
    std::vector<const v1::Trajectory*> trajs;
    std::vector<int64_t> gids;
    std::vector<double> shaped, costs;
    std::vector<std::vector<double>> step_rewards;
    for (size_t gi = 0; gi < accepted.size(); ++gi) {
      Group& grp = accepted[gi];
      ScoreGroup(grp, g, s.lagrange);
      for (size_t i = 0; i < grp.episodes.size(); ++i) {
        const auto& t = grp.episodes[i].trajectory;
        m.RecordOutcome(grp.cursor, t, grp.episodes[i].attempts, grp.episodes[i].worker, "trained",
                        t.failure().reason() != v1::FAILURE_REASON_NONE
                            ? rollout::FailureReasonLabel(t.failure().reason())
                            : "");
        trajs.push_back(&t);
        gids.push_back(static_cast<int64_t>(gi));
        shaped.push_back(grp.rewards[i]);  // ScoreGroup: what dynamic sampling judged
        costs.push_back(grp.costs[i]);
        step_rewards.push_back(grp.step_rewards[i]);
        m.ObserveEpisode(t, s.options.step_shares);
      }
    }
    m.lambda = s.lagrange.lambda();
    ALLOT_ASSIGN_OR_RETURN(const AdvantageEstimator* estimator,
                           FindAdvantageEstimator(g.advantage_estimator));
    if (!g.step_advantages) step_rewards.clear();
    AdvantageOutputs advantages = estimator->compute({shaped, gids, step_rewards});
    const std::vector<double> adv = std::move(advantages.outcome);
    std::vector<std::vector<double>> step_adv = std::move(advantages.step);
    step_adv.resize(trajs.size());
    s.lagrange.Update(costs);

    // ---- Update.
    double lr = s.schedule->LrAt(s.step);
    if (g.alternation.enabled) lr = RoleLearningRate(g, s.step, lr);  // Table 7: lr per role
    if (comm != nullptr) {
      // The other ranks get the step's samples (none: no update this step) and train on theirs.
      StepBatch sb;
      sb.step = s.step;
      sb.lr = lr;
      for (size_t i = 0; i < trajs.size(); ++i) {
        sb.trajectories.push_back(*trajs[i]);
        sb.advantages.push_back(adv[i]);
        sb.step_advantages.push_back(step_adv[i]);
      }
      std::string bytes = EncodeStepBatch(sb);
      ALLOT_RETURN_IF_ERROR(comm->BroadcastString(bytes));
      if (!trajs.empty()) *followers_waiting = false;
    }
    if (!trajs.empty()) {
      std::vector<Sample> samples;
      for (size_t i = 0; i < trajs.size(); ++i) {
        samples.push_back({trajs[i], adv[i], step_adv[i]});
      }
      ALLOT_RETURN_IF_ERROR(TrainShard(s, samples, lr, &m));
      *followers_waiting = true;
      // ---- Sync: a new adapter version, proven served.
      const auto t_sync = Clock::now();
      s.version += 1;
      ALLOT_RETURN_IF_ERROR(publish_adapter(s.version, /*all=*/false));
      ALLOT_RETURN_IF_ERROR(on_version(s.version));
      unload_old(s.version);
      m.sync_s = std::chrono::duration<double>(Clock::now() - t_sync).count();
      if (const auto& p = LastProbe(s); p.has_value()) {
        m.probed = true;
        m.probe_max_abs_diff = p->max_abs_diff;
        m.probe_mean_abs_diff = p->mean_abs_diff;
        m.probe_step_change = p->step_change.value_or(-1.0);
      }
    }
    m.step_s = std::chrono::duration<double>(Clock::now() - t_step).count();
    m.lr = lr;
    m.policy_version = static_cast<double>(s.version);
    s.step += 1;
    summary.mean_rewards.push_back(m.MeanReward());
    const rollout::DispatcherStats ledger = session->stats();
    m.issued = static_cast<double>(ledger.submitted - ledger_before.submitted);
    m.redispatched = static_cast<double>(ledger.redispatched - ledger_before.redispatched);
    m.duplicates_dropped =
        static_cast<double>(ledger.duplicates_dropped - ledger_before.duplicates_dropped);
    m.worker_losses = static_cast<double>(ledger.worker_losses - ledger_before.worker_losses);
    ledger_before = ledger;
    if (episode_log != nullptr) {
      *episode_log << m.OutcomeLines(s.step) << std::flush;
      if (!*episode_log) return Internal("grpo: cannot append to " + s.options.episode_log);
    }
    if (metrics != nullptr && (s.step % std::max<int64_t>(s.options.log_every, 1) == 0 ||
                               s.step == s.options.total_steps)) {
      ALLOT_RETURN_IF_ERROR(metrics->Log(s.step, m.ToScalars()));
    }
    if (progress != nullptr) progress->Update(s.step, m.MeanReward());
    return Status::Ok();
  };
  auto step_done = [&]() -> Status {
    if (s.options.checkpoint_every > 0 && s.step % s.options.checkpoint_every == 0) {
      ALLOT_RETURN_IF_ERROR(SaveCheckpoint(s, session->stats().open));
    }
    if (s.options.on_step_end) s.options.on_step_end(s.step);
    return Status::Ok();
  };
  auto timed_out = [&]() {
    const std::string unconnected = session->DescribeUnconnected();
    return DeadlineExceeded("grpo: rollout workers returned no group within " +
                            std::to_string(g.rollout_timeout_s) + " s (grpo.rollout_timeout_s)" +
                            (unconnected.empty() ? "" : "; not connected: " + unconnected));
  };
  // The group `arrived` came as: its draw, or an error for a group the session did not submit.
  auto draw_of = [&](const std::vector<rollout::FinishedEpisode>& arrived) -> Result<int64_t> {
    const std::optional<int64_t> draw = session->DrawOf(arrived.front().trajectory.group_id());
    if (!draw.has_value()) {
      return Internal("grpo: the rollout session delivered group '" +
                      arrived.front().trajectory.group_id() + "', which it did not submit");
    }
    return *draw;
  };

  const int64_t groups_per_step = static_cast<int64_t>(g.grad_accum) * g.prompts_per_step;
  if (progress != nullptr) progress->Start(s.step);
  if (g.async.max_lag == 0) {
    // ---- Synchronous: collect grad_accum batches of prompts_per_step groups (plus
    // replacements for dropped ones), update, publish. No adapter is published within a step, so
    // the grad_accum batches are sampled from one policy version whether they are drawn one
    // after another or together: they are drawn together, and each group's advantages are its
    // own group's, so the step is exactly one optimizer step over grad_accum collected batches
    // (TRL, verl).
    auto sync_version = [&](uint64_t version) { return push_snapshot(version); };
    while (s.step < s.options.total_steps) {
      StepMetrics m;
      const auto t_step = Clock::now();
      std::vector<Group> accepted;
      int64_t outstanding = 0;
      int refills = 0;
      for (int64_t i = 0; i < groups_per_step; ++i) {
        ALLOT_RETURN_IF_ERROR(submit_draw(s.cursor++, 0));
        ++outstanding;
      }
      const auto deadline = Clock::now() + std::chrono::duration<double>(g.rollout_timeout_s);
      while (outstanding > 0) {
        std::vector<rollout::FinishedEpisode> arrived =
            session->NextGroup(std::chrono::milliseconds(100));
        if (arrived.empty()) {
          if (Clock::now() > deadline) return timed_out();
          continue;
        }
        // A whole group, in group_index order (the session's delivery): arrival order varies
        // from run to run, the batch order must not (exact resume).
        ALLOT_ASSIGN_OR_RETURN(const int64_t draw, draw_of(arrived));
        --outstanding;
        Group done;
        done.cursor = draw;
        done.episodes = std::move(arrived);
        Group kept = screen(std::move(done), m, CurrentVersion(s));
        // Flatness is judged on what the advantages are computed from, not the env's raw
        // reward (DeepTool's step-wise instances have outcome 0 and their signal in the step
        // rewards).
        const bool flat = kept.episodes.size() >= 2 && FlatGroup(kept.rewards, kept.step_rewards);
        if (kept.episodes.size() < 2 || (g.dynamic_sampling && flat)) {
          drop(kept, m, g.dynamic_sampling && flat);
          if (g.dynamic_sampling && refills < g.max_refill_groups &&
              static_cast<int64_t>(accepted.size()) + outstanding < groups_per_step) {
            ALLOT_RETURN_IF_ERROR(submit_draw(s.cursor++, 0));
            ++outstanding;
            ++refills;
          }
          continue;
        }
        accepted.push_back(std::move(kept));
      }
      m.rollout_wait_s = std::chrono::duration<double>(Clock::now() - t_step).count();
      ALLOT_RETURN_IF_ERROR(train(std::move(accepted), m, t_step, sync_version));
      ALLOT_RETURN_IF_ERROR(step_done());
    }
  } else {
    // ---- Asynchronous and deterministic (grpo.async): step k (from 1) trains on draws
    // [(k - 1) G, k G) of G = grad_accum x prompts_per_step groups, every episode pinned to the
    // version the learner held after step k - max_lag - 1 (s.version_after): the workers keep
    // the recent versions and sample the one a request names, a re-dispatch after a worker's
    // death included, so whatever the arrival order a step's batch is the same groups sampled
    // by the same adapter.
    const int64_t lag_steps = g.async.max_lag;
    struct Ahead {
      uint64_t version = 0;
      std::vector<Group> arrived;
    };
    std::map<int64_t, Ahead> ahead;  // steps submitted and not yet trained, by step (from 1)
    // Submits the steps up to max_lag ahead of the one to train next.
    auto pump = [&]() -> Status {
      const int64_t last = std::min(s.options.total_steps, s.step + 1 + lag_steps);
      for (int64_t k = s.step + 1; k <= last; ++k) {
        if (ahead.count(k) > 0) continue;
        Ahead& a = ahead[k];
        a.version = s.version_after.at(std::max<int64_t>(0, k - lag_steps - 1));
        for (int64_t i = 0; i < groups_per_step; ++i) {
          ALLOT_RETURN_IF_ERROR(submit_draw((k - 1) * groups_per_step + i, a.version));
        }
      }
      return Status::Ok();
    };
    auto async_version = [&](uint64_t version) { return push_snapshot(version); };
    while (s.step < s.options.total_steps) {
      StepMetrics m;
      const auto t_step = Clock::now();
      const int64_t k = s.step + 1;
      ALLOT_RETURN_IF_ERROR(pump());
      const auto deadline = Clock::now() + std::chrono::duration<double>(g.rollout_timeout_s);
      while (static_cast<int64_t>(ahead.at(k).arrived.size()) < groups_per_step) {
        std::vector<rollout::FinishedEpisode> arrived =
            session->NextGroup(std::chrono::milliseconds(100));
        if (arrived.empty()) {
          if (Clock::now() > deadline) return timed_out();
          continue;
        }
        ALLOT_ASSIGN_OR_RETURN(const int64_t draw, draw_of(arrived));
        auto it = ahead.find(draw / groups_per_step + 1);
        if (it == ahead.end()) {
          return Internal("grpo.async: draw " + std::to_string(draw) +
                          " belongs to no step in flight");
        }
        Group done;
        done.cursor = draw;
        done.episodes = std::move(arrived);
        it->second.arrived.push_back(std::move(done));
      }
      m.rollout_wait_s = std::chrono::duration<double>(Clock::now() - t_step).count();
      Ahead mine = std::move(ahead.at(k));
      ahead.erase(k);
      m.groups_in_flight = static_cast<double>(ahead.size() * groups_per_step);
      std::sort(mine.arrived.begin(), mine.arrived.end(),
                [](const Group& a, const Group& b) { return a.cursor < b.cursor; });
      std::vector<Group> accepted;
      for (Group& done : mine.arrived) {
        Group kept = screen(std::move(done), m, mine.version);
        if (kept.episodes.size() < 2) {
          drop(kept, m, /*flat=*/false);
          continue;
        }
        accepted.push_back(std::move(kept));
      }
      ALLOT_RETURN_IF_ERROR(train(std::move(accepted), m, t_step, async_version));
      // What the steps max_lag + 1 ahead sample; older entries no step in flight needs.
      s.version_after[s.step] = s.version;
      s.version_after.erase(s.version_after.begin(),
                            s.version_after.lower_bound(s.step - lag_steps));
      s.cursor = s.step * groups_per_step;  // the draws trained on; the rest are re-issued
      ALLOT_RETURN_IF_ERROR(step_done());
    }
  }
  if (s.options.checkpoint_every <= 0 || s.step % s.options.checkpoint_every != 0) {
    ALLOT_RETURN_IF_ERROR(SaveCheckpoint(s, session->stats().open));
  }
  if (progress != nullptr) progress->Finish();
  summary.steps = s.step;
  summary.steps_this_run = static_cast<int64_t>(summary.mean_rewards.size());
  summary.policy_version = s.version;
  return summary;
}

}  // namespace

Result<GrpoRunSummary> GrpoTrainer::Run(MetricsWriter* metrics, ProgressBar* progress) {
  State& s = *s_;
  comm::Communicator* comm = DataParallel(s);
  if (s.step >= s.options.total_steps) {
    GrpoRunSummary summary;
    summary.steps = s.step;
    summary.policy_version = s.version;
    summary.already_finished = true;
    return summary;
  }
  if (comm != nullptr && !comm->is_rank0()) return RunFollower(s, *comm);
  bool followers_waiting = true;
  auto result = RunLeader(s, metrics, progress, &followers_waiting);
  if (!result.ok() && comm != nullptr && followers_waiting) {
    // The other ranks wait for a step batch: a failure of rank 0 ends them with its message.
    StepBatch failed;
    failed.kind = StepBatch::Kind::kFailed;
    failed.error = result.status().message();
    std::string bytes = EncodeStepBatch(failed);
    if (Status st = comm->BroadcastString(bytes); !st.ok()) {
      spdlog::warn("grpo: could not tell the other ranks that rank 0 failed: {}", st.message());
    }
  }
  return result;
}

}  // namespace allot::trainer::grpo
