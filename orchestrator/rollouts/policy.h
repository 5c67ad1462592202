#pragma once
// Rollout policy, plan and admission: the rules that decide which pods a rollout touches and
// when. Every limit (concurrency, per-building capacity floor, per-building power, failure
// budget, waves and soak, pause, maintenance windows) is enforced in admit() and nowhere else.
// Pure, thread-safe.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/host_lifecycle.h"
#include "orchestrator/rollouts/bundle.h"

namespace kiln::rollouts {

struct WaveSize {
  double value = 100;
  bool percent = true;  // else a pod count
  bool operator==(const WaveSize&) const = default;
};

// A maintenance window, in UTC, written "[DAYS ]HH:MM-HH:MM": "mon-fri 22:00-06:00",
// "sat,sun 00:00-24:00", "02:00-05:00" (every day). DAYS are mon..sun, lists and ranges
// ("fri-mon" wraps); a window whose end is not after its start closes on the next day and
// belongs to the day it opens.
struct MaintenanceWindow {
  unsigned days = 0x7f;  // bit d: opens on day d (0 = Monday)
  int start_min = 0;     // minutes after 00:00 UTC
  int end_min = 24 * 60;
  std::string text;  // as written
  bool operator==(const MaintenanceWindow&) const = default;
};

// nullopt: not of that form (`why` says what was expected).
std::optional<MaintenanceWindow> parseWindow(const std::string& text, std::string* why = nullptr);
// Inside one of `windows` at `t` (no windows: always).
bool windowOpen(const std::vector<MaintenanceWindow>& windows, core::TimePoint t);
// When the next of `windows` opens after `t` (t itself if one is open); nullopt for none.
std::optional<core::TimePoint> nextWindowOpen(const std::vector<MaintenanceWindow>& windows, core::TimePoint t);
// When the windows open at `t` stop covering it (adjacent or overlapping windows count as one);
// nullopt when none is open at `t` or they never close (every day around the clock).
std::optional<core::TimePoint> windowCloses(const std::vector<MaintenanceWindow>& windows, core::TimePoint t);
// The first time at or after `t` when the windows are open and stay open for `need` (no
// windows: t); nullopt when no stretch within a week is that long.
std::optional<core::TimePoint> nextWindowFitting(const std::vector<MaintenanceWindow>& windows, core::TimePoint t,
                                                 core::Clock_::duration need);

// As documents: the REST edge's (api/rollout_documents.h) and the rollouts table's (db/rollout_codecs.h).
struct Policy {
  int canary_pods = 1;
  // Cumulative: by the end of wave i, this share (or count) of the eligible pods is done; the
  // last wave always takes the rest.
  std::vector<WaveSize> waves = {{10, true}, {50, true}, {100, true}};
  std::chrono::seconds soak{600};
  int max_concurrent_pods = 2;
  // Per building, pods out of service at once (any reason, any rollout, plus the one starting).
  std::optional<int> max_pods_down_per_building;
  std::optional<double> max_fraction_down_per_building = 0.25;
  bool skip_allocated = false;  // allocated: wait (default) | skip
  // Halt when MORE than this many pods (or this percent of eligible pods) failed.
  std::optional<int> failure_budget_pods = 1;
  std::optional<double> failure_budget_percent;
  // Pods upgrading (flash + reboot) at once per building: large synchronized reboots are
  // multi-MW power swings (docs/FACTS.md).
  int max_rebooting_pods_per_building = 2;
  std::string order = "spread";  // spread (round-robin over buildings) | name
  // New pods start only inside one of these (none, the default: at any time). Pods in flight when a window
  // closes finish, as when the rollout is paused.
  std::vector<MaintenanceWindow> windows;
  // The workflow that validates each upgraded pod (issue 32): this rollout's choice, else the
  // bundle's validation_workflow, else kilnd's default (pre-job-health).
  std::string validation_workflow;
  bool operator==(const Policy&) const = default;
};

struct Selector {
  std::vector<std::string> sites, buildings, platforms, pods;
  std::map<std::string, std::string> labels;
  bool operator==(const Selector&) const = default;
};

// What the planner knows of a selected pod.
struct PodFacts {
  std::string id, site, building, platform;
  core::PodState state = core::PodState::kInService;
  std::map<std::string, std::string> labels;
  bool allocated = false;       // a host of the pod runs a job
  std::string other_rollout;    // id of another active rollout holding the pod
  PodCompliance compliance;
};

bool selectorMatches(const Selector& s, const PodFacts& p);

struct Exclusion {
  std::string pod, reason;
};

// A planned pod the bundle would move to an older version of some component (issue 18).
struct Downgrade {
  std::string pod;
  std::vector<std::string> reasons;  // "nic 28.45.1200 -> 28.44.1036 (older)"
};

// As a document (RolloutRow::plan and the dry run's answer): plan_document.h.
struct Plan {
  std::vector<std::vector<std::string>> waves;  // waves[0] = canary
  std::vector<Exclusion> excluded;
  int eligible = 0;
  // The planned pods that would be downgraded: a rollout with any is refused unless it is a
  // rollback or says allow_downgrade with a reason (RolloutService::create).
  std::vector<Downgrade> downgrades;
};

Plan planRollout(const std::vector<PodFacts>& selected, const Policy& policy);

// ---- admission at run time ----

enum class PodPhase { kPending, kDraining, kUpgrading, kValidating, kSucceeded, kFailed, kSkipped, kAborted };
const std::vector<PodPhase>& allPodPhases();
const char* podPhaseName(PodPhase p);
std::optional<PodPhase> parsePodPhase(const std::string& s);
// The one definition of the sets (the PostgreSQL store writes its SQL lists from them).
// In flight: drained or draining, holding a slot of max_concurrent_pods.
bool inFlight(PodPhase p);
bool finished(PodPhase p);
const std::vector<PodPhase>& inFlightPhases();
const std::vector<PodPhase>& unfinishedPhases();  // pending and in flight

// A rollout's state (the rollouts table's CHECK; GET /rollouts filters on it):
//   created -> running <-> paused; running -> halted (failure budget) -> running (resume);
//   any of those -> aborting -> aborted; running -> completed.
enum class RolloutState { kCreated, kRunning, kPaused, kHalted, kAborting, kCompleted, kAborted };
const char* rolloutStateName(RolloutState s);
std::optional<RolloutState> parseRolloutState(const std::string& s);
const std::vector<RolloutState>& allRolloutStates();
// The states the controller works on: running, paused, halted, aborting.
bool active(RolloutState s);
const std::vector<RolloutState>& activeRolloutStates();
bool finished(RolloutState s);  // completed or aborted
const std::vector<RolloutState>& unfinishedRolloutStates();
// "paused, halted": for messages.
std::string stateList(const std::vector<RolloutState>& states);

// What admission knows of a pending pod's hosts. A pod is admitted only when at least `needed`
// of its `total` hosts can serve after the upgrade, i.e. are not in one of the `out` states
// (failed, repair, quarantine, retired, incoming, burn_in: no drain and no upgrade brings
// them back). Otherwise it waits ("repair: ..."), holding no slot and not counting against the
// failure budget, until repair and quarantine validation return enough hosts (or an operator
// skips it). This is what keeps a resumed or retried pod whose hosts are still in repair from
// failing again. total == 0: not known, not checked.
// The host states admission reads of a pending pod (RolloutStore::podHostStates): allocated
// (the pod waits for the job scheduler) and those core::unservableAfterMaintenance counts.
bool admissionCounts(core::HostState s);
const std::vector<core::HostState>& admissionHostStates();

struct PodHostFacts {
  int total = 0;                     // compute trays (18)
  int needed = 0;                    // that must serve for a slice (16 of 18: 64 GPUs)
  int slice_gpus = 0;                // 64
  std::map<core::HostState, int> out;  // host state -> hosts (core::unservableAfterMaintenance)
};

struct LivePod {
  std::string id, building;
  int wave = 0;
  PodPhase phase = PodPhase::kPending;
  bool allocated = false;
  PodHostFacts hosts;
};

struct BuildingLoad {
  int pods = 0;       // pods in the building
  int down = 0;       // out of service now: any reason, any rollout
  int upgrading = 0;  // in the upgrading phase of any rollout
};

struct AdmissionInput {
  Policy policy;
  bool paused = false;
  bool halted = false;
  std::vector<LivePod> pods;  // this rollout's, in plan order
  std::map<std::string, BuildingLoad> buildings;
  std::optional<core::TimePoint> previous_wave_finished;  // when the last finished wave ended
  // The P90 of this rollout's finished pods' times (none finished yet: not known). A pod does
  // not start inside a maintenance window that closes sooner than this.
  std::optional<std::chrono::seconds> pod_time_p90;
  core::TimePoint now;
};

struct AdmissionResult {
  std::vector<std::string> admit;             // pods to start draining now, in order
  std::map<std::string, std::string> waiting;  // pod -> why it waits
  // Allocated pods that every limit would admit now: the job scheduler is asked to release
  // them. Each holds its slot (concurrency, capacity floor, power) while it waits, so the pods
  // released at once never exceed what the policy allows to start.
  std::vector<std::string> release;
  int current_wave = 0;
  bool halt = false;
  std::string halt_reason;
  bool complete = false;  // every pod finished
};

AdmissionResult admit(const AdmissionInput& in);

// How many pods may fail before the rollout halts (it halts when MORE fail), for `eligible`
// pods (those not skipped); INT_MAX without a budget. admit() and /metrics use this one rule.
int failureBudget(const Policy& policy, int eligible);

// P50/P90 of durations (seconds), nearest-rank; 0 for none.
double percentile(std::vector<double> values, double p);

}  // namespace kiln::rollouts
