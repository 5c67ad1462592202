#pragma once
// Workflow-run documents shaped like GET /api/v1/workflow-runs/{id} (orchestrator/api/run_views.h
// renders RunService::runView), for the run, gate and JUnit tests.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::cli::testing {

using nlohmann::json;

inline const std::vector<std::string> kFixtureSteps = {"gpu-state", "dcgm-diag", "nvlink-after-g0"};

inline json stepRecord(const std::string& step, const std::string& outcome, int exit_code, std::int64_t duration_ms,
                       const std::string& message = "", json checks = json::array(), const std::string& stdout_tail = "",
                       int attempt = 1) {
  return {{"step", step},         {"pass", 1},           {"attempt", attempt}, {"retest_round", 0},
          {"outcome", outcome},   {"message", message},  {"exit_code", exit_code},
          {"duration_ms", duration_ms}, {"finished_at_ms", 1767225600000 + duration_ms},
          {"assignment", "run-7:" + step}, {"checks", std::move(checks)}, {"stdout_tail", stdout_tail},
          {"stderr_tail", ""}};
}

inline json hostDoc(const std::string& host, const std::string& status, const std::string& current_step, json steps,
                    std::vector<std::string> failures = {}) {
  json h = {{"host", host},         {"group", "prn-b01-p0001"}, {"status", status},
            {"pass", 1},            {"current_step", current_step}, {"attempt", 1},
            {"failures", failures}, {"warnings", json::array()},    {"steps", std::move(steps)},
            {"parsed", json::object()}, {"waiting_until_ms", nullptr}};
  h["healthy"] = status == "passed" ? json(true) : status == "failed" ? json(false) : json();
  return h;
}

// A run of l11-burn-in on two hosts of one pod; progress and, when finished, summary follow the hosts.
inline json runDoc(const std::string& state, json hosts) {
  int passed = 0, failed = 0, running = 0, cancelled = 0;
  json unhealthy = json::array();
  for (const auto& h : hosts) {
    const std::string s = h["status"];
    if (s == "passed") ++passed;
    else if (s == "failed") ++failed, unhealthy.push_back({{"host", h["host"]}, {"pod", "prn-b01-p0001"}, {"reasons", h["failures"]}});
    else if (s == "cancelled") ++cancelled;
    else ++running;
  }
  json run = {{"id", "run-7"},
              {"workflow", "l11-burn-in"},
              {"workflow_hash", "0123456789abcdef0123"},
              {"scope", "pod"},
              {"purpose", "burn_in"},
              {"state", state},
              {"params", {{"diag_level", 3}}},
              {"created_by", "tok-ci"},
              {"created_at_ms", 1767225600000},  // 2026-01-01T00:00:00Z
              {"finished_at_ms", state == "running" ? json() : json(1767225600000 + 95000)},
              {"steps", kFixtureSteps},
              {"progress", {{"hosts", passed + failed + running + cancelled}, {"passed", passed}, {"failed", failed},
                            {"running", running}, {"cancelled", cancelled}}},
              {"hosts", std::move(hosts)}};
  run["summary"] = state == "running"
                       ? json()
                       : json{{"hosts", passed + failed + cancelled},
                              {"healthy", passed},
                              {"unhealthy", unhealthy},
                              {"cancelled", cancelled},
                              {"pods", json::array({{{"pod", "prn-b01-p0001"}, {"hosts", 2}, {"healthy_hosts", passed},
                                                     {"failed_hosts", json::array()}, {"healthy_gpus", passed * 4},
                                                     {"spares_cover", nullptr}}})}};
  return run;
}

inline const char* kH1 = "prn-b01-p0001-h01";
inline const char* kH2 = "prn-b01-p0001-h02";
inline const char* kLinkFailure = "NVLink error counters did not grow: gpu 2 link 7: crc_flit +14";

// Both hosts at dcgm-diag.
inline json runningRun() {
  return runDoc("running", json::array({hostDoc(kH1, "running", "dcgm-diag", json::array({stepRecord("gpu-state", "passed", 0, 1200)})),
                                        hostDoc(kH2, "running", "dcgm-diag", json::array({stepRecord("gpu-state", "passed", 0, 1300)}))}));
}

inline json passedRun() {
  auto steps = [](std::int64_t base) {
    return json::array({stepRecord("gpu-state", "passed", 0, base), stepRecord("dcgm-diag", "passed", 0, 60000),
                        stepRecord("nvlink-after-g0", "passed", 0, 500, "", json::array(), "links ok\n")});
  };
  return runDoc("passed", json::array({hostDoc(kH1, "passed", "", steps(1200)), hostDoc(kH2, "passed", "", steps(1300))}));
}

// h02 fails the NVLink counter check (on_failure: continue, so the run goes on and fails at the end).
inline json failedRun() {
  json h1 = hostDoc(kH1, "passed", "",
                    json::array({stepRecord("gpu-state", "passed", 0, 1200), stepRecord("dcgm-diag", "passed", 0, 60000),
                                 stepRecord("nvlink-after-g0", "passed", 0, 500)}));
  json checks = json::array({{{"name", "NVLink error counters did not grow"}, {"passed", false}, {"skipped", false},
                              {"message", "gpu 2 link 7: crc_flit +14"}}});
  json h2 = hostDoc(kH2, "failed", "",
                    json::array({stepRecord("gpu-state", "passed", 0, 1300), stepRecord("dcgm-diag", "skipped", -1, 0, "condition is false"),
                                 stepRecord("nvlink-after-g0", "failed", 0, 1500, kLinkFailure, checks,
                                            "gpu 2 link 7 crc_flit 14 <&>\n")}),
                    {std::string("nvlink-after-g0: ") + kLinkFailure});
  return runDoc("failed", json::array({h1, h2}));
}

}  // namespace kiln::cli::testing
