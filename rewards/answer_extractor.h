// Answer extraction: finds the final answer in a model's free-text response.
//
// The extractor scans the text by hand (no std::regex: it backtracks and can overflow the stack
// on long inputs), so it runs in linear time and is safe on any input, including megabytes of
// hostile LaTeX. When nothing can be extracted the result is "no answer" (found == false);
// the extractor never guesses.
//
// What each format accepts, in priority order (the first that matches wins):
//   kBoxed   the last well-formed \boxed{...} (nested braces) or \fbox{...}, or `\boxed x`;
//            then GSM8K's `#### n`; then the last "the answer is ..." / "answer: ..." (less
//            lead-in words: "the answer is therefore 12"); then, for prose (several lines, or
//            sentences), its final answer (ExtractFinalSentence, final_sentence.h); then a response
//            that is a single line of at most 64 characters, whole (a direct answer).
//   kNumber  GSM8K's `#### n`; then \boxed; then "the answer is ..."; each reduced to the first
//            number in it; then a response that is nothing but a number. The last bare number
//            in the text only with ExtractOptions::last_number_fallback (off by default: it is
//            a guess).
//   kChoice  a letter A..max_choice in "answer is (B)", "answer: B", "\boxed{B}", a response
//            that is just the letter ("B", "(B).", "B)"), then the last "(B)" or "B)".
//   kYesNo   "answer is yes", \boxed{no}, a response that starts with yes/no, then the only one
//            of yes/no/true/false that occurs as a word. Both occurring is "no answer".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot::rewards {

// kText: a short free-form answer (a name, a word), compared after SQuAD-style normalization.
enum class AnswerFormat { kBoxed, kNumber, kChoice, kYesNo, kText };

// "boxed" | "number" | "choice" | "yesno" | "text".
Result<AnswerFormat> ParseAnswerFormat(std::string_view name);
const char* AnswerFormatName(AnswerFormat format);

struct ExtractOptions {
  char max_choice = 'E';              // the last valid multiple-choice letter (D for MedQA)
  bool last_number_fallback = false;  // kNumber: take the last number when nothing else matched
};

struct ExtractedAnswer {
  bool found = false;
  std::string text;    // the answer span, trimmed; empty when !found
  std::string method;  // how it was found ("boxed", "gsm8k", "answer_is", ...), or "none"
};

ExtractedAnswer ExtractAnswer(std::string_view response, AnswerFormat format,
                              const ExtractOptions& options = {});

// The individual strategies, exposed for tests and for environments that know the format.
// Each returns found == false when its pattern is absent.
ExtractedAnswer ExtractLastBoxed(std::string_view text);
// The contents of the last `max_boxes` boxes, in order (answers boxed one part at a time).
std::vector<std::string> ExtractAllBoxed(std::string_view text, size_t max_boxes);
ExtractedAnswer ExtractGsm8k(std::string_view text);     // after the last "####"
ExtractedAnswer ExtractAnswerIs(std::string_view text);  // "the answer is X" / "answer: X"
ExtractedAnswer ExtractChoice(std::string_view text, char max_choice = 'E');
ExtractedAnswer ExtractYesNo(std::string_view text);
// The first number ("-1,234.5", "3/4", ".5") in `text`, or found == false.
ExtractedAnswer FirstNumber(std::string_view text);
ExtractedAnswer LastNumber(std::string_view text);

}  // namespace allot::rewards
