#pragma once
// Workflow runs for people: the run show page, list tables, live progress lines and bars, the
// final verdict, the quarantine queue. Pure functions over the API's JSON (the documents of
// GET /workflow-runs/{id}, /workflow-runs and /quarantine); missing fields render as "-".

#include <chrono>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace kiln::cli {

// Header (id, workflow, purpose, state, progress, params, times), a host table (status,
// current step, pass, failures), one step table per host (step, pass, attempt, outcome, exit
// code, duration, message and failed checks), then the summary of a finished run: unhealthy
// hosts with their reasons and per pod healthy GPUs and whether the spares still cover.
std::string renderRun(const nlohmann::json& run);

// GET /workflow-runs page as a table.
std::string renderRunList(const nlohmann::json& page);

// "run-42 running: 18 hosts, 3 passed, 1 failed, 14 running (dcgm-diag 10, gpu-state 4)":
// changes exactly when the run's state, its counts or where its running hosts are change.
std::string progressLine(const nlohmann::json& run);

// "[##########----------] 9/18 done, 1 failed, 12m30s" with `width` cells of bar.
std::string progressBar(const nlohmann::json& run, std::chrono::milliseconds elapsed, int width = 30);

// The last lines of a finished run: "run-42 passed: 18 of 18 hosts healthy" or the unhealthy
// hosts with their reasons and the pods whose spares no longer cover.
std::string renderVerdict(const nlohmann::json& run);

// GET /quarantine as a table: host, pod, time in quarantine, repairs, a repeat-offender mark,
// the last failure, the validation run's progress.
std::string renderQuarantine(const nlohmann::json& page);

}  // namespace kiln::cli
