#pragma once
// The reliability ledger for people: pure functions over GET /reliability and
// GET /interruptions (their shapes: orchestrator/api/reliability_views.cc); missing fields render
// as "-".

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace kiln::cli {

// Window and scope, GPU-hours in service, interruptions, the rate per 8K GPUs per day against
// the north star of 2 and MTBI against 96,000 GPU-hours (docs/FACTS.md), causes with their shares,
// the weekly series and the lemon hosts.
std::string renderReliability(const nlohmann::json& report);

// GET /interruptions as a table, newest first.
std::string renderInterruptions(const nlohmann::json& page);

// 12345678.4 -> "12,345,678"; negative values keep their sign.
std::string groupedNumber(double value);

}  // namespace kiln::cli
