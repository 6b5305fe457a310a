// The final answer of prose without a marker (answer_extractor.h's kBoxed, after the box, GSM8K's
// "####" and "the answer is").
#include "rewards/final_sentence.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "rewards/text_util.h"

namespace allot::rewards {
namespace {

using text::IsAlnum;
using text::IsAlpha;
using text::IsDigit;
using text::IsSpace;
using text::Lower;
using text::NumberLength;
using text::NumberStartsAt;
using text::StartsWithIgnoreCase;
using text::Trim;
using text::WithoutCommas;

ExtractedAnswer Found(std::string_view text, const char* method) {
  ExtractedAnswer a;
  a.text = std::string(Trim(text));
  a.found = !a.text.empty();
  a.method = a.found ? method : "none";
  return a;
}

ExtractedAnswer NotFound() { return ExtractedAnswer{false, "", "none"}; }

// Inline maths in `s`: \(...\), \[...\], $$...$$ and $...$, the last by pandoc's rule (the
// opening $ is not followed by a space, the closing one neither preceded by a space nor
// followed by a digit), so that "costs $2 and $3" is money, not maths. Linear.
struct MathSpan {
  size_t open, begin, end, close;  // maths s[begin, end), with its delimiters s[open, close)
};

std::vector<MathSpan> MathSpans(std::string_view s) {
  std::vector<MathSpan> out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      if (s[i + 1] == '(' || s[i + 1] == '[') {
        const size_t close = s.find(s[i + 1] == '(' ? "\\)" : "\\]", i + 2);
        if (close == std::string_view::npos) break;
        out.push_back({i, i + 2, close, close + 2});
        i = close + 1;
      } else {
        ++i;  // an escaped character: "\$" is a dollar sign
      }
      continue;
    }
    if (s[i] != '$') continue;
    if (i + 1 < s.size() && s[i + 1] == '$') {
      const size_t close = s.find("$$", i + 2);
      if (close == std::string_view::npos) break;
      out.push_back({i, i + 2, close, close + 2});
      i = close + 1;
      continue;
    }
    if (i + 1 >= s.size() || IsSpace(s[i + 1])) continue;
    size_t j = i + 1;
    while (j < s.size() && s[j] != '$') j += s[j] == '\\' ? 2 : 1;
    if (j >= s.size()) break;
    if (!IsSpace(s[j - 1]) && (j + 1 >= s.size() || !IsDigit(s[j + 1]))) {
      out.push_back({i, i + 1, j, j + 1});
      i = j;
    } else {
      i = j - 1;  // not a closing $: it may open the next span
    }
  }
  return out;
}

// in_math[i]: s[i] lies in one of `spans`, delimiters included.
std::vector<bool> MathMask(size_t size, const std::vector<MathSpan>& spans) {
  std::vector<bool> in_math(size, false);
  for (const MathSpan& m : spans) {
    for (size_t i = m.open; i < m.close && i < size; ++i) in_math[i] = true;
  }
  return in_math;
}

// Text after the last top-level "=": "(x, y) = (3, 2)" -> "(3, 2)", "7 \times 2 = 14" -> "14".
std::string_view AfterLastEquals(std::string_view s) {
  int depth = 0;
  size_t last = std::string_view::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(' || s[i] == '[' || s[i] == '{') ++depth;
    if (s[i] == ')' || s[i] == ']' || s[i] == '}') --depth;
    if (depth == 0 && s[i] == '=') last = i;
  }
  return last == std::string_view::npos ? s : Trim(s.substr(last + 1));
}

}  // namespace

bool LooksLikeProse(std::string_view s) {
  const std::vector<bool> in_math = MathMask(s.size(), MathSpans(s));
  int words = 0;
  text::ForEachWord(s, [&](std::string_view word, size_t i) {
    if (word.size() >= 3 && (i == 0 || s[i - 1] != '\\') && !in_math[i]) ++words;
    return true;
  });
  return words >= 2;
}

namespace {

// The verbs and signs by which a sentence states its result ("... is 14", "... = 70").
size_t LastMarkerEnd(std::string_view s, const std::vector<bool>& in_math, size_t limit,
                     size_t* start = nullptr) {
  static constexpr std::string_view kMarkers[] = {
      "is",   "are", "was",     "were",   "be",     "equals",  "equal", "get",
      "gets", "got", "getting", "obtain", "gives",  "yields",  "makes", "has",
      "have", "had", "costs",   "totals", "remain", "remains", "="};
  size_t best = std::string_view::npos;
  for (size_t i = 0; i < limit; ++i) {
    if (in_math[i]) continue;
    for (std::string_view m : kMarkers) {
      if (!StartsWithIgnoreCase(s, i, m)) continue;
      if (m != "=" &&
          ((i > 0 && IsAlnum(s[i - 1])) || (i + m.size() < s.size() && IsAlnum(s[i + m.size()])))) {
        continue;
      }
      best = i + m.size();
      if (start != nullptr) *start = i;
    }
  }
  return best;
}

// A sentence that negates or hedges ("cannot be 14", "is not 5") states no answer.
bool Negated(std::string_view s) {
  static constexpr std::string_view kNegations[] = {"not",   "no",      "cannot",
                                                    "never", "neither", "nor"};
  for (size_t i = 0; i < s.size();) {
    if (!IsAlpha(s[i]) && s[i] != '\'') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && (IsAlpha(s[j]) || s[j] == '\'')) ++j;
    std::string word;
    for (size_t k = i; k < j; ++k) word += Lower(s[k]);
    if (std::find(std::begin(kNegations), std::end(kNegations), word) != std::end(kNegations) ||
        (word.size() > 3 && word.compare(word.size() - 3, 3, "n't") == 0)) {
      return true;
    }
    i = j;
  }
  return false;
}

// Between the verb and the answer only words that do not change the value may stand: "is
// exactly 14", "a total of $12$"; not "at least 14" or "about 14".
bool OnlyNeutralWords(std::string_view s) {
  static constexpr std::string_view kNeutral[] = {
      "exactly", "equal", "equals", "to", "then",  "now",  "just", "a",   "an", "the",
      "total",   "of",    "thus",   "so", "still", "only", "left", "sum", "in", "all"};
  for (size_t i = 0; i < s.size();) {
    if (IsDigit(s[i])) return false;
    if (!IsAlpha(s[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && IsAlpha(s[j])) ++j;
    std::string word;
    for (size_t k = i; k < j; ++k) word += Lower(s[k]);
    if (std::find(std::begin(kNeutral), std::end(kNeutral), word) == std::end(kNeutral)) {
      return false;
    }
    i = j;
  }
  return true;
}

}  // namespace

ExtractedAnswer ExtractFinalSentence(std::string_view text) {
  std::string_view t = Trim(text);
  // The last line; a display block that ends the response ("\[ ... \]", "$$ ... $$") whole.
  size_t nl = t.rfind('\n');
  std::string_view line = Trim(nl == std::string_view::npos ? t : t.substr(nl + 1));
  if (line == "\\]" || line == "$$") {
    const size_t open = t.rfind(line == "$$" ? "$$" : "\\[", t.size() - line.size() - 1);
    if (open == std::string_view::npos) return NotFound();
    line = t.substr(open);
  }
  while (!line.empty() && (line.back() == '.' || line.back() == '!' || IsSpace(line.back()))) {
    line.remove_suffix(1);
  }
  if (line.empty()) return NotFound();
  std::vector<MathSpan> spans = MathSpans(line);
  std::vector<bool> in_math = MathMask(line.size(), spans);
  // A last line that is one number or one piece of maths is the answer.
  if (NumberLength(line, 0) == line.size()) return Found(WithoutCommas(line), "last_line");
  if (spans.size() == 1 && spans[0].open == 0 && spans[0].close == line.size()) {
    return Found(AfterLastEquals(line.substr(spans[0].begin, spans[0].end - spans[0].begin)),
                 "last_line");
  }
  // Otherwise the last sentence of the line, when it states a result.
  size_t start = 0;
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    if ((line[i] == '.' || line[i] == '!' || line[i] == '?') && IsSpace(line[i + 1]) &&
        !in_math[i]) {
      start = i + 1;
    }
  }
  const std::string_view sentence = Trim(line.substr(start));
  if (Negated(sentence)) return NotFound();
  spans = MathSpans(sentence);
  in_math = MathMask(sentence.size(), spans);
  if (!spans.empty()) {
    // Its last maths, when the sentence says it is the result ("the total is $12$",
    // "Therefore $(x, y) = (3, 2)$") and nothing but words follows it.
    const MathSpan& last = spans.back();
    const std::string_view maths = Trim(sentence.substr(last.begin, last.end - last.begin));
    for (size_t i = last.close; i < sentence.size(); ++i) {
      if (IsDigit(sentence[i]) || sentence[i] == '$' || sentence[i] == '\\') return NotFound();
    }
    size_t marker = LastMarkerEnd(sentence, in_math, last.open);
    if (marker == std::string_view::npos) {
      if (maths.find('=') == std::string_view::npos) return NotFound();  // "not sure about $18$"
      marker = 0;
    }
    // Another quantity after the marker ("the roots are $2$ and $3$") or a qualifier ("is
    // about $3$"): no single answer.
    for (size_t i = marker; i < last.open; ++i) {
      if (in_math[i]) return NotFound();
    }
    if (marker > 0 && !OnlyNeutralWords(sentence.substr(marker, last.open - marker))) {
      return NotFound();
    }
    if (maths.empty()) return NotFound();
    return Found(AfterLastEquals(maths), "final_sentence");
  }
  // Plain text: the one number after the last marker ("So she has 14 apples in total").
  size_t marker_start = 0;
  const size_t marker = LastMarkerEnd(sentence, in_math, sentence.size(), &marker_start);
  if (marker == std::string_view::npos) return NotFound();
  // An earlier statement with its own number ("x is 3 and y is 2"): no single answer. A
  // computation leading up to the result ("the total is 3 + 4 = 7") has no words in between.
  if (const size_t previous = LastMarkerEnd(sentence, in_math, marker_start);
      previous != std::string_view::npos) {
    const std::string_view between = sentence.substr(previous, marker_start - previous);
    const bool number = std::any_of(between.begin(), between.end(), IsDigit);
    const bool words = std::any_of(between.begin(), between.end(), IsAlpha);
    if (number && words) return NotFound();
  }
  const std::string_view rest = sentence.substr(marker);
  std::string_view number;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (!NumberStartsAt(rest, i) || (i > 0 && (rest[i - 1] == '^' || rest[i - 1] == '_'))) {
      continue;
    }
    const size_t n = NumberLength(rest, i);
    if (!number.empty()) return NotFound();  // two quantities: no single answer
    if (!OnlyNeutralWords(rest.substr(0, i))) return NotFound();  // "at least 14"
    number = rest.substr(i, n);
    i += n - 1;
  }
  if (number.empty()) return NotFound();
  return Found(WithoutCommas(number), "final_sentence");
}

}  // namespace allot::rewards
