#include "rewards/grader.h"

#include <cctype>

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
  r.pred = ExtractAnswer(response, format, options.extract);
  r.gold = ReferenceAnswer(reference, format, options.extract);
  if (!r.gold.found) {
    r.reason = "empty reference";
    return r;
  }
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
