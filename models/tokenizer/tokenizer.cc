#include "models/tokenizer/tokenizer.h"

#include <filesystem>

#include "models/tokenizer/bpe_tokenizer.h"

namespace allot::models {

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) {
    file = (fs::path(path) / "tokenizer.json").string();
    if (!fs::exists(file, ec)) return NotFound(path + ": directory has no tokenizer.json");
  }
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<BpeTokenizer> bpe, BpeTokenizer::FromFile(file));
  return std::unique_ptr<Tokenizer>(std::move(bpe));
}

}  // namespace allot::models
