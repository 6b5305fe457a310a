#include "rewards/answer_equivalence.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "rewards/text_util.h"

namespace allot::rewards {
namespace {

using text::CollapseSpaces;
using text::IsAlpha;
using text::IsSpace;
using text::Trim;

std::string Compact(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (!IsSpace(c)) out += c;
  }
  return out;
}

// Splits at top-level occurrences of `sep` (outside () [] {}).
std::vector<std::string> SplitTopLevel(std::string_view s, std::string_view sep) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\\' && i + 1 < s.size() && (s[i + 1] == '{' || s[i + 1] == '}')) {
      depth += s[i + 1] == '{' ? 1 : -1;
      ++i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (depth == 0 && s.compare(i, sep.size(), sep) == 0) {
      parts.emplace_back(Trim(s.substr(start, i - start)));
      start = i + sep.size();
      i = start - 1;
    }
  }
  parts.emplace_back(Trim(s.substr(start)));
  return parts;
}

// Whether the bracket at 0 closes exactly at the end of `s`.
bool OuterBracketsEnclose(std::string_view s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0 && i + 1 != s.size()) return false;
    }
  }
  return depth == 0;
}

struct Structure {
  enum Kind { kScalar, kTuple, kSet, kList, kUnion } kind = kScalar;
  char open = 0, close = 0;  // for tuples and intervals
  std::vector<std::string> elements;
};

Structure Classify(std::string_view s) {
  Structure st;
  if (std::vector<std::string> u = SplitTopLevel(s, "\\cup"); u.size() > 1) {
    st.kind = Structure::kUnion;
    st.elements = std::move(u);
    return st;
  }
  if (s.size() >= 4 && s.substr(0, 2) == "\\{" && s.substr(s.size() - 2) == "\\}") {
    st.kind = Structure::kSet;
    st.elements = SplitTopLevel(s.substr(2, s.size() - 4), ",");
    return st;
  }
  if (s.size() >= 2 && (s.front() == '(' || s.front() == '[') &&
      (s.back() == ')' || s.back() == ']') && OuterBracketsEnclose(s)) {
    std::vector<std::string> e = SplitTopLevel(s.substr(1, s.size() - 2), ",");
    if (e.size() > 1) {
      st.kind = Structure::kTuple;
      st.open = s.front();
      st.close = s.back();
      st.elements = std::move(e);
      return st;
    }
  }
  if (std::vector<std::string> e = SplitTopLevel(s, ","); e.size() > 1) {
    st.kind = Structure::kList;
    st.elements = std::move(e);
  }
  return st;
}

bool IsVariableName(std::string_view s) {
  s = Trim(s);
  if (s.empty() || s.size() > 12) return false;
  if (s.front() == '\\') {
    for (size_t i = 1; i < s.size(); ++i) {
      if (!IsAlpha(s[i])) return false;
    }
    return s.size() > 1;
  }
  size_t letters = 0;
  while (letters < s.size() && IsAlpha(s[letters])) ++letters;
  if (letters == 0 || letters > 2) return false;
  std::string_view rest = s.substr(letters);
  return rest.empty() || (rest.front() == '_' && rest.size() > 1);
}

// Words rather than maths: only letters, spaces, hyphens and apostrophes, with at least one
// word of three or more letters ("Paris", "blue whale"; not "xy", which is x*y).
bool IsPlainWords(std::string_view s) {
  size_t run = 0, longest = 0;
  for (char c : s) {
    if (IsAlpha(c)) {
      longest = std::max(longest, ++run);
    } else if (c == ' ' || c == '-' || c == '\'') {
      run = 0;
    } else {
      return false;
    }
  }
  return longest >= 3;
}

bool IsLetters(std::string_view s) {
  size_t letters = 0;
  for (char c : s) {
    if (IsAlpha(c)) {
      ++letters;
    } else if (c != ' ') {
      return false;
    }
  }
  return letters >= 2;
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class Checker {
 public:
  explicit Checker(const EquivalenceOptions& options) : options_(options) {}

  EquivalenceResult Check(std::string_view pred, std::string_view gold, int depth) {
    pred = Trim(pred);
    gold = Trim(gold);
    if (pred.empty() || gold.empty()) return {false, "empty"};
    if (pred.size() > options_.max_input_chars || gold.size() > options_.max_input_chars) {
      return {false, "too_long"};
    }
    if (pred == gold) return {true, "exact"};
    NormalizedAnswer np = NormalizeAnswer(pred), ng = NormalizeAnswer(gold);
    if (np.text.empty() || ng.text.empty()) return {false, "empty"};
    if (Compact(np.text) == Compact(ng.text) && np.percent == ng.percent) {
      return {true, "normalized"};
    }
    // "x \in [1, 3)" is the interval.
    for (NormalizedAnswer* n : {&np, &ng}) {
      size_t in = n->text.find("\\in ");
      if (in != std::string::npos && IsVariableName(n->text.substr(0, in))) {
        n->text = std::string(Trim(std::string_view(n->text).substr(in + 4)));
      }
    }
    if (depth < 3) {
      Structure sp = Classify(np.text), sg = Classify(ng.text);
      if (sp.kind != Structure::kScalar || sg.kind != Structure::kScalar) {
        return CompareStructures(sp, sg, depth);
      }
    }
    // Equations.
    std::vector<std::string> ep = SplitTopLevel(np.text, "="), eg = SplitTopLevel(ng.text, "=");
    if (ep.size() > 2 || eg.size() > 2) return {false, "unsupported_equation"};
    if (ep.size() == 2 && eg.size() == 2) {
      if (Compact(ep[0]) == Compact(eg[0])) return Scalar(ep[1], np.percent, eg[1], ng.percent);
      std::string dp = "(" + ep[0] + ")-(" + ep[1] + ")", dg = "(" + eg[0] + ")-(" + eg[1] + ")";
      EquivalenceResult r = Scalar(dp, false, dg, false);
      if (r.equivalent) return {true, "equation"};
      r = Scalar(dp, false, "-(" + dg + ")", false);
      if (r.equivalent) return {true, "equation"};
      return {false, r.reason};
    }
    std::string sp = np.text, sg = ng.text;
    if (ep.size() == 2) {
      if (!IsVariableName(ep[0])) return {false, "equation_vs_value"};
      sp = ep[1];
    }
    if (eg.size() == 2) {
      if (!IsVariableName(eg[0])) return {false, "equation_vs_value"};
      sg = eg[1];
    }
    return Scalar(sp, np.percent, sg, ng.percent);
  }

 private:
  EquivalenceResult Scalar(const std::string& p, bool p_percent, const std::string& g,
                           bool g_percent) {
    if (Compact(p) == Compact(g) && p_percent == g_percent) return {true, "normalized"};
    if (IsLetters(p) && IsLetters(g) &&
        Lowercase(CollapseSpaces(p)) == Lowercase(CollapseSpaces(g))) {
      return {true, "text"};  // "No" vs "no"
    }
    if (IsPlainWords(p) && IsPlainWords(g)) {
      if (Lowercase(CollapseSpaces(p)) == Lowercase(CollapseSpaces(g))) return {true, "text"};
      return {false, "text"};
    }
    // A budget on GiNaC comparisons bounds the time of big unordered collections.
    if (++math_calls_ > options_.max_math_comparisons) return {false, "budget"};
    Result<bool> eq = MathEqual(p, g, options_.math);
    if (!eq.ok()) return {false, "unparsed: " + eq.status().message()};
    if (*eq) return {true, "math"};
    if (p_percent != g_percent) {
      // "10%" vs "0.1": the percentage over 100.
      std::string pp = p_percent ? "(" + p + ")/100" : p;
      std::string gg = g_percent ? "(" + g + ")/100" : g;
      Result<bool> pct = MathEqual(pp, gg, options_.math);
      if (pct.ok() && *pct) return {true, "percent"};
    }
    return {false, "math"};
  }

  EquivalenceResult CompareStructures(const Structure& p, const Structure& g, int depth) {
    auto kinds_match = [&]() {
      if (p.kind == g.kind) return true;
      // A bare list and a set are both unordered collections.
      auto unordered = [](Structure::Kind k) {
        return k == Structure::kList || k == Structure::kSet;
      };
      return unordered(p.kind) && unordered(g.kind);
    };
    if (!kinds_match()) return {false, "structure"};
    if (p.elements.size() != g.elements.size()) return {false, "structure_size"};
    if (static_cast<int>(p.elements.size()) > options_.max_elements) return {false, "too_many"};
    if (p.kind == Structure::kTuple) {
      if (p.open != g.open || p.close != g.close) return {false, "brackets"};
      for (size_t i = 0; i < p.elements.size(); ++i) {
        if (!Check(p.elements[i], g.elements[i], depth + 1).equivalent) {
          return {false, "element " + std::to_string(i)};
        }
      }
      return {true, p.open == '(' && p.close == ')' ? "tuple" : "interval"};
    }
    // Unordered: greedy matching is exact here because equivalence is transitive enough for
    // answers; each gold element is used once.
    std::vector<bool> used(g.elements.size(), false);
    for (const std::string& e : p.elements) {
      bool matched = false;
      for (size_t j = 0; j < g.elements.size() && !matched; ++j) {
        if (!used[j] && Check(e, g.elements[j], depth + 1).equivalent) {
          used[j] = true;
          matched = true;
        }
      }
      if (!matched) return {false, "unmatched element"};
    }
    return {true, p.kind == Structure::kUnion ? "union" : "set"};
  }

  const EquivalenceOptions& options_;
  int math_calls_ = 0;
};

}  // namespace

EquivalenceResult AnswersEquivalent(std::string_view pred, std::string_view gold,
                                    const EquivalenceOptions& options) {
  Checker checker(options);
  return checker.Check(pred, gold, 0);
}

std::string SquadNormalize(std::string_view text) {
  std::string lower;
  for (char c : text) {
    if (std::ispunct(static_cast<unsigned char>(c))) continue;
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  std::string out;
  size_t i = 0;
  while (i < lower.size()) {
    while (i < lower.size() && IsSpace(lower[i])) ++i;
    size_t j = i;
    while (j < lower.size() && !IsSpace(lower[j])) ++j;
    std::string_view w(lower.data() + i, j - i);
    if (!w.empty() && w != "a" && w != "an" && w != "the") {
      if (!out.empty()) out += ' ';
      out.append(w);
    }
    i = j;
  }
  return out;
}

bool ExactMatch(std::string_view pred, std::string_view gold) {
  return SquadNormalize(pred) == SquadNormalize(gold);
}

}  // namespace allot::rewards
