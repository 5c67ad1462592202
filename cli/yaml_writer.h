#pragma once
// JSON values as block-style YAML (`kilnctl fleet generate --yaml`). Pure. The output parses
// back (kiln::yamlToJson) to the same value: strings that YAML could read as another type are
// quoted. In maps a "name" key comes first, so list items read like their names.

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace kiln::cli {

std::string toYaml(const nlohmann::json& value);

}  // namespace kiln::cli
