#include "tools/tool_registry.h"

#include <gtest/gtest.h>

#include "tools/calculator_tools.h"
#include "tools/json_schema.h"

namespace allot::tools {
namespace {

using nlohmann::json;

TEST(JsonSchemaTest, TypesRequiredEnumRanges) {
  const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "minLength": 1},
      "k": {"type": "integer", "minimum": 1, "maximum": 10},
      "mode": {"type": "string", "enum": ["a", "b"]},
      "xs": {"type": "array", "items": {"type": "number"}, "maxItems": 3}
    },
    "required": ["name"],
    "additionalProperties": false
  })");
  ASSERT_TRUE(CheckSchema(schema).ok());
  EXPECT_TRUE(ValidateJson(schema, json{{"name", "x"}, {"k", 3}, {"xs", {1, 2.5}}}).ok());
  EXPECT_TRUE(ValidateJson(schema, json{{"name", "x"}, {"k", 3.0}}).ok());  // 3.0 is an integer

  auto msg = [&](const json& v) { return ValidateJson(schema, v).message(); };
  EXPECT_EQ(msg(json::object()), "parameters: missing required field 'name'");
  EXPECT_EQ(msg(json{{"name", 5}}), "parameters.name: expected string, got integer");
  EXPECT_EQ(msg(json{{"name", "x"}, {"k", 11}}), "parameters.k: 11 is above the maximum 10");
  EXPECT_EQ(msg(json{{"name", "x"}, {"k", 2.5}}), "parameters.k: expected integer, got number");
  EXPECT_EQ(msg(json{{"name", "x"}, {"mode", "c"}}),
            "parameters.mode: \"c\" is not one of [\"a\",\"b\"]");
  EXPECT_EQ(msg(json{{"name", "x"}, {"xs", {1, "2"}}}),
            "parameters.xs[1]: expected number, got string");
  EXPECT_EQ(msg(json{{"name", "x"}, {"xs", {1, 2, 3, 4}}}),
            "parameters.xs: allows at most 3 items, got 4");
  EXPECT_EQ(msg(json{{"name", "x"}, {"bogus", 1}}), "parameters: unknown field 'bogus'");
  EXPECT_EQ(msg(json{{"name", ""}}), "parameters.name: string shorter than 1 characters");
}

TEST(JsonSchemaTest, CheckSchemaRejectsUnsupportedKeywords) {
  EXPECT_FALSE(CheckSchema(json{{"type", "object"}, {"oneOf", json::array()}}).ok());
  EXPECT_FALSE(CheckSchema(json{{"type", "tuple"}}).ok());
  EXPECT_FALSE(CheckSchema(json{{"properties", {{"a", {{"type", "strin"}}}}}}).ok());
}

TEST(ParseToolCallTest, AcceptsFencedJsonWithSurroundingText) {
  auto call = ParseToolCall(
      "Sure.\n```json\n{\"tool_name\": \"calculate\", \"parameters\": {\"expression\": "
      "\"1+{2}\"}}\n```\nDone.");
  ASSERT_TRUE(call.ok()) << call.status().message();
  EXPECT_EQ(call->tool_name, "calculate");
  EXPECT_EQ(call->parameters["expression"], "1+{2}");
}

TEST(ParseToolCallTest, RejectsMalformedCalls) {
  auto err = [](std::string_view s) { return ParseToolCall(s).status().message(); };
  EXPECT_EQ(err("no json here"), "no JSON object found");
  EXPECT_EQ(err("{\"parameters\": {}}"), "tool call is missing 'tool_name'");
  EXPECT_EQ(err("{\"tool_name\": 3}"), "'tool_name' must be a non-empty string");
  EXPECT_EQ(err("{\"tool_name\": \"a\", \"parameters\": [1]}"),
            "'parameters' must be a JSON object");
  EXPECT_EQ(err("{\"tool_name\": \"a\", \"extra\": 1}"),
            "tool call has an unexpected field 'extra'");
  EXPECT_EQ(err("{\"tool_name\": \"a\", "), "unterminated JSON object");
  EXPECT_EQ(err("{\"tool_name\": 'a'}"), "tool call is not valid JSON");
  EXPECT_NE(err(std::string(100, '{')).find("nested deeper"), std::string::npos);
}

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterArithmeticTools(registry_).ok());
    ASSERT_TRUE(RegisterStatisticsTools(registry_).ok());
  }
  ToolRegistry registry_;
};

TEST_F(RegistryTest, RendersEveryToolWithSchemaAndExample) {
  const std::string list = registry_.RenderToolList();
  for (const ToolSpec* s : registry_.Specs()) {
    EXPECT_NE(list.find("- " + s->name + ": "), std::string::npos) << s->name;
  }
  EXPECT_NE(list.find("Example: {\"parameters\":{\"expression\":\"5^3 - 9*(5)^2 + 23*5 - 21\"},"
                      "\"tool_name\":\"calculate\"}"),
            std::string::npos)
      << list;
  EXPECT_EQ(registry_.size(), 13u);
}

TEST_F(RegistryTest, CallsReturnStatusAndOutput) {
  ToolResult r = registry_.CallFromText(
      R"({"tool_name": "calculate", "parameters": {"expression": "5^3 - 9*(5)^2 + 23*5 - 21"}})");
  ASSERT_TRUE(r.ok) << r.Render();
  EXPECT_EQ(r.ToJson(),
            json::parse(R"({"status":"success","output":{"value":"-6","decimal":"-6"}})"));

  r = registry_.Call({"calculate", json{{"expression", "1/0"}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.ToJson()["status"], "error");
  EXPECT_EQ(r.output, "division by zero");

  r = registry_.Call({"calculate", json{{"expr", "1"}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.output, "parameters: missing required field 'expression'");

  r = registry_.Call({"no_such_tool", json::object()});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.get<std::string>().find("unknown tool 'no_such_tool'; available: calculate"),
            std::string::npos);

  r = registry_.CallFromText("I think I should use the calculator");
  EXPECT_FALSE(r.ok);
}

TEST_F(RegistryTest, ArithmeticTools) {
  auto out = [&](const std::string& name, const json& p) {
    ToolResult r = registry_.Call({name, p});
    EXPECT_TRUE(r.ok) << name << ": " << r.Render();
    return r.output;
  };
  EXPECT_EQ(out("gcd", {{"numbers", {84, 36, 120}}})["value"], "12");
  EXPECT_EQ(out("lcm", {{"numbers", {4, 6}}})["value"], "12");
  EXPECT_EQ(out("factorial", {{"n", 20}})["value"], "2432902008176640000");
  EXPECT_EQ(out("combinations", {{"n", 52}, {"k", 5}})["value"], "2598960");
  EXPECT_EQ(out("permutations", {{"n", 10}, {"k", 3}})["value"], "720");
  EXPECT_EQ(out("prime_factorization", {{"n", 360}})["factors"],
            json::parse(R"([{"prime":2,"power":3},{"prime":3,"power":2},{"prime":5,"power":1}])"));
  EXPECT_EQ(out("prime_factorization", {{"n", 999999999989}})["factors"],
            json::parse(R"([{"prime":999999999989,"power":1}])"));
  EXPECT_EQ(out("percentage", {{"operation", "of"}, {"a", 15}, {"b", 80}})["value"], "12");
  EXPECT_EQ(out("percentage", {{"operation", "change"}, {"a", 80}, {"b", 100}})["value"], "25");
  EXPECT_EQ(out("percentage", {{"operation", "ratio"}, {"a", 1}, {"b", 3}})["decimal"],
            "33.3333333333333");
  EXPECT_FALSE(registry_.Call({"prime_factorization", {{"n", 1}}}).ok);
  EXPECT_FALSE(registry_.Call({"factorial", {{"n", -1}}}).ok);
}

TEST(ToolResultTest, RenderCapsLength) {
  ToolResult r = ToolResult::Success(std::string(10000, 'a'));
  const std::string s = r.Render(100);
  EXPECT_EQ(s.size(), 100u + std::string("... [truncated]").size());
  EXPECT_EQ(s.rfind("... [truncated]"), 100u);
}

// The tiny world's models read bare tool outputs ("Tool output: 313236", a page's text); the
// JSON envelope they never saw made CoTool's reading fail at every calculator call.
TEST_F(RegistryTest, RenderTextShowsTheBareValue) {
  ToolResult product = registry_.Call({"calculate", {{"expression", "693 * 452"}}});
  ASSERT_TRUE(product.ok) << product.Render();
  EXPECT_EQ(product.RenderText(), "313236");
  EXPECT_NE(product.Render().find("\"status\""), std::string::npos);  // json stays the default
  EXPECT_EQ(ToolResult::Success(json{{"id", "p1"}, {"title", "Dawick"}, {"text", "Dawick is old."}})
                .RenderText(),
            "Dawick is old.");
  EXPECT_EQ(ToolResult::Success("plain").RenderText(), "plain");
  EXPECT_EQ(ToolResult::Success(json::array({1, 2})).RenderText(), "[1,2]");
  EXPECT_EQ(ToolResult::Error("division by zero").RenderText(), "error: division by zero");
  EXPECT_EQ(ToolResult::Success(std::string(500, 'a')).RenderText(100).rfind("... [truncated]"),
            100u);
}

TEST(ToolRegistryTest, RejectsDuplicatesAndBadSchemas) {
  ToolRegistry r;
  auto make = [](const std::string& name, json schema, std::vector<json> examples = {}) {
    return std::make_unique<FunctionTool>(
        ToolSpec{name, "test", "d", std::move(schema), std::move(examples)},
        [](const json&) -> Result<json> { return json(1); });
  };
  EXPECT_TRUE(r.Register(make("a", {{"type", "object"}})).ok());
  EXPECT_EQ(r.Register(make("a", {{"type", "object"}})).code(), StatusCode::kAlreadyExists);
  EXPECT_FALSE(r.Register(make("b", {{"type", "object"}, {"$ref", "#"}})).ok());
  // An example that violates its own schema is a registration error.
  EXPECT_FALSE(
      r.Register(make("c", {{"type", "object"}, {"required", {"x"}}}, {json::object()})).ok());
}

TEST(ToolRegistryTest, ExceptionsInToolsBecomeErrors) {
  ToolRegistry r;
  ASSERT_TRUE(r.Register(std::make_unique<FunctionTool>(
                             ToolSpec{"boom", "test", "throws", {{"type", "object"}}, {}},
                             [](const json&) -> Result<json> { throw std::runtime_error("bang"); }))
                  .ok());
  ToolResult res = r.Call({"boom", json::object()});
  EXPECT_FALSE(res.ok);
  EXPECT_EQ(res.output, "boom failed: bang");
}

}  // namespace
}  // namespace allot::tools
