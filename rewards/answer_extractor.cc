#include "rewards/answer_extractor.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "rewards/final_sentence.h"
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

}  // namespace

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
  text::ForEachWord(line, [&](std::string_view w, size_t) {
    const std::string word = YesNoAt(w);
    yes |= word == "yes";
    no |= word == "no";
    return true;
  });
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
