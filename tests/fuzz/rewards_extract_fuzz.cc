// Fuzzes answer extraction and grading: any response, in any format, must extract or report
// "no answer" without crashing or hanging, and grading (normalisation, LaTeX parsing, GiNaC)
// must return a verdict for any pair of texts. Input: the response, a tab, the reference.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "rewards/answer_extractor.h"
#include "rewards/grader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot::rewards;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t tab = input.find('\t');
  std::string_view response = input.substr(0, tab);
  std::string_view reference = tab == std::string_view::npos ? "" : input.substr(tab + 1);
  for (AnswerFormat f :
       {AnswerFormat::kBoxed, AnswerFormat::kNumber, AnswerFormat::kChoice, AnswerFormat::kYesNo}) {
    for (bool fallback : {false, true}) {
      ExtractedAnswer a =
          ExtractAnswer(response, f, {.max_choice = 'E', .last_number_fallback = fallback});
      if (a.found == a.text.empty()) std::abort();        // found iff there is text
      if (a.text.size() > response.size()) std::abort();  // a span of the input
      if (!a.found && a.method != "none") std::abort();
      if (f == AnswerFormat::kChoice && a.found &&
          (a.text.size() != 1 || a.text[0] < 'A' || a.text[0] > 'E')) {
        std::abort();
      }
      if (f == AnswerFormat::kYesNo && a.found && a.text != "yes" && a.text != "no") std::abort();
    }
    GradeResult g = Grade(response, reference, f);
    if (g.correct && (!g.pred.found || !g.gold.found)) std::abort();
  }
  // Equivalence is reflexive for anything that extracts.
  ExtractedAnswer boxed = ExtractAnswer(response, AnswerFormat::kBoxed);
  if (boxed.found && !AnswersEquivalent(boxed.text, boxed.text).equivalent &&
      boxed.text.size() <= 8192) {
    std::abort();
  }
  return 0;
}
