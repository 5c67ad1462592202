#pragma once
// YAML documents as JSON values, so that fleet files and bundles are validated one way whether
// they arrive as YAML or JSON. Plain scalars become numbers, booleans or null where YAML 1.2's
// core schema says so; quoted scalars stay strings.

#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"

namespace kiln {

// Parses YAML (JSON is YAML too). Errors: kInvalidArgument with line and column.
Result<nlohmann::json> yamlToJson(std::string_view text);
// Parses JSON; errors: kInvalidArgument with the byte offset and what was expected.
Result<nlohmann::json> parseJson(std::string_view text);

}  // namespace kiln
