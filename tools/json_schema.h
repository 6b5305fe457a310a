// A small JSON-Schema subset: enough to check the arguments an LLM writes for a tool call.
//
// Supported keywords: type (a name or a list of names: string, number, integer, boolean,
// array, object, null), required, properties, additionalProperties (false only), enum,
// items, minItems, maxItems, minLength, maxLength, minimum, maximum, description, default,
// examples. Anything else in a schema is a programmer error reported by CheckSchema().
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace allot::tools {

// Validates `value` against `schema`; the error names the path ("parameters.values[2]: expected
// number, got string").
Status ValidateJson(const nlohmann::json& schema, const nlohmann::json& value,
                    const std::string& path = "parameters");

// Checks that `schema` itself only uses the supported keywords with the right shapes.
Status CheckSchema(const nlohmann::json& schema, const std::string& path = "schema");

// "string", "number", "integer" (a number without fraction), ... for error messages.
std::string JsonTypeName(const nlohmann::json& value);

}  // namespace allot::tools
