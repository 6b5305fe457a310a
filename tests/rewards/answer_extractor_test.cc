#include "rewards/answer_extractor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "rewards/final_sentence.h"

namespace allot::rewards {
namespace {

std::string Boxed(std::string_view text) {
  ExtractedAnswer a = ExtractAnswer(text, AnswerFormat::kBoxed);
  return a.found ? a.text : "<none>";
}
std::string Choice(std::string_view text, char max = 'E') {
  ExtractedAnswer a = ExtractAnswer(text, AnswerFormat::kChoice, {.max_choice = max});
  return a.found ? a.text : "<none>";
}
std::string YesNo(std::string_view text) {
  ExtractedAnswer a = ExtractAnswer(text, AnswerFormat::kYesNo);
  return a.found ? a.text : "<none>";
}
std::string Number(std::string_view text, bool fallback = false) {
  ExtractedAnswer a =
      ExtractAnswer(text, AnswerFormat::kNumber, {.last_number_fallback = fallback});
  return a.found ? a.text : "<none>";
}

TEST(AnswerExtractorTest, LastBoxedWithNestedBraces) {
  EXPECT_EQ(Boxed("first \\boxed{1} then \\boxed{\\frac{1}{2}}"), "\\frac{1}{2}");
  EXPECT_EQ(Boxed("\\boxed{\\left\\{ 1, 2 \\right\\}}"), "\\left\\{ 1, 2 \\right\\}");
  EXPECT_EQ(Boxed("$\\boxed{x^{2}+\\sqrt{y}}$."), "x^{2}+\\sqrt{y}");
  EXPECT_EQ(Boxed("\\fbox{7}"), "7");
}

TEST(AnswerExtractorTest, BoxedWithoutBraces) {
  EXPECT_EQ(Boxed("so $\\boxed 5$"), "5");
  EXPECT_EQ(Boxed("\\boxed 42 is it"), "42");
}

TEST(AnswerExtractorTest, UnclosedLastBoxedFallsBackToEarlierOne) {
  EXPECT_EQ(Boxed("\\boxed{3} and later \\boxed{4"), "3");
  EXPECT_EQ(Boxed("\\boxed{"), "<none>");
  EXPECT_EQ(Boxed("\\boxed{}"), "<none>");
  EXPECT_EQ(Boxed("\\boxedx"), "<none>");
}

TEST(AnswerExtractorTest, AnswerIsPhrase) {
  EXPECT_EQ(Boxed("Thus the answer is 42."), "42");
  EXPECT_EQ(Boxed("The final answer is $3.5$. Done"), "3.5");
  EXPECT_EQ(Boxed("**Answer:** 17"), "17");
  EXPECT_FALSE(ExtractAnswerIs("answers vary").found);
  EXPECT_EQ(Boxed("The answer is 1. Wait, the answer is 2."), "2");
  // The last marker wins even inside the sentence of an earlier one (Minerva's format).
  EXPECT_EQ(Boxed("Final Answer: The final answer is $\\frac{3}{4}$. I hope it is correct."),
            "\\frac{3}{4}");
  EXPECT_EQ(Boxed("The answer is 7.\nanswer:"), "7");
}

TEST(AnswerExtractorTest, Gsm8kMarker) {
  EXPECT_EQ(Number("She pays 3*6=18 dollars.\n#### 18"), "18");
  EXPECT_EQ(Number("#### 1,234\n"), "1234");
  EXPECT_EQ(Number("#### $-5"), "-5");
  EXPECT_EQ(Boxed("#### 72"), "72");
}

TEST(AnswerExtractorTest, NumberFormatPrefersMarkersAndNeverGuesses) {
  EXPECT_EQ(Number("I think 3, then 4. The answer is 12 apples."), "12");
  EXPECT_EQ(Number("\\boxed{\\frac{1}{2}}"), "\\frac{1}{2}");
  EXPECT_EQ(Number("I computed 3 and 4 and got 7"), "<none>");
  EXPECT_EQ(Number("I computed 3 and 4 and got 7", /*fallback=*/true), "7");
  EXPECT_EQ(Number("no digits at all", true), "<none>");
}

TEST(AnswerExtractorTest, DirectAnswersWithoutMarkers) {
  EXPECT_EQ(Boxed("  $\\frac{1}{2}$. "), "\\frac{1}{2}");
  EXPECT_EQ(Boxed("Paris"), "Paris");
  EXPECT_EQ(Boxed("line one\nline two"), "<none>");
  EXPECT_EQ(Boxed(std::string(100, 'x')), "<none>");
  EXPECT_EQ(Number("1,000."), "1000");
  EXPECT_EQ(Number("-3.5"), "-3.5");
  EXPECT_EQ(Number("3 or 4"), "<none>");
}

TEST(AnswerExtractorTest, ChoiceForms) {
  EXPECT_EQ(Choice("The answer is (B)."), "B");
  EXPECT_EQ(Choice("The answer is B"), "B");
  EXPECT_EQ(Choice("answer: C"), "C");
  EXPECT_EQ(Choice("Answer: option D"), "D");
  EXPECT_EQ(Choice("B)"), "B");
  EXPECT_EQ(Choice("(E)"), "E");
  EXPECT_EQ(Choice("A"), "A");
  EXPECT_EQ(Choice("so \\boxed{C}"), "C");
  EXPECT_EQ(Choice("Options (A) and (C) fail, so it must be (D) here"), "D");
  EXPECT_EQ(Choice("I pick\nB) because"), "B");
}

TEST(AnswerExtractorTest, ChoiceRespectsLetterRangeAndRefusesToGuess) {
  EXPECT_EQ(Choice("The answer is (E)", 'D'), "<none>");
  EXPECT_EQ(Choice("A patient presents with fever."), "<none>");
  EXPECT_EQ(Choice("Because it is obvious"), "<none>");
  EXPECT_EQ(Choice("The answer is Because"), "<none>");
  EXPECT_EQ(Choice(""), "<none>");
}

TEST(AnswerExtractorTest, YesNo) {
  EXPECT_EQ(YesNo("Yes, because birds fly."), "yes");
  EXPECT_EQ(YesNo("After thinking, the answer is no."), "no");
  EXPECT_EQ(YesNo("\\boxed{\\text{Yes}}"), "yes");
  EXPECT_EQ(YesNo("It depends.\nSo: true"), "yes");
  EXPECT_EQ(YesNo("Considering everything\nFalse."), "no");
  EXPECT_EQ(YesNo("maybe yes maybe no"), "<none>");
  EXPECT_EQ(YesNo("I cannot tell"), "<none>");
}

std::string Final(std::string_view text) {
  ExtractedAnswer a = ExtractFinalSentence(text);
  return a.found ? a.text : "<none>";
}

TEST(AnswerExtractorTest, FinalSentenceOfProse) {
  EXPECT_EQ(Final("3 + 4 = 7.\nSo she has 14 apples in total."), "14");
  EXPECT_EQ(Final("We simplify. The probability is $\\frac{1}{6}$."), "\\frac{1}{6}");
  EXPECT_EQ(Final("Therefore $(x, y) = (3, 2)$."), "(3, 2)");
  EXPECT_EQ(Final("Adding, 40 + 30 = 70."), "70");
  EXPECT_EQ(Final("Each costs $2.\nThe total cost is $\\$12$."), "\\$12");
  EXPECT_EQ(Final("Work.\n\\[\n\\frac{1}{2}\n\\]"), "\\frac{1}{2}");
  EXPECT_EQ(Final("Work.\n42"), "42");
  // No single stated result: no answer, never a guess or a product of the words.
  EXPECT_EQ(Final("So she has 5 apples and 3 pears."), "<none>");
  EXPECT_EQ(Final("The roots are $2$ and $3$."), "<none>");
  EXPECT_EQ(Final("I am not sure about 18."), "<none>");
  EXPECT_EQ(Final("I am not sure about $18$."), "<none>");
  EXPECT_EQ(Final("It is 14.\nLet me double-check the second step."), "<none>");
  EXPECT_EQ(Final("Each pen costs $2 and she buys 6 pens."), "<none>");
  // A short line that is not prose stays whole under the boxed format.
  EXPECT_EQ(Boxed("x = 3"), "x = 3");
  EXPECT_EQ(Boxed("She counted them again, so it is 14."), "14");
  // Two statements, or a qualified one: no answer.
  EXPECT_EQ(Final("So x is 3 and y is 2."), "<none>");
  EXPECT_EQ(Final("The total is at least 14."), "<none>");
  EXPECT_EQ(Final("So the answer cannot be 14."), "<none>");
  EXPECT_EQ(Final("The total is 3 + 4 = 7."), "7");
}

TEST(AnswerExtractorTest, AllBoxesInOrder) {
  EXPECT_EQ(ExtractAllBoxed("$x = \\boxed{3}$, $y = \\boxed{2}$, \\boxed{}", 8),
            (std::vector<std::string>{"3", "2"}));
  EXPECT_EQ(ExtractAllBoxed("\\boxed{1} \\boxed{2} \\boxed{3}", 2),
            (std::vector<std::string>{"2", "3"}));
  EXPECT_TRUE(ExtractAllBoxed("no boxes", 8).empty());
}

TEST(AnswerExtractorTest, AnswerIsDropsLeadIn) {
  EXPECT_EQ(Boxed("Thus the answer is therefore 12."), "12");
  EXPECT_EQ(Boxed("The answer is, simply, $x = 2$."), "x = 2");
  EXPECT_EQ(Choice("The answer is clearly $\\textbf{(B)}$."), "B");
}

TEST(AnswerExtractorTest, FormatNames) {
  EXPECT_EQ(*ParseAnswerFormat("choice"), AnswerFormat::kChoice);
  EXPECT_FALSE(ParseAnswerFormat("letters").ok());
  EXPECT_STREQ(AnswerFormatName(AnswerFormat::kYesNo), "yesno");
}

// Hostile inputs: megabytes of unclosed braces and repeated markers. The extractor is linear;
// the clock check is a hang guard with a wide margin, not a performance assertion.
TEST(AnswerExtractorTest, HostileInputsStayLinear) {
  std::string many_boxed;
  for (int i = 0; i < 100000; ++i) many_boxed += "\\boxed{";
  std::string deep(1 << 20, '{');
  std::string answers, dollars, prose;
  for (int i = 0; i < 60000; ++i) answers += "answer is answer: ";
  for (int i = 0; i < 100000; ++i) {
    dollars += "$a \\( ";
    prose += "so it is 1 and ";
  }
  auto start = std::chrono::steady_clock::now();
  for (const std::string* s : {&many_boxed, &deep, &answers, &dollars, &prose}) {
    for (AnswerFormat f : {AnswerFormat::kBoxed, AnswerFormat::kNumber, AnswerFormat::kChoice,
                           AnswerFormat::kYesNo}) {
      ExtractedAnswer a = ExtractAnswer(*s, f, {.last_number_fallback = true});
      EXPECT_LE(a.text.size(), s->size());
    }
  }
  EXPECT_FALSE(ExtractAnswer(many_boxed, AnswerFormat::kBoxed).found);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

}  // namespace
}  // namespace allot::rewards
