// One evaluation or training problem, whatever dataset it came from.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace allot::datasets {

struct Example {
  std::string id;        // the dataset's id, or "<file>:<line>" when it has none
  std::string question;  // the problem text, without the options
  // The gold answer in canonical form: "72" (number), "C" (choice), "yes"/"no" (yesno),
  // "\frac{1}{2}" (boxed: the content of the last \boxed{}).
  std::string answer;
  // Multiple-choice options in letter order (A first); empty for open questions.
  std::vector<std::string> options;
  std::string solution;  // reference reasoning or trajectory, when the dataset has one
  // Further reference trajectories (OpenR1-style "generations" that were verified correct).
  std::vector<std::string> trajectories;
  // How answers are graded: "boxed", "choice", "number", "yesno" or "text" (the rewards
  // module's --format names).
  std::string answer_format = "text";
  std::string source;                               // "<file>:<line>"
  nlohmann::json extra = nlohmann::json::object();  // level, subject, year, ...

  // The question followed by "A) ...", "B) ..." lines when there are options.
  std::string PromptText() const {
    std::string out = question;
    for (size_t i = 0; i < options.size(); ++i) {
      out +=
          (i == 0 ? "\n\n" : "\n") + std::string(1, static_cast<char>('A' + i)) + ") " + options[i];
    }
    return out;
  }
};

}  // namespace allot::datasets
