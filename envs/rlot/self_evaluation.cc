#include "envs/rlot/self_evaluation.h"

#include <cctype>

namespace allot::envs::rlot {
namespace {

// The reference pattern's filler class: [:=\[a-zA-Z \n].
bool Filler(char c) {
  return c == ':' || c == '=' || c == '[' || c == ' ' || c == '\n' ||
         std::isalpha(static_cast<unsigned char>(c));
}

}  // namespace

ParsedEvaluation ParseSelfEvaluation(std::string_view text, size_t max_chars) {
  if (text.size() > max_chars) text = text.substr(0, max_chars);
  ParsedEvaluation out;
  for (size_t k = 0; k < kAspectKeys.size(); ++k) {
    const std::string_view key = kAspectKeys[k];
    for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
      // A scan from the key over filler characters to the first character that is not one;
      // the key scores when that character is 0..3 (a backtracking regex finds the same).
      size_t i = at + key.size();
      while (i < text.size() && Filler(text[i])) ++i;
      if (i < text.size() && text[i] >= '0' && text[i] <= '3') {
        out.state[k] = static_cast<float>(text[i] - '0');
        ++out.found;
        break;
      }
    }
  }
  return out;
}

}  // namespace allot::envs::rlot
