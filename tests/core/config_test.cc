#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "tests/core/temp_dir.h"

namespace allot::config {
namespace {

struct Endpoint {
  std::string name;
  std::string api_key;
  double usd_per_m_input = 0;
  void Describe(Visitor& v) {
    v.Field("name", name);
    v.Field("api_key", api_key, {.secret = true});
    v.Field("usd_per_m_input", usd_per_m_input, {.min = 0.0});
  }
};

struct Dqn {
  double lr = 0.01;
  int batch_size = 64;
  bool double_q = true;
  std::string loss = "mse";
  std::vector<std::string> targets = {"q", "v"};
  void Describe(Visitor& v) {
    v.Field("lr", lr, {.doc = "Adam learning rate", .min = 0.0});
    v.Field("batch_size", batch_size, {.min = 1});
    v.Field("double_q", double_q);
    v.Field("loss", loss, {.choices = {"mse", "huber"}});
    v.Field("targets", targets);
  }
};

struct Root {
  std::string name = "default";
  Dqn dqn;
  std::vector<Endpoint> endpoints;
  void Describe(Visitor& v) {
    v.Field("name", name);
    v.Field("dqn", dqn);
    v.Field("endpoints", endpoints);
  }
};

Status LoadText(const std::string& text, Root& out) {
  auto node = ParseYaml(text, "x.yaml");
  if (!node.ok()) return node.status();
  return Load(*node, out);
}

using testing::TempDir;

TEST(ConfigTest, DefaultsStayWhenKeysAreAbsent) {
  Root r;
  ASSERT_TRUE(LoadText("name: run1\n", r).ok());
  EXPECT_EQ(r.name, "run1");
  EXPECT_DOUBLE_EQ(r.dqn.lr, 0.01);
  EXPECT_EQ(r.dqn.batch_size, 64);
}

TEST(ConfigTest, LoadsTypedValues) {
  Root r;
  Status s = LoadText(
      "dqn:\n  lr: 0.5\n  batch_size: 32\n  double_q: false\n  loss: huber\n"
      "  targets: [a, b, c]\nendpoints:\n  - name: small\n    usd_per_m_input: 0.1\n",
      r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_DOUBLE_EQ(r.dqn.lr, 0.5);
  EXPECT_EQ(r.dqn.batch_size, 32);
  EXPECT_FALSE(r.dqn.double_q);
  EXPECT_EQ(r.dqn.loss, "huber");
  EXPECT_EQ(r.dqn.targets, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(r.endpoints.size(), 1u);
  EXPECT_EQ(r.endpoints[0].name, "small");
}

TEST(ConfigTest, UnknownKeyNamesFileLinePathAndSuggests) {
  Root r;
  Status s = LoadText("name: a\ndqn:\n  lrr: 0.5\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("x.yaml:3:8: dqn.lrr: unknown key (did you mean 'dqn.lr'?)"),
            std::string::npos)
      << s.message();
}

TEST(ConfigTest, UnknownTopLevelSectionSuggests) {
  Root r;
  Status s = LoadText("dqm:\n  lr: 1\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dqm: unknown key (did you mean 'dqn'?)"), std::string::npos)
      << s.message();
}

TEST(ConfigTest, UnknownKeyInsideListItem) {
  Root r;
  Status s = LoadText("endpoints:\n  - name: a\n  - nme: b\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("x.yaml:3:10: endpoints[1].nme: unknown key (did you mean "
                             "'endpoints[1].name'?)"),
            std::string::npos)
      << s.message();
}

TEST(ConfigTest, NoSuggestionWhenNothingIsClose) {
  Root r;
  Status s = LoadText("zzzzzzzz: 1\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find("did you mean"), std::string::npos) << s.message();
}

TEST(ConfigTest, WrongTypesAreErrors) {
  Root r;
  Status s = LoadText("dqn:\n  batch_size: 3.5\n  lr: fast\n  double_q: maybe\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("x.yaml:2:15: dqn.batch_size: expected an integer, got '3.5'"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("x.yaml:3:7: dqn.lr: expected a number, got 'fast'"),
            std::string::npos);
  EXPECT_NE(s.message().find("dqn.double_q: expected true or false"), std::string::npos);
}

TEST(ConfigTest, QuotedNumberIsAString) {
  Root r;
  Status s = LoadText("dqn:\n  lr: \"0.5\"\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expected a number, got the string '0.5'"), std::string::npos);
}

TEST(ConfigTest, SectionGivenAsScalarIsAnError) {
  Root r;
  Status s = LoadText("dqn: 3\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dqn: expected a section"), std::string::npos);
}

TEST(ConfigTest, OutOfRangeValues) {
  Root r;
  Status s = LoadText("dqn:\n  batch_size: 0\n  lr: -1\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dqn.batch_size: 0 is out of range [1.0, 2147483647.0]"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("dqn.lr: -1 is out of range [0.0, inf]"), std::string::npos);
}

TEST(ConfigTest, IntegerOverflowIsAnError) {
  Root r;
  Status s = LoadText("dqn:\n  batch_size: 99999999999\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("out of range"), std::string::npos);
}

TEST(ConfigTest, ChoicesAreEnforcedWithSuggestion) {
  Root r;
  Status s = LoadText("dqn:\n  loss: hubber\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'hubber' is not one of: mse, huber (did you mean 'huber'?)"),
            std::string::npos)
      << s.message();
}

TEST(ConfigTest, AllErrorsAreReportedAtOnce) {
  Root r;
  Status s = LoadText("dqn:\n  lrr: 1\n  batch_size: x\nfoo: 1\n", r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dqn.lrr"), std::string::npos);
  EXPECT_NE(s.message().find("dqn.batch_size"), std::string::npos);
  EXPECT_NE(s.message().find("foo: unknown key"), std::string::npos);
}

TEST(ConfigTest, YamlSyntaxErrorNamesFileAndLine) {
  auto node = ParseYaml("a: 1\nb: [1, 2\n", "bad.yaml");
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.status().message().find("bad.yaml:"), std::string::npos);
  EXPECT_NE(node.status().message().find("YAML syntax error"), std::string::npos);
}

TEST(ConfigTest, DuplicateKeyIsAnError) {
  auto node = ParseYaml("a: 1\na: 2\n", "dup.yaml");
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.status().message().find("dup.yaml:2:1: duplicate key 'a'"), std::string::npos)
      << node.status().message();
}

TEST(ConfigTest, OverridesApplyDottedPaths) {
  auto node = ParseYaml("dqn:\n  lr: 0.5\n", "x.yaml");
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(ApplyOverride(*node, "dqn.batch_size=16").ok());
  ASSERT_TRUE(ApplyOverride(*node, "dqn.lr=0.25").ok());
  ASSERT_TRUE(ApplyOverride(*node, "dqn.targets=[x, y]").ok());
  Root r;
  ASSERT_TRUE(Load(*node, r).ok());
  EXPECT_EQ(r.dqn.batch_size, 16);
  EXPECT_DOUBLE_EQ(r.dqn.lr, 0.25);
  EXPECT_EQ(r.dqn.targets, (std::vector<std::string>{"x", "y"}));
}

TEST(ConfigTest, OverrideErrorsNameTheOverride) {
  auto node = ParseYaml("dqn:\n  lr: 0.5\n", "x.yaml");
  ASSERT_TRUE(node.ok());
  EXPECT_FALSE(ApplyOverride(*node, "novalue").ok());
  EXPECT_FALSE(ApplyOverride(*node, "dqn.lr.x=1").ok());
  ASSERT_TRUE(ApplyOverride(*node, "dqn.batch_size=abc").ok());
  Root r;
  Status s = Load(*node, r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--set dqn.batch_size: dqn.batch_size: expected an integer"),
            std::string::npos)
      << s.message();
}

TEST(ConfigTest, EnvInterpolationAndRedaction) {
  auto node = ParseYaml(
      "endpoints:\n  - name: api\n    api_key: ${TEST_KEY}\nname: run-${TEST_SUFFIX:-none}\n",
      "x.yaml");
  ASSERT_TRUE(node.ok());
  EnvLookup env = [](const std::string& n) -> std::optional<std::string> {
    if (n == "TEST_KEY") return "sk-very-secret";
    return std::nullopt;
  };
  ASSERT_TRUE(InterpolateEnv(*node, env).ok());
  Root r;
  std::map<std::string, std::string> secrets;
  ASSERT_TRUE(Load(*node, r, &secrets).ok());
  EXPECT_EQ(r.endpoints[0].api_key, "sk-very-secret");
  EXPECT_EQ(r.name, "run-none");
  const std::string printed = ToYaml(r, {.secret_paths = secrets});
  EXPECT_EQ(printed.find("sk-very-secret"), std::string::npos) << printed;
  // The placeholder is printed back, so the resolved config can be resumed from.
  EXPECT_NE(printed.find("api_key: ${TEST_KEY}"), std::string::npos) << printed;
  // Not a secret: the placeholder with its fallback is printed back as written.
  EXPECT_NE(printed.find("name: run-${TEST_SUFFIX:-none}"), std::string::npos) << printed;
}

// Every ${VAR} used to count as a secret, fallbacks included, so logs lost values such as a
// model name or a URL. Only secret fields and keys named like secrets are secrets now.
TEST(ConfigTest, OnlySecretsAreRedacted) {
  auto node = ParseYaml(
      "endpoints:\n  - name: ${MODEL:-router}\n    api_key: ${KEY:-sk-fallback-key}\n"
      "name: ${URL:-http://127.0.0.1:8000}\n",
      "x.yaml");
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(InterpolateEnv(*node, [](const std::string&) { return std::nullopt; }).ok());
  Root r;
  std::map<std::string, std::string> paths;
  std::vector<std::string> secret_values;
  ASSERT_TRUE(Load(*node, r, &paths, &secret_values).ok());
  EXPECT_EQ(r.endpoints[0].name, "router");
  EXPECT_EQ(secret_values, std::vector<std::string>{"sk-fallback-key"});
  const std::string printed = ToYaml(r, {.secret_paths = paths});
  EXPECT_NE(printed.find("name: ${MODEL:-router}"), std::string::npos) << printed;
  EXPECT_NE(printed.find("name: ${URL:-http://127.0.0.1:8000}"), std::string::npos) << printed;
  // A secret's fallback could be the secret itself.
  EXPECT_NE(printed.find("api_key: <redacted>"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("sk-fallback-key"), std::string::npos) << printed;
}

TEST(ConfigTest, SecretKeyNames) {
  for (const char* k : {"token", "api_key", "API_KEY", "password", "secret", "auth_token",
                        "openai_api_key", "client_secret", "db_password"}) {
    EXPECT_TRUE(IsSecretKey(k)) << k;
  }
  for (const char* k : {"name", "url", "max_tokens", "tokens", "tokenizer", "bad_token",
                        "good_token", "tls_key", "model"}) {
    EXPECT_FALSE(IsSecretKey(k)) << k;
  }
}

TEST(ConfigTest, SecretFieldIsRedactedEvenWhenLiteral) {
  Root r;
  r.endpoints.push_back({"x", "sk-literal-key", 0});
  const std::string printed = ToYaml(r);
  EXPECT_EQ(printed.find("sk-literal-key"), std::string::npos);
}

TEST(ConfigTest, MissingEnvVarIsAnErrorWithLine) {
  auto node = ParseYaml("name: ${ALLOT_SURELY_UNSET_VAR}\n", "x.yaml");
  ASSERT_TRUE(node.ok());
  Status s = InterpolateEnv(*node, [](const std::string&) { return std::nullopt; });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("x.yaml:1:7: environment variable ALLOT_SURELY_UNSET_VAR is not set"),
            std::string::npos)
      << s.message();
}

// A required key, `${NAME:?hint}`: left unset it is no load error (a --set may still give it)
// but a binding error that names the file and line, the key, the variable and the hint, every
// such key at once.
TEST(ConfigTest, RequiredKeysLeftUnsetAreNamedWithTheirHints) {
  auto node = ParseYaml(
      "name: \"${ALLOT_T_NAME:?the run's name, e.g. r1}\"\n"
      "endpoints:\n  - name: a\n  - name: \"${ALLOT_T_EP:?the second endpoint}\"\n",
      "x.yaml");
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(InterpolateEnv(*node, [](const std::string& n) -> std::optional<std::string> {
                if (n == "ALLOT_T_EP") return "";  // empty counts as unset, as in the shell
                return std::nullopt;
              }).ok());
  Root r;
  Status s = Load(*node, r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("x.yaml:1:7: name: required, not set: the run's name, e.g. r1 "
                             "(set ALLOT_T_NAME or --set name=...)"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("x.yaml:4:11: endpoints[1].name: required, not set: the second "
                             "endpoint (set ALLOT_T_EP or --set endpoints[1].name=...)"),
            std::string::npos)
      << s.message();
}

TEST(ConfigTest, RequiredKeyIsGivenByItsVariableOrAnOverride) {
  const std::string text =
      "name: \"${ALLOT_T_NAME:?the run's name}\"\nendpoints:\n"
      "  - {name: \"${ALLOT_T_EP:?an endpoint}\", usd_per_m_input: 1}\n";
  auto node = ParseYaml(text, "x.yaml");
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(InterpolateEnv(*node, [](const std::string& n) -> std::optional<std::string> {
                if (n == "ALLOT_T_NAME") return "from-env";
                return std::nullopt;
              }).ok());
  ASSERT_TRUE(ApplyOverride(*node, "endpoints[0].name=from-set").ok());
  Root r;
  std::map<std::string, std::string> paths;
  ASSERT_TRUE(Load(*node, r, &paths).ok());
  EXPECT_EQ(r.name, "from-env");
  EXPECT_EQ(r.endpoints[0].name, "from-set");
  EXPECT_DOUBLE_EQ(r.endpoints[0].usd_per_m_input, 1.0);  // the item's other keys stay
  // The variable's value is printed back as the placeholder (resume re-resolves it).
  EXPECT_NE(ToYaml(r, {.secret_paths = paths}).find("${ALLOT_T_NAME:?the run's name}"),
            std::string::npos);
}

// A command that reads part of a recipe (a rollout worker: its rollout section) is not stopped
// by the other sections' required keys; they keep their defaults and print as placeholders.
TEST(ConfigTest, RequiredKeysOutsideTheRequiredSectionsKeepTheirDefaults) {
  auto node = ParseYaml("name: \"${ALLOT_T_NAME:?the run's name}\"\ndqn:\n  lr: 0.5\n", "x.yaml");
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(InterpolateEnv(*node, [](const std::string&) { return std::nullopt; }).ok());
  Root r;
  std::map<std::string, std::string> paths;
  const std::vector<std::string> read = {"dqn"};
  ASSERT_TRUE(Load(*node, r, &paths, nullptr, &read).ok());
  EXPECT_EQ(r.name, "default");
  EXPECT_DOUBLE_EQ(r.dqn.lr, 0.5);
  EXPECT_NE(ToYaml(r, {.secret_paths = paths}).find("name: ${ALLOT_T_NAME:?the run's name}"),
            std::string::npos)
      << ToYaml(r, {.secret_paths = paths});
  const std::vector<std::string> all = {"dqn", "name"};
  EXPECT_FALSE(Load(*node, r, nullptr, nullptr, &all).ok());
}

TEST(ConfigTest, OverrideIndexesAListItem) {
  auto node = ParseYaml("endpoints:\n  - {name: a}\n  - {name: b}\n", "x.yaml");
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(ApplyOverride(*node, "endpoints[1].usd_per_m_input=2.5").ok());
  Root r;
  ASSERT_TRUE(Load(*node, r).ok());
  EXPECT_EQ(r.endpoints[1].name, "b");
  EXPECT_DOUBLE_EQ(r.endpoints[1].usd_per_m_input, 2.5);
  EXPECT_DOUBLE_EQ(r.endpoints[0].usd_per_m_input, 0.0);
  Status past = ApplyOverride(*node, "endpoints[2].name=c");
  EXPECT_NE(past.message().find("--set endpoints[2].name: 'endpoints' has 2 items (index 2)"),
            std::string::npos)
      << past.message();
  Status not_list = ApplyOverride(*node, "name[0]=c");
  EXPECT_NE(not_list.message().find("'name' is not a list"), std::string::npos)
      << not_list.message();
  EXPECT_FALSE(ApplyOverride(*node, "endpoints[x].name=c").ok());
  EXPECT_FALSE(ApplyOverride(*node, "endpoints[1.name=c").ok());
}

TEST(ConfigTest, EscapedDollarIsLiteral) {
  auto node = ParseYaml("name: cost$${X}\n", "x.yaml");
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE(InterpolateEnv(*node, ProcessEnv()).ok());
  Root r;
  ASSERT_TRUE(Load(*node, r).ok());
  EXPECT_EQ(r.name, "cost${X}");
}

TEST(ConfigTest, IncludeMergesAndOverrides) {
  TempDir dir;
  dir.Write("base.yaml", "name: base\ndqn:\n  lr: 0.1\n  batch_size: 8\n");
  const std::string top = dir.Write("top.yaml", "include: base.yaml\ndqn:\n  lr: 0.2\n");
  auto node = LoadFile(top);
  ASSERT_TRUE(node.ok()) << node.status().message();
  Root r;
  ASSERT_TRUE(Load(*node, r).ok());
  EXPECT_EQ(r.name, "base");
  EXPECT_DOUBLE_EQ(r.dqn.lr, 0.2);
  EXPECT_EQ(r.dqn.batch_size, 8);
}

TEST(ConfigTest, ErrorsInIncludedFileNameThatFile) {
  TempDir dir;
  dir.Write("base.yaml", "dqn:\n  batchsize: 8\n");
  const std::string top = dir.Write("top.yaml", "include: base.yaml\n");
  auto node = LoadFile(top);
  ASSERT_TRUE(node.ok());
  Root r;
  Status s = Load(*node, r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("base.yaml:2:14: dqn.batchsize: unknown key"), std::string::npos)
      << s.message();
}

TEST(ConfigTest, IncludeCycleIsAnError) {
  TempDir dir;
  dir.Write("a.yaml", "include: b.yaml\n");
  const std::string b = dir.Write("b.yaml", "include: a.yaml\n");
  auto node = LoadFile(b);
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.status().message().find("include cycle"), std::string::npos);
}

TEST(ConfigTest, MissingIncludeNamesTheIncludingLine) {
  TempDir dir;
  const std::string top = dir.Write("top.yaml", "name: x\ninclude: nope.yaml\n");
  auto node = LoadFile(top);
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.status().message().find("top.yaml:2:10: include"), std::string::npos)
      << node.status().message();
}

TEST(ConfigTest, PrintedYamlLoadsBackToTheSameValues) {
  Root r;
  r.dqn.lr = 0.123;
  r.dqn.loss = "huber";
  r.endpoints.push_back({"e1", "", 2.5});
  auto node = ParseYaml(ToYaml(r), "printed.yaml");
  ASSERT_TRUE(node.ok());
  Root back;
  ASSERT_TRUE(Load(*node, back).ok());
  EXPECT_DOUBLE_EQ(back.dqn.lr, 0.123);
  EXPECT_EQ(back.dqn.loss, "huber");
  ASSERT_EQ(back.endpoints.size(), 1u);
  EXPECT_DOUBLE_EQ(back.endpoints[0].usd_per_m_input, 2.5);
}

TEST(ConfigTest, EditDistance) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(ClosestMatch("batchsize", {"batch_size", "lr"}), "batch_size");
  EXPECT_EQ(ClosestMatch("qqqqqqq", {"batch_size", "lr"}), "");
}

}  // namespace
}  // namespace allot::config
