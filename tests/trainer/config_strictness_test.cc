// Configs fail loudly through every door: a section or key the engine does not
// read is an error naming it whether it comes from the recipe file, a `--set` assignment of
// `allot train` / `allot sft`, or a `--set` of `allot resume` or `allot eval`; so is a knob without
// effect in the run's mode. Runs the real `allot` binary; every refusal comes before a run
// directory.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/config/node.h"
#include "tests/models/tiny_model.h"

namespace allot::trainer {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int code = -1;
  std::string output;  // stdout and stderr
};

// `prefix`: put in front of the command, e.g. "env NAME=value".
Outcome Allot(const std::string& args, const std::string& prefix = "") {
  std::string cmd = prefix.empty() ? "" : prefix + " ";
  cmd.append(ALLOT_BINARY_DIR).append("/apps/allot ").append(args).append(" 2>&1");
  Outcome out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

bool Has(const Outcome& o, const std::string& text) {
  return o.output.find(text) != std::string::npos;
}

class ConfigStrictnessIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = models::testing::MakeTempDir("config_strict");
    runs_ = dir_ + "/runs";
    grpo_ = Write(dir_ + "/grpo.yaml", "trainer:\n  algorithm: grpo\ngrpo:\n  group_size: 4\n");
    sft_ = Write(dir_ + "/sft.yaml", "trainer:\n  algorithm: sft\nsft:\n  batch_size: 2\n");
    dqn_ = Write(dir_ + "/dqn.yaml", "trainer:\n  algorithm: dqn\n  total_steps: 3\n");
  }
  std::string Out() const { return " --set run.output_dir=" + runs_; }

  std::string dir_, runs_, grpo_, sft_, dqn_;
};

TEST_F(ConfigStrictnessIntegrationTest, SetOverridesOfTrainAndSftAreChecked) {
  auto a = Allot("train -c " + grpo_ + " --set dqn.lr=0.1" + Out());
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "--set dqn")) << a.output;
  EXPECT_TRUE(Has(a, "section 'dqn' is not read by the grpo engine")) << a.output;

  auto b = Allot("train -c " + grpo_ + " --set grpo.max_refill_groups=3" + Out());
  EXPECT_EQ(b.code, 1) << b.output;
  EXPECT_TRUE(Has(b, "--set grpo.max_refill_groups")) << b.output;
  EXPECT_TRUE(Has(b, "has no effect without grpo.dynamic_sampling")) << b.output;

  auto c = Allot("sft -c " + sft_ + " --set grpo.lr=0.1" + Out());
  EXPECT_EQ(c.code, 1) << c.output;
  EXPECT_TRUE(Has(c, "section 'grpo' is not read by the sft engine")) << c.output;

  auto d = Allot("train -c " + dqn_ + " --set sft.batch_size=4" + Out());
  EXPECT_EQ(d.code, 1) << d.output;
  EXPECT_TRUE(Has(d, "section 'sft' is not read by the dqn engine")) << d.output;

  // Refused before anything was written.
  EXPECT_FALSE(fs::exists(runs_)) << "a refused config created " << runs_;

  // The control: the same knob with its mode on passes the check (the run then fails for want
  // of a model, which is not a config-strictness error).
  auto e = Allot("train -c " + grpo_ +
                 " --set grpo.dynamic_sampling=true --set grpo.max_refill_groups=3" + Out());
  EXPECT_FALSE(Has(e, "has no effect")) << e.output;
  EXPECT_FALSE(Has(e, "is not read by")) << e.output;
}

TEST_F(ConfigStrictnessIntegrationTest, SetOverridesOfResumeAreChecked) {
  // A run directory as `allot train` leaves it (only config.yaml matters before the engine).
  fs::create_directories(runs_ + "/r1");
  Write(runs_ + "/r1/config.yaml",
        "run:\n  name: r1\ntrainer:\n  algorithm: grpo\ngrpo:\n  group_size: 4\n");
  auto a = Allot("resume r1 --output-dir " + runs_ + " --set dqn.lr=0.1");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "--set dqn")) << a.output;
  EXPECT_TRUE(Has(a, "not read by the grpo engine")) << a.output;
  // Whether a knob has an effect is the run's mode: dynamic sampling is off in r1.
  auto b = Allot("resume r1 --output-dir " + runs_ + " --set grpo.max_refill_groups=3");
  EXPECT_EQ(b.code, 1) << b.output;
  EXPECT_TRUE(Has(b, "has no effect without grpo.dynamic_sampling")) << b.output;
  // The run's own resolved config lists every section; it is not held against the resume.
  auto c = Allot("resume r1 --output-dir " + runs_ + " --set grpo.lr=0.001");
  EXPECT_FALSE(Has(c, "is not read by")) << c.output;
  EXPECT_FALSE(Has(c, "has no effect")) << c.output;
}

TEST_F(ConfigStrictnessIntegrationTest, SetOverridesOfEvalReachTheEnvAndAreChecked) {
  auto trained = Allot("train -c " + dqn_ + " --name e1" + Out());
  ASSERT_EQ(trained.code, 0) << trained.output;
  const std::string run = "eval e1 --output-dir " + runs_ + " --episodes 2";
  // The run's own config, then with an override of its env: the optimal return follows it
  // (the quickstart evaluates with the overrides it trained with).
  auto plain = Allot(run);
  EXPECT_EQ(plain.code, 0) << plain.output;
  EXPECT_TRUE(Has(plain, "(optimal 1.300)")) << plain.output;
  auto changed = Allot(run + " --set env.chain.final_reward=7");
  EXPECT_EQ(changed.code, 0) << changed.output;
  EXPECT_TRUE(Has(changed, "(optimal 7.300)")) << changed.output;
  auto with_recipe = Allot(run + " -c " + dqn_ + " --set env.chain.final_reward=3");
  EXPECT_TRUE(Has(with_recipe, "(optimal 3.300)")) << with_recipe.output;

  auto unknown = Allot(run + " --set nosuch.key=1");
  EXPECT_EQ(unknown.code, 1) << unknown.output;
  EXPECT_TRUE(Has(unknown, "--set nosuch.key")) << unknown.output;
  auto range = Allot(run + " --set env.chain.max_steps=0");
  EXPECT_EQ(range.code, 1) << range.output;
  EXPECT_TRUE(Has(range, "--set env.chain.max_steps")) << range.output;
  auto nothing = Allot("eval nosuch --output-dir " + runs_ + " --set env.chain.max_steps=2");
  EXPECT_EQ(nothing.code, 1) << nothing.output;
  EXPECT_TRUE(Has(nothing, "there is no config to apply it to")) << nothing.output;
}

// model.packing is read by the grpo engine only; under sft it did nothing (sft.packing does).
TEST_F(ConfigStrictnessIntegrationTest, ModelPackingUnderSftIsRefused) {
  auto a = Allot("sft -c " + sft_ + Out() + " --set model.packing=false");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "model.packing has no effect under the sft engine")) << a.output;
}

// model.checkpoint_layers narrows gradient checkpointing; with it off, it would do nothing.
TEST_F(ConfigStrictnessIntegrationTest, CheckpointLayersWithoutCheckpointingIsRefused) {
  for (const std::string& cmd : {"train -c " + grpo_, "sft -c " + sft_}) {
    auto a = Allot(cmd + Out() + " --set model.checkpoint_layers=2");
    EXPECT_EQ(a.code, 1) << a.output;
    EXPECT_TRUE(Has(a, "--set model.checkpoint_layers")) << a.output;
    EXPECT_TRUE(Has(a,
                    "model.checkpoint_layers has no effect while "
                    "model.gradient_checkpointing is false"))
        << a.output;
    auto b = Allot(cmd + Out() +
                   " --set model.checkpoint_layers=2 --set model.gradient_checkpointing=true");
    EXPECT_FALSE(Has(b, "has no effect")) << b.output;
  }
}

// A worker's --set without a recipe used to be dropped in silence (the worker ran on defaults).
TEST_F(ConfigStrictnessIntegrationTest, WorkerSetWithoutARecipeIsRefused) {
  auto a = Allot("rollout-worker --listen 127.0.0.1:0 --set rollout.worker.threads=4");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "--set rollout.worker.threads=4 needs -c/--config")) << a.output;
}

// With one pass over a batch (updates_per_batch: 1) the PPO ratio is exactly 1, so the clip
// and GSPO's sequence ratio cannot change the gradient (trainer/grpo/policy_losses.cc says why, TIS
// and staleness included). configs/quickstart/coger.yaml set clip_eps_high and credited it.
TEST_F(ConfigStrictnessIntegrationTest, ClipWithOnePassIsRefused) {
  for (const std::string k :
       {"grpo.clip_eps=0.1", "grpo.clip_eps_high=0.28", "grpo.policy_loss=gspo"}) {
    auto a = Allot("train -c " + grpo_ + Out() + " --set " + k);
    EXPECT_EQ(a.code, 1) << a.output;
    EXPECT_TRUE(Has(a, "--set " + k.substr(0, k.find('=')))) << a.output;
    EXPECT_TRUE(Has(a, "has no effect while grpo.updates_per_batch is 1")) << a.output;
    auto b = Allot("train -c " + grpo_ + Out() + " --set " + k + " --set grpo.updates_per_batch=2");
    EXPECT_FALSE(Has(b, "has no effect")) << b.output;
  }
}

// grpo.normalize_std and grpo.ratio_level became grpo.advantage_estimator and grpo.policy_loss
// (registries: trainer/grpo/advantage_estimators.h, policy_losses.h). Catches: an old key refused
// only as "unknown key" (or, worse, a did-you-mean to an unrelated key), so that an old recipe
// gives no hint of the new name; and an unknown variant name that does not list the registered
// ones.
TEST_F(ConfigStrictnessIntegrationTest, RemovedLossSwitchesNameTheirRegistryKeys) {
  const std::string file = Write(dir_ + "/old.yaml",
                                 "trainer:\n  algorithm: grpo\ngrpo:\n  group_size: 4\n"
                                 "  normalize_std: false\n");
  auto a = Allot("config validate " + file);
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "old.yaml:5")) << a.output;
  EXPECT_TRUE(Has(a, "grpo.normalize_std was replaced by grpo.advantage_estimator")) << a.output;
  EXPECT_TRUE(Has(a, "false is dr_grpo")) << a.output;
  auto b = Allot("train -c " + grpo_ + Out() + " --set grpo.ratio_level=sequence");
  EXPECT_EQ(b.code, 1) << b.output;
  EXPECT_TRUE(Has(b, "grpo.ratio_level was replaced by grpo.policy_loss")) << b.output;
  EXPECT_TRUE(Has(b, "sequence is gspo")) << b.output;
  for (const std::string k : {"advantage_estimator", "policy_loss"}) {
    auto c = Allot("config validate " + grpo_ + " --set grpo." + k + "=nope");
    EXPECT_EQ(c.code, 1) << c.output;
    EXPECT_TRUE(Has(c, k == "policy_loss" ? "ppo_clip, gspo" : "grpo, dr_grpo")) << c.output;
  }
  auto d = Allot("config validate " + grpo_ + " --set grpo.advantage_estimator=dr_grpo");
  EXPECT_FALSE(Has(d, "advantage_estimator")) << d.output;
}

// Each turn is sampled under its env's budget (env.coger.router_max_tokens, ...), in training as
// in evaluation; grpo.max_tokens, which used to override them in training, is only a length the
// loss assumes, and an error where the loss assumes none.
TEST_F(ConfigStrictnessIntegrationTest, GrpoMaxTokensWithoutALossThatReadsItIsRefused) {
  auto a = Allot("train -c " + grpo_ + Out() + " --set grpo.max_tokens=48");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "--set grpo.max_tokens")) << a.output;
  EXPECT_TRUE(Has(a, "each turn's sampling budget is the env's")) << a.output;
  for (const std::string mode :
       {"grpo.loss_aggregation=seq_mean_token_sum", "grpo.overlong_buffer=8"}) {
    auto b = Allot("train -c " + grpo_ + Out() + " --set grpo.max_tokens=48 --set " + mode);
    EXPECT_FALSE(Has(b, "has no effect")) << b.output;
  }
}

// stale_policy: importance corrects stale segments with the TIS weight. It used to switch TIS on
// behind the recipe's back, and the check then refused a truncated_is_cap that was in effect.
TEST_F(ConfigStrictnessIntegrationTest, ImportanceNeedsTruncatedIs) {
  auto a = Allot("train -c " + grpo_ + Out() +
                 " --set grpo.stale_policy=importance --set grpo.truncated_is=false"
                 " --set grpo.truncated_is_cap=3");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a,
                  "grpo.stale_policy: importance corrects stale segments with the truncated "
                  "IS weight: it needs grpo.truncated_is: true"))
      << a.output;
  auto b = Allot("train -c " + grpo_ + Out() +
                 " --set grpo.stale_policy=importance --set grpo.truncated_is_cap=3");
  EXPECT_FALSE(Has(b, "has no effect")) << b.output;
  EXPECT_FALSE(Has(b, "needs grpo.truncated_is")) << b.output;
}

// grpo.async.deterministic says how asynchronous steps sample: with max_lag 0 there are none,
// and the free mode it would switch to does not exist. Catches: either accepted in silence.
TEST_F(ConfigStrictnessIntegrationTest, AsyncKnobsWithoutEffectAreRefused) {
  auto a = Allot("train -c " + grpo_ + Out() + " --set grpo.async.deterministic=true");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "grpo.async.deterministic has no effect while grpo.async.max_lag is 0"))
      << a.output;
  auto b = Allot("train -c " + grpo_ + Out() +
                 " --set grpo.async.max_lag=1 --set grpo.async.deterministic=false");
  EXPECT_EQ(b.code, 1) << b.output;
  EXPECT_TRUE(Has(b, "grpo.async.deterministic: false")) << b.output;
}

// The dispatcher's staleness and grouping knobs are gone: both learners go through the rollout
// session, which delivers whole groups, and judge staleness themselves (the grpo learner per
// segment, the dqn learner off-policy). A recipe that still sets one fails naming it.
TEST_F(ConfigStrictnessIntegrationTest, DeletedDispatcherKnobsAreRefused) {
  for (const std::string k :
       {"rollout.dispatcher.max_policy_lag=2", "rollout.dispatcher.stale_policy=downweight",
        "rollout.dispatcher.stale_weight_decay=0.3", "rollout.dispatcher.deliver_groups=true"}) {
    const std::string key = k.substr(0, k.find('='));
    auto a = Allot("train -c " + grpo_ + Out() + " --set " + k);
    EXPECT_EQ(a.code, 1) << a.output;
    EXPECT_TRUE(Has(a, key + ": unknown key")) << a.output;
    auto b = Allot("config validate " + dqn_ + " --set dqn.distributed=true --set " + k);
    EXPECT_EQ(b.code, 1) << b.output;
    EXPECT_TRUE(Has(b, key + ": unknown key")) << b.output;
  }
  // Without dqn.distributed the navigator reads no rollout section at all.
  auto c = Allot("config validate " + dqn_ + " --set rollout.in_process_workers=2");
  EXPECT_EQ(c.code, 1) << c.output;
  EXPECT_TRUE(Has(c, "section 'rollout' is not read while dqn.distributed is false")) << c.output;
  auto d = Allot("config validate " + dqn_ +
                 " --set dqn.distributed=true --set rollout.in_process_workers=2");
  EXPECT_EQ(d.code, 0) << d.output;
}

// RLoT's transition rewards are the env's (the step scorer's score per block, the outcome at the
// end): rewards.terms was never read, rewards.prm did nothing under step_scorer: rule, and
// env.rlot.prm was overwritten by rewards.prm in silence.
TEST_F(ConfigStrictnessIntegrationTest, RlotRewardKeysWithoutEffectAreRefused) {
  const std::string rlot = Write(dir_ + "/rlot.yaml",
                                 "trainer: {algorithm: dqn}\n"
                                 "dqn: {distributed: true}\n"
                                 "env:\n  name: rlot\n  rlot: {step_scorer: rule}\n");
  auto ok = Allot("config validate " + rlot);
  EXPECT_EQ(ok.code, 0) << ok.output;
  auto terms = Allot("config validate " + rlot + " --set 'rewards.terms=[{name: prm}]'");
  EXPECT_EQ(terms.code, 1) << terms.output;
  EXPECT_TRUE(Has(terms, "rewards.terms is not read by the dqn engine")) << terms.output;
  auto prm = Allot("config validate " + rlot + " --set rewards.prm.aggregate=min");
  EXPECT_EQ(prm.code, 1) << prm.output;
  EXPECT_TRUE(Has(prm, "rewards.prm has no effect while env.rlot.step_scorer is rule"))
      << prm.output;
  auto endpoint = Allot("config validate " + rlot + " --set env.rlot.prm_endpoint=p");
  EXPECT_EQ(endpoint.code, 1) << endpoint.output;
  EXPECT_TRUE(Has(endpoint,
                  "env.rlot.prm_endpoint has no effect while env.rlot.step_scorer is "
                  "rule"))
      << endpoint.output;
  const std::string scored = " --set env.rlot.step_scorer=prm";
  auto own = Allot("config validate " + rlot + scored + " --set env.rlot.prm.aggregate=min");
  EXPECT_EQ(own.code, 1) << own.output;
  EXPECT_TRUE(Has(own, "env.rlot.prm is filled in from rewards.prm")) << own.output;
  auto used = Allot("config validate " + rlot + scored + " --set rewards.prm.aggregate=min");
  EXPECT_EQ(used.code, 0) << used.output;
}

// A section of another env than env.name configures nothing this run uses.
TEST_F(ConfigStrictnessIntegrationTest, OtherEnvsSectionsAreRefused) {
  auto a = Allot("config validate " + grpo_ +
                 " --set env.name=coger --set env.r2.decomposer_max_tokens=64");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "env.r2 configures the r2 env, which this run does not use")) << a.output;
  auto b = Allot("config validate " + grpo_ +
                 " --set env.name=coger --set env.coger.router_max_tokens=64");
  EXPECT_EQ(b.code, 0) << b.output;
}

// A section neither the engine nor `allot eval` reads with the recipe's env is refused:
// `sampler` (no engine reads it; the grpo engine draws train_data's items in order), a dataset
// under the chain MDP.
TEST_F(ConfigStrictnessIntegrationTest, SectionsNothingReadsAreRefused) {
  auto a = Allot("config validate " + grpo_ + " --set sampler.seed=3");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "--set sampler.seed: section 'sampler' is not read by the grpo engine"))
      << a.output;
  auto b = Allot("config validate " + dqn_ + " --set train_data.path=x.jsonl");
  EXPECT_EQ(b.code, 1) << b.output;
  EXPECT_TRUE(Has(b, "section 'train_data' is not read by the dqn engine with env.name chain"))
      << b.output;
  auto c = Allot("config validate " + dqn_ +
                 " --set env.name=rlot --set dqn.distributed=true --set train_data.path=x.jsonl");
  EXPECT_EQ(c.code, 0) << c.output;
}

// The dqn engine trains the chain MDP or RLoT's env: with another env.name (an ATLAS evaluation
// recipe names none of trainer.algorithm, so dqn) it trained the chain MDP and ignored the env.
TEST_F(ConfigStrictnessIntegrationTest, DqnRefusesAnEnvItDoesNotTrainOn) {
  auto a = Allot("train -c " + dqn_ + Out() + " --name atlas --set env.name=atlas");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "env.name: 'atlas' is not an env the dqn engine trains on")) << a.output;
  auto b = Allot("train -c " + dqn_ + Out() + " --name chain");
  EXPECT_EQ(b.code, 0) << b.output;
}

// The shipped recipes (configs/, configs/quickstart/, configs/tinyworld/), and the values they
// require from the environment (${NAME:?...}: a model path, a server URL, a dataset), each with
// a placeholder. Files that name neither trainer nor env (tinyworld/datasets.yaml, pool.yaml)
// are parts that recipes include, not recipes: `allot train` on one alone would train the chain
// MDP on defaults.
struct ShippedRecipes {
  std::vector<fs::path> recipes;
  std::map<std::string, std::string> required;  // NAME -> placeholder
  std::string env;                              // "env NAME=placeholder ..."
};
ShippedRecipes FindShippedRecipes() {
  ShippedRecipes out;
  const std::regex var(R"(\$\{([A-Za-z_][A-Za-z0-9_]*):\?)");
  const std::regex recipe_key(R"((^|\n)(trainer|env):)");
  for (const char* sub : {"", "/quickstart", "/tinyworld"}) {
    const fs::path dir = fs::path(ALLOT_SOURCE_DIR) / ("configs" + std::string(sub));
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".yaml") continue;
      std::stringstream text;
      text << std::ifstream(entry.path()).rdbuf();
      const std::string t = text.str();
      for (std::sregex_iterator it(t.begin(), t.end(), var), end; it != end; ++it) {
        const std::string name = (*it)[1].str();
        out.required[name] =
            name.find("URL") != std::string::npos ? "http://127.0.0.1:9" : "placeholder";
      }
      if (std::regex_search(t, recipe_key)) out.recipes.push_back(entry.path());
    }
  }
  std::sort(out.recipes.begin(), out.recipes.end());
  out.env = "env";
  for (const auto& [name, value] : out.required) out.env += " " + name + "=" + value;
  return out;
}

// Every shipped recipe passes the check its engine makes before a run (`allot config validate`).
TEST_F(ConfigStrictnessIntegrationTest, EveryShippedRecipeValidates) {
  const ShippedRecipes shipped = FindShippedRecipes();
  for (const fs::path& p : shipped.recipes) {
    auto a = Allot("config validate " + p.string(), shipped.env);
    EXPECT_EQ(a.code, 0) << p << ":\n" << a.output;
  }
  EXPECT_GE(shipped.recipes.size(), 19u);
}

// Each leaf of a loaded recipe (its includes merged): a scalar, a list of scalars, an empty map;
// a list of maps item by item ("endpoints[1].name").
void Leaves(const config::ConfigNode& n, const std::string& path, std::vector<std::string>* out) {
  if (n.is_map() && !n.entries().empty()) {
    for (const auto& [key, child] : n.entries()) {
      Leaves(child, path.empty() ? key : path + "." + key, out);
    }
  } else if (n.is_sequence() &&
             std::any_of(n.items().begin(), n.items().end(),
                         [](const config::ConfigNode& i) { return i.is_map(); })) {
    for (size_t i = 0; i < n.items().size(); ++i) {
      Leaves(n.items()[i], path + "[" + std::to_string(i) + "]", out);
    }
  } else {
    out->push_back(path);
  }
}

// Every key of every shipped recipe, leaf by leaf, is read by what runs the recipe: the engine of
// its trainer.algorithm, or its env's episodes and `allot eval`, in the mode the recipe chooses
// (`allot config validate --keys` says what reads each key, and refuses a recipe with a key that
// nothing reads). The leaves are walked here, apart from allot's own walk, so that a key the
// check skipped shows as missing from its list.
TEST_F(ConfigStrictnessIntegrationTest, EveryKeyOfEveryShippedRecipeIsRead) {
  const ShippedRecipes shipped = FindShippedRecipes();
  const config::EnvLookup env = [&](const std::string& name) -> std::optional<std::string> {
    auto it = shipped.required.find(name);
    if (it != shipped.required.end()) return it->second;
    return config::ProcessEnv()(name);
  };
  size_t keys = 0;
  for (const fs::path& p : shipped.recipes) {
    auto a = Allot("config validate --keys " + p.string(), shipped.env);
    ASSERT_EQ(a.code, 0) << p << ":\n" << a.output;
    auto tree = config::LoadFile(p.string(), env);
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    std::vector<std::string> leaves;
    Leaves(*tree, "", &leaves);
    for (const std::string& leaf : leaves) {
      ++keys;
      EXPECT_TRUE(std::regex_search(
          a.output, std::regex(": " + std::regex_replace(leaf, std::regex(R"([.\[\]])"), R"(\$&)") +
                               ": read by [^\n]+")))
          << p << ": " << leaf << " is not listed as read:\n"
          << a.output;
    }
  }
  EXPECT_GE(keys, 400u);  // 19 recipes and their includes
}

// The check behind the walk can fail: a copy of shipped recipes, each with one stray key that the
// schema knows but that nothing reads in the recipe's mode, is refused naming the key and the
// file and line where it was written.
TEST_F(ConfigStrictnessIntegrationTest, StrayLeafKeyInARecipeIsRefusedAtItsLine) {
  const fs::path configs = fs::path(dir_) / "configs";
  fs::copy(fs::path(ALLOT_SOURCE_DIR) / "configs", configs, fs::copy_options::recursive);
  const ShippedRecipes shipped = FindShippedRecipes();
  // Inserts `line` after the recipe's line `after`; returns the inserted line's number.
  auto insert = [](const fs::path& recipe, const std::string& after, const std::string& line) {
    std::ifstream in(recipe);
    std::string text, l;
    int n = 0, at = 0;
    while (std::getline(in, l)) {
      text += l + "\n";
      ++n;
      if (at == 0 && l == after) {
        text += line + "\n";
        at = ++n;
      }
    }
    in.close();
    std::ofstream(recipe) << text;
    return at;
  };
  struct Stray {
    const char* recipe;
    const char* after;
    const char* line;
    const char* error;
  };
  for (const Stray& s : std::vector<Stray>{
           // R2's accuracy reward has no hierarchy term.
           {"quickstart/r2.yaml", "rewards:", "  hierarchy: {base_slope: 2.0}",
            "rewards.hierarchy.base_slope: rewards.hierarchy has no effect without the hierarchy "
            "term in rewards.terms"},
           // DeepTool's quickstart gives the QA toolkit no corpus.
           {"quickstart/deeptool.yaml", "tools:", "  knowledge_base: {default_top_k: 3}",
            "tools.knowledge_base.default_top_k: tools.knowledge_base has no effect without "
            "tools.knowledge_base.corpus"},
           // The paper recipe runs no procedural review.
           {"r2.yaml",
            "    review:                          # Sec. 4.4 procedural review "
            "(optional); to run it:",
            "      max_tokens: 512",
            "env.r2.review.max_tokens: env.r2.review has no effect while env.r2.review.enabled "
            "is false"}}) {
    const fs::path copy = configs / s.recipe;
    const int line = insert(copy, s.after, s.line);
    ASSERT_GT(line, 0) << s.recipe << " has no line '" << s.after << "'";
    auto a = Allot("config validate " + copy.string(), shipped.env);
    EXPECT_EQ(a.code, 1) << s.recipe << ":\n" << a.output;
    EXPECT_TRUE(Has(a, copy.string() + ":" + std::to_string(line) + ":")) << a.output;
    EXPECT_TRUE(Has(a, s.error)) << a.output;
    auto shipped_one =
        Allot("config validate " + (fs::path(ALLOT_SOURCE_DIR) / "configs" / s.recipe).string(),
              shipped.env);
    EXPECT_EQ(shipped_one.code, 0) << shipped_one.output;
  }
}

// An empty env section is a key of its own (read by the engine), not an env's section.
TEST_F(ConfigStrictnessIntegrationTest, KeysOfAnEmptyEnvSectionAreListed) {
  const std::string empty = Write(dir_ + "/empty_env.yaml", "trainer:\n  algorithm: grpo\nenv:\n");
  auto a = Allot("config validate --keys " + empty);
  EXPECT_EQ(a.code, 0) << a.output;
  EXPECT_TRUE(Has(a, "empty_env.yaml:3:1: env: read by the grpo engine")) << a.output;
}

// R2-Reasoner Sec. 4.3: with grpo.alternation.adapters each role's LoRA is its own entry, so
// grpo.lora beside them, or adapters without alternation, does nothing and is refused.
TEST_F(ConfigStrictnessIntegrationTest, PerRoleAdaptersLeaveGrpoLoraWithoutEffect) {
  const std::string roles = Write(dir_ + "/roles.yaml",
                                  "trainer:\n  algorithm: grpo\ngrpo:\n  group_size: 4\n"
                                  "  alternation:\n    enabled: true\n"
                                  "    adapters:\n      - {r: 32}\n      - {r: 64}\n");
  auto a = Allot("train -c " + roles + Out() + " --set grpo.lora.r=8");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "--set grpo.lora")) << a.output;
  EXPECT_TRUE(Has(a,
                  "grpo.lora has no effect while grpo.alternation.adapters gives each role "
                  "its own adapter"))
      << a.output;
  auto b = Allot("train -c " + roles + Out() + " --set grpo.alternation.enabled=false");
  EXPECT_EQ(b.code, 1) << b.output;
  EXPECT_TRUE(Has(b, "roles.yaml:")) << b.output;
  EXPECT_TRUE(Has(b,
                  "grpo.alternation.adapters has no effect while grpo.alternation.enabled is "
                  "false"))
      << b.output;
  EXPECT_FALSE(fs::exists(runs_));
  auto c = Allot("train -c " + roles + Out());
  EXPECT_FALSE(Has(c, "has no effect")) << c.output;
}

}  // namespace
}  // namespace allot::trainer
