// One dataset item as JSON, the shape episodes carry (EpisodeInput::dataset_item) and every env
// reads: {"question", "answer", "options"?, "answer_format"?, "id"?, "source"?, "extra"?, ...}.
// docs/datasets.md lists the accepted names.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "datasets/example.h"

namespace allot::datasets {

// Parses one item. Accepted names, each tried in order:
//   question: "question", "problem", "prompt" (a non-empty string);
//   answer:   "answer", "reference", "solution" (a non-empty string or a number);
//   solution: "solution" (also kept when it is the answer);
//   options:  "options" (a list of strings, A first);
//   answer_format: "answer_format" or "format" (boxed | choice | number | yesno | text; both
//             given must agree; absent: "text", which GradingFormat reads as the env's own);
//   id, source: strings or numbers.
// Every other key, and the keys of an "extra" object, land in `extra` (a top-level key wins
// over the same key under "extra"). Errors name the item, as its "source" ("<file>:<line>")
// when it has one and `where` otherwise, and the field.
Result<Example> ExampleFromJson(std::string_view text, const std::string& where = "dataset_item");

// The answer format an env grades `example` in: the item's, or `env_default` when the item names
// none. "text" counts as none: the JSONL loader writes it for every dataset whose config names
// no format (DatasetConfig.fields.answer_format), so an env that grades text says so itself.
std::string GradingFormat(const Example& example, const std::string& env_default);

}  // namespace allot::datasets
