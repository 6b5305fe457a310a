// Grading: extract the answer from a response, extract (or take) the reference answer, and
// decide whether they agree. This is the accuracy check behind CogER's Eq. 5, RLoT's terminal
// reward and R2-Reasoner's final-correctness reward, and what `allot grade` prints.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "rewards/answer_equivalence.h"
#include "rewards/answer_extractor.h"

namespace allot::rewards {

struct GradeOptions {
  ExtractOptions extract;
  EquivalenceOptions equivalence;
};

struct GradeResult {
  ExtractedAnswer pred;  // from the response
  ExtractedAnswer gold;  // from the reference (the whole reference when it has no marker)
  bool correct = false;
  std::string reason;  // "no answer extracted", or the equivalence stage
};

// The reference may be a bare answer ("0.5"), a GSM8K solution ("... #### 18"), a MATH
// solution with \boxed{}, or a choice ("(B)"); the same extractor reads it, and when nothing
// is found the whole trimmed reference is the answer. Under the boxed format, a reference that
// is a choice letter reads the response's letter as the choice format does, and a response
// that boxes the parts of a tuple or set one at a time is read as their tuple or list.
GradeResult Grade(std::string_view response, std::string_view reference, AnswerFormat format,
                  const GradeOptions& options = {});

// `allot grade --pred TEXT --gold TEXT [--format boxed|choice|number|yesno]`: prints the
// extracted answers, their normalised and parsed forms and the verdict to `out`. Returns the
// process exit code: 0 correct, 1 incorrect, 2 bad arguments (message on `out`).
int RunGrade(std::string_view pred, std::string_view gold, std::string_view format_name,
             std::ostream& out, const GradeOptions& options = {});

}  // namespace allot::rewards
