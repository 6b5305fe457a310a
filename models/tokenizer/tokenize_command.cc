#include "models/tokenizer/tokenize_command.h"

#include <charconv>
#include <istream>
#include <iterator>
#include <ostream>
#include <vector>

#include "models/tokenizer/tokenizer.h"

namespace allot::models {
namespace {

// Parses "1 2 3", "1,2,3" or "[1, 2, 3]".
Result<std::vector<int32_t>> ParseIds(const std::string& text) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '[' || c == ']') {
      ++i;
      continue;
    }
    int32_t id = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + text.size(), id);
    if (ec != std::errc() || ptr == text.data() + i) {
      return InvalidArgument("stdin: byte " + std::to_string(i) + ": expected a token id, got '" +
                             text.substr(i, 16) + "'");
    }
    ids.push_back(id);
    i = static_cast<size_t>(ptr - text.data());
  }
  return ids;
}

}  // namespace

int RunTokenize(const std::string& tokenizer_path, bool decode, std::istream& in, std::ostream& out,
                std::ostream& err) {
  auto tokenizer = LoadTokenizer(tokenizer_path);
  if (!tokenizer.ok()) {
    err << "allot tokenize: " << tokenizer.status().ToString() << "\n";
    return 1;
  }
  const std::string input{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (decode) {
    auto ids = ParseIds(input);
    if (!ids.ok()) {
      err << "allot tokenize --decode: " << ids.status().ToString() << "\n";
      return 1;
    }
    auto text = (*tokenizer)->Decode(*ids);
    if (!text.ok()) {
      err << "allot tokenize --decode: " << text.status().ToString() << "\n";
      return 1;
    }
    out << *text;
    return 0;
  }
  auto ids = (*tokenizer)->Encode(input);
  if (!ids.ok()) {
    err << "allot tokenize: " << ids.status().ToString() << "\n";
    return 1;
  }
  for (size_t i = 0; i < ids->size(); ++i) out << (i ? " " : "") << (*ids)[i];
  out << "\n";
  return 0;
}

}  // namespace allot::models
