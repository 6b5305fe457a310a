// Alternating GRPO (R2-Reasoner Sec. 4.3): the role schedule, the role tags, that the frozen
// role's segments carry no loss and no gradient while the active role's do, and that each role
// is an adapter of its own: a phase trains and publishes the active role's alone, the idle one
// keeps its bytes, and checkpoints keep both adapters and both optimizers.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/checkpoint_store.h"
#include "llm/serve/server.h"
#include "models/causal_lm.h"
#include "models/cpu_threads.h"
#include "models/peft.h"
#include "rollout/env_registry.h"
#include "tests/llm/serve/serve_fixture.h"
#include "tests/models/tiny_model.h"
#include "tests/trainer/tag_env.h"
#include "trainer/grpo/alternation.h"
#include "trainer/grpo/grpo_trainer.h"
#include "trainer/grpo/policy_loss.h"
#include "trainer/grpo/policy_update.h"
#include "trainer/grpo/role_adapters.h"
#include "trainer/grpo/rollout_batch.h"
#include "trainer/optim/optimizer_state.h"

namespace allot::trainer::grpo {
namespace {

void Add(v1::Trajectory& t, v1::SegmentRole role, bool trainable, std::vector<uint32_t> ids,
         const std::string& source) {
  v1::TokenSegment* s = t.add_segments();
  s->set_role(role);
  s->set_trainable(trainable);
  for (uint32_t id : ids) {
    s->add_ids(id);
    if (trainable) s->add_logprobs(-0.7f);
  }
  s->set_source(source);
}

// What envs/r2 sends: prompt, decomposition, allocator prompt, allocation, an executor result.
v1::Trajectory R2Trajectory() {
  v1::Trajectory t;
  t.set_episode_id("e");
  Add(t, v1::SEGMENT_ROLE_PROMPT, false, {1, 2, 3, 4}, "router");
  Add(t, v1::SEGMENT_ROLE_POLICY, true, {5, 6, 7}, "decomposer@router");
  Add(t, v1::SEGMENT_ROLE_ENV, false, {8, 9}, "router");
  Add(t, v1::SEGMENT_ROLE_POLICY, true, {10, 11}, "allocator@router");
  Add(t, v1::SEGMENT_ROLE_TOOL, false, {12, 13}, "small");
  return t;
}

// d loss / d logp of every output column, for one trajectory with advantage 1.
std::vector<float> TokenGradients(const v1::Trajectory& t) {
  Result<RolloutBatch> b = BuildRolloutBatch({Sample{&t, 1.0, {}}});
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  PolicyLossInputs in;
  in.logp = b->rollout_logp.clone().requires_grad_(true);
  in.old_logp = b->rollout_logp.clone();
  in.advantages = b->advantages;
  in.mask = b->loss_mask;
  Result<PolicyLossResult> r = ComputePolicyLoss(in, PolicyLossOptions{}, TotalsOf(in.mask));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  r->loss.backward();
  at::Tensor g = in.logp.grad().reshape({-1}).contiguous();
  return std::vector<float>(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
}

TEST(GrpoAlternationTest, TheActiveRoleSwitchesEveryKSteps) {
  AlternationConfig c;
  EXPECT_EQ(ActiveRole(c, 0), "");  // off by default
  c.enabled = true;
  c.switch_every = 2;
  std::vector<std::string> roles;
  for (int64_t step = 0; step < 5; ++step) roles.push_back(ActiveRole(c, step));
  EXPECT_EQ(roles, (std::vector<std::string>{"decomposer", "decomposer", "allocator", "allocator",
                                             "decomposer"}));
}

// Table 7: GRPO lr 1e-4 for the decomposer, 1.5e-4 for the allocator, through one schedule.
TEST(GrpoAlternationTest, EachRoleTrainsAtItsOwnLearningRate) {
  GrpoConfig g;
  g.lr = 1e-4;
  g.alternation.enabled = true;
  g.alternation.switch_every = 3;
  g.alternation.lr = {1e-4, 1.5e-4};
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 0, 1e-4), 1e-4);
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 3, 1e-4), 1.5e-4);
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 4, 0.5e-4), 0.75e-4);  // a schedule at half its peak
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 6, 1e-4), 1e-4);
  EXPECT_TRUE(ValidateAlternation(g.alternation).ok());
  g.alternation.lr = {1e-4};
  EXPECT_FALSE(ValidateAlternation(g.alternation).ok());
  g.alternation.enabled = false;
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 3, 2e-4), 2e-4);
}

TEST(GrpoAlternationTest, RoleTagsAreTheSourcePrefix) {
  v1::TokenSegment s;
  s.set_source("decomposer@router");
  EXPECT_TRUE(SegmentHasRole(s, "decomposer"));
  EXPECT_FALSE(SegmentHasRole(s, "allocator"));
  EXPECT_FALSE(SegmentHasRole(s, "decomp"));
  s.set_source("decomposer");
  EXPECT_TRUE(SegmentHasRole(s, "decomposer"));
  s.set_source("decomposers@x");
  EXPECT_FALSE(SegmentHasRole(s, "decomposer"));
}

TEST(GrpoAlternationTest, FrozenRoleSegmentsCarryNoGradient) {
  // Target token j is scored at output column j - 1: the decomposition's ids (j = 4..6) at
  // columns 3..5, the allocation's (j = 9, 10) at 8..9.
  const std::vector<int> decomposer = {3, 4, 5}, allocator = {8, 9};

  const std::vector<float> both = TokenGradients(R2Trajectory());
  for (int c : decomposer) EXPECT_NE(both[c], 0.0f) << c;
  for (int c : allocator) EXPECT_NE(both[c], 0.0f) << c;

  v1::Trajectory t = R2Trajectory();
  EXPECT_EQ(FreezeInactiveRoles(t, "decomposer"), 2);
  EXPECT_TRUE(t.segments(1).trainable());
  EXPECT_FALSE(t.segments(3).trainable());
  const std::vector<float> d = TokenGradients(t);
  for (int c : decomposer) EXPECT_NE(d[c], 0.0f) << c;
  for (size_t c = 0; c < d.size(); ++c) {
    if (c < 3 || c > 5) {
      EXPECT_EQ(d[c], 0.0f) << c;
    }
  }

  t = R2Trajectory();
  EXPECT_EQ(FreezeInactiveRoles(t, "allocator"), 3);
  const std::vector<float> a = TokenGradients(t);
  for (int c : allocator) EXPECT_NE(a[c], 0.0f) << c;
  for (int c : decomposer) EXPECT_EQ(a[c], 0.0f) << c;
  EXPECT_EQ(TrainableTokens(t), 2);
}

TEST(GrpoAlternationTest, UntaggedPolicySegmentsAreFrozenToo) {
  v1::Trajectory t;
  Add(t, v1::SEGMENT_ROLE_POLICY, true, {1, 2}, "router");
  EXPECT_EQ(FreezeInactiveRoles(t, "decomposer"), 2);
  EXPECT_EQ(TrainableTokens(t), 0);
  EXPECT_EQ(t.failure().reason(), v1::FAILURE_REASON_FORMAT_ERROR);
  EXPECT_NE(t.failure().message().find("'decomposer'"), std::string::npos);
  // An episode that keeps a segment of the active role is not failed.
  v1::Trajectory r2 = R2Trajectory();
  FreezeInactiveRoles(r2, "allocator");
  EXPECT_EQ(r2.failure().reason(), v1::FAILURE_REASON_NONE);
}

TEST(GrpoAlternationTest, ValidationNamesBadRolesAndAdapterCounts) {
  AlternationConfig c;
  c.enabled = true;
  EXPECT_TRUE(ValidateAlternation(c).ok());
  c.adapters.resize(1);
  Status s = ValidateAlternation(c);
  EXPECT_NE(s.message().find("grpo.alternation.adapters: 1 adapters for 2 roles"),
            std::string::npos)
      << s.message();
  c.adapters.resize(2);
  EXPECT_TRUE(ValidateAlternation(c).ok());
  c.roles = {"decomposer", "decomposer"};
  EXPECT_NE(ValidateAlternation(c).message().find("listed twice"), std::string::npos);
  c.roles = {"decomposer", "alloc@x"};
  EXPECT_NE(ValidateAlternation(c).message().find("'alloc@x'"), std::string::npos);
}

std::vector<at::Tensor> Copy(const RoleAdapters::Adapter& a) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : a.tensors) out.push_back(t.detach().clone());
  return out;
}

bool Same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].sizes().equals(b[i].sizes()) || !torch::equal(a[i], b[i])) return false;
  }
  return true;
}

GrpoConfig TwoAdapterConfig() {
  GrpoConfig g;
  g.lr = 1e-2;
  g.alternation.enabled = true;
  models::LoraConfig d;
  d.r = 4;
  d.lora_alpha = 8.0;
  d.lora_dropout = 0.0;
  models::LoraConfig a = d;
  a.r = 8;  // Table 7's ranks differ by role (32 and 64)
  a.lora_alpha = 16.0;
  g.alternation.adapters = {d, a};
  return g;
}

// R2-Reasoner Sec. 4.3: "one module's parameters are updated while the other remains fixed".
// With the one shared adapter of before, every decomposer update moved the allocator too.
TEST(GrpoRoleAdaptersTest, AnUpdateMovesOnlyTheActiveRolesAdapter) {
  const std::string dir =
      models::testing::WriteTinyModel(models::testing::MakeTempDir("grpo_role_adapters"));
  auto model = models::CausalLMImpl::Load(dir);
  ASSERT_TRUE(model.ok());
  auto roles = RoleAdapters::Create(**model, TwoAdapterConfig(), nullptr);
  ASSERT_TRUE(roles.ok()) << roles.status().message();
  const RoleAdapters::Adapter* decomposer = (*roles)->Find("decomposer");
  const RoleAdapters::Adapter* allocator = (*roles)->Find("allocator");
  ASSERT_NE(decomposer, nullptr);
  ASSERT_NE(allocator, nullptr);
  EXPECT_EQ(decomposer->spec.r, 4);
  EXPECT_EQ(allocator->spec.r, 8);
  EXPECT_EQ((*roles)->active(), "decomposer");

  auto train = [&](const std::string& role) {
    v1::Trajectory t = R2Trajectory();
    FreezeInactiveRoles(t, role);
    Result<RolloutBatch> batch = BuildRolloutBatch({Sample{&t, 1.0, {}}});
    ASSERT_TRUE(batch.ok()) << batch.status().message();
    auto active = (*roles)->Activate(role);
    ASSERT_TRUE(active.ok());
    // The model computes with the role's own tensors, not copies of them.
    const std::vector<at::Tensor> attached = (*model)->LoraParameters();
    ASSERT_EQ(attached.size(), (*active)->tensors.size());
    EXPECT_TRUE(attached[0].is_same((*active)->tensors[0]));
    UpdateOptions uo;
    uo.lr = 1e-2;
    StepMetrics m;
    ASSERT_TRUE(UpdatePolicy(**model, *(*active)->optimizer, *batch, uo, &m).ok());
    EXPECT_GT(m.trained_tokens, 0.0);
  };

  const std::vector<at::Tensor> d0 = Copy(*decomposer), a0 = Copy(*allocator);
  train("decomposer");
  const std::vector<at::Tensor> d1 = Copy(*decomposer), a1 = Copy(*allocator);
  EXPECT_FALSE(Same(d0, d1));  // the decomposer learned
  EXPECT_TRUE(Same(a0, a1));   // the allocator stayed fixed, bit for bit
  train("allocator");
  EXPECT_TRUE(Same(d1, Copy(*decomposer)));
  EXPECT_FALSE(Same(a1, Copy(*allocator)));
  EXPECT_EQ((*model)->linear_sites()[0].linear->lora_spec().r, 8);
}

// Table 7: each role continues its own SFT cold start (rank 32 decomposer, 64 allocator). Each
// adapter starts as its init_from was saved, and with a KL term each role's reference is its own
// cold start, not the other's and not the base.
TEST(GrpoRoleAdaptersTest, EachRoleStartsFromItsOwnColdStart) {
  const std::string dir =
      models::testing::WriteTinyModel(models::testing::MakeTempDir("grpo_role_cold"));
  GrpoConfig g = TwoAdapterConfig();
  g.kl_coef = 0.1;
  std::vector<std::vector<at::Tensor>> saved;
  for (size_t i = 0; i < 2; ++i) {
    auto sft = models::CausalLMImpl::Load(dir);
    ASSERT_TRUE(sft.ok());
    models::LoraConfig& c = g.alternation.adapters[i];
    ASSERT_TRUE(models::ApplyLoraConfig(**sft, c).ok());
    torch::NoGradGuard no_grad;
    torch::manual_seed(11 + static_cast<uint64_t>(i));
    for (const at::Tensor& t : (*sft)->LoraParameters()) t.normal_(0.0, 0.1);  // as SFT left it
    c.init_from = models::testing::MakeTempDir("grpo_role_cold_" + std::to_string(i));
    ASSERT_TRUE(models::SaveAdapter(**sft, c.init_from, dir).ok());
    std::vector<at::Tensor> copy;
    for (const at::Tensor& t : (*sft)->LoraParameters()) copy.push_back(t.detach().clone());
    saved.push_back(std::move(copy));
  }
  auto model = models::CausalLMImpl::Load(dir);
  ASSERT_TRUE(model.ok());
  auto roles = RoleAdapters::Create(**model, g, nullptr);
  ASSERT_TRUE(roles.ok()) << roles.status().message();
  const RoleAdapters::Adapter* decomposer = (*roles)->Find("decomposer");
  const RoleAdapters::Adapter* allocator = (*roles)->Find("allocator");
  EXPECT_TRUE(Same(Copy(*decomposer), saved[0]));
  EXPECT_TRUE(Same(Copy(*allocator), saved[1]));
  EXPECT_TRUE(Same(decomposer->reference, saved[0]));
  EXPECT_TRUE(Same(allocator->reference, saved[1]));
  EXPECT_FALSE(decomposer->reference[0].is_same(decomposer->tensors[0]));  // a copy, kept fixed
}

class ServedTinyModel {
 public:
  ServedTinyModel() {
    model_dir_ = llm::serve::testing::WriteServableTinyModel("grpo_roles_tiny", 7);
    llm::serve::ServeConfig c;
    c.model = model_dir_;
    c.served_model_name = "tiny";
    c.port = 0;
    c.threads = 1;
    c.max_batch = 1;
    auto s = llm::serve::Server::Create(c);
    EXPECT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(*s);
    EXPECT_TRUE(server_->Start().ok());
  }
  ~ServedTinyModel() { server_->Stop(); }
  std::string url() const { return server_->url(); }
  const std::string& model_dir() const { return model_dir_; }

 private:
  std::string model_dir_;
  std::unique_ptr<llm::serve::Server> server_;
};

GrpoRunOptions RoleRunOptions(const ServedTinyModel& served, const std::string& run_dir) {
  GrpoRunOptions o;
  o.grpo = TwoAdapterConfig();
  o.grpo.alternation.switch_every = 2;
  o.grpo.group_size = 4;
  o.grpo.prompts_per_step = 2;
  o.grpo.grad_accum = 1;
  o.grpo.max_tokens = 8;
  o.grpo.temperature = 1.0;
  o.grpo.loss_aggregation = "token_mean";
  o.grpo.sync_timeout_s = 10;
  o.grpo.rollout_timeout_s = 60;
  o.total_steps = 4;
  o.checkpoint_every = 2;
  o.seed = 5;
  o.model_dir = served.model_dir();
  o.env = testing::kTagEnvName;
  nlohmann::json env = nlohmann::json::parse(testing::TagEnvConfig(served.url(), "tiny"));
  env["roles"] = {"decomposer", "allocator"};
  o.env_config = env.dump();
  o.prompts = {R"({"prompt": "<question_level>L"})"};
  o.run_dir = run_dir;
  o.checkpoint_dir = run_dir + "/checkpoints";
  o.rollout.in_process_workers = 2;
  o.rollout.worker.capacity = 16;
  o.rollout.worker.threads = 8;
  llm::EndpointConfig ep;
  ep.name = "policy";
  ep.base_url = served.url();
  ep.model = "tiny";
  ep.limits.deadline_s = 30;
  o.endpoints = {ep};
  return o;
}

std::string Bytes(const std::string& path) {
  std::string out;
  EXPECT_TRUE(ReadFile(path, &out).ok()) << path;
  return out;
}

// Two phases of two steps: the decomposer trains at versions 2-3 while the allocator keeps v1,
// then the allocator at 4-5 while the decomposer keeps v3. Each role publishes only the versions
// it trained, under its own name and rank, and the idle role's adapter keeps its bytes through
// the other's phase. A learner resumed from the last checkpoint holds both adapters and both
// optimizers as they were.
TEST(GrpoRoleAdaptersIntegrationTest, ThePhaseTrainsAndPublishesTheActiveRoleOnly) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  ServedTinyModel served;
  const std::string run = models::testing::MakeTempDir("grpo_roles_run");
  auto trainer = GrpoTrainer::Create(RoleRunOptions(served, run));
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  auto summary = (*trainer)->Run(nullptr, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  ASSERT_EQ(summary->policy_version, 5u);

  namespace fs = std::filesystem;
  const std::string published = run + "/adapters";
  auto versions = [&](const std::string& role) {
    std::vector<int> out;
    for (int v = 1; v <= 5; ++v) {
      if (fs::exists(published + "/" + role + "/v" + std::to_string(v))) out.push_back(v);
    }
    return out;
  };
  EXPECT_EQ(versions("decomposer"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(versions("allocator"), (std::vector<int>{1, 4, 5}));
  EXPECT_FALSE(fs::exists(published + "/v1"));  // no shared adapter

  const std::string weights = "adapter_model.safetensors";
  auto served_file = [&](const std::string& role, int v) {
    return Bytes(published + "/" + role + "/v" + std::to_string(v) + "/" + weights);
  };
  auto checkpoint_file = [&](int64_t step, const std::string& role) {
    return Bytes(run + "/checkpoints/" + CheckpointStore::StepDirName(step) + "/adapters/" + role +
                 "/" + weights);
  };
  // The idle role's bytes are identical before and after the other's phase.
  EXPECT_EQ(checkpoint_file(2, "allocator"), served_file("allocator", 1));
  EXPECT_EQ(checkpoint_file(4, "decomposer"), checkpoint_file(2, "decomposer"));
  EXPECT_EQ(checkpoint_file(4, "decomposer"), served_file("decomposer", 3));
  EXPECT_EQ(checkpoint_file(4, "allocator"), served_file("allocator", 5));
  // And the active role's moved.
  EXPECT_NE(served_file("decomposer", 3), served_file("decomposer", 1));
  EXPECT_NE(served_file("allocator", 5), served_file("allocator", 1));
  // Each with its own rank.
  auto rank = [&](const std::string& role) {
    return nlohmann::json::parse(Bytes(published + "/" + role + "/v1/adapter_config.json"))
        .value("r", 0);
  };
  EXPECT_EQ(rank("decomposer"), 4);
  EXPECT_EQ(rank("allocator"), 8);

  auto resumed = GrpoTrainer::Create(RoleRunOptions(served, run));
  ASSERT_TRUE(resumed.ok());
  auto at = (*resumed)->Resume();
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_EQ(*at, 4);
  const RoleAdapters* done = (*trainer)->role_adapters();
  const RoleAdapters* back = (*resumed)->role_adapters();
  ASSERT_NE(done, nullptr);
  ASSERT_NE(back, nullptr);
  for (const std::string role : {"decomposer", "allocator"}) {
    const RoleAdapters::Adapter* a = done->Find(role);
    const RoleAdapters::Adapter* b = back->Find(role);
    EXPECT_EQ(a->version, b->version) << role;
    EXPECT_TRUE(Same(Copy(*a), Copy(*b))) << role;
    auto sa = SerializeAdamWState(*a->optimizer, 4);
    auto sb = SerializeAdamWState(*b->optimizer, 4);
    ASSERT_TRUE(sa.ok() && sb.ok());
    EXPECT_EQ(*sa, *sb) << role;
  }
  EXPECT_EQ(back->Find("decomposer")->version, 3u);
  EXPECT_EQ(back->Find("allocator")->version, 5u);
}

// Resuming in the allocator's phase, from the checkpoint taken at the switch, ends where four
// straight steps end, bit for bit: both adapters, both optimizers and both versions come back,
// and the resumed learner serves each role's adapter again under its own version.
TEST(GrpoRoleAdaptersIntegrationTest, AResumedRunEndsWhereAStraightRunEnds) {
  models::SetCpuThreads(1);
  testing::RegisterTagEnv(rollout::EnvRegistry::Global());
  const std::string base = models::testing::MakeTempDir("grpo_roles_resume");
  ServedTinyModel served_straight;  // outlives the learner, whose client keeps connections
  auto made = GrpoTrainer::Create(RoleRunOptions(served_straight, base + "/straight"));
  ASSERT_TRUE(made.ok()) << made.status().message();
  std::unique_ptr<GrpoTrainer> straight = std::move(*made);
  ASSERT_TRUE(straight->Run(nullptr, nullptr).ok());
  {
    ServedTinyModel served;
    auto first = RoleRunOptions(served, base + "/run");
    first.total_steps = 2;  // the decomposer's phase, then its checkpoint
    auto t = GrpoTrainer::Create(first);
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE((*t)->Run(nullptr, nullptr).ok());
  }
  ServedTinyModel served;
  auto resumed = GrpoTrainer::Create(RoleRunOptions(served, base + "/run"));
  ASSERT_TRUE(resumed.ok());
  auto at = (*resumed)->Resume();
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_EQ(*at, 2);
  auto rest = (*resumed)->Run(nullptr, nullptr);
  ASSERT_TRUE(rest.ok()) << rest.status().message();
  EXPECT_EQ(rest->policy_version, 5u);
  for (const std::string role : {"decomposer", "allocator"}) {
    const RoleAdapters::Adapter* a = straight->role_adapters()->Find(role);
    const RoleAdapters::Adapter* b = (*resumed)->role_adapters()->Find(role);
    EXPECT_EQ(a->version, b->version) << role;
    EXPECT_TRUE(Same(Copy(*a), Copy(*b))) << role;
  }
  // The resumed learner re-served the decomposer's v3 and published the allocator's v4 and v5.
  for (const std::string dir : {"decomposer/v3", "allocator/v4", "allocator/v5"}) {
    EXPECT_TRUE(std::filesystem::exists(base + "/run/adapters/" + dir)) << dir;
  }
}

}  // namespace
}  // namespace allot::trainer::grpo
