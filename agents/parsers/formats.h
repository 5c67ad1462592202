#pragma once
// One parser per tool output format (not part of the public API: use parse() in parsers.h).
// Each returns the normalized document described in README.md, or kInvalidContent.

#include <string_view>

#include <nlohmann/json.hpp>

#include "agents/parsers/parsers.h"
#include "common/result.h"

namespace kiln::parsers {

kiln::Result<nlohmann::json> parseNvidiaSmiXml(std::string_view text);      // nvidia_smi_xml.cc
kiln::Result<nlohmann::json> parseDcgmDiagJson(std::string_view text);      // dcgm_diag.cc
kiln::Result<nlohmann::json> parseDcgmNvlinkJson(std::string_view text);    // dcgm_nvlink.cc
kiln::Result<nlohmann::json> parseKeyValue(std::string_view text);          // key_value.cc

}  // namespace kiln::parsers
