#pragma once
// The workflow run engine: advances one *group* of a run (the hosts of one pod in a pod-scope
// run, or a single host in a host-scope run) through the workflow's steps. Pure: no I/O, no
// clock, no threads, no storage format (the run store's is db/run_state_codec.h). The caller
// (runs/run_service) loads a GroupState, feeds it events (start, a step result, a timer tick,
// cancel), persists the new state together with the dispatches the engine asked for, all in one
// transaction.
//
// Semantics (orchestrator/workflow/README.md describes the YAML):
// - steps run in order on each host; a step's `when` false skips it;
// - a step succeeds when it started, was not timed out or cancelled, its exit code is in
//   expect_exit, its output parsed (if `parse`) and every check passed;
// - a failed step is retried `retries.count` times after `backoff`; then `on_failure` decides:
//   fail (the host stops and fails), continue (later steps run, the host fails at the end),
//   warn (recorded, the host may pass);
// - `barrier` (pod scope): a host waits until every host of the pod still running reaches it;
// - `run_on: leader` (pod scope): the pod's first host still running runs the step; the others
//   wait for its outcome and share it;
// - `retest: {from, times}`: when the step's checks fail, the host reruns the steps from `from`
//   to this one `times` more times; every element a check named ("gpu 2 link 7") is classified
//   transient (passed every retest: recorded as a warning, the host goes on) or persistent
//   (failed a retest: the host fails naming it). During a retest barriers are skipped and leader
//   steps run on the retesting host itself (a pod-wide tool started by any host of the pod);
// - `repeat` / `soak_between`: the whole step list must pass N times, a soak apart;
// - a host's verdict is final once every step ran (passed | failed) or the run is cancelled;
// - an `artifact` param in a step's argv becomes artifactPlaceholder(sha256) and the dispatch
//   carries the artifact (with the run's `artifact_checksums` / `artifact_signature` params,
//   when the workflow declares them); `when` and checks see the param's value as written.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/result.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/runs/read_back.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::runs {

using core::TimePoint;

// What an agent reported for one assignment (docs/agent-protocol.md).
struct StepResult {
  bool started = true;
  std::string spawn_error;
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  bool cancelled = false;
  bool lost = false;  // no report within the lease (set by the caller, not the agent)
  std::int64_t duration_ms = 0;
  std::string stdout_tail, stderr_tail;
  nlohmann::json parsed;  // null when the step has no parse
  std::string parse_error;
  std::string note;
};

// One finished attempt of one step on one host, kept for the API and for retests.
struct StepRecord {
  std::string step_id;
  int pass = 1;
  int attempt = 1;
  int retest_round = 0;  // 0 = the initial run
  std::string outcome;   // passed | failed | warned | skipped | shared (leader's outcome)
  std::string message;   // why it failed (exit code, failed checks, parse error, ...)
  int exit_code = -1;
  std::int64_t duration_ms = 0;
  TimePoint finished_at;
  std::string assignment_id;  // output tails live with the assignment, not in the run state
  nlohmann::json checks = nlohmann::json::array();  // [{name, passed, skipped, message}]

  bool operator==(const StepRecord&) const = default;
};

// Whether `r` carries a parsed output that the step's checks read (and a later delta check or
// the run view may show): the tool ran (not lost, started, neither cancelled nor timed out;
// any exit code) and its output parsed.
bool hasParsedOutput(const StepResult& r);

enum class HostStatus { kPending, kRunning, kPassed, kFailed, kCancelled };
const char* hostStatusName(HostStatus s);
bool isTerminal(HostStatus s);

struct RetestState {
  std::size_t step_index = 0;  // the step whose failed checks started the retest
  std::size_t from_index = 0;
  int rounds_left = 0;
  int round = 0;
  std::map<std::string, std::vector<bool>> elements;  // "gpu 2 link 7" -> results

  bool operator==(const RetestState&) const = default;
};

// What a host recorded for a `run_on: leader` step in the initial run (not a retest): what the
// pod's other hosts share once the leader is past it.
struct SharedOutcome {
  std::string outcome, message;

  bool operator==(const SharedOutcome&) const = default;
};

struct HostRun {
  std::string host;
  workflow::ContextFields fields;  // host.* and pod.* values for substitution
  HostStatus status = HostStatus::kPending;
  int pass = 1;
  std::size_t step_index = 0;
  int attempt = 1;
  std::optional<TimePoint> not_before;  // retry backoff or soak between passes
  // Why the host's first step waits for the job scheduler's drain gate (drain_gate.h), with
  // not_before set to the next look; empty when it does not wait for the gate.
  std::string waiting_for;
  std::string assignment_id;            // the outstanding dispatch, if any
  TimePoint dispatched_at;
  // A reboot step's recovery through the host's BMC (workflow::Recover, issue 32): the power
  // cycles made for the outstanding reboot dispatch, and the power cycle on the out-of-band
  // runner not reported yet. While it is out the reboot's own assignment stays open (its lease
  // kept, Effects::extend_leases) and the host starts nothing else.
  int power_cycles = 0;
  std::string recovery_assignment;
  std::size_t recovery_step = 0;  // the reboot step it is for (the host may be past it already)
  std::map<std::string, nlohmann::json> parsed;  // newest parsed output by step id, of delta baselines only
  bool soft_failed = false;
  std::vector<std::string> failures;  // reasons, for the verdict
  std::vector<std::string> warnings;
  std::optional<RetestState> retest;
  // Step records made since the state was loaded, oldest first. The store moves them into the
  // run's insert-only step log when it writes the state (a report's cost does not grow with the
  // run's history) and joins the log back in for views (RunStore::runGroups). The engine reads
  // only the records of the current event; what it needs later lives in leader_outcomes.
  std::vector<StepRecord> history;
  // The newest record of each leader step this host made, by leaderKey(step, pass).
  std::map<std::string, SharedOutcome> leader_outcomes;

  bool operator==(const HostRun&) const = default;
};

inline std::string leaderKey(const std::string& step_id, int pass) { return step_id + "#" + std::to_string(pass); }

struct GroupState {
  std::string run_id;
  std::string group;  // pod id (pod scope) or host id (host scope)
  std::vector<HostRun> hosts;  // pod order
  std::int64_t next_seq = 1;   // for assignment ids
  bool cancelled = false;
  bool stopping = false;       // stop at a safe point: running steps finish, no new step starts

  bool operator==(const GroupState&) const = default;
};

// An assignment the caller must store and make available to the host's agent, or, with
// `runner`, to that out-of-band runner (a step about the host's BMC, issue 32).
struct Dispatch {
  std::string assignment_id;
  std::string host;
  std::string runner;  // empty: the host's own agent
  std::string step_id;
  int attempt = 1;
  std::string type;  // run | reboot
  std::vector<std::string> argv;
  std::int64_t timeout_ms = 0;
  std::string parse;
  // The step's stdout_when_parsed: bytes of stdout sent back by a clean, parsed run (-1: all).
  std::int64_t parsed_output_cap = -1;
  bool inventory_after = false;
  // The artifacts argv names (artifact params, issue 31): argv holds their placeholders, the
  // agent fetches and checks each one and puts its local path there. One per sha256.
  std::vector<protocol::ArtifactRef> artifacts;
};

struct Effects {
  std::vector<Dispatch> dispatches;
  std::vector<std::string> cancel_assignments;
  std::vector<std::string> hosts_finished;  // hosts that reached a verdict in this call
  // Assignments whose lease ran out that the caller keeps dispatched, on the same lease, until
  // the time given, instead of losing them: a reboot whose host is being power-cycled, so that
  // the agent's report of its new boot is still taken.
  std::vector<std::pair<std::string, TimePoint>> extend_leases;
  // What read-back steps' devices reported of themselves (read_back.h): written as the devices'
  // component versions with the step's result.
  std::vector<DeviceVersion> device_versions;
  std::optional<TimePoint> next_wakeup;     // earliest timer the caller must tick at
};

class Engine {
 public:
  // `spec` and `params` (resolved, see workflow::resolveParams) must outlive the engine.
  Engine(const workflow::WorkflowSpec& spec, const workflow::ParamValues& params);

  // Builds the initial state of a group. `hosts` in pod order with their context fields.
  GroupState newGroup(const std::string& run_id, const std::string& group,
                      std::vector<std::pair<std::string, workflow::ContextFields>> hosts) const;

  Effects start(GroupState& g, TimePoint now) const;
  // A report for `assignment_id`; kNotFound when no host of the group waits for it (stale or
  // duplicate: the caller answers the agent accordingly and changes nothing).
  Result<Effects> onResult(GroupState& g, const std::string& assignment_id, const StepResult& r,
                           TimePoint now) const;
  Effects tick(GroupState& g, TimePoint now) const;
  Effects cancel(GroupState& g, const std::string& reason) const;
  // Stops at a safe point (rollout abort): a step already running finishes and is recorded,
  // then its host stops (cancelled); no new step starts. Firmware is never cut mid-flash.
  // `undispatched`: assignments no agent has taken yet (the store locked them as pending);
  // they are withdrawn (cancelled) and their hosts stop before that step, so a stop does not
  // wait for agents that are gone.
  Effects stop(GroupState& g, TimePoint now, const std::set<std::string>& undispatched = {}) const;

  static bool done(const GroupState& g);
  const workflow::WorkflowSpec& spec() const { return spec_; }

 private:
  // `before`: the hosts that were terminal when the event arrived (hosts_finished = the rest).
  Effects advance(GroupState& g, TimePoint now, const std::vector<bool>& before) const;
  static std::vector<bool> terminalMask(const GroupState& g);
  // Advances one host as far as it can go without waiting; returns true if it changed state.
  bool advanceHost(GroupState& g, std::size_t h, TimePoint now, Effects& fx) const;
  void finishStep(GroupState& g, std::size_t h, StepRecord rec, bool ok, const std::string& why,
                  const std::vector<std::string>& failed_at, bool check_failure, TimePoint now) const;
  // Keeps host.history[index] in leader_outcomes when it is the initial run's record of a
  // leader step (the followers share it).
  void noteLeaderOutcome(HostRun& host, std::size_t index) const;
  void applyOnFailure(HostRun& host, const workflow::StepSpec& step, const std::string& why) const;
  // A reboot's lease ran out: a power cycle through the host's BMC when its step has `recover`
  // and cycles are left (true: dispatched, the reboot stays open); else false, with `why_not`
  // saying why there was none when the step asked for it.
  bool startRecovery(GroupState& g, std::size_t h, const std::string& assignment_id, TimePoint now, Effects& fx,
                     std::string& why_not) const;
  Result<Effects> onRecoveryResult(GroupState& g, std::size_t h, const StepResult& r, TimePoint now) const;
  // onResult once the recovery had its say (`no_recovery`: why there was no power cycle).
  Result<Effects> onResultAfterRecovery(GroupState& g, std::size_t h, const std::string& assignment_id,
                                        const StepResult& r, TimePoint now, const std::vector<bool>& before,
                                        const std::string& no_recovery) const;
  void failHost(HostRun& host, const std::string& reason) const;
  std::optional<std::size_t> leaderOf(const GroupState& g) const;
  bool inRetestRange(const HostRun& host) const;
  const workflow::StepSpec& stepAt(std::size_t i) const { return spec_.steps[i]; }
  int repeatCount() const;
  workflow::Duration soak() const;

  const workflow::WorkflowSpec& spec_;
  const workflow::ParamValues& params_;
};

}  // namespace kiln::runs
