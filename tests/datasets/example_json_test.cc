#include "datasets/example_json.h"

#include <gtest/gtest.h>

namespace allot::datasets {
namespace {

Example Parse(const std::string& text) {
  Result<Example> e = ExampleFromJson(text);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : Example{};
}

std::string Error(const std::string& text, const std::string& where = "dataset_item") {
  Result<Example> e = ExampleFromJson(text, where);
  EXPECT_FALSE(e.ok()) << text;
  return e.ok() ? "" : e.status().message();
}

TEST(ExampleFromJsonTest, ReadsTheCanonicalFields) {
  Example e = Parse(
      R"({"id": 7, "question": "Q?", "answer": "B", "options": ["x", "y"],
          "answer_format": "choice", "solution": "because"})");
  EXPECT_EQ(e.id, "7");
  EXPECT_EQ(e.question, "Q?");
  EXPECT_EQ(e.answer, "B");
  EXPECT_EQ(e.solution, "because");
  EXPECT_EQ(e.answer_format, "choice");
  EXPECT_EQ(e.PromptText(), "Q?\n\nA) x\nB) y");
}

// RLoT's and ATLAS's parsers took problem/prompt and reference/solution; CogER's, R2's and
// DeepTool's took problem alone: every env now takes them all, in one order.
TEST(ExampleFromJsonTest, AcceptsEachQuestionAndAnswerName) {
  EXPECT_EQ(Parse(R"({"problem": "P", "answer": "1"})").question, "P");
  EXPECT_EQ(Parse(R"({"prompt": "P", "answer": "1"})").question, "P");
  EXPECT_EQ(Parse(R"({"question": "Q", "problem": "P", "answer": "1"})").question, "Q");
  EXPECT_EQ(Parse(R"({"question": "Q", "reference": "r"})").answer, "r");
  EXPECT_EQ(Parse(R"({"question": "Q", "solution": "s"})").answer, "s");
  EXPECT_EQ(Parse(R"({"question": "Q", "answer": "a", "reference": "r"})").answer, "a");
  EXPECT_EQ(Parse(R"({"question": "Q", "answer": 72})").answer, "72");
  EXPECT_EQ(Parse(R"({"question": "Q", "answer": 2.5})").answer, "2.5");
}

// RLoT's parser let an item without an answer through and graded it against "".
TEST(ExampleFromJsonTest, RejectsAMissingAnswerNamingTheField) {
  const std::string m = Error(R"({"question": "Q"})");
  EXPECT_NE(m.find("dataset_item: field 'answer'"), std::string::npos) << m;
  EXPECT_NE(m.find("'reference'"), std::string::npos) << m;
  EXPECT_NE(Error(R"({"question": "Q", "answer": ""})").find("field 'answer'"), std::string::npos);
  EXPECT_NE(Error(R"({"answer": "1"})").find("field 'question'"), std::string::npos);
  EXPECT_NE(Error(R"({"question": ["Q"], "answer": "1"})").find("field 'question'"),
            std::string::npos);
}

TEST(ExampleFromJsonTest, ErrorsNameTheItemsFileAndLine) {
  const std::string m = Error(R"({"source": "data/train.jsonl:12", "question": "Q"})");
  EXPECT_EQ(m.rfind("data/train.jsonl:12: field 'answer'", 0), 0u) << m;
  EXPECT_EQ(Error("[1]", "x.jsonl:3").rfind("x.jsonl:3: not a JSON object", 0), 0u);
  EXPECT_EQ(Error("{", "x.jsonl:3").rfind("x.jsonl:3: ", 0), 0u);
}

TEST(ExampleFromJsonTest, OptionsMustBeStrings) {
  const std::string m = Error(R"({"question": "Q", "answer": "A", "options": ["x", 2]})");
  EXPECT_NE(m.find("field 'options': option 1"), std::string::npos) << m;
  EXPECT_NE(Error(R"({"question": "Q", "answer": "A", "options": "x"})").find("field 'options'"),
            std::string::npos);
}

// RLoT read `format`, CogER/R2/DeepTool `answer_format`, ATLAS both: both names, which must agree.
TEST(ExampleFromJsonTest, AnswerFormatUnderEitherName) {
  EXPECT_EQ(Parse(R"({"question": "Q", "answer": "1", "format": "number"})").answer_format,
            "number");
  EXPECT_EQ(Parse(R"({"question": "Q", "answer": "1", "answer_format": "number",
                      "format": "number"})")
                .answer_format,
            "number");
  EXPECT_EQ(Parse(R"({"question": "Q", "answer": "1"})").answer_format, "text");
  std::string m =
      Error(R"({"question": "Q", "answer": "1", "answer_format": "number", "format": "boxed"})");
  EXPECT_NE(m.find("field 'format': 'boxed' disagrees with answer_format 'number'"),
            std::string::npos)
      << m;
  m = Error(R"({"question": "Q", "answer": "1", "answer_format": "latex"})");
  EXPECT_NE(m.find("field 'answer_format': expected one of"), std::string::npos) << m;
}

// CogER and DeepTool read answer_format "text" as "none named"; R2, RLoT and ATLAS graded text
// against their own answer_format. The loader writes "text" for every dataset that names no
// format, so "text" is the env's format.
TEST(ExampleFromJsonTest, GradingFormatReadsTextAsTheEnvsOwn) {
  Example e;
  e.answer_format = "text";
  EXPECT_EQ(GradingFormat(e, "boxed"), "boxed");
  e.answer_format = "number";
  EXPECT_EQ(GradingFormat(e, "boxed"), "number");
}

TEST(ExampleFromJsonTest, OtherKeysLandInExtraTopLevelFirst) {
  Example e = Parse(
      R"({"question": "Q", "answer": "1", "min_level": 2,
          "extra": {"min_level": 3, "subject": "algebra"}})");
  EXPECT_EQ(e.extra["min_level"], 2);
  EXPECT_EQ(e.extra["subject"], "algebra");
  EXPECT_FALSE(e.extra.contains("question"));
  EXPECT_NE(Error(R"({"question": "Q", "answer": "1", "extra": [1]})").find("field 'extra'"),
            std::string::npos);
}

TEST(ExampleFromJsonTest, IdDefaultsToTheSource) {
  EXPECT_EQ(Parse(R"({"question": "Q", "answer": "1", "source": "f.jsonl:4"})").id, "f.jsonl:4");
  EXPECT_EQ(Parse(R"({"question": "Q", "answer": "1", "id": "q9"})").id, "q9");
}

}  // namespace
}  // namespace allot::datasets
