// The GRPO learner end to end: a tiny model served by a real in-process `allot serve`, real
// rollout workers running the tag env, adapters published and proven served after each update.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "core/checkpoint_store.h"
#include "core/metrics_writer.h"
#include "llm/client.h"
#include "llm/serve/server.h"
#include "models/causal_lm.h"
#include "models/cpu_threads.h"
#include "models/peft.h"
#include "models/tokenizer/byte_tokenizer.h"
#include "rollout/env_registry.h"
#include "tests/llm/scripted_server.h"
#include "tests/llm/serve/serve_fixture.h"
#include "tests/models/tiny_model.h"
#include "tests/trainer/gloo_ranks.h"
#include "tests/trainer/tag_env.h"
#include "trainer/grpo/grpo_optim.h"
#include "trainer/grpo/grpo_trainer.h"
#include "trainer/grpo/policy_update.h"
#include "trainer/grpo/step_batch.h"
#include "trainer/optim/lr_schedule.h"

namespace allot::trainer::grpo {
namespace {

double Mean(const std::vector<double>& xs, size_t begin, size_t end) {
  end = std::min(end, xs.size());
  if (begin >= end) return 0.0;
  return std::accumulate(xs.begin() + begin, xs.begin() + end, 0.0) /
         static_cast<double>(end - begin);
}

GrpoRunOptions TagRunOptions(const std::string& model_dir, const std::string& url,
                             const std::string& run_dir) {
  GrpoRunOptions o;
  o.grpo.group_size = 8;
  o.grpo.prompts_per_step = 2;
  o.grpo.lr = 2e-2;
  o.grpo.max_tokens = 8;
  o.grpo.temperature = 1.0;
  o.grpo.loss_aggregation = "token_mean";
  o.grpo.lora.r = 8;
  o.grpo.lora.lora_alpha = 16;
  o.grpo.sync_timeout_s = 10;
  o.grpo.rollout_timeout_s = 60;
  o.total_steps = 40;
  o.seed = 5;
  o.model_dir = model_dir;
  o.env = testing::kTagEnvName;
  o.env_config = testing::TagEnvConfig(url, "tiny");
  o.prompts = {R"({"prompt": "<question_level>L"})"};
  o.run_dir = run_dir;
  o.checkpoint_dir = run_dir + "/checkpoints";
  o.rollout.in_process_workers = 2;
  o.rollout.worker.capacity = 16;
  o.rollout.worker.threads = 8;
  llm::EndpointConfig ep;
  ep.name = "policy";
  ep.base_url = url;
  ep.model = "tiny";
  ep.limits.deadline_s = 30;
  o.endpoints = {ep};
  return o;
}

class ServedTinyModel {
 public:
  // max_batch 1: every request is decoded alone, so seeded sampling repeats bit for bit.
  // model_dir: where to write the model (default: a temp directory of its own).
  // deterministic: batch-invariant decoding (`allot serve --deterministic`), so that seeded
  // sampling repeats bit for bit in batches of any composition.
  explicit ServedTinyModel(int max_batch = 32, const std::string& model_dir = "",
                           bool deterministic = false) {
    model_dir_ = model_dir.empty() ? llm::serve::testing::WriteServableTinyModel("grpo_tiny", 7)
                                   : llm::serve::testing::WriteServableTinyModelIn(model_dir, 7);
    llm::serve::ServeConfig c;
    c.model = model_dir_;
    c.served_model_name = "tiny";
    c.port = 0;
    c.threads = 1;
    c.max_batch = max_batch;
    c.deterministic = deterministic;
    auto s = llm::serve::Server::Create(c);
    EXPECT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(*s);
    auto port = server_->Start();
    EXPECT_TRUE(port.ok());
  }
  ~ServedTinyModel() { server_->Stop(); }
  std::string url() const { return server_->url(); }
  const std::string& model_dir() const { return model_dir_; }

 private:
  std::string model_dir_;
  std::unique_ptr<llm::serve::Server> server_;
};

TEST(GrpoLearningIntegrationTest, TinyModelsRuleRewardRisesAboveThreshold) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  ServedTinyModel served;
  const std::string run = models::testing::MakeTempDir("grpo_learn");
  auto trainer = GrpoTrainer::Create(TagRunOptions(served.model_dir(), served.url(), run));
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  auto metrics = MetricsWriter::Open(run + "/metrics.jsonl", "");
  ASSERT_TRUE(metrics.ok());
  auto summary = (*trainer)->Run(metrics->get(), nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  const auto& r = summary->mean_rewards;
  ASSERT_EQ(r.size(), 40u);
  // Every step logs the metrics grpo_metrics.h names.
  metrics->reset();
  std::ifstream jsonl(run + "/metrics.jsonl");
  std::string line, last;
  int lines = 0;
  while (std::getline(jsonl, line)) {
    ++lines;
    last = line;
  }
  EXPECT_EQ(lines, 40);
  const auto j = nlohmann::json::parse(last);
  for (const char* key : {"reward/mean",
                          "reward/std",
                          "reward/tag_alphabet/mean",
                          "reward/accuracy/std",
                          "accuracy",
                          "kl",
                          "clip_frac/low",
                          "clip_frac/high",
                          "entropy",
                          "grad_norm",
                          "is_weight/mean",
                          "staleness/max",
                          "tokens_per_s",
                          "time/rollout_wait_s",
                          "time/fwd_bwd_s",
                          "time/optimizer_s",
                          "time/sync_s",
                          "cost_usd_per_episode",
                          "energy_j_per_episode",
                          "lambda",
                          "policy_version",
                          "delivery/probe_max_abs_diff",
                          "delivery/probe_mean_abs_diff",
                          "delivery/probe_step_change",
                          "delivery/rollout_logprob_abs_diff"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_GT(j.value("tokens_per_s", 0.0), 0.0);
  EXPECT_EQ(j.value("policy_version", 0.0), 41.0);
  const double start = Mean(r, 0, 3);
  const double end = Mean(r, r.size() - 5, r.size());
  std::string curve;
  for (double x : r) curve += std::to_string(x).substr(0, 5) + " ";
  // A random byte model hits the 20-character alphabet about 20/260 of the time.
  // Measured: 0.06 at the start, 0.45-0.65 over the last five of 40 steps.
  EXPECT_LT(start, 0.2) << curve;
  EXPECT_GT(end, 0.35) << curve;
  EXPECT_GT(end, start + 0.2) << curve;
  // One published version per update, plus the initial adapter.
  EXPECT_EQ(summary->policy_version, 41u);
  EXPECT_TRUE(std::filesystem::exists(run + "/adapters/v41/adapter_model.safetensors"));
}

bool SameAdapter(models::CausalLMImpl& a, models::CausalLMImpl& b) {
  const auto& sa = a.linear_sites();
  const auto& sb = b.linear_sites();
  if (sa.size() != sb.size()) return false;
  for (size_t i = 0; i < sa.size(); ++i) {
    if (sa[i].linear->has_lora() != sb[i].linear->has_lora()) return false;
    if (!sa[i].linear->has_lora()) continue;
    if (!torch::equal(sa[i].linear->lora_A, sb[i].linear->lora_A) ||
        !torch::equal(sa[i].linear->lora_B, sb[i].linear->lora_B)) {
      return false;
    }
  }
  return true;
}

constexpr int64_t kResumeN = 3;

GrpoRunOptions ResumeRunOptions(const ServedTinyModel& served, const std::string& run,
                                uint64_t seed) {
  auto o = TagRunOptions(served.model_dir(), served.url(), run);
  o.total_steps = 2 * kResumeN;
  o.seed = seed;
  o.grpo.lora.seed = seed;
  o.grpo.updates_per_batch = 2;
  o.checkpoint_every = kResumeN;
  return o;
}

// N steps, SIGKILL during step N + 1 (after its update, so updates happened), then a resume
// from a process started with another seed (run seed and adapter seed): the restored adapter
// must equal the checkpoint's bit for bit (a restore that loaded nothing would hold the other
// seed's initial adapter), the run continues at step N and ends bit-identical to 2N
// uninterrupted steps, and a finished run resumes to nothing.
TEST(GrpoResumeIntegrationTest, KilledRunResumesFromItsCheckpoint) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  // The death-test child re-executes this test: it must find its parent's directory.
  const bool child = !GTEST_FLAG_GET(internal_run_death_test).empty();
  const char* shared = std::getenv("ALLOT_GRPO_RESUME_DIR");
  const std::string base =
      child && shared != nullptr ? shared : models::testing::MakeTempDir("grpo_resume");
  setenv("ALLOT_GRPO_RESUME_DIR", base.c_str(), 1);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        // The model goes under the parent's directory: SIGKILL leaves the child no chance
        // to remove a temp directory of its own.
        ServedTinyModel served(1, base + "/child_model");
        auto o = ResumeRunOptions(served, base + "/killed", 11);
        o.on_step_end = [](int64_t step) {
          if (step == kResumeN + 1) raise(SIGKILL);
        };
        auto t = GrpoTrainer::Create(o);
        if (!t.ok()) std::exit(3);
        (void)(*t)->Run(nullptr, nullptr);
        std::exit(4);
      },
      ::testing::KilledBySignal(SIGKILL), "");
  // Updates happened before the kill: step N's checkpoint and step N + 1's adapter exist.
  CheckpointStore store(base + "/killed/checkpoints", 0);
  ASSERT_EQ(store.Steps(), std::vector<int64_t>{kResumeN});
  const std::string ckpt = base + "/killed/checkpoints/" + CheckpointStore::StepDirName(kResumeN);
  ASSERT_TRUE(std::filesystem::exists(base + "/killed/adapters/v" + std::to_string(kResumeN + 2) +
                                      "/adapter_config.json"));
  // AdamW's state as trainer/optim writes it, and nothing in flight in the dispatcher's ledger.
  EXPECT_TRUE(std::filesystem::exists(ckpt + "/optimizer.safetensors"));
  {
    std::ifstream state(ckpt + "/state.json");
    EXPECT_EQ(nlohmann::json::parse(state).value("ledger_open", int64_t{-1}), 0);
  }

  ServedTinyModel served(1);
  auto resumed = GrpoTrainer::Create(ResumeRunOptions(served, base + "/killed", 99));
  ASSERT_TRUE(resumed.ok());
  auto at = (*resumed)->Resume();
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_EQ(*at, kResumeN);
  EXPECT_EQ((*resumed)->policy_version(), static_cast<uint64_t>(kResumeN + 1));
  auto reference = models::CausalLMImpl::Load(served.model_dir());
  ASSERT_TRUE(reference.ok());
  ASSERT_TRUE(models::LoadAdapter(**reference, ckpt + "/adapter").ok());
  EXPECT_TRUE(SameAdapter((*resumed)->policy(), **reference));
  auto fresh = GrpoTrainer::Create(ResumeRunOptions(served, base + "/unrelated", 99));
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(SameAdapter((*fresh)->policy(), **reference));  // the test can fail

  auto sb = (*resumed)->Run(nullptr, nullptr);
  ASSERT_TRUE(sb.ok()) << sb.status().message();
  EXPECT_EQ(sb->steps_this_run, kResumeN);
  EXPECT_EQ(sb->policy_version, static_cast<uint64_t>(2 * kResumeN + 1));
  // And it ends where 2N uninterrupted steps end, bit for bit.
  ServedTinyModel served_straight(1);
  auto straight = GrpoTrainer::Create(ResumeRunOptions(served_straight, base + "/straight", 11));
  ASSERT_TRUE(straight.ok());
  ASSERT_TRUE((*straight)->Run(nullptr, nullptr).ok());
  EXPECT_TRUE(SameAdapter((*straight)->policy(), (*resumed)->policy()));

  // A finished run resumes to nothing: no step, no fresh metric.
  auto again = GrpoTrainer::Create(ResumeRunOptions(served, base + "/killed", 5));
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->Resume().ok());
  auto sc = (*again)->Run(nullptr, nullptr);
  ASSERT_TRUE(sc.ok());
  EXPECT_TRUE(sc->already_finished);
  EXPECT_TRUE(sc->mean_rewards.empty());
}

// Exact resume needs runs that repeat bit for bit: same seed, same adapter after every step.
// (Before LoRA dropout drew from a per-step seeded generator, this failed at the first update.)
TEST(GrpoResumeIntegrationTest, TwoRunsWithOneSeedAreBitIdentical) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string base = models::testing::MakeTempDir("grpo_repeat");
  ServedTinyModel served_a(1), served_b(1);
  auto a = GrpoTrainer::Create(ResumeRunOptions(served_a, base + "/a", 11));
  auto b = GrpoTrainer::Create(ResumeRunOptions(served_b, base + "/b", 11));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Run(nullptr, nullptr).ok());
  ASSERT_TRUE((*b)->Run(nullptr, nullptr).ok());
  EXPECT_TRUE(SameAdapter((*a)->policy(), (*b)->policy()));
}

TEST(GrpoSyncIntegrationTest, EndpointThatRefusesTheAdapterFailsWithItsUrl) {
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  llm::testing::ScriptedServer server;
  server.SetHandler([](const llm::testing::ServerRequest& req) {
    if (req.path == "/v1/load_lora_adapter") {
      return llm::testing::Reply::Json(
          R"({"error": {"message": "adapter refused", "type": "BadRequestError"}})", 400);
    }
    return llm::testing::Reply::Json(R"({"object": "list", "data": []})");
  });
  const std::string model_dir = llm::serve::testing::WriteServableTinyModel("grpo_refuse", 7);
  const std::string run = models::testing::MakeTempDir("grpo_refuse_run");
  auto o = TagRunOptions(model_dir, server.url(), run);
  o.grpo.sync_retries = 2;
  auto trainer = GrpoTrainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  auto summary = (*trainer)->Run(nullptr, nullptr);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find(server.url()), std::string::npos)
      << summary.status().message();
  EXPECT_NE(summary.status().message().find("policy-v1"), std::string::npos);
}

TEST(GrpoSyncIntegrationTest, AdapterAcceptedButNeverListedFailsWithItsUrl) {
  // The verl #7495 shape: the load call answers 200, yet the engine never serves the adapter.
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  llm::testing::ScriptedServer server;
  server.SetHandler([](const llm::testing::ServerRequest& req) {
    if (req.path == "/v1/load_lora_adapter") return llm::testing::Reply::Json("{}");
    return llm::testing::Reply::Json(
        R"({"object": "list", "data": [{"id": "tiny", "object": "model"}]})");
  });
  const std::string model_dir = llm::serve::testing::WriteServableTinyModel("grpo_unlisted", 7);
  const std::string run = models::testing::MakeTempDir("grpo_unlisted_run");
  auto o = TagRunOptions(model_dir, server.url(), run);
  o.grpo.sync_retries = 2;
  auto trainer = GrpoTrainer::Create(o);
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  auto summary = (*trainer)->Run(nullptr, nullptr);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find(server.url()), std::string::npos)
      << summary.status().message();
  EXPECT_NE(summary.status().message().find("does not list"), std::string::npos);
}

TEST(GrpoPolicyUpdateTest, ReferencePassRunsOnlyWithAKlTerm) {
  const std::string dir = models::testing::WriteTinyModel(models::testing::MakeTempDir("grpo_upd"));
  auto model = models::CausalLMImpl::Load(dir);
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE(
      (*model)->AttachLora({.r = 4, .alpha = 8.0}, {"q_proj", "v_proj", "down_proj"}, 1).ok());
  auto make = [](std::vector<int> policy_ids) {
    v1::Trajectory t;
    auto* p = t.add_segments();
    for (int id : {1, 2, 3}) p->add_ids(id);
    auto* a = t.add_segments();
    a->set_trainable(true);
    for (int id : policy_ids) a->add_ids(id);
    return t;
  };
  const v1::Trajectory t = make({4, 5, 6});
  const v1::Trajectory t2 = make({7, 8});
  auto batch = BuildRolloutBatch({{&t, 1.0, {}}, {&t2, -1.0, {}}});
  ASSERT_TRUE(batch.ok());
  auto b_norm = [&] {
    double n = 0.0;
    for (const auto& site : (*model)->linear_sites()) {
      if (site.linear->has_lora()) n += site.linear->lora_B.abs().sum().item<double>();
    }
    return n;
  };
  ASSERT_EQ(b_norm(), 0.0);  // B = 0 at attach
  torch::optim::AdamW opt((*model)->LoraParameters(),
                          torch::optim::AdamWOptions(1e-2).weight_decay(0.0));
  StepMetrics m;
  int64_t ref_passes = 0;
  UpdateOptions uo{.updates = 2, .micro_batch_size = 1, .lr = 1e-2};
  uo.loss.kl_coef = 0.0;
  uo.loss.truncated_is = false;  // the batch carries no rollout log-probs
  ASSERT_TRUE(UpdatePolicy(**model, opt, *batch, uo, &m, &ref_passes).ok());
  EXPECT_EQ(ref_passes, 0);
  EXPECT_GT(b_norm(), 0.0);  // the adapter moved
  // The second pass saw a ratio away from 1 (old log-probs kept from before the first pass).
  EXPECT_NE(m.ratio_mean, 1.0);
  EXPECT_GT(m.trained_tokens, 0.0);
  uo.loss.kl_coef = 0.1;
  ASSERT_TRUE(UpdatePolicy(**model, opt, *batch, uo, &m, &ref_passes).ok());
  EXPECT_EQ(ref_passes, 2);  // one per micro-batch
  EXPECT_GE(m.kl, 0.0);
}

// With lora.init_from the KL term's reference is the adapter the run started from (verl: the
// initial actor), not the base: at those weights the KL is 0 where the base's is not. The
// reference pass swaps the weights in and back: with lr 0 the adapter is unchanged after it.
TEST(GrpoPolicyUpdateTest, KlReferenceIsTheStartingAdapterWhenGiven) {
  const std::string dir = models::testing::WriteTinyModel(models::testing::MakeTempDir("grpo_ref"));
  auto model = models::CausalLMImpl::Load(dir);
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE((*model)->AttachLora({.r = 4, .alpha = 8.0}, {"q_proj", "v_proj"}, 1).ok());
  {
    torch::NoGradGuard g;
    torch::manual_seed(2);
    for (const auto& site : (*model)->linear_sites()) {
      if (site.linear->has_lora()) site.linear->lora_B.normal_(0.0, 0.5);
    }
  }
  v1::Trajectory t;
  auto* p = t.add_segments();
  for (int id : {1, 2, 3}) p->add_ids(id);
  auto* a = t.add_segments();
  a->set_trainable(true);
  for (int id : {4, 5, 6, 7}) a->add_ids(id);
  auto batch = BuildRolloutBatch({{&t, 1.0, {}}});
  ASSERT_TRUE(batch.ok());
  std::vector<at::Tensor> start;
  for (const at::Tensor& w : (*model)->LoraParameters()) start.push_back(w.detach().clone());
  torch::optim::AdamW opt((*model)->LoraParameters(),
                          torch::optim::AdamWOptions(0.0).weight_decay(0.0));
  UpdateOptions uo{.lr = 0.0};
  uo.loss.kl_coef = 0.1;
  uo.loss.truncated_is = false;  // the batch carries no rollout log-probs
  StepMetrics m;
  ASSERT_TRUE(UpdatePolicy(**model, opt, *batch, uo, &m).ok());
  EXPECT_GT(m.kl, 1e-6);  // the base is away from this adapter
  uo.reference_lora = &start;
  ASSERT_TRUE(UpdatePolicy(**model, opt, *batch, uo, &m).ok());
  EXPECT_NEAR(m.kl, 0.0, 1e-9);
  std::vector<at::Tensor> moved;
  for (const at::Tensor& w : start) moved.push_back(w + 0.3);
  uo.reference_lora = &moved;
  ASSERT_TRUE(UpdatePolicy(**model, opt, *batch, uo, &m).ok());
  EXPECT_GT(m.kl, 1e-6);
  const auto now = (*model)->LoraParameters();
  for (size_t k = 0; k < now.size(); ++k) EXPECT_TRUE(torch::equal(now[k], start[k])) << k;
  std::vector<at::Tensor> short_list(start.begin(), start.begin() + 1);
  uo.reference_lora = &short_list;
  Status s = UpdatePolicy(**model, opt, *batch, uo, &m);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("reference policy"), std::string::npos) << s.ToString();
}

// --- optimiser, dynamic sampling, the ledger -----------------------------------------------------

// The grpo keys a recipe sets become trainer/optim's AdamW groups and schedule: the learner's lr
// at a few steps is what the recipe says (warmup from 0, then cosine to 0 over total_steps).
TEST(GrpoOptimTest, ScheduleIsTheRecipes) {
  GrpoConfig g;
  g.lr = 1e-3;
  g.lr_schedule = "cosine";
  g.warmup_ratio = 0.2;
  g.weight_decay = 0.1;
  const OptimConfig o = GrpoOptimConfig(g);
  EXPECT_EQ(o.lr, 1e-3);
  EXPECT_EQ(o.schedule, "cosine");
  EXPECT_EQ(o.weight_decay, 0.1);
  EXPECT_EQ(o.max_grad_norm, g.max_grad_norm);
  auto schedule = LrSchedule::Create(o, 10);
  ASSERT_TRUE(schedule.ok());
  EXPECT_EQ(schedule->warmup_steps(), 2);
  EXPECT_DOUBLE_EQ(schedule->LrAt(0), 0.0);
  EXPECT_DOUBLE_EQ(schedule->LrAt(1), 5e-4);
  EXPECT_DOUBLE_EQ(schedule->LrAt(2), 1e-3);
  EXPECT_NEAR(schedule->LrAt(6), 5e-4, 1e-12);  // halfway through the decay
  EXPECT_NEAR(schedule->LrAt(10), 0.0, 1e-12);
  g.lr_schedule = "linear";
  g.warmup_ratio = 0.0;
  auto linear = LrSchedule::Create(GrpoOptimConfig(g), 4);
  ASSERT_TRUE(linear.ok());
  EXPECT_DOUBLE_EQ(linear->LrAt(0), 1e-3);
  EXPECT_DOUBLE_EQ(linear->LrAt(1), 7.5e-4);  // DeepTool: linear, no warmup
}

// The trainer's own schedule (what each step logs as lr and applies): the recipe's.
TEST(GrpoOptimIntegrationTest, TrainerAppliesTheRecipesSchedule) {
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string model_dir = llm::serve::testing::WriteServableTinyModel("grpo_sched", 7);
  auto o = TagRunOptions(model_dir, "http://127.0.0.1:1", models::testing::MakeTempDir("grpo_s"));
  o.total_steps = 10;
  o.grpo.lr = 1e-3;
  o.grpo.lr_schedule = "cosine";
  o.grpo.warmup_ratio = 0.2;
  auto t = GrpoTrainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_DOUBLE_EQ((*t)->LearningRateAt(0), 0.0);
  EXPECT_DOUBLE_EQ((*t)->LearningRateAt(1), 5e-4);
  EXPECT_DOUBLE_EQ((*t)->LearningRateAt(2), 1e-3);
  EXPECT_NEAR((*t)->LearningRateAt(6), 5e-4, 1e-12);
  // A warmup that leaves no decay is refused, naming the knob.
  o.grpo.warmup_ratio = 1.0;
  auto bad = GrpoTrainer::Create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("grpo.warmup_ratio"), std::string::npos)
      << bad.status().message();
}

// Prompts cycle flat, normal, normal: with two groups a step, the flat group of each step has zero
// reward variance and is dropped, one replacement is drawn, and the step trains on two groups.
// Normal items sample 32 tokens: four 8-token completions all without a tag character (a normal
// group that is flat by chance) came up often enough to make the counts depend on the seed.
GrpoRunOptions DynamicSamplingOptions(const ServedTinyModel& served, const std::string& run,
                                      uint64_t seed) {
  auto o = TagRunOptions(served.model_dir(), served.url(), run);
  o.seed = seed;
  o.grpo.lora.seed = seed;
  o.grpo.group_size = 4;
  o.grpo.dynamic_sampling = true;
  o.grpo.max_refill_groups = 2;
  o.grpo.micro_batch_size = 4;  // two passes over a step's 8 episodes
  o.prompts = {R"({"prompt": "<question_level>L", "flat": true})",
               R"({"prompt": "<question_level>L", "max_tokens": 32})",
               R"({"prompt": "<question_level>L", "max_tokens": 32})"};
  return o;
}

std::vector<nlohmann::json> MetricLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(GrpoDynamicSamplingIntegrationTest, ZeroVarianceGroupsAreDroppedAndRefilled) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  ServedTinyModel served(1);
  const std::string run = models::testing::MakeTempDir("grpo_dyn");
  auto o = DynamicSamplingOptions(served, run, 11);
  o.total_steps = 2;
  auto t = GrpoTrainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto metrics = MetricsWriter::Open(run + "/metrics.jsonl", "");
  ASSERT_TRUE(metrics.ok());
  auto summary = (*t)->Run(metrics->get(), nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  metrics->reset();
  const auto lines = MetricLines(run + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& j : lines) {
    EXPECT_EQ(j.value("groups/zero_variance", -1.0), 1.0) << j.dump();
    EXPECT_EQ(j.value("groups/dropped", -1.0), 1.0) << j.dump();
    EXPECT_EQ(j.value("episodes", -1.0), 12.0) << j.dump();  // 3 groups of 4 drawn
    // The refill filled the batch: two groups of 4 trained (nothing else is dropped here).
    EXPECT_GT(j.value("trained_tokens", 0.0), 0.0);
  }
  // Three groups drawn per step (two, then one replacement): the cursor the checkpoint keeps.
  std::ifstream state(run + "/checkpoints/" + CheckpointStore::StepDirName(2) + "/state.json");
  const auto j = nlohmann::json::parse(state);
  EXPECT_EQ(j.value("cursor", int64_t{-1}), 6);
  EXPECT_EQ(j.value("ledger_open", int64_t{-1}), 0);  // refills included, nothing in flight
}

// Exact resume with refills on: 2 steps, then a learner built from another seed resumes and runs
// 2 more; it ends bit-identical to 4 straight steps (the refills a step draws are a function of
// the cursor and the seeded samples, not of the order groups arrive in). Each run gets its own
// endpoint, as a restarted learner would.
void ExpectResumeMatchesStraight(bool dynamic_sampling) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string base = models::testing::MakeTempDir("grpo_dyn_resume");
  auto options = [&](const ServedTinyModel& served, const std::string& run, uint64_t seed) {
    auto o = DynamicSamplingOptions(served, run, seed);
    o.grpo.dynamic_sampling = dynamic_sampling;
    if (!dynamic_sampling) {
      o.grpo.max_refill_groups = GrpoConfig().max_refill_groups;
      o.prompts = {R"({"prompt": "<question_level>L"})"};
    }
    o.total_steps = 4;
    o.checkpoint_every = 2;
    return o;
  };
  ServedTinyModel served_straight(1);
  auto straight = GrpoTrainer::Create(options(served_straight, base + "/straight", 11));
  ASSERT_TRUE(straight.ok());
  ASSERT_TRUE((*straight)->Run(nullptr, nullptr).ok());
  {
    ServedTinyModel served(1);
    auto first = options(served, base + "/run", 11);
    first.total_steps = 2;  // stops after step 2's checkpoint (constant lr: same schedule)
    auto t = GrpoTrainer::Create(first);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE((*t)->Run(nullptr, nullptr).ok());
  }
  ServedTinyModel served(1);
  auto resumed = GrpoTrainer::Create(options(served, base + "/run", 99));
  ASSERT_TRUE(resumed.ok());
  EXPECT_FALSE(SameAdapter((*resumed)->policy(), (*straight)->policy()));
  auto at = (*resumed)->Resume();
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_EQ(*at, 2);
  auto rest = (*resumed)->Run(nullptr, nullptr);
  ASSERT_TRUE(rest.ok()) << rest.status().message();
  EXPECT_EQ(rest->steps_this_run, 2);
  EXPECT_TRUE(SameAdapter((*straight)->policy(), (*resumed)->policy()))
      << "dynamic_sampling " << dynamic_sampling;
}

TEST(GrpoDynamicSamplingIntegrationTest, ResumeIsExactWithRefills) {
  ExpectResumeMatchesStraight(/*dynamic_sampling=*/true);
}

TEST(GrpoDynamicSamplingIntegrationTest, ResumeIsExactWithoutRefills) {
  ExpectResumeMatchesStraight(/*dynamic_sampling=*/false);
}

// A policy failure its env scored (format error, reward 0) stays in its group, whose advantage
// penalises it; an endpoint failure leaves its group, and both are counted by reason. Groups of
// two: step 1's has a policy failure, step 2's an endpoint failure. (The learner used to drop
// every failed episode, so step 1's group fell below two episodes and was dropped untrained.)
// Step 1's episodes also report a reward oracle's spend, which has a metric of its own.
TEST(GrpoFailureIntegrationTest, PolicyFailuresStayInTheirGroupEndpointFailuresLeave) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  ServedTinyModel served(1);
  const std::string run = models::testing::MakeTempDir("grpo_failures");
  auto o = TagRunOptions(served.model_dir(), served.url(), run);
  o.grpo.group_size = 2;
  o.grpo.prompts_per_step = 1;
  o.grpo.grad_accum = 1;
  o.total_steps = 2;
  o.prompts = {R"({"prompt": "<question_level>L", "policy_failure_index": 0,
                   "oracle_cost_usd": 0.25})",
               R"({"prompt": "<question_level>L", "endpoint_failure_index": 1})"};
  auto t = GrpoTrainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto metrics = MetricsWriter::Open(run + "/metrics.jsonl", "");
  ASSERT_TRUE(metrics.ok());
  auto summary = (*t)->Run(metrics->get(), nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  metrics->reset();
  const auto lines = MetricLines(run + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  const nlohmann::json& scored = lines[0];
  EXPECT_EQ(scored.value("groups/dropped", -1.0), 0.0) << scored.dump();
  EXPECT_GT(scored.value("trained_tokens", 0.0), 0.0) << scored.dump();
  EXPECT_EQ(scored.value("episodes/failed", -1.0), 0.0) << scored.dump();
  EXPECT_EQ(scored.value("episodes/failed_scored", -1.0), 1.0) << scored.dump();
  EXPECT_EQ(scored.value("episodes/failed/format_error", -1.0), 1.0) << scored.dump();
  // A reward oracle's spend is its own metric, summed over the step; not the episodes' cost.
  EXPECT_DOUBLE_EQ(scored.value("oracle_cost_usd", -1.0), 0.5) << scored.dump();
  EXPECT_DOUBLE_EQ(scored.value("cost_usd_per_episode", -1.0), 0.0) << scored.dump();
  const nlohmann::json& dropped = lines[1];
  EXPECT_EQ(dropped.value("groups/dropped", -1.0), 1.0) << dropped.dump();
  EXPECT_EQ(dropped.value("trained_tokens", -1.0), 0.0) << dropped.dump();
  EXPECT_EQ(dropped.value("episodes/failed", -1.0), 1.0) << dropped.dump();
  EXPECT_EQ(dropped.value("episodes/failed_scored", -1.0), 0.0) << dropped.dump();
  EXPECT_EQ(dropped.value("episodes/failed/endpoint_error", -1.0), 1.0) << dropped.dump();
}

// DeepTool's step-wise instances: the outcome is 0 in every episode and the signal is in the
// step rewards. Catches dynamic sampling judging flatness on the raw outcome: every group was
// dropped as zero-variance, and the steps advanced with no update (policy version 1 at the end).
TEST(GrpoDynamicSamplingIntegrationTest, StepRewardsKeepAGroupWhoseOutcomeIsFlat) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  ServedTinyModel served(1);
  const std::string run = models::testing::MakeTempDir("grpo_dyn_steps");
  auto o = DynamicSamplingOptions(served, run, 11);
  o.prompts = {R"({"prompt": "<question_level>L", "flat": true, "step_reward": true})"};
  o.total_steps = 2;
  auto t = GrpoTrainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto metrics = MetricsWriter::Open(run + "/metrics.jsonl", "");
  ASSERT_TRUE(metrics.ok());
  auto summary = (*t)->Run(metrics->get(), nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  metrics->reset();
  EXPECT_EQ(summary->policy_version, 3u);  // one update per step
  const auto lines = MetricLines(run + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& j : lines) {
    // Groups are judged on their step rewards: one whose four completions happen to score alike
    // may be dropped, but not every group drawn.
    const double groups = j.value("episodes", 0.0) / 4;
    EXPECT_LT(j.value("groups/zero_variance", -1.0), groups - 1) << j.dump();
    EXPECT_EQ(j.value("reward/mean", -1.0), 0.0) << j.dump();  // the outcome is flat
    EXPECT_GT(j.value("trained_tokens", 0.0), 0.0) << j.dump();
  }
}

// A recipe whose groups never vary (here: every reward 0, no step rewards) trains nothing under
// dynamic sampling. Catches a run that advanced its steps with no update and ended "ok": it must
// fail after grpo.max_empty_steps (3) such steps, naming dynamic sampling as the cause.
TEST(GrpoDynamicSamplingIntegrationTest, StepsWithEveryGroupDroppedFailTheRun) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  ServedTinyModel served(1);
  const std::string run = models::testing::MakeTempDir("grpo_dyn_empty");
  auto o = DynamicSamplingOptions(served, run, 11);
  o.prompts = {R"({"prompt": "<question_level>L", "flat": true})"};
  o.grpo.max_refill_groups = 1;
  o.total_steps = 6;
  int64_t steps_done = 0;
  o.on_step_end = [&](int64_t step) { steps_done = step; };
  auto t = GrpoTrainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto summary = (*t)->Run(nullptr, nullptr);
  ASSERT_FALSE(summary.ok()) << "six steps without an update passed";
  const std::string msg = summary.status().message();
  EXPECT_NE(msg.find("dynamic sampling"), std::string::npos) << msg;
  EXPECT_NE(msg.find("grpo.max_empty_steps"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 steps in a row"), std::string::npos) << msg;
  EXPECT_EQ(steps_done, 2);  // the third empty step fails before it counts
  EXPECT_EQ((*t)->policy_version(), 1u);
}

// A learner that resumes against the endpoint its earlier process used takes over the adapter
// versions that process left loaded: they are unloaded like its own (max_policy_lag 1: after
// version 5 only versions 4 and 5 stay), instead of staying loaded for good.
TEST(GrpoResumeIntegrationTest, ResumedLearnerUnloadsTheVersionsItsPredecessorLoaded) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string base = models::testing::MakeTempDir("grpo_adopt");
  ServedTinyModel served(1);
  auto o = TagRunOptions(served.model_dir(), served.url(), base + "/run");
  o.total_steps = 2;
  o.checkpoint_every = 2;
  {
    auto t = GrpoTrainer::Create(o);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE((*t)->Run(nullptr, nullptr).ok());
  }
  o.total_steps = 4;
  auto resumed = GrpoTrainer::Create(o);
  ASSERT_TRUE(resumed.ok());
  ASSERT_TRUE((*resumed)->Resume().ok());
  auto rest = (*resumed)->Run(nullptr, nullptr);
  ASSERT_TRUE(rest.ok()) << rest.status().message();
  EXPECT_EQ(rest->policy_version, 5u);
  auto client = llm::Client::Create(o.endpoints);
  ASSERT_TRUE(client.ok());
  auto listed = (*client)->Models("policy").get();
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  std::vector<std::string> adapters;
  for (const auto& m : *listed) {
    if (m.id.rfind("policy-v", 0) == 0) adapters.push_back(m.id);
  }
  std::sort(adapters.begin(), adapters.end());
  EXPECT_EQ(adapters, (std::vector<std::string>{"policy-v4", "policy-v5"}));
}

std::vector<std::string> ServedAdapters(const GrpoRunOptions& o) {
  auto client = llm::Client::Create(o.endpoints);
  EXPECT_TRUE(client.ok());
  if (!client.ok()) return {};
  auto listed = (*client)->Models("policy").get();
  EXPECT_TRUE(listed.ok()) << listed.status().message();
  std::vector<std::string> adapters;
  if (!listed.ok()) return adapters;
  for (const auto& m : *listed) {
    if (m.id != "tiny") adapters.push_back(m.id);
  }
  std::sort(adapters.begin(), adapters.end());
  return adapters;
}

// Runs restarted against one long-lived endpoint. Catches: a fresh run that collides
// with the names an earlier run of the same name left loaded ("has already been loaded" at v2,
// the first version the earlier run had not unloaded), and a fresh run that unloads another
// run's adapters.
TEST(GrpoSyncIntegrationTest, FreshRunsInARowShareOneEndpoint) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string base = models::testing::MakeTempDir("grpo_again");
  ServedTinyModel served(1);  // seeded runs repeat bit for bit: each publishes the same versions
  auto o = TagRunOptions(served.model_dir(), served.url(), base + "/first");
  o.total_steps = 2;
  o.adapter_prefix = "coger";
  auto run = [&]() -> uint64_t {
    auto t = GrpoTrainer::Create(o);
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (!t.ok()) return 0;
    auto summary = (*t)->Run(nullptr, nullptr);
    EXPECT_TRUE(summary.ok()) << summary.status().message();
    return summary.ok() ? summary->policy_version : 0;
  };
  const uint64_t first = run();
  ASSERT_GT(first, 0u);
  // The versions within max_policy_lag of the last stay loaded after a run.
  const std::vector<std::string> left = ServedAdapters(o);
  ASSERT_FALSE(left.empty());
  for (const std::string& name : left) EXPECT_EQ(name.rfind("coger-v", 0), 0u) << name;

  // The same run name again (its directory elsewhere): the stale versions go first.
  o.run_dir = base + "/again";
  o.checkpoint_dir = o.run_dir + "/checkpoints";
  EXPECT_EQ(run(), first);
  EXPECT_EQ(ServedAdapters(o), left);

  // Another run name publishes beside them and leaves them alone, even one that looks like a
  // version of the first ("coger-v2-v<N>").
  o.run_dir = base + "/other";
  o.checkpoint_dir = o.run_dir + "/checkpoints";
  o.adapter_prefix = "coger-v2";
  EXPECT_EQ(run(), first);
  std::vector<std::string> both = left;
  for (const std::string& name : left) both.push_back("coger-v2-" + name.substr(6));
  std::sort(both.begin(), both.end());
  EXPECT_EQ(ServedAdapters(o), both);
}

// --- turn budgets and truncated IS -------------------------------------------------------------

// Each policy turn is sampled under its env's own budget (here the item's max_tokens: 2), not
// under grpo.max_tokens (64): the learner's requests carry none. They carried grpo.max_tokens,
// which overrode every per-role budget in training (env.coger.router_max_tokens, ...), so
// training sampled under other budgets than evaluation.
TEST(GrpoTurnBudgetIntegrationTest, TurnsAreSampledUnderTheEnvsBudget) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  ServedTinyModel served;
  const std::string run = models::testing::MakeTempDir("grpo_budget");
  auto o = TagRunOptions(served.model_dir(), served.url(), run);
  o.grpo.max_tokens = 64;
  o.grpo.group_size = 4;
  o.grpo.prompts_per_step = 1;
  o.total_steps = 1;
  o.prompts = {R"({"prompt": "<question_level>L", "max_tokens": 2})"};
  auto t = GrpoTrainer::Create(o);
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto metrics = MetricsWriter::Open(run + "/metrics.jsonl", "");
  ASSERT_TRUE(metrics.ok());
  auto summary = (*t)->Run(metrics->get(), nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  metrics->reset();
  const auto lines = MetricLines(run + "/metrics.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  auto prompt = models::ByteTokenizer().Encode("<question_level>L");
  ASSERT_TRUE(prompt.ok());
  const double tokens = lines[0].value("tokens_per_episode", 0.0);
  EXPECT_GT(tokens, static_cast<double>(prompt->size())) << lines[0].dump();
  EXPECT_LE(tokens, static_cast<double>(prompt->size()) + 2.0) << lines[0].dump();
}

// The update refuses truncated IS on a batch without rollout log-probs (it used to turn TIS off
// for the batch in silence).
TEST(GrpoPolicyUpdateTest, TruncatedIsRefusesABatchWithoutRolloutLogprobs) {
  const std::string dir = models::testing::WriteTinyModel(models::testing::MakeTempDir("grpo_tis"));
  auto model = models::CausalLMImpl::Load(dir);
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE((*model)->AttachLora({.r = 4, .alpha = 8.0}, {"q_proj", "v_proj"}, 1).ok());
  v1::Trajectory t;
  auto* p = t.add_segments();
  for (int id : {1, 2, 3}) p->add_ids(id);
  auto* a = t.add_segments();
  a->set_trainable(true);
  for (int id : {4, 5, 6}) a->add_ids(id);
  auto batch = BuildRolloutBatch({{&t, 1.0, {}}});
  ASSERT_TRUE(batch.ok());
  torch::optim::AdamW opt((*model)->LoraParameters(), torch::optim::AdamWOptions(1e-2));
  StepMetrics m;
  UpdateOptions uo{.lr = 1e-2};
  Status s = UpdatePolicy(**model, opt, *batch, uo, &m);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("grpo.truncated_is"), std::string::npos) << s.message();
  uo.loss.truncated_is = false;
  EXPECT_TRUE(UpdatePolicy(**model, opt, *batch, uo, &m).ok());
}

// stale_policy: importance corrects stale segments by the TIS weight; with truncated_is off the
// learner refuses the config (it used to switch TIS on behind the recipe's back).
TEST(GrpoStalenessTest, ImportanceWithoutTruncatedIsIsRefused) {
  const std::string run = models::testing::MakeTempDir("grpo_stale");
  auto o = TagRunOptions(llm::serve::testing::WriteServableTinyModel("grpo_stale_model", 7),
                         "http://127.0.0.1:9", run);
  o.grpo.stale_policy = "importance";
  o.grpo.truncated_is = false;
  auto t = GrpoTrainer::Create(o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("needs grpo.truncated_is: true"), std::string::npos)
      << t.status().message();
  o.grpo.truncated_is = true;
  EXPECT_TRUE(GrpoTrainer::Create(o).ok());
}

// --- data-parallel learner ranks ----------------------------------------------------------------

std::vector<at::Tensor> AdapterTensors(models::CausalLMImpl& model) {
  std::vector<at::Tensor> out;
  for (const auto& p : model.LoraParameters()) out.push_back(p.detach().clone());
  return out;
}

double MaxDiff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  }
  return d;
}

GrpoRunOptions DataParallelRunOptions(const ServedTinyModel& served, const std::string& run) {
  auto o = TagRunOptions(served.model_dir(), served.url(), run);
  o.total_steps = 2;
  o.grpo.updates_per_batch = 2;
  o.grpo.lora.lora_dropout = 0.0;  // each rank draws its own masks; without dropout N = 1
  o.grpo.lora.seed = 3;
  return o;
}

TEST(GrpoStepBatchTest, RoundTripsAndShardsEveryNthSample) {
  StepBatch b;
  b.step = 7;
  b.lr = 0.25;
  for (int i = 0; i < 3; ++i) {
    v1::Trajectory t;
    t.set_episode_id("e" + std::to_string(i));
    t.add_segments()->add_ids(i + 1);
    b.trajectories.push_back(t);
    b.advantages.push_back(i - 1.0);
    b.step_advantages.push_back(std::vector<double>(static_cast<size_t>(i), 0.5));
  }
  const std::string bytes = EncodeStepBatch(b);
  auto d = DecodeStepBatch(bytes);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->kind, StepBatch::Kind::kBatch);
  EXPECT_EQ(d->step, 7);
  EXPECT_EQ(d->lr, 0.25);
  ASSERT_EQ(d->trajectories.size(), 3u);
  EXPECT_EQ(d->trajectories[2].episode_id(), "e2");
  EXPECT_EQ(d->trajectories[2].segments(0).ids(0), 3);
  EXPECT_EQ(d->advantages, b.advantages);
  EXPECT_EQ(d->step_advantages, b.step_advantages);
  EXPECT_FALSE(DecodeStepBatch(bytes.substr(0, bytes.size() - 3)).ok());
  EXPECT_FALSE(DecodeStepBatch("nonsense").ok());
  StepBatch failed;
  failed.kind = StepBatch::Kind::kFailed;
  failed.error = "endpoint gone";
  auto f = DecodeStepBatch(EncodeStepBatch(failed));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, StepBatch::Kind::kFailed);
  EXPECT_EQ(f->error, "endpoint gone");
  EXPECT_EQ(ShardIndices(5, 0, 2), (std::vector<size_t>{0, 2, 4}));
  EXPECT_EQ(ShardIndices(5, 1, 2), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(ShardIndices(1, 1, 2), (std::vector<size_t>{}));
}

// Two Gloo ranks of the real GRPO learner (rank 0 runs the rollouts over allot serve and sends
// the samples; each rank trains on every other episode) end where one learner ends on the whole
// batch. Rank 1 starts from another adapter seed, so only the broadcast makes them start equal;
// without the gradient all-reduce rank 0 would step on half of the episodes and land elsewhere.
TEST(GrpoDataParallelIntegrationTest, TwoGlooRanksEqualOneRankOnTheUnionBatch) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string base = models::testing::MakeTempDir("grpo_dp");
  ServedTinyModel served_one(1);
  auto one = GrpoTrainer::Create(DataParallelRunOptions(served_one, base + "/one"));
  ASSERT_TRUE(one.ok()) << one.status().message();
  const auto start = AdapterTensors((*one)->policy());
  auto single = (*one)->Run(nullptr, nullptr);
  ASSERT_TRUE(single.ok()) << single.status().message();
  const auto expected = AdapterTensors((*one)->policy());
  const double moved = MaxDiff(start, expected);
  ASSERT_GT(moved, 1e-2) << "the single learner did not move";

  ServedTinyModel served_dp(1);
  std::vector<std::vector<at::Tensor>> got(2);
  std::vector<GrpoRunSummary> summaries(2);
  trainer::testing::RunGlooRanks(2, [&](int rank, comm::Communicator& comm) {
    auto o = DataParallelRunOptions(served_dp, base + "/dp");
    o.comm = &comm;
    if (rank == 1) o.grpo.lora.seed = 77;
    auto t = GrpoTrainer::Create(o);
    ASSERT_TRUE(t.ok()) << t.status().message();
    auto s = (*t)->Run(nullptr, nullptr);
    ASSERT_TRUE(s.ok()) << "rank " << rank << ": " << s.status().message();
    summaries[rank] = *s;
    got[rank] = AdapterTensors((*t)->policy());
  });
  ASSERT_EQ(got[0].size(), expected.size());
  ASSERT_EQ(got[1].size(), expected.size());
  // Rank 0 drew the same episodes as the single learner.
  EXPECT_EQ(summaries[0].mean_rewards, single->mean_rewards);
  EXPECT_EQ(summaries[0].policy_version, single->policy_version);
  EXPECT_EQ(summaries[1].policy_version, single->policy_version);
  EXPECT_LT(MaxDiff(got[0], got[1]), 1e-6) << "ranks diverged";
  // AdamW's first steps move an entry by about lr whatever its gradient's size, so entries with
  // near-zero gradients carry the float rounding of the split batch: the bound is relative to
  // how far the adapter moved.
  const double off = MaxDiff(got[0], expected);
  std::printf("grpo 2 ranks vs 1: max |diff| %.3g, adapter moved %.3g\n", off, moved);
  EXPECT_LT(off, 1e-3 * moved) << "two ranks differ from one rank on the batch";
  // Rank 0 alone wrote the run's files.
  EXPECT_TRUE(std::filesystem::exists(base + "/dp/adapters/v3/adapter_config.json"));
}

// A run that fails on rank 0 (here: the endpoint refuses the first adapter) ends every rank with
// rank 0's message instead of leaving them waiting.
TEST(GrpoDataParallelIntegrationTest, FailureOnRankZeroEndsTheOtherRanks) {
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  llm::testing::ScriptedServer server;
  server.SetHandler([](const llm::testing::ServerRequest& req) {
    if (req.path == "/v1/load_lora_adapter") {
      return llm::testing::Reply::Json(
          R"({"error": {"message": "adapter refused", "type": "BadRequestError"}})", 400);
    }
    return llm::testing::Reply::Json(R"({"object": "list", "data": []})");
  });
  const std::string model_dir = llm::serve::testing::WriteServableTinyModel("grpo_dp_refuse", 7);
  const std::string run = models::testing::MakeTempDir("grpo_dp_refuse_run");
  std::vector<std::string> messages(2);
  trainer::testing::RunGlooRanks(2, [&](int rank, comm::Communicator& comm) {
    auto o = TagRunOptions(model_dir, server.url(), run);
    o.grpo.sync_retries = 1;
    o.comm = &comm;
    auto t = GrpoTrainer::Create(o);
    ASSERT_TRUE(t.ok()) << t.status().message();
    auto s = (*t)->Run(nullptr, nullptr);
    ASSERT_FALSE(s.ok());
    messages[rank] = s.status().message();
  });
  EXPECT_NE(messages[0].find(server.url()), std::string::npos) << messages[0];
  EXPECT_NE(messages[1].find("rank 0 failed"), std::string::npos) << messages[1];
  EXPECT_NE(messages[1].find(server.url()), std::string::npos) << messages[1];
}

// --- gradient accumulation -----------------------------------------------------------------------

GrpoRunOptions AccumulationOptions(const std::string& model_dir, const std::string& url,
                                   const std::string& run, int prompts_per_step, int grad_accum) {
  auto o = TagRunOptions(model_dir, url, run);
  o.total_steps = 1;
  o.grpo.prompts_per_step = prompts_per_step;
  o.grpo.grad_accum = grad_accum;
  o.grpo.lora.lora_dropout = 0.0;  // masks drawn per micro-batch would differ between splits
  o.grpo.lora.seed = 3;
  return o;
}

// grad_accum K means K collected batches per optimizer step (TRL's gradient_accumulation_steps):
// K = 2 on batches of one group takes the step one batch of two groups takes, and publishes one
// version. Catches grad_accum splitting one batch into micro-batches (the same update for any
// value): K = 2 then trained on one group, as K = 1 does.
TEST(GrpoGradAccumIntegrationTest, TwoAccumulatedBatchesTakeTheStepOfTheirUnion) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string base = models::testing::MakeTempDir("grpo_accum");
  auto train = [&](const std::string& name, int prompts, int accum, uint64_t* version) {
    ServedTinyModel served(1);
    auto o =
        AccumulationOptions(served.model_dir(), served.url(), base + "/" + name, prompts, accum);
    auto t = GrpoTrainer::Create(o);
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (!t.ok()) return std::vector<at::Tensor>{};
    auto s = (*t)->Run(nullptr, nullptr);
    EXPECT_TRUE(s.ok()) << s.status().message();
    if (version != nullptr && s.ok()) *version = s->policy_version;
    return AdapterTensors((*t)->policy());
  };
  std::vector<at::Tensor> start;
  {
    const std::string model_dir = llm::serve::testing::WriteServableTinyModel("grpo_accum0", 7);
    auto t = GrpoTrainer::Create(
        AccumulationOptions(model_dir, "http://127.0.0.1:1", base + "/start", 1, 1));
    ASSERT_TRUE(t.ok()) << t.status().message();
    start = AdapterTensors((*t)->policy());
  }
  uint64_t accum_version = 0;
  const auto accumulated = train("accum", 1, 2, &accum_version);
  const auto union_batch = train("union", 2, 1, nullptr);
  const auto one_batch = train("one", 1, 1, nullptr);
  ASSERT_FALSE(accumulated.empty() || union_batch.empty() || one_batch.empty());
  const double moved = MaxDiff(start, union_batch);
  ASSERT_GT(moved, 1e-2) << "the update did not move the adapter";
  const double off = MaxDiff(accumulated, union_batch);
  std::printf("grad_accum 2 x 1 group vs 1 x 2 groups: max |diff| %.3g, moved %.3g\n", off, moved);
  EXPECT_LT(off, 1e-3 * moved) << "grad_accum 2 differs from one step on the union batch";
  EXPECT_GT(MaxDiff(one_batch, union_batch), 1e-2 * moved) << "the test cannot fail";
  EXPECT_EQ(accum_version, 2u);  // one optimizer step, one published version
  // Two groups drawn in the one step: the cursor the checkpoint keeps.
  std::ifstream state(base + "/accum/checkpoints/" + CheckpointStore::StepDirName(1) +
                      "/state.json");
  EXPECT_EQ(nlohmann::json::parse(state).value("cursor", int64_t{-1}), 2);
}

// The micro-batch is memory only: one pass or one episode per pass, the same step.
TEST(GrpoPolicyUpdateTest, MicroBatchSizeDoesNotChangeTheUpdate) {
  const std::string dir = models::testing::WriteTinyModel(models::testing::MakeTempDir("grpo_mb"));
  v1::Trajectory t1, t2, t3;
  int id = 1;
  for (auto* t : {&t1, &t2, &t3}) {
    auto* p = t->add_segments();
    for (int k = 0; k < 3; ++k) p->add_ids(id++);
    auto* a = t->add_segments();
    a->set_trainable(true);
    for (int k = 0; k < (t == &t2 ? 5 : 2); ++k) a->add_ids(id++);
  }
  auto batch = BuildRolloutBatch({{&t1, 1.0, {}}, {&t2, -0.5, {}}, {&t3, 0.7, {}}});
  ASSERT_TRUE(batch.ok());
  std::vector<at::Tensor> start;
  auto step = [&](int64_t micro) {
    auto model = models::CausalLMImpl::Load(dir);
    EXPECT_TRUE(model.ok());
    EXPECT_TRUE((*model)->AttachLora({.r = 4, .alpha = 8.0}, {"q_proj", "v_proj"}, 1).ok());
    start = AdapterTensors(**model);
    torch::optim::AdamW opt((*model)->LoraParameters(),
                            torch::optim::AdamWOptions(1e-2).weight_decay(0.0));
    UpdateOptions uo{.micro_batch_size = micro, .lr = 1e-2};
    uo.loss.aggregation = Aggregation::kTokenMean;
    uo.loss.truncated_is = false;  // the batch carries no rollout log-probs
    StepMetrics m;
    EXPECT_TRUE(UpdatePolicy(**model, opt, *batch, uo, &m).ok());
    return AdapterTensors(**model);
  };
  const auto whole = step(0);
  const auto single = step(1);
  ASSERT_GT(MaxDiff(start, whole), 1e-3);  // the step moved the adapter
  EXPECT_LT(MaxDiff(whole, single), 1e-6);
}

// A micro-batch larger than a step's episodes was clamped in silence; it is an error naming the
// key, in the learner and in `allot config check` (CheckGrpoConfig).
TEST(GrpoConfigTest, MicroBatchLargerThanAStepIsAnErrorNamingTheKey) {
  GrpoConfig g;
  g.group_size = 8;
  g.prompts_per_step = 2;
  g.micro_batch_size = 16;
  EXPECT_TRUE(CheckGrpoConfig(g).ok());
  g.micro_batch_size = 17;
  Status s = CheckGrpoConfig(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("grpo.micro_batch_size"), std::string::npos) << s.message();
  g.grad_accum = 2;  // a step of two batches holds 32 episodes
  EXPECT_TRUE(CheckGrpoConfig(g).ok());
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string model_dir = llm::serve::testing::WriteServableTinyModel("grpo_mbcheck", 7);
  auto o = TagRunOptions(model_dir, "http://127.0.0.1:1", models::testing::MakeTempDir("grpo_mb"));
  o.grpo.micro_batch_size = 40;
  auto t = GrpoTrainer::Create(o);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("grpo.micro_batch_size"), std::string::npos)
      << t.status().message();
}

constexpr int kAsyncLag = 2;

GrpoRunOptions AsyncRunOptions(const ServedTinyModel& served, const std::string& run,
                               uint64_t seed) {
  auto o = ResumeRunOptions(served, run, seed);
  o.grpo.async.max_lag = kAsyncLag;
  return o;
}

// grpo.async.max_lag 2: step k trains on groups sampled by version max(1, k - 2) while the groups
// of the next two steps are sampled. Catches: a pipeline that still waits for each publish (no
// group in flight, staleness 0 after the first steps), one that samples with whatever version is
// current (staleness below max_lag), and an async setting that changes nothing (the same
// adapters as the synchronous run); bit identity of two runs: TwoRunsWithOneSeedAreBitIdentical.
TEST(GrpoAsyncIntegrationTest, StepsTrainOnGroupsSampledMaxLagVersionsBack) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string base = models::testing::MakeTempDir("grpo_async");
  ServedTinyModel served_a(1), served_sync(1);
  auto a = GrpoTrainer::Create(AsyncRunOptions(served_a, base + "/a", 11));
  auto sync = GrpoTrainer::Create(ResumeRunOptions(served_sync, base + "/sync", 11));
  ASSERT_TRUE(a.ok() && sync.ok());
  std::filesystem::create_directories(base + "/a");
  auto metrics = MetricsWriter::Open(base + "/a/metrics.jsonl", "");
  ASSERT_TRUE(metrics.ok());
  auto ra = (*a)->Run(metrics->get(), nullptr);
  ASSERT_TRUE(ra.ok()) << ra.status().message();
  metrics->reset();
  ASSERT_TRUE((*sync)->Run(nullptr, nullptr).ok());
  EXPECT_FALSE(SameAdapter((*a)->policy(), (*sync)->policy()));
  EXPECT_EQ(ra->policy_version, static_cast<uint64_t>(2 * kResumeN + 1));

  const auto lines = MetricLines(base + "/a/metrics.jsonl");
  ASSERT_EQ(lines.size(), static_cast<size_t>(2 * kResumeN));
  for (const auto& j : lines) {
    const int64_t k = j.at("step").get<int64_t>();
    // The learner holds version k when it trains step k; the groups came from max(1, k - 2).
    const double behind = static_cast<double>(k - std::max<int64_t>(1, k - kAsyncLag));
    EXPECT_EQ(j.value("staleness/max", -1.0), behind) << j.dump();
    EXPECT_EQ(j.value("staleness/mean", -1.0), behind) << j.dump();
    EXPECT_EQ(j.value("episodes/stale_dropped", -1.0), 0.0) << j.dump();
    // The steps after it, up to max_lag of them, are in flight (2 groups each).
    const int64_t ahead = std::min<int64_t>(kAsyncLag, 2 * kResumeN - k);
    EXPECT_EQ(j.value("rollout/groups_in_flight", -1.0), 2.0 * static_cast<double>(ahead))
        << j.dump();
  }
}

// Concurrent batched serving that decodes each sequence on its own (allot serve
// --deterministic, max_batch 32, two workers).
class DeterministicServe : public ServedTinyModel {
 public:
  explicit DeterministicServe(const std::string& model_dir = "")
      : ServedTinyModel(32, model_dir, /*deterministic=*/true) {}
};

// Two asynchronous runs of one seed against concurrent batched serving train bit-identical
// adapters. Catches: float32 decoding that depends on the batch's composition (the rollout
// log-probs the truncated IS weights read differ in their last bits: the run against default
// batching, below, ends elsewhere), and LoRA dropout drawn from the process's default generator,
// which the endpoint's adapter swaps drew from during the learner's update (in-process
// endpoint; the runs then differed about two times in three at step 2 or 3).
TEST(GrpoAsyncIntegrationTest, TwoRunsWithOneSeedAreBitIdentical) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string base = models::testing::MakeTempDir("grpo_async_repeat");
  auto run = [&](const std::string& name, bool deterministic) {
    ServedTinyModel served(32, "", deterministic);
    auto t = GrpoTrainer::Create(AsyncRunOptions(served, base + "/" + name, 11));
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (!t.ok()) return std::vector<at::Tensor>{};
    auto r = (*t)->Run(nullptr, nullptr);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return AdapterTensors((*t)->policy());
  };
  const auto a = run("a", true);
  const auto b = run("b", true);
  ASSERT_FALSE(a.empty() || b.empty());
  EXPECT_EQ(MaxDiff(a, b), 0.0);
  EXPECT_GT(MaxDiff(a, run("batched", false)), 0.0)
      << "default batching trained the same adapter: the test cannot see batch dependence";
}

// kill -9 during step N + 1 of an asynchronous run (after its update, with the groups of steps
// N + 2 and N + 3 in flight), then a resume from a process started with another seed, against a
// fresh endpoint (concurrent batched serving, batch-invariant): the checkpoint holds the draws
// trained on and the versions the steps in flight sample, a resume with another max_lag is
// refused, the resume issues the steps in flight again under those versions (served from the
// adapters on disk), and the run ends bit-identical to 2N uninterrupted steps. Catches: a
// checkpoint without the versions, a cursor past the draws in flight (they would be lost), a
// resume that cannot serve the older versions, a resumed run that draws with the command
// line's seed instead of its checkpoint's, and versions pushed to the workers one after another
// of which a worker got only the last (the dispatcher replaced a version not yet sent: the
// steps in flight were sampled by the newest adapter instead of theirs).
TEST(GrpoAsyncIntegrationTest, KilledRunResumesItsStepsInFlight) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const bool child = !GTEST_FLAG_GET(internal_run_death_test).empty();
  const char* shared = std::getenv("ALLOT_GRPO_ASYNC_DIR");
  const std::string base =
      child && shared != nullptr ? shared : models::testing::MakeTempDir("grpo_async_resume");
  setenv("ALLOT_GRPO_ASYNC_DIR", base.c_str(), 1);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        DeterministicServe served(base + "/child_model");
        auto o = AsyncRunOptions(served, base + "/killed", 11);
        o.on_step_end = [](int64_t step) {
          if (step == kResumeN + 1) raise(SIGKILL);
        };
        auto t = GrpoTrainer::Create(o);
        if (!t.ok()) std::exit(3);
        (void)(*t)->Run(nullptr, nullptr);
        std::exit(4);
      },
      ::testing::KilledBySignal(SIGKILL), "");
  CheckpointStore store(base + "/killed/checkpoints", 0);
  ASSERT_EQ(store.Steps(), std::vector<int64_t>{kResumeN});
  const std::string ckpt = base + "/killed/checkpoints/" + CheckpointStore::StepDirName(kResumeN);
  {
    std::ifstream in(ckpt + "/state.json");
    const auto state = nlohmann::json::parse(in);
    EXPECT_EQ(state.value("async_max_lag", int64_t{-1}), kAsyncLag);
    EXPECT_EQ(state.value("cursor", int64_t{-1}), 2 * kResumeN);  // 2 groups a step trained on
    // Steps N + 1 and N + 2 sample the versions after steps N - 1 and N.
    EXPECT_EQ(state.at("version_after").dump(), "[[1,2],[2,3],[3,4]]");
  }

  // A resume that disagrees on max_lag is refused, naming the key.
  DeterministicServe served;
  auto other_lag = AsyncRunOptions(served, base + "/killed", 99);
  other_lag.grpo.async.max_lag = 1;
  auto refused = GrpoTrainer::Create(other_lag);
  ASSERT_TRUE(refused.ok());
  auto no = (*refused)->Resume();
  ASSERT_FALSE(no.ok());
  EXPECT_NE(no.status().message().find("grpo.async.max_lag"), std::string::npos)
      << no.status().message();

  auto resumed = GrpoTrainer::Create(AsyncRunOptions(served, base + "/killed", 99));
  ASSERT_TRUE(resumed.ok());
  auto at = (*resumed)->Resume();
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_EQ(*at, kResumeN);
  auto sb = (*resumed)->Run(nullptr, nullptr);
  ASSERT_TRUE(sb.ok()) << sb.status().message();
  EXPECT_EQ(sb->steps_this_run, kResumeN);
  EXPECT_EQ(sb->policy_version, static_cast<uint64_t>(2 * kResumeN + 1));
  // The steps in flight trained on what their pinned versions sampled, each once.
  DeterministicServe served_straight;
  auto straight = GrpoTrainer::Create(AsyncRunOptions(served_straight, base + "/straight", 11));
  ASSERT_TRUE(straight.ok());
  ASSERT_TRUE((*straight)->Run(nullptr, nullptr).ok());
  EXPECT_TRUE(SameAdapter((*straight)->policy(), (*resumed)->policy()));
}

// Asynchronous GRPO runs deterministic only, and without the modes whose draws depend on arrival
// order or that train one role at a time. Catches: a config accepted that would run something
// else than asked.
TEST(GrpoConfigTest, AsyncRefusesWhatItCannotRun) {
  GrpoConfig g;
  g.async.max_lag = 1;
  EXPECT_TRUE(CheckGrpoConfig(g).ok());
  g.async.deterministic = false;
  EXPECT_NE(CheckGrpoConfig(g).message().find("grpo.async.deterministic"), std::string::npos);
  g.async.deterministic = true;
  g.dynamic_sampling = true;
  EXPECT_NE(CheckGrpoConfig(g).message().find("grpo.dynamic_sampling"), std::string::npos);
  g.dynamic_sampling = false;
  g.alternation.enabled = true;
  EXPECT_NE(CheckGrpoConfig(g).message().find("grpo.alternation"), std::string::npos);
}

}  // namespace
}  // namespace allot::trainer::grpo
