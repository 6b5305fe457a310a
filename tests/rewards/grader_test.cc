#include "rewards/grader.h"

#include <gtest/gtest.h>

#include <sstream>

namespace allot::rewards {
namespace {

TEST(GraderTest, ExtractsBothSidesAndCompares) {
  GradeResult r = Grade("So the result is \\boxed{\\frac12}.", "0.5", AnswerFormat::kBoxed);
  EXPECT_TRUE(r.correct) << r.reason;
  EXPECT_EQ(r.pred.text, "\\frac12");
  EXPECT_EQ(r.gold.method, "whole");
}

TEST(GraderTest, Gsm8kReferenceSolution) {
  GradeResult r =
      Grade("... so she pays $18.\n#### 18", "3 * 6 = 18\n#### 18", AnswerFormat::kNumber);
  EXPECT_TRUE(r.correct);
  EXPECT_EQ(r.gold.method, "gsm8k");
  EXPECT_FALSE(Grade("#### 17", "#### 18", AnswerFormat::kNumber).correct);
}

TEST(GraderTest, NoAnswerIsIncorrectNotAGuess) {
  GradeResult r = Grade("I am not sure about 18", "18", AnswerFormat::kNumber);
  EXPECT_FALSE(r.correct);
  EXPECT_EQ(r.reason, "no answer extracted");
  EXPECT_FALSE(r.pred.found);
}

TEST(GraderTest, ChoiceAndYesNo) {
  EXPECT_TRUE(Grade("The answer is (C)", "C", AnswerFormat::kChoice).correct);
  EXPECT_TRUE(Grade("answer: C", "(C)", AnswerFormat::kChoice).correct);
  EXPECT_FALSE(Grade("The answer is (B)", "C", AnswerFormat::kChoice).correct);
  EXPECT_TRUE(Grade("No, it cannot.", "no", AnswerFormat::kYesNo).correct);
  EXPECT_TRUE(Grade("The answer is true", "yes", AnswerFormat::kYesNo).correct);
  EXPECT_FALSE(Grade("Yes", "False", AnswerFormat::kYesNo).correct);
}

TEST(GraderTest, RunGradePrintsTheReport) {
  std::ostringstream out;
  int rc = RunGrade("\\boxed{10\\%}", "0.1", "boxed", out);
  EXPECT_EQ(rc, 0) << out.str();
  EXPECT_NE(out.str().find("pred:       \"10\\%\" (boxed)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("(percent)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("verdict:    correct (percent)"), std::string::npos) << out.str();

  std::ostringstream wrong;
  EXPECT_EQ(RunGrade("The answer is (A)", "B", "choice", wrong), 1);
  EXPECT_NE(wrong.str().find("verdict:    incorrect"), std::string::npos);

  std::ostringstream bad;
  EXPECT_EQ(RunGrade("x", "y", "letters", bad), 2);
  EXPECT_NE(bad.str().find("--format"), std::string::npos);
}

// `allot grade --format text` was in the help but rejected with exit code 2.
TEST(GraderTest, TextFormatComparesNormalizedFreeText) {
  std::ostringstream out;
  EXPECT_EQ(RunGrade("The answer is The Eiffel Tower.", "eiffel  tower", "text", out), 0)
      << out.str();
  EXPECT_NE(out.str().find("format:     text"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("verdict:    correct (normalized text)"), std::string::npos)
      << out.str();
  std::ostringstream wrong;
  EXPECT_EQ(RunGrade("The answer is Big Ben", "Eiffel Tower", "text", wrong), 1) << wrong.str();
  EXPECT_TRUE(Grade("\\boxed{Marie Curie}", "marie curie", AnswerFormat::kText).correct);
  EXPECT_TRUE(Grade("Paris", "Paris", AnswerFormat::kText).correct);
  EXPECT_FALSE(Grade("Paris, Texas", "Paris", AnswerFormat::kText).correct);
  EXPECT_EQ(ParseAnswerFormat("text").value(), AnswerFormat::kText);
}

}  // namespace
}  // namespace allot::rewards
