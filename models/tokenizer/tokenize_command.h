// `allot tokenize --tokenizer PATH [--decode]`: a prompt-debugging tool in the spirit of
// llama.cpp's tokenize example.
//
// Encoding reads all of `in` as UTF-8 text (special tokens are parsed, the post-processor's
// BOS is added) and prints the ids on one line, separated by spaces. Decoding reads ids
// separated by whitespace or commas (a JSON array works) and prints the text exactly, with
// no newline added, so `tokenize | tokenize --decode` reproduces the (NFC) input.
#pragma once

#include <iosfwd>
#include <string>

namespace allot::models {

// Returns the process exit code: 0 on success, 1 on a bad tokenizer or bad input (the reason
// goes to `err`).
int RunTokenize(const std::string& tokenizer_path, bool decode, std::istream& in, std::ostream& out,
                std::ostream& err);

}  // namespace allot::models
