#include "models/tokenizer/normalizer.h"

#include <cstdlib>

#include <utf8proc.h>
#include <nlohmann/json.hpp>

namespace allot::models {
namespace {

Status ParseOne(const nlohmann::json& node, const std::string& where,
                std::vector<Normalizer::Form>* forms) {
  if (node.is_null()) return Status::Ok();
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string()) {
    return InvalidArgument(where + ": normalizer: expected an object with a string \"type\"");
  }
  const std::string type = node["type"].get<std::string>();
  if (type == "NFC") {
    forms->push_back(Normalizer::Form::kNfc);
  } else if (type == "NFD") {
    forms->push_back(Normalizer::Form::kNfd);
  } else if (type == "NFKC") {
    forms->push_back(Normalizer::Form::kNfkc);
  } else if (type == "NFKD") {
    forms->push_back(Normalizer::Form::kNfkd);
  } else if (type == "Sequence") {
    if (!node.contains("normalizers") || !node["normalizers"].is_array()) {
      return InvalidArgument(where + ": normalizer.normalizers: expected an array");
    }
    for (const auto& child : node["normalizers"]) {
      ALLOT_RETURN_IF_ERROR(ParseOne(child, where, forms));
    }
  } else {
    return Unimplemented(where + ": normalizer.type \"" + type +
                         "\" is not supported (supported: NFC, NFD, NFKC, NFKD, Sequence)");
  }
  return Status::Ok();
}

// Code points below U+0300 are never changed by NFC: combining marks and every character with
// a canonical decomposition or an NFC_Quick_Check of No/Maybe lie above it. In UTF-8 those
// characters use no byte of 0xCC or more, so such text can skip utf8proc.
bool NfcStable(std::string_view text) {
  for (unsigned char c : text) {
    if (c >= 0xCC) return false;
  }
  return true;
}

}  // namespace

Result<Normalizer> Normalizer::FromJson(const nlohmann::json& node, const std::string& where) {
  Normalizer n;
  ALLOT_RETURN_IF_ERROR(ParseOne(node, where, &n.forms_));
  return n;
}

std::string Normalizer::Apply(std::string_view text) const {
  std::string current(text);
  for (Form form : forms_) {
    if (form == Form::kNfc && NfcStable(current)) continue;
    int options = UTF8PROC_STABLE;
    switch (form) {
      case Form::kNfc:
        options |= UTF8PROC_COMPOSE;
        break;
      case Form::kNfd:
        options |= UTF8PROC_DECOMPOSE;
        break;
      case Form::kNfkc:
        options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
        break;
      case Form::kNfkd:
        options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
        break;
    }
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(current.data()),
                     static_cast<utf8proc_ssize_t>(current.size()), &out,
                     static_cast<utf8proc_option_t>(options));
    if (n < 0) {
      // Only invalid UTF-8 fails, and callers validate first; keep the text unchanged.
      std::free(out);
      continue;
    }
    current.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
  }
  return current;
}

}  // namespace allot::models
