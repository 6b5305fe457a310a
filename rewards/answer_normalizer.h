// Normalisation of final answers before they are compared (answer_equivalence.h).
#pragma once

#include <string>
#include <string_view>

namespace allot::rewards {

struct NormalizedAnswer {
  std::string text;      // normalised LaTeX/plain text, single-spaced
  bool percent = false;  // a "%" or "\%" was removed
};

// Normalisation: drops $ and \$ (currency), \( \) \[ \], \left \right, \displaystyle, spacing
// commands; unwraps \text{} \textbf{} \mathrm{} \mbox{} \operatorname{}; \dfrac \tfrac \cfrac ->
// \frac; "\frac12" -> "\frac{1}{2}", "\sqrt2" -> "\sqrt{2}"; degree signs (^\circ, °,
// \degree); "%"; thousands separators ("1,000", "1{,}000", "1\,000"); trailing units and words
// after a number ("5 cm", "12 dollars"); a trailing period; "(B)" -> "B"; unicode − × · π √;
// mixed numbers "2\frac{1}{2}" -> "(2+\frac{1}{2})"; "50 percent" as "50%"; "11,\! 111" as
// 11111; relations spelt \le \ge < > (\leq, \geqslant, \lt, <=, ≤ ...); ± ∞ ∪ as \pm \infty
// \cup. Units after a number include powers and quotients ("5 \text{ cm}^2", "12 m/s").
// Linear time on any input.
NormalizedAnswer NormalizeAnswer(std::string_view answer);

}  // namespace allot::rewards
