#include "llm/accounting.h"

#include <gtest/gtest.h>

#include "core/config/binder.h"

namespace allot::llm {
namespace {

TEST(AccountingTest, EnergyIsTwoNTokensTimesJoulesPerFlop) {
  EndpointConfig ep;
  ep.params_b = 7.0;
  GpuProfile a100;  // R2-Reasoner: A100 SXM, 400 W, 312 TFLOP/s
  // 2 * 7e9 * (100 + 50) * 400 / 312e12
  EXPECT_DOUBLE_EQ(EnergyJoules(ep, a100, 100, 50), 2.0 * 7e9 * 150 * 400.0 / 312e12);
}

TEST(AccountingTest, MoeUsesActiveParameters) {
  EndpointConfig ep;
  ep.params_b = 671.0;
  ep.active_params_b = 37.0;
  GpuProfile gpu;
  EXPECT_DOUBLE_EQ(EnergyJoules(ep, gpu, 1000, 0), 2.0 * 37e9 * 1000 * gpu.JoulesPerFlop());
}

TEST(AccountingTest, CostPricesInputAndOutputSeparately) {
  EndpointConfig ep;
  ep.usd_per_m_input = 2.5;
  ep.usd_per_m_output = 10.0;
  EXPECT_DOUBLE_EQ(ApiCostUsd(ep, 1'000'000, 500'000), 2.5 + 5.0);
}

TEST(AccountingTest, EpisodeTotalsMergeIntoRunTotals) {
  CallRecord a{.endpoint = "small",
               .ok = true,
               .prompt_tokens = 10,
               .completion_tokens = 5,
               .attempts = 3,
               .latency_s = 0.5,
               .cost_usd = 0.01,
               .energy_j = 2.0};
  CallRecord b{.endpoint = "large",
               .ok = false,
               .prompt_tokens = 0,
               .completion_tokens = 0,
               .attempts = 1,
               .latency_s = 1.5,
               .cost_usd = 0,
               .energy_j = 0};
  UsageReport episode1, episode2, run;
  episode1.Add(a);
  episode2.Add(b);
  episode2.Add(a);
  run.Merge(episode1);
  run.Merge(episode2);
  EXPECT_EQ(run.total.calls, 3);
  EXPECT_EQ(run.total.failed_calls, 1);
  EXPECT_EQ(run.total.prompt_tokens, 20);
  EXPECT_EQ(run.total.retries, 4);
  EXPECT_DOUBLE_EQ(run.total.max_latency_s, 1.5);
  EXPECT_DOUBLE_EQ(run.total.energy_j, 4.0);
  EXPECT_EQ(run.by_endpoint.at("small").calls, 2);
  EXPECT_EQ(run.by_endpoint.at("large").failed_calls, 1);
  EXPECT_NE(run.ToJson().find("\"by_endpoint\""), std::string::npos);
}

TEST(AccountingTest, EndpointConfigLoadsFromYamlAndValidates) {
  auto root = config::ParseYaml(
      "name: qwen-7b\nbase_url: http://127.0.0.1:8000/v1\nmodel: Qwen2.5-7B\n"
      "params_b: 7.6\ngroup: MLM\nusd_per_m_input: 0.1\nlimits:\n  max_concurrency: 8\n",
      "pool.yaml");
  ASSERT_TRUE(root.ok());
  EndpointConfig ep;
  ASSERT_TRUE(config::Load(*root, ep).ok());
  EXPECT_EQ(ep.limits.max_concurrency, 8);
  EXPECT_DOUBLE_EQ(ep.EffectiveParams(), 7.6e9);
  EXPECT_TRUE(ep.Validate().ok());

  auto bad = config::ParseYaml("name: x\nbase_url: ftp://h\nmodel: m\ngroup: XL\n", "pool.yaml");
  ASSERT_TRUE(bad.ok());
  EndpointConfig e2;
  Status s = config::Load(*bad, e2);
  EXPECT_FALSE(s.ok());  // group is not one of the choices
  e2.group = "SLM";
  Status v = e2.Validate();
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.message().find("endpoints['x'].base_url"), std::string::npos) << v.message();
}

// The shape the top-level config will take: `endpoints:` plus `gpu:`.
struct PoolSection {
  std::vector<EndpointConfig> endpoints;
  GpuProfile gpu;
  void Describe(config::Visitor& v) {
    v.Field("endpoints", endpoints);
    v.Field("gpu", gpu);
  }
};

TEST(AccountingTest, PoolFileLoadsWithSecretApiKeyFromEnv) {
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "TEST_LLM_API_KEY") return std::string("sk-from-env");
    return std::nullopt;
  };
  auto root = config::LoadFile(std::string(ALLOT_TEST_DATA_DIR) + "/llm/pool.yaml", env);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  PoolSection pool;
  Status s = config::Load(*root, pool);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(pool.endpoints.size(), 2u);
  const EndpointConfig& big = pool.endpoints[1];
  EXPECT_EQ(big.api_key, "sk-from-env");
  EXPECT_EQ(big.group, "LLM");
  EXPECT_EQ(big.limits.max_concurrency, 32);
  EXPECT_DOUBLE_EQ(big.EffectiveParams(), 37e9);
  // api_key is a secret field: it never shows in the printed config.
  const std::string yaml = config::ToYaml(pool);
  EXPECT_EQ(yaml.find("sk-from-env"), std::string::npos) << yaml;
  // Energy of a 1000-token call on the MoE model: 2 * 37e9 * 1000 * 400 / 312e12 J.
  EXPECT_NEAR(EnergyJoules(big, pool.gpu, 600, 400), 94.87, 0.01);
}

}  // namespace
}  // namespace allot::llm
