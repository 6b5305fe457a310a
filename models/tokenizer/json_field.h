// Typed reads of tokenizer.json fields. nlohmann's value()/get() throw on a wrong type; these
// return an error that names the file and the field instead, so a malformed file never aborts
// `allot tokenize` or `allot serve`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace allot::models {

// Token ids must lie below this. The largest published vocabularies have about 262k entries;
// the bound keeps a hostile id (2^30) from sizing the id tables to gigabytes.
inline constexpr int64_t kMaxTokenId = (int64_t{1} << 21) - 1;

// Whether `root` nests arrays and objects deeper than `max_depth` (checked without recursion).
// The parsers of the normalizer, pre-tokenizer and post-processor recurse into "Sequence"
// nodes, so an adversarial nesting depth must be refused before they run.
inline bool JsonDeeperThan(const nlohmann::json& root, int max_depth) {
  std::vector<std::pair<const nlohmann::json*, int>> stack{{&root, 1}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    if (depth > max_depth) return true;
    for (const auto& child : *node) {
      if (child.is_structured()) stack.emplace_back(&child, depth + 1);
    }
  }
  return false;
}

// obj[key] as T when present and not null, else `fallback`. T is bool or std::string.
// `field` names the value in errors, e.g. "model.ignore_merges" or "added_tokens[3].special".
template <typename T>
Result<T> OptionalField(const nlohmann::json& obj, const char* key, T fallback,
                        const std::string& where, std::string_view field) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, bool>) {
    if (it->is_boolean()) return it->template get<bool>();
    return InvalidArgument(where + ": " + std::string(field) + ": expected true or false, got " +
                           it->dump());
  } else {
    static_assert(std::is_same_v<T, std::string>);
    if (it->is_string()) return it->template get<std::string>();
    return InvalidArgument(where + ": " + std::string(field) + ": expected a string, got " +
                           it->dump());
  }
}

// A token id: an integer in [0, kMaxTokenId].
inline Result<int32_t> TokenIdField(const nlohmann::json& node, const std::string& where,
                                    std::string_view field) {
  if (node.is_number_integer()) {
    const int64_t v =
        node.is_number_unsigned()
            ? static_cast<int64_t>(std::min<uint64_t>(node.get<uint64_t>(), uint64_t{1} << 62))
            : node.get<int64_t>();
    if (v >= 0 && v <= kMaxTokenId) return static_cast<int32_t>(v);
  }
  return InvalidArgument(where + ": " + std::string(field) + ": expected a token id in [0, " +
                         std::to_string(kMaxTokenId) + "], got " + node.dump());
}

}  // namespace allot::models
