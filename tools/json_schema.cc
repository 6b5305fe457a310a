#include "tools/json_schema.h"

#include <cmath>
#include <set>

namespace allot::tools {
namespace {

using nlohmann::json;

bool MatchesType(const std::string& type, const json& v) {
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    if (v.is_number_integer()) return true;
    if (v.is_number_float()) {
      const double d = v.get<double>();
      return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.007199254740992e15;
    }
    return false;
  }
  if (type == "boolean") return v.is_boolean();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  if (type == "null") return v.is_null();
  return false;
}

std::string Truncated(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace

std::string JsonTypeName(const json& value) {
  if (value.is_string()) return "string";
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  if (value.is_boolean()) return "boolean";
  if (value.is_array()) return "array";
  if (value.is_object()) return "object";
  return "null";
}

Status ValidateJson(const json& schema, const json& value, const std::string& path) {
  if (!schema.is_object()) return Status::Ok();
  if (auto it = schema.find("type"); it != schema.end()) {
    bool ok = false;
    std::string wanted;
    if (it->is_string()) {
      ok = MatchesType(it->get<std::string>(), value);
      wanted = it->get<std::string>();
    } else if (it->is_array()) {
      for (const auto& t : *it) {
        if (!t.is_string()) continue;
        ok = ok || MatchesType(t.get<std::string>(), value);
        wanted += (wanted.empty() ? "" : " or ") + t.get<std::string>();
      }
    }
    if (!ok) {
      return InvalidArgument(path + ": expected " + wanted + ", got " + JsonTypeName(value));
    }
  }
  if (auto it = schema.find("enum"); it != schema.end() && it->is_array()) {
    bool found = false;
    for (const auto& e : *it) found = found || e == value;
    if (!found) {
      return InvalidArgument(path + ": " + Truncated(value) + " is not one of " + it->dump());
    }
  }
  if (value.is_number()) {
    const double d = value.get<double>();
    if (auto it = schema.find("minimum");
        it != schema.end() && it->is_number() && d < it->get<double>()) {
      return InvalidArgument(path + ": " + value.dump() + " is below the minimum " + it->dump());
    }
    if (auto it = schema.find("maximum");
        it != schema.end() && it->is_number() && d > it->get<double>()) {
      return InvalidArgument(path + ": " + value.dump() + " is above the maximum " + it->dump());
    }
  }
  if (value.is_string()) {
    const size_t n = value.get_ref<const std::string&>().size();
    if (auto it = schema.find("minLength");
        it != schema.end() && it->is_number_unsigned() && n < it->get<size_t>()) {
      return InvalidArgument(path + ": string shorter than " + it->dump() + " characters");
    }
    if (auto it = schema.find("maxLength");
        it != schema.end() && it->is_number_unsigned() && n > it->get<size_t>()) {
      return InvalidArgument(path + ": string longer than " + it->dump() + " characters");
    }
  }
  if (value.is_array()) {
    if (auto it = schema.find("minItems");
        it != schema.end() && it->is_number_unsigned() && value.size() < it->get<size_t>()) {
      return InvalidArgument(path + ": needs at least " + it->dump() + " items, got " +
                             std::to_string(value.size()));
    }
    if (auto it = schema.find("maxItems");
        it != schema.end() && it->is_number_unsigned() && value.size() > it->get<size_t>()) {
      return InvalidArgument(path + ": allows at most " + it->dump() + " items, got " +
                             std::to_string(value.size()));
    }
    if (auto it = schema.find("items"); it != schema.end()) {
      for (size_t i = 0; i < value.size(); ++i) {
        ALLOT_RETURN_IF_ERROR(ValidateJson(*it, value[i], path + "[" + std::to_string(i) + "]"));
      }
    }
  }
  if (value.is_object()) {
    if (auto it = schema.find("required"); it != schema.end() && it->is_array()) {
      for (const auto& key : *it) {
        if (key.is_string() && !value.contains(key.get<std::string>())) {
          return InvalidArgument(path + ": missing required field '" + key.get<std::string>() +
                                 "'");
        }
      }
    }
    const auto props = schema.find("properties");
    const bool closed =
        schema.contains("additionalProperties") && schema["additionalProperties"] == json(false);
    for (const auto& [key, v] : value.items()) {
      if (props != schema.end() && props->is_object() && props->contains(key)) {
        ALLOT_RETURN_IF_ERROR(ValidateJson((*props)[key], v, path + "." + key));
      } else if (closed) {
        return InvalidArgument(path + ": unknown field '" + key + "'");
      }
    }
  }
  return Status::Ok();
}

Status CheckSchema(const json& schema, const std::string& path) {
  static const std::set<std::string> kKeywords = {
      "type",        "required",  "properties", "additionalProperties",
      "enum",        "items",     "minItems",   "maxItems",
      "minLength",   "maxLength", "minimum",    "maximum",
      "description", "default",   "examples"};
  static const std::set<std::string> kTypes = {"string", "number", "integer", "boolean",
                                               "array",  "object", "null"};
  if (!schema.is_object()) return InvalidArgument(path + ": a schema must be an object");
  for (const auto& [key, v] : schema.items()) {
    if (!kKeywords.count(key)) return InvalidArgument(path + ": unsupported keyword '" + key + "'");
  }
  if (auto it = schema.find("type"); it != schema.end()) {
    const json types = it->is_array() ? *it : json::array({*it});
    for (const auto& t : types) {
      if (!t.is_string() || !kTypes.count(t.get<std::string>())) {
        return InvalidArgument(path + ".type: unknown type " + t.dump());
      }
    }
  }
  if (auto it = schema.find("properties"); it != schema.end()) {
    if (!it->is_object()) return InvalidArgument(path + ".properties: must be an object");
    for (const auto& [key, sub] : it->items()) {
      ALLOT_RETURN_IF_ERROR(CheckSchema(sub, path + ".properties." + key));
    }
  }
  if (auto it = schema.find("required"); it != schema.end()) {
    if (!it->is_array()) return InvalidArgument(path + ".required: must be an array");
    for (const auto& k : *it) {
      if (!k.is_string()) return InvalidArgument(path + ".required: names must be strings");
    }
  }
  if (auto it = schema.find("items"); it != schema.end()) {
    ALLOT_RETURN_IF_ERROR(CheckSchema(*it, path + ".items"));
  }
  if (auto it = schema.find("additionalProperties"); it != schema.end() && !(it->is_boolean())) {
    return InvalidArgument(path + ".additionalProperties: only true/false is supported");
  }
  if (auto it = schema.find("enum"); it != schema.end() && !it->is_array()) {
    return InvalidArgument(path + ".enum: must be an array");
  }
  return Status::Ok();
}

}  // namespace allot::tools
