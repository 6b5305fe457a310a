#include "envs/runtime/env_descriptor.h"

#include <gtest/gtest.h>

#include "envs/atlas/atlas_env.h"
#include "envs/coger/coger_env.h"
#include "envs/r2/r2_env.h"
#include "envs/rlot/rlot_env.h"
#include "envs/synthetic/chain_env.h"
#include "tests/envs/env_sections.h"

namespace allot::envs {
namespace {

using testing::ConfigSections;
using testing::DeclaredSections;

// The sections a descriptor declares are those its config reads: the recipe checks
// (apps/engines.cc) call a key of any other section unread, and LoadEnvConfig hands the env no
// other section, so a field added to the config without its descriptor fails here.
TEST(EnvDescriptorTest, SectionsAreExactlyThoseTheConfigReads) {
  EXPECT_EQ(DeclaredSections(coger::CogerEnvDescriptor()), ConfigSections<coger::CogerEnvConfig>());
  EXPECT_EQ(DeclaredSections(r2::R2EnvDescriptor()), ConfigSections<r2::R2EnvConfig>());
  EXPECT_EQ(DeclaredSections(atlas::AtlasEnvDescriptor()), ConfigSections<atlas::AtlasEnvConfig>());
}

TEST(EnvDescriptorTest, NamesKindsAndHooks) {
  EXPECT_EQ(coger::CogerEnvDescriptor().name, "coger");
  EXPECT_EQ(coger::CogerEnvDescriptor().kind, runtime::EnvKind::kLlmPolicy);
  EXPECT_NE(coger::CogerEnvDescriptor().evaluate, nullptr);
  EXPECT_EQ(rlot::RlotEnvDescriptor().kind, runtime::EnvKind::kNavigator);
  EXPECT_EQ(rlot::RlotEnvDescriptor().evaluate, nullptr);
  EXPECT_EQ(ChainEnvDescriptor().name, "chain");
  EXPECT_TRUE(ChainEnvDescriptor().sections.empty());
  EXPECT_FALSE(ChainEnvDescriptor().reads_datasets);
  EXPECT_TRUE(rlot::RlotEnvDescriptor().reads_datasets);
}

// A whole recipe: env.<name> under <name>, the declared sections, nothing of the trainer's.
TEST(EnvDescriptorTest, LoadEnvConfigTakesTheEnvsSectionsOfAWholeRecipe) {
  const std::string recipe = R"(
trainer: {algorithm: grpo}
grpo: {group_size: 4}
env:
  name: r2
  r2: {answer_format: number}
  coger: {answer_format: choice}
endpoints:
  - {name: policy, base_url: "http://localhost:1", model: m}
gpu: {name: test-gpu}
)";
  auto c = runtime::LoadEnvConfig<r2::R2EnvConfig>(recipe, r2::R2EnvDescriptor());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->r2.answer_format, "number");
  ASSERT_EQ(c->endpoints.size(), 1u);
  EXPECT_EQ(c->endpoints[0].name, "policy");
  // The env's own config, as a test or a hand-started worker writes it.
  auto own =
      runtime::LoadEnvConfig<r2::R2EnvConfig>("r2: {answer_format: yesno}", r2::R2EnvDescriptor());
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->r2.answer_format, "yesno");
  // A key the config does not know is an error naming it.
  auto bad =
      runtime::LoadEnvConfig<r2::R2EnvConfig>("r2: {answer_fromat: yesno}", r2::R2EnvDescriptor());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("answer_fromat"), std::string::npos);
}

}  // namespace
}  // namespace allot::envs
