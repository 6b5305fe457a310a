// The "normalizer" stage of a Hugging Face tokenizer.json: Unicode normal forms via utf8proc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace allot::models {

class Normalizer {
 public:
  enum class Form { kNfc, kNfd, kNfkc, kNfkd };

  // The identity normalizer (tokenizer.json "normalizer": null).
  Normalizer() = default;

  // Parses null, {"type": "NFC" | "NFD" | "NFKC" | "NFKD"} or a "Sequence" of those. Other
  // types are Unimplemented; `where` names the file for the message.
  static Result<Normalizer> FromJson(const nlohmann::json& node, const std::string& where);

  bool is_identity() const { return forms_.empty(); }

  // `text` must be valid UTF-8.
  std::string Apply(std::string_view text) const;

 private:
  std::vector<Form> forms_;
};

}  // namespace allot::models
