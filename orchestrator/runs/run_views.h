#pragma once
// What the run service answers, as values: a run with its hosts and their step records, one
// page of runs, workflows, the quarantine queue. Nothing here is JSON for the API: the REST
// shapes are orchestrator/api/run_views.h's.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/runs/engine.h"
#include "orchestrator/runs/run_store.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::runs {

// PUT /workflows/{name}: the version now current, and whether the call made it so.
struct WorkflowPut {
  std::string name, hash;
  bool changed = false;
};

// A workflow's current version. `spec` is null where the stored YAML no longer loads (the list
// names such a version without its spec).
struct WorkflowInfo {
  WorkflowRow row;
  std::shared_ptr<const workflow::WorkflowSpec> spec;
};

// One finished attempt of a step on a host, with the output tails of the agent's report.
struct StepView {
  struct Tails {
    std::string stdout_tail, stderr_tail;
  };
  StepRecord record;
  // Absent where the attempt's assignment holds no report (skipped, shared, lost).
  std::optional<Tails> output;
};

struct HostView {
  std::string host, group;
  HostStatus status = HostStatus::kPending;
  int pass = 1;
  int attempt = 1;
  // The step it runs or waits for; empty once its verdict is in, or where the run's workflow
  // version no longer loads.
  std::string current_step;
  std::vector<std::string> failures, warnings;
  std::vector<StepView> steps;  // in the order they finished
  // The newest parsed output of each step: the reports' over the group state's delta baselines.
  std::map<std::string, nlohmann::json> parsed;
  std::string assignment;  // the step handed to its agent now (its live output), or empty
  std::optional<TimePoint> waiting_until;  // retry backoff or soak, or the drain gate's next look
  std::string waiting_for;                 // why the first step waits for the scheduler's drain gate
  std::optional<RetestState> retest;

  // Passed or failed once its verdict is in; nullopt while it runs.
  std::optional<bool> healthy() const {
    if (!isTerminal(status)) return std::nullopt;
    return status == HostStatus::kPassed;
  }
};

struct RunProgress {
  int passed = 0, failed = 0, running = 0, cancelled = 0;
  int hosts() const { return passed + failed + running + cancelled; }
};

// GET /workflow-runs/{id}, and what starting or cancelling a run answers.
struct RunView {
  RunRow row;
  RunProgress progress;
  std::vector<HostView> hosts;  // by group, each group's hosts in pod order
  // The workflow version's step ids; absent where that version no longer loads.
  std::optional<std::vector<std::string>> steps;
};

// The rollout that started a run, read from the owner key its controller gives the run
// ("<rollout>/<pod>/<upgrade|validate>/<attempt>", orchestrator/rollouts/controller_drain.cc
// and controller_upgrade.cc).
struct RunRollout {
  std::string id, pod, phase;
  std::optional<int> attempt;  // absent where the key's attempt is not a positive number
};
// nullopt for a run that no rollout started (or whose owner key is not a rollout's). Pure.
std::optional<RunRollout> rolloutOf(const RunRow& run);

// A host of the quarantine queue, as of the answer.
struct QuarantineEntry {
  QuarantineRow row;
  std::int64_t seconds_in_quarantine = 0;
  bool repeat_offender = false;  // 3 repairs or more
};

}  // namespace kiln::runs
