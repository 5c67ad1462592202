#pragma once
// Times in REST answers: ISO-8601 UTC strings with milliseconds ("2026-12-02T10:00:00.000Z").
// Pure and thread-safe.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "orchestrator/core/clock.h"

namespace kiln::core {

std::string isoTime(TimePoint t);

// Sets j[name] to the ISO string and j[name + "_ms"] to epoch milliseconds (the older,
// deprecated form the console and kilnctl read), both null when `t` is absent.
void putTime(nlohmann::json& j, const std::string& name, const std::optional<TimePoint>& t);

}  // namespace kiln::core
