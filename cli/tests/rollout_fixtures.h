#pragma once
// Rollout documents shaped like GET /api/v1/rollouts/{id} (RolloutService::view), for the
// rollout show and watch tests.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::cli::testing {

using nlohmann::json;

struct WaveCounts {
  int pods = 0, finished = 0;
};

// Rollout ro-5 of bundle gb200-fw@2026.03 (b-3). `phases` counts pods per phase (missing
// phases are 0); waves are {pods, finished}; the current wave is the first unfinished one.
inline json rolloutDoc(const std::string& state, std::map<std::string, int> phases, std::vector<WaveCounts> waves,
                       json events = json::array(), const std::string& halt_reason = "") {
  json counts = json::object();
  int total = 0;
  for (const char* p : {"pending", "draining", "upgrading", "validating", "succeeded", "failed", "skipped", "aborted"}) {
    counts[p] = phases.count(p) ? phases[p] : 0;
    total += counts[p].get<int>();
  }
  json wave_list = json::array();
  int current = -1;
  for (std::size_t i = 0; i < waves.size(); ++i) {
    const bool done = waves[i].pods == waves[i].finished;
    if (!done && current < 0) current = static_cast<int>(i);
    wave_list.push_back({{"index", i},
                         {"name", i == 0 ? "canary" : "wave " + std::to_string(i)},
                         {"pods", waves[i].pods},
                         {"finished", waves[i].finished},
                         {"state", done ? "done" : (current == static_cast<int>(i) ? "current" : "pending")}});
  }
  const int succeeded = counts["succeeded"].get<int>() + counts["failed"].get<int>();
  return {{"id", "ro-5"},
          {"bundle", {{"id", "b-3"}, {"name", "gb200-fw"}, {"version", "2026.03"}}},
          {"state", state},
          {"halt_reason", halt_reason},
          {"rollback_of", nullptr},
          {"selector", {{"sites", {"prn"}}, {"buildings", json::array()}, {"platforms", json::array()}, {"pods", json::array()},
                        {"labels", json::object()}}},
          {"policy", {{"canary_pods", 1}, {"waves", {"10%", "50%", "100%"}}, {"soak", "10m"}, {"max_concurrent_pods", 2},
                      {"capacity_floor", {{"max_percent_down", 25.0}}}, {"allocated", "wait"}, {"failure_budget", {{"pods", 1}}},
                      {"max_rebooting_pods_per_building", 2}, {"order", "spread"}}},
          {"created_by", "tok-ops"},
          {"created_at_ms", 1767225600000},  // 2026-01-01T00:00:00Z
          {"started_at_ms", state == "created" ? json() : json(1767225660000)},
          {"finished_at_ms", nullptr},
          {"counts", counts},
          {"total", total},
          {"waves", wave_list},
          {"current_wave", current < 0 ? json() : json(current)},
          {"waiting", json::object()},
          {"pod_durations", {{"count", succeeded}, {"p50_s", succeeded ? 6120.0 : 0.0}, {"p90_s", succeeded ? 7500.0 : 0.0}}},
          {"eta_s", current < 0 || !succeeded ? json() : json(11400.0)},
          {"events", std::move(events)}};
}

}  // namespace kiln::cli::testing
