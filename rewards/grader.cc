#include "rewards/grader.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace allot::rewards {
namespace {

ExtractedAnswer ReferenceAnswer(std::string_view reference, AnswerFormat format,
                                const ExtractOptions& options) {
  ExtractedAnswer a;
  switch (format) {
    case AnswerFormat::kBoxed:
    case AnswerFormat::kNumber:
      // A bare reference must not be cut down to its first number ("1/2 + x").
      a = ExtractLastBoxed(reference);
      if (!a.found) a = ExtractGsm8k(reference);
      break;
    case AnswerFormat::kText:
      a = ExtractLastBoxed(reference);
      break;
    case AnswerFormat::kChoice:
      a = ExtractChoice(reference, options.max_choice);
      break;
    case AnswerFormat::kYesNo:
      a = ExtractYesNo(reference);
      break;
  }
  if (a.found) return a;
  std::string_view t = reference;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  a.text = std::string(t);
  a.found = !a.text.empty();
  a.method = a.found ? "whole" : "none";
  return a;
}

// SQuAD's answer normalization: lower case, ASCII punctuation and the articles a/an/the dropped,
// whitespace collapsed. "The Eiffel Tower." and "eiffel  tower" compare equal.
std::string NormalizeFreeText(std::string_view s) {
  std::string words;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    words += std::ispunct(u) ? ' ' : static_cast<char>(std::tolower(u));
  }
  std::string out;
  size_t i = 0;
  while (i < words.size()) {
    while (i < words.size() && std::isspace(static_cast<unsigned char>(words[i]))) ++i;
    size_t j = i;
    while (j < words.size() && !std::isspace(static_cast<unsigned char>(words[j]))) ++j;
    const std::string_view w(words.data() + i, j - i);
    if (!w.empty() && w != "a" && w != "an" && w != "the") {
      if (!out.empty()) out += ' ';
      out.append(w);
    }
    i = j;
  }
  return out;
}

// The letter of a multiple-choice reference ("B", "(B)", "\text{(B)}"), or 0.
char ChoiceLetter(std::string_view gold) {
  const std::string n = NormalizeAnswer(gold).text;
  return n.size() == 1 && n[0] >= 'A' && n[0] <= 'Z' ? n[0] : 0;
}

// Whether `s` has a comma outside brackets: "12,000" or "1, 2" is not one part of a tuple.
bool HasTopLevelComma(std::string_view s) {
  int depth = 0;
  for (char c : s) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) return true;
  }
  return false;
}

// Answers boxed one part at a time ("$x = \boxed{3}$ and $y = \boxed{2}$") against a tuple,
// set or list: the last n boxes, as the tuple "(b1, ..., bn)" or the list "b1, ..., bn" (which
// is ordered against a tuple and unordered against a set). Only a reference of n parts can
// match, so trying each n finds no more than the reference's own.
constexpr size_t kMaxBoxedParts = 8;

bool BoxedPartsMatch(std::string_view response, const std::string& gold,
                     const EquivalenceOptions& options, std::string* joined_out) {
  const std::vector<std::string> boxes = ExtractAllBoxed(response, kMaxBoxedParts);
  for (const std::string& b : boxes) {
    if (HasTopLevelComma(b)) return false;
  }
  for (size_t n = 2; n <= boxes.size(); ++n) {
    std::string joined;
    for (size_t k = boxes.size() - n; k < boxes.size(); ++k) {
      if (!joined.empty()) joined += ", ";
      joined += boxes[k];
    }
    for (const std::string& candidate : {"(" + joined + ")", joined}) {
      if (AnswersEquivalent(candidate, gold, options).equivalent) {
        *joined_out = candidate;
        return true;
      }
    }
  }
  return false;
}

std::string Quote(std::string_view s, size_t max = 200) {
  std::string out = "\"";
  out.append(s.substr(0, max));
  if (s.size() > max) out += "...";
  return out + "\"";
}

}  // namespace

GradeResult Grade(std::string_view response, std::string_view reference, AnswerFormat format,
                  const GradeOptions& options) {
  GradeResult r;
  r.gold = ReferenceAnswer(reference, format, options.extract);
  if (!r.gold.found) {
    r.reason = "empty reference";
    return r;
  }
  // A multiple-choice reference under the boxed format: the letter is read as the choice
  // format reads it ("B)", "\textbf{(B)}", "The answer is B").
  if (const char letter = format == AnswerFormat::kBoxed ? ChoiceLetter(r.gold.text) : 0) {
    const ExtractedAnswer c = ExtractChoice(response, std::max(options.extract.max_choice, letter));
    if (c.found) {
      r.pred = c;
      r.correct = c.text[0] == letter;
      r.reason = r.correct ? "choice" : "different";
      return r;
    }
  }
  r.pred = ExtractAnswer(response, format, options.extract);
  if (!r.pred.found) {
    r.reason = "no answer extracted";
    return r;
  }
  switch (format) {
    case AnswerFormat::kChoice:
    case AnswerFormat::kYesNo:
      r.correct = r.pred.text == r.gold.text;
      r.reason = r.correct ? "exact" : "different";
      return r;
    case AnswerFormat::kBoxed:
    case AnswerFormat::kNumber: {
      EquivalenceResult e = AnswersEquivalent(r.pred.text, r.gold.text, options.equivalence);
      r.correct = e.equivalent;
      r.reason = e.reason;
      std::string joined;
      if (!r.correct && r.pred.method == "boxed" &&
          BoxedPartsMatch(response, r.gold.text, options.equivalence, &joined)) {
        r.correct = true;
        r.reason = "boxed parts";
        r.pred.text = joined;
        r.pred.method = "boxes";
      }
      return r;
    }
    case AnswerFormat::kText:
      if (r.pred.text == r.gold.text) {
        r.correct = true;
        r.reason = "exact";
      } else {
        r.correct = NormalizeFreeText(r.pred.text) == NormalizeFreeText(r.gold.text);
        r.reason = r.correct ? "normalized text" : "different";
      }
      return r;
  }
  return r;
}

int RunGrade(std::string_view pred, std::string_view gold, std::string_view format_name,
             std::ostream& out, const GradeOptions& options) {
  Result<AnswerFormat> format = ParseAnswerFormat(format_name);
  if (!format.ok()) {
    out << "error: --format: " << format.status().message() << "\n";
    return 2;
  }
  GradeResult r = Grade(pred, gold, *format, options);
  out << "format:     " << AnswerFormatName(*format) << "\n";
  out << "pred:       "
      << (r.pred.found ? Quote(r.pred.text) + " (" + r.pred.method + ")" : "no answer") << "\n";
  out << "gold:       "
      << (r.gold.found ? Quote(r.gold.text) + " (" + r.gold.method + ")" : "no answer") << "\n";
  if (r.pred.found && r.gold.found &&
      (*format == AnswerFormat::kBoxed || *format == AnswerFormat::kNumber)) {
    NormalizedAnswer np = NormalizeAnswer(r.pred.text), ng = NormalizeAnswer(r.gold.text);
    out << "normalized: pred " << Quote(np.text) << (np.percent ? " (percent)" : "") << ", gold "
        << Quote(ng.text) << (ng.percent ? " (percent)" : "") << "\n";
    Result<std::string> mp = CanonicalMath(np.text, options.equivalence.math.limits);
    Result<std::string> mg = CanonicalMath(ng.text, options.equivalence.math.limits);
    out << "maths:      pred " << (mp.ok() ? *mp : "(" + mp.status().message() + ")") << ", gold "
        << (mg.ok() ? *mg : "(" + mg.status().message() + ")") << "\n";
  }
  out << "verdict:    " << (r.correct ? "correct" : "incorrect") << " (" << r.reason << ")\n";
  return r.correct ? 0 : 1;
}

}  // namespace allot::rewards
