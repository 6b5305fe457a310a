#include "rewards/answer_extractor.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include "rewards/text_util.h"

namespace allot::rewards {
namespace {

using text::IsAlpha;
using text::IsDigit;
using text::IsSpace;
using text::Trim;

bool IsAlnum(char c) { return IsAlpha(c) || IsDigit(c); }
char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Strips surrounding markdown emphasis, math delimiters and a trailing period or colon.
std::string_view StripDecorations(std::string_view s) {
  for (bool changed = true; changed;) {
    changed = false;
    s = Trim(s);
    while (!s.empty() && (s.back() == '.' || s.back() == '*' || s.back() == ':')) {
      // Keep the period of "5." only when it is part of a number like "3.": never; drop it.
      s.remove_suffix(1);
      changed = true;
    }
    while (!s.empty() && s.front() == '*') {
      s.remove_prefix(1);
      changed = true;
    }
    if (s.size() >= 2 && s.front() == '$' && s.back() == '$' && s.find('$', 1) == s.size() - 1) {
      s = s.substr(1, s.size() - 2);
      changed = true;
    }
  }
  return s;
}

bool StartsWithIgnoreCase(std::string_view s, size_t pos, std::string_view word) {
  if (pos + word.size() > s.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (Lower(s[pos + i]) != word[i]) return false;
  }
  return true;
}

ExtractedAnswer Found(std::string_view text, const char* method) {
  ExtractedAnswer a;
  a.text = std::string(Trim(text));
  a.found = !a.text.empty();
  a.method = a.found ? method : "none";
  return a;
}

ExtractedAnswer NotFound() { return ExtractedAnswer{false, "", "none"}; }

// For every '{' at index i, match[i] is the index of its closing '}' (or npos). One pass with an
// explicit stack, so that extracting the last of many \boxed stays linear. Escaped braces
// (\{ \}) are text, not grouping.
std::vector<size_t> MatchBraces(std::string_view s) {
  std::vector<size_t> match(s.size(), std::string_view::npos);
  std::vector<size_t> stack;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\\' && i + 1 < s.size()) {
      char n = s[i + 1];
      if (n == '{' || n == '}' || n == '\\') {
        ++i;
        continue;
      }
    } else if (c == '{') {
      stack.push_back(i);
    } else if (c == '}' && !stack.empty()) {
      match[stack.back()] = i;
      stack.pop_back();
    }
  }
  return match;
}

// The contents of the last `max_boxes` well-formed, non-empty \boxed{...} / \fbox{...} /
// `\boxed x` in `text`, in order of appearance. One brace pass, then the commands from the
// last backwards, so that many boxes stay linear.
std::vector<std::string_view> BoxContents(std::string_view text, size_t max_boxes) {
  static constexpr std::string_view kCommands[] = {"\\boxed", "\\fbox"};
  std::vector<std::pair<size_t, size_t>> hits;  // (position, command length)
  for (size_t pos = text.find('\\'); pos != std::string_view::npos;
       pos = text.find('\\', pos + 1)) {
    for (std::string_view cmd : kCommands) {
      if (text.compare(pos, cmd.size(), cmd) == 0 &&
          (pos + cmd.size() == text.size() || !IsAlpha(text[pos + cmd.size()]))) {
        hits.emplace_back(pos, cmd.size());
      }
    }
  }
  std::vector<std::string_view> boxes;
  if (hits.empty() || max_boxes == 0) return boxes;
  std::vector<size_t> match = MatchBraces(text);
  for (auto it = hits.rbegin(); it != hits.rend() && boxes.size() < max_boxes; ++it) {
    size_t p = it->first + it->second;
    while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
    if (p >= text.size()) continue;
    std::string_view box;
    if (text[p] == '{') {
      if (match[p] == std::string_view::npos) continue;  // unclosed: try an earlier one
      box = Trim(text.substr(p + 1, match[p] - p - 1));
    } else {
      if (p == it->first + it->second) continue;  // "\boxed5" is not LaTeX
      // `\boxed x`: one token, up to whitespace or a math delimiter.
      size_t end = p;
      while (end < text.size() && !IsSpace(text[end]) && text[end] != '$') ++end;
      box = Trim(StripDecorations(text.substr(p, end - p)));
    }
    if (!box.empty()) boxes.push_back(box);
  }
  std::reverse(boxes.begin(), boxes.end());
  return boxes;
}

// Words that introduce an answer without being part of it: "the answer is therefore 12".
std::string_view StripLeadingFiller(std::string_view s) {
  static constexpr std::string_view kFiller[] = {
      "therefore", "thus", "hence",   "so",       "then",     "indeed",    "clearly",
      "simply",    "just", "exactly", "equal to", "given by", "as follows"};
  for (bool changed = true; changed;) {
    changed = false;
    s = Trim(s);
    while (!s.empty() && (s.front() == ',' || s.front() == ':')) {
      s = Trim(s.substr(1));
      changed = true;
    }
    for (std::string_view w : kFiller) {
      if (StartsWithIgnoreCase(s, 0, w) && (s.size() == w.size() || !IsAlnum(s[w.size()]))) {
        s.remove_prefix(w.size());
        changed = true;
      }
    }
  }
  return s;
}

// Finds the last occurrence of "answer is" / "answer:" whose sentence holds an answer, and
// returns the rest of that sentence. The markers are found first and their sentences read from
// the last backwards, so "Answer: the final answer is 3" reads 3, and the scan stays linear: a
// sentence with no answer in it holds no later marker either.
std::string_view AnswerIsSpan(std::string_view text) {
  std::vector<size_t> starts;  // where the answer after each marker begins
  for (size_t pos = 0; pos + 6 <= text.size(); ++pos) {
    if (!StartsWithIgnoreCase(text, pos, "answer")) continue;
    if (pos > 0 && IsAlpha(text[pos - 1])) continue;
    size_t p = pos + 6;
    if (p < text.size() && (Lower(text[p]) == 's')) continue;  // "answers"
    while (p < text.size() && (text[p] == '*' || text[p] == ' ' || text[p] == '\t')) ++p;
    bool ok = false;
    if (StartsWithIgnoreCase(text, p, "is") && (p + 2 == text.size() || !IsAlpha(text[p + 2]))) {
      p += 2;
      ok = true;
      if (p < text.size() && text[p] == ':') ++p;
    } else if (p < text.size() && text[p] == ':') {
      ++p;
      ok = true;
    }
    if (!ok) continue;
    while (p < text.size() && (text[p] == '*' || text[p] == ' ' || text[p] == '\t')) ++p;
    starts.push_back(p);
  }
  for (auto it = starts.rbegin(); it != starts.rend(); ++it) {
    // The span runs to the end of the line, or to a sentence-ending period (one followed by
    // whitespace, so "3.5" and "\ldots" survive).
    size_t end = *it;
    while (end < text.size() && text[end] != '\n') {
      if (text[end] == '.' && (end + 1 == text.size() || IsSpace(text[end + 1]))) break;
      ++end;
    }
    std::string_view span = StripDecorations(StripLeadingFiller(text.substr(*it, end - *it)));
    if (!span.empty()) return span;
  }
  return std::string_view();
}

// Parses a choice letter at the start of `s`: "B", "(B)", "[B]", "option B", "B: text".
char LetterAt(std::string_view s, char max_choice) {
  s = Trim(s);
  // "$\textbf{(B)}$", "**B**", "\text{B}": decoration around the letter.
  for (bool changed = true; changed;) {
    changed = false;
    while (!s.empty() && (s.front() == '*' || s.front() == '$')) {
      s.remove_prefix(1);
      changed = true;
    }
    for (std::string_view cmd : {"\\text{", "\\textbf{", "\\mathbf{", "\\mathrm{"}) {
      if (StartsWithIgnoreCase(s, 0, cmd)) {
        s.remove_prefix(cmd.size());
        changed = true;
      }
    }
  }
  if (StartsWithIgnoreCase(s, 0, "option ")) s.remove_prefix(7);
  if (StartsWithIgnoreCase(s, 0, "choice ")) s.remove_prefix(7);
  bool paren = false;
  if (!s.empty() && (s.front() == '(' || s.front() == '[')) {
    s.remove_prefix(1);
    paren = true;
  }
  if (s.empty()) return 0;
  char c = s.front();
  if (paren && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  if (c < 'A' || c > max_choice) return 0;
  if (s.size() > 1 && IsAlnum(s[1])) return 0;  // "Because", "A1"
  return c;
}

// "yes"/"no" (true/false map to yes/no) as the first word of `s`, or "".
std::string YesNoAt(std::string_view s) {
  s = StripDecorations(s);
  while (!s.empty() && !IsAlpha(s.front())) s.remove_prefix(1);
  size_t n = 0;
  while (n < s.size() && IsAlpha(s[n])) ++n;
  std::string w;
  for (size_t i = 0; i < n; ++i) w += Lower(s[i]);
  if (w == "yes" || w == "true") return "yes";
  if (w == "no" || w == "false") return "no";
  return "";
}

// Length of the number starting at s[i] ("-1,234.5", "3/4", ".5"), or 0.
size_t NumberLength(std::string_view s, size_t i) {
  size_t p = i;
  if (p < s.size() && (s[p] == '-' || s[p] == '+')) ++p;
  size_t digits_start = p;
  while (p < s.size() && IsDigit(s[p])) ++p;
  size_t int_digits = p - digits_start;
  // Thousands groups: ",ddd" only after 1-3 leading digits, and only whole groups.
  if (int_digits >= 1 && int_digits <= 3) {
    while (p + 3 < s.size() && s[p] == ',' && IsDigit(s[p + 1]) && IsDigit(s[p + 2]) &&
           IsDigit(s[p + 3]) && (p + 4 >= s.size() || !IsDigit(s[p + 4]))) {
      p += 4;
      int_digits += 3;
    }
  }
  if (p < s.size() && s[p] == '.' && p + 1 < s.size() && IsDigit(s[p + 1])) {
    ++p;
    while (p < s.size() && IsDigit(s[p])) ++p;
  } else if (int_digits == 0) {
    return 0;
  }
  if (p + 1 < s.size() && s[p] == '/' && IsDigit(s[p + 1])) {
    ++p;
    while (p < s.size() && IsDigit(s[p])) ++p;
  }
  return p - i;
}

std::string WithoutCommas(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ',') out += c;
  }
  return out;
}

bool NumberStartsAt(std::string_view s, size_t i) {
  if (i > 0 && (IsAlpha(s[i - 1]) || IsDigit(s[i - 1]) || s[i - 1] == '.')) return false;
  if (s[i] == '-' && i > 0 && (IsDigit(s[i - 1]))) return false;
  return NumberLength(s, i) > 0;
}

// A direct answer with no marker (CogER's L1 "answer immediately"): the whole response, when it
// is one short line.
ExtractedAnswer WholeShortResponse(std::string_view text) {
  std::string_view t = StripDecorations(text);
  if (t.empty() || t.size() > 64 || t.find('\n') != std::string_view::npos) return NotFound();
  // A box that failed to parse is a malformed answer, not a direct one.
  if (t.find("\\boxed") != std::string_view::npos || t.find("\\fbox") != std::string_view::npos) {
    return NotFound();
  }
  return Found(t, "whole");
}

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

// Prose rather than a direct answer: two or more words of three or more letters outside maths
// and LaTeX commands ("So she has 14 apples", not "x = 2 \text{ or } 5" or "5 apples").
bool LooksLikeProse(std::string_view s) {
  const std::vector<bool> in_math = MathMask(s.size(), MathSpans(s));
  int words = 0;
  for (size_t i = 0; i < s.size();) {
    if (!IsAlpha(s[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && IsAlpha(s[j])) ++j;
    if (j - i >= 3 && (i == 0 || s[i - 1] != '\\') && !in_math[i]) ++words;
    i = j;
  }
  return words >= 2;
}

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

Result<AnswerFormat> ParseAnswerFormat(std::string_view name) {
  if (name == "boxed") return AnswerFormat::kBoxed;
  if (name == "number") return AnswerFormat::kNumber;
  if (name == "choice") return AnswerFormat::kChoice;
  if (name == "yesno") return AnswerFormat::kYesNo;
  if (name == "text") return AnswerFormat::kText;
  return InvalidArgument("answer format '" + std::string(name) +
                         "': expected one of boxed, number, choice, yesno, text");
}

const char* AnswerFormatName(AnswerFormat format) {
  switch (format) {
    case AnswerFormat::kBoxed:
      return "boxed";
    case AnswerFormat::kNumber:
      return "number";
    case AnswerFormat::kChoice:
      return "choice";
    case AnswerFormat::kYesNo:
      return "yesno";
    case AnswerFormat::kText:
      return "text";
  }
  return "boxed";
}

ExtractedAnswer ExtractLastBoxed(std::string_view text) {
  std::vector<std::string_view> boxes = BoxContents(text, 1);
  return boxes.empty() ? NotFound() : Found(boxes.back(), "boxed");
}

std::vector<std::string> ExtractAllBoxed(std::string_view text, size_t max_boxes) {
  std::vector<std::string_view> boxes = BoxContents(text, max_boxes);
  return std::vector<std::string>(boxes.begin(), boxes.end());
}

ExtractedAnswer ExtractGsm8k(std::string_view text) {
  size_t pos = text.rfind("####");
  if (pos == std::string_view::npos) return NotFound();
  size_t start = pos + 4;
  size_t end = text.find('\n', start);
  if (end == std::string_view::npos) end = text.size();
  return Found(StripDecorations(text.substr(start, end - start)), "gsm8k");
}

ExtractedAnswer ExtractAnswerIs(std::string_view text) {
  return Found(AnswerIsSpan(text), "answer_is");
}

ExtractedAnswer FirstNumber(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!NumberStartsAt(text, i)) continue;
    size_t n = NumberLength(text, i);
    return Found(WithoutCommas(text.substr(i, n)), "number");
  }
  return NotFound();
}

ExtractedAnswer LastNumber(std::string_view text) {
  size_t best = std::string_view::npos, best_len = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!NumberStartsAt(text, i)) continue;
    size_t n = NumberLength(text, i);
    best = i;
    best_len = n;
    i += n - 1;
  }
  if (best == std::string_view::npos) return NotFound();
  return Found(WithoutCommas(text.substr(best, best_len)), "last_number");
}

ExtractedAnswer ExtractChoice(std::string_view text, char max_choice) {
  std::string_view span = AnswerIsSpan(text);
  if (char c = LetterAt(span, max_choice)) return Found(std::string(1, c), "answer_is");
  ExtractedAnswer boxed = ExtractLastBoxed(text);
  if (boxed.found) {
    if (char c = LetterAt(boxed.text, max_choice)) return Found(std::string(1, c), "boxed");
  }
  // A response that is just the letter: "B", "B.", "(B)", "B) 42".
  std::string_view t = Trim(text);
  while (!t.empty() && t.front() == '*') t.remove_prefix(1);
  if (!t.empty()) {
    size_t off = t.front() == '(' ? 1 : 0;
    if (t.size() > off && t[off] >= 'A' && t[off] <= max_choice) {
      size_t after = off + 1;
      bool closes = after == t.size() || t[after] == ')' || t[after] == '.' || t[after] == ':' ||
                    t[after] == '*' || (off == 0 && IsSpace(t[after]) && Trim(t).size() == 1);
      if (closes && (off == 0 || (after < t.size() && t[after] == ')'))) {
        return Found(std::string(1, t[off]), "bare_letter");
      }
    }
  }
  // The last "(B)" or "B)" (the latter at a word start) anywhere in the text.
  size_t best = std::string_view::npos;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    char c = text[i];
    if (c < 'A' || c > max_choice || text[i + 1] != ')') continue;
    bool opened = i > 0 && text[i - 1] == '(';
    bool word_start = i == 0 || IsSpace(text[i - 1]);
    if (opened || word_start) best = i;
  }
  if (best != std::string_view::npos) return Found(std::string(1, text[best]), "paren_letter");
  return NotFound();
}

ExtractedAnswer ExtractYesNo(std::string_view text) {
  std::string w = YesNoAt(AnswerIsSpan(text));
  if (!w.empty()) return Found(w, "answer_is");
  ExtractedAnswer boxed = ExtractLastBoxed(text);
  if (boxed.found) {
    std::string_view b = boxed.text;
    if (StartsWithIgnoreCase(b, 0, "\\text{")) b.remove_prefix(6);
    w = YesNoAt(b);
    if (!w.empty()) return Found(w, "boxed");
  }
  w = YesNoAt(text);
  if (!w.empty()) return Found(w, "first_word");
  // The last non-empty line, when exactly one of yes/no occurs in it as a word.
  std::string_view t = Trim(text);
  size_t nl = t.rfind('\n');
  std::string_view line = nl == std::string_view::npos ? t : t.substr(nl + 1);
  bool yes = false, no = false;
  for (size_t i = 0; i < line.size();) {
    if (!IsAlpha(line[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < line.size() && IsAlpha(line[j])) ++j;
    std::string word = YesNoAt(line.substr(i, j - i));
    yes |= word == "yes";
    no |= word == "no";
    i = j;
  }
  if (yes != no) return Found(yes ? "yes" : "no", "last_line");
  return NotFound();
}

ExtractedAnswer ExtractAnswer(std::string_view response, AnswerFormat format,
                              const ExtractOptions& options) {
  switch (format) {
    case AnswerFormat::kBoxed: {
      ExtractedAnswer a = ExtractLastBoxed(response);
      if (a.found) return a;
      a = ExtractGsm8k(response);
      if (a.found) return a;
      a = ExtractAnswerIs(response);
      if (a.found) return a;
      // Prose ends in its answer; a short line that is not prose is the answer itself.
      if (Trim(response).find('\n') != std::string_view::npos || LooksLikeProse(response)) {
        a = ExtractFinalSentence(response);
        if (a.found) return a;
      }
      return WholeShortResponse(response);
    }
    case AnswerFormat::kNumber: {
      ExtractedAnswer a = ExtractGsm8k(response);
      if (a.found) {
        ExtractedAnswer n = FirstNumber(a.text);
        if (n.found) return Found(n.text, "gsm8k");
      }
      a = ExtractLastBoxed(response);
      if (a.found) return a;  // keep LaTeX such as \frac{1}{2} whole
      a = ExtractAnswerIs(response);
      if (a.found) {
        if (a.text.find('\\') != std::string::npos) return a;
        ExtractedAnswer n = FirstNumber(a.text);
        if (n.found) return Found(n.text, "answer_is");
      }
      // A response that is nothing but a number ("42", "$1,000.").
      std::string_view whole = StripDecorations(response);
      ExtractedAnswer n = FirstNumber(whole);
      if (n.found && NumberLength(whole, 0) == whole.size()) return Found(n.text, "whole");
      if (options.last_number_fallback) return LastNumber(response);
      return NotFound();
    }
    case AnswerFormat::kChoice:
      return ExtractChoice(response, options.max_choice);
    case AnswerFormat::kYesNo:
      return ExtractYesNo(response);
    case AnswerFormat::kText: {
      ExtractedAnswer a = ExtractLastBoxed(response);
      if (a.found) return a;
      a = ExtractAnswerIs(response);
      if (a.found) return a;
      return WholeShortResponse(response);
    }
  }
  return NotFound();
}

}  // namespace allot::rewards
