#pragma once
// Persistence of workflows, workflow runs and agent assignments, cut per consumer (below). The implementation
// (orchestrator/db/pg_run_store.cc) applies each change in one transaction: the engine's new
// group state, the assignments it dispatched or cancelled, and the host lifecycle transitions
// the run service derived, together. Thread-safe.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/runs/engine.h"

namespace kiln::runs {

struct WorkflowRow {
  std::string name, hash, source, yaml;  // source: the file's path, or "api"
  TimePoint updated_at;
  // The hash of the version kilnd last loaded from the workflow's file ("" when none was):
  // filled by currentWorkflow only.
  std::string file_hash;
};

// One stored version of a workflow (GET /workflows/{name}/versions).
struct WorkflowVersionInfo {
  std::string hash, source, created_by;
  TimePoint created_at;
  bool current = false;
  bool file_loaded = false;  // the version last loaded from the workflow's file
};

// A workflow version's entity tag (ETag header): its content hash, quoted.
inline std::string workflowEtag(const std::string& hash) { return "\"" + hash + "\""; }

struct RunRow {
  std::string id, workflow, workflow_hash, scope, purpose, state, created_by;
  std::string owner;
  nlohmann::json params = nlohmann::json::object();
  TimePoint created_at;
  std::optional<TimePoint> finished_at;
  nlohmann::json summary = nlohmann::json::object();
  std::vector<std::string> hosts;  // filled by getRun
  std::vector<std::string> pods;   // filled by listRuns: the first 4 pods of its hosts, sorted
};

// What the run service decided for one group: persisted atomically.
struct GroupUpdate {
  GroupState state;
  Effects effects;
  std::vector<core::HostTransition> transitions;  // checked by core::nextState; refused ones are skipped
};
// Called with the group's current state under a row lock.
using GroupFn = std::function<Result<GroupUpdate>(const RunRow& run, GroupState state)>;
// As GroupFn, with the group's assignments that no agent has taken yet, locked so that none is
// handed out while fn decides.
using StopFn = std::function<Result<GroupUpdate>(const RunRow& run, GroupState state,
                                                 const std::set<std::string>& undispatched)>;

struct NewGroup {
  std::string key;
  GroupUpdate update;
  std::vector<std::string> hosts;
};

struct NewRun {
  RunRow run;  // id is assigned by the store ("r-<n>")
  std::vector<NewGroup> groups;
  std::vector<core::HostTransition> start_transitions;  // e.g. incoming -> burn_in
  std::optional<core::IdempotencyClaim> claim;            // the request's Idempotency-Key, if any
};

struct AssignmentRow {
  std::string id, run_id, group_key, host, step_id, type, parse, state;
  // The out-of-band runner that runs it (a step about the host's BMC), or empty: the host's
  // agent. Whoever runs it is its worker (common/runner_key.h workerKey): only that key's
  // token claims and reports it.
  std::string runner;
  int attempt = 1;
  int lease = 0;
  std::vector<std::string> argv;
  std::int64_t timeout_ms = 0;
  bool inventory_after = false;
  std::int64_t parsed_output_cap = -1;  // Dispatch::parsed_output_cap
  std::vector<protocol::ArtifactRef> artifacts;  // what the step needs fetched (Dispatch::artifacts)
  std::optional<TimePoint> dispatched_at, lease_expires_at, finished_at;
  nlohmann::json result;  // the agent's report, null until reported
};

enum class ReportOutcome { kAccepted, kDuplicate, kStale, kCancelled };

struct ReportItem {
  std::string assignment_id, host;
  int lease = 0;
  const nlohmann::json* result = nullptr;  // the agent's report body; outlives the call
  const std::string* result_text = nullptr;  // the same as JSON text, when known; outlives the call
  GroupFn fn;                              // the engine's step, applied when accepted
  bool claim_next = false;
};

struct ReportReply {
  ReportOutcome outcome = ReportOutcome::kStale;
  std::optional<AssignmentRow> next;  // claimed in the report's transaction (claim_next)
  // The batch closed the last open group of this report's run: its verdict is due. (Two
  // batches closing a run's last two groups at once may both miss it; the controller's
  // periodic pass finds the run then.)
  bool run_complete = false;
};

struct RunFilter {
  std::string workflow, state, host, purpose;
};

struct Heartbeat {
  std::string host, boot_id;
  TimePoint at;
};

struct QuarantineRow {
  core::HostSummary host;
  int repairs = 0;
  std::string last_failure;
  std::string run_id;      // the newest quarantine-validation run, if any
  std::string run_state;
  nlohmann::json progress;  // {pass, passes, step, steps, status}
};

// The store is cut per consumer, as the rollouts room's is: each part of the runs room holds
// only its face, with a complete fake beside it (runs/testing). PgRunStore implements them
// all as one RunStore (orchestrator/db/pg_run_store.cc); the contract suite
// (orchestrator/db/tests/run_store_contract_test.cc) runs the fake and it alike.

// The workflow catalogue's (WorkflowCatalog, workflow_catalog.h).
class WorkflowStore {
 public:
  virtual ~WorkflowStore() = default;
  // Stores a workflow version (idempotent by hash) and makes it the current one. With
  // `if_match`, only while the current version's ETag (workflowEtag) matches: kPreconditionFailed.
  // A change of the current version is audited in the same transaction: `workflow.put` with
  // workflowChangeAudit's details (workflow_audit.h: both hashes and the YAML's diff).
  virtual Status putWorkflow(const WorkflowRow& w, const core::Actor& actor,
                             const std::optional<core::IfMatch>& if_match) = 0;
  // As putWorkflow, for the version kilnd loads from the workflow's file: it also becomes the
  // version last loaded from the file (WorkflowRow::file_hash), current before or not.
  virtual Status putWorkflowFile(const WorkflowRow& w, const core::Actor& actor,
                                 const std::optional<core::IfMatch>& if_match) = 0;
  // Every stored version of a workflow, newest first (by creation, then hash); empty for a
  // workflow that does not exist.
  virtual Result<std::vector<WorkflowVersionInfo>> workflowVersions(const std::string& name) = 0;
  virtual Result<std::optional<WorkflowRow>> currentWorkflow(const std::string& name) = 0;
  virtual Result<std::optional<WorkflowRow>> workflowVersion(const std::string& name, const std::string& hash) = 0;
  virtual Result<std::vector<WorkflowRow>> listWorkflows() = 0;
};

// Runs' records: what RunService starts, reads, stops and cancels (run_service.h).
class RunRecordStore {
 public:
  virtual ~RunRecordStore() = default;
  // A fresh run id ("r-<n>", increasing).
  virtual Result<std::string> nextRunId() = 0;
  virtual Result<RunRow> createRun(const NewRun& run, const core::Actor& actor) = 0;
  virtual Result<RunRow> getRun(const std::string& id) = 0;
  virtual Result<std::optional<std::string>> runByOwner(const std::string& owner) = 0;
  virtual Result<std::vector<GroupState>> runGroups(const std::string& id) = 0;
  virtual Result<std::vector<AssignmentRow>> runAssignments(const std::string& id) = 0;
  virtual Result<core::Page<RunRow>> listRuns(const RunFilter& filter, const core::PageRequest& page) = 0;
  // Applies fn to one group under its row lock, with its still pending assignments locked.
  virtual Status stopGroup(const std::string& run_id, const std::string& group, const StopFn& fn,
                           const core::Actor& actor) = 0;
  // Cancels a running run (every group through fn). kNotFound, kConflict when already finished.
  virtual Status cancelRun(const std::string& id, const GroupFn& fn, const core::Actor& actor) = 0;
  virtual Result<std::vector<QuarantineRow>> quarantine() = 0;
  // The state of each run of `ids` that exists (running | passed | failed | cancelled), read
  // in one query.
  virtual Result<std::map<std::string, std::string>> runStates(const std::vector<std::string>& ids) = 0;
};

// The agents' work: steps handed out and reported (AgentWorkService, agent_work_service.h).
class AgentWorkStore {
 public:
  virtual ~AgentWorkStore() = default;
  // The host's oldest pending assignment, handed out with a new lease that expires after its
  // timeout plus `grace_ms`. Called only for a poll without running=, i.e. an agent that holds
  // no step: a still-leased 'dispatched' assignment of the host is handed out again first (its
  // first answer was lost), same id and lease, its lease counted from now.
  virtual Result<std::optional<AssignmentRow>> claimWork(const std::string& host, std::int64_t grace_ms) = 0;
  // claimWork for many hosts in one transaction: at most one assignment each, by host.
  virtual Result<std::map<std::string, AssignmentRow>> claimBatch(const std::vector<std::string>& hosts,
                                                                  std::int64_t grace_ms) = 0;
  // Agents' reports, applied together in one transaction, by the rules of
  // runs::decideReports and runs::mergeReports (report_decision.h). An accepted one is stored
  // with the inventory it carries and its group's fn applied (a group's reports in batch order,
  // its state written once). With `claim_next` (the agent holds no other step) the host's next
  // work is claimed in that same transaction, as claimWork would hand it out, unless the report
  // is stale: one commit per batch instead of a report and a claim per step. Per item: its
  // reply, or kNotFound / kPermissionDenied. An error of any fn, or of the database, fails the
  // whole batch and writes nothing (the caller may apply the items one by one).
  virtual Result<std::vector<Result<ReportReply>>> reportBatch(const std::vector<ReportItem>& items,
                                                               std::int64_t grace_ms) = 0;
};

// The timer pass (RunTimers, run_timers.h): due timers, expired leases, finished runs,
// unreachable agents.
class RunTimerStore {
 public:
  virtual ~RunTimerStore() = default;
  // Applies fn to one group under its row lock.
  virtual Status updateGroup(const std::string& run_id, const std::string& group, const GroupFn& fn,
                             const core::Actor& actor) = 0;
  // Groups whose timer is due, as (run id, group key).
  virtual Result<std::vector<std::pair<std::string, std::string>>> dueGroups(TimePoint now, int limit) = 0;
  // Dispatched assignments whose lease ran out: marked lost and fn applied (one transaction each).
  virtual Result<std::vector<AssignmentRow>> expiredLeases(TimePoint now, int limit) = 0;
  virtual Result<bool> expireLease(const std::string& assignment_id, int lease, const GroupFn& fn) = 0;
  // Runs whose groups are all done get their final state and summary from `verdict`.
  using VerdictFn =
      std::function<std::pair<std::string, nlohmann::json>(const RunRow&, const std::vector<GroupState>&)>;
  virtual Result<std::vector<std::string>> finalizeRuns(const VerdictFn& verdict) = 0;
  // Hosts with an agent whose last poll is older than `cutoff` get an `unreachable` event (once).
  virtual Result<std::vector<std::string>> markUnreachable(TimePoint cutoff) = 0;
};

// An enrolment token for one host (POST /hosts/{id}/enrolment-tokens): the whole bearer token,
// shown once; spent by the host's first registration; worthless after `expires_at`.
struct HostEnrolment {
  core::NewToken token;
  TimePoint expires_at;
  bool reenroll = false;  // may replace the host's live agent
};

// A registration's outcome: the agent's new token, and the tokens it made worthless (the
// host's earlier agent tokens and, for a host's own enrolment token, that token): kilnd drops
// them from its token cache at once (other replicas learn of them within a second).
struct AgentEnrolled {
  core::NewToken token;
  std::vector<std::string> revoked;
};

// The agents' link: enrolment (POST /agents/register), liveness and what the gateway reads of
// the work (AgentGateway).
class AgentLinkStore {
 public:
  virtual ~AgentLinkStore() = default;
  // Agent enrolment with the enrolment token `actor` holds, by core::decideEnrolment
  // (core/enrolment.h), in one transaction: a host-bound token is spent, the host's earlier
  // agent tokens are revoked (a live one only by a re-enrolment token), a new agent token is
  // issued and the inventory, boot id and agent version recorded. Refused: nothing written.
  // The agent token expires after `token_ttl` (0: never).
  virtual Result<AgentEnrolled> enrollAgent(const std::string& host, const std::string& boot_id,
                                            const std::string& agent_version, const nlohmann::json& inventory,
                                            const core::Actor& actor, std::chrono::seconds token_ttl) = 0;
  // An agent renews its token over the channel it authenticates (`actor`, a live agent token of
  // `host`): a new token that expires after `token_ttl` (0: never), audited; the old one now
  // expires within `old_grace` (an agent that dies before it stores the new one still has the
  // old for that long). kPermissionDenied when `actor` is not `host`'s live agent token.
  virtual Result<AgentEnrolled> renewAgentToken(const std::string& host, const core::Actor& actor,
                                                std::chrono::seconds token_ttl, std::chrono::seconds old_grace) = 0;
  // Issues an enrolment token bound to `host`, valid for `ttl`, audited. kNotFound for an
  // unknown host.
  virtual Result<HostEnrolment> issueEnrolment(const std::string& host, std::chrono::seconds ttl, bool reenroll,
                                               const core::Actor& actor) = 0;
  // Batched liveness: one statement for many hosts; hosts that were unreachable get a
  // `reachable` event.
  virtual Status recordHeartbeats(const std::vector<Heartbeat>& beats) = 0;
  // Hosts with a pending or dispatched assignment.
  virtual Result<std::vector<std::string>> hostsWithOpenWork() = 0;
  virtual Result<std::optional<AssignmentRow>> assignment(const std::string& id) = 0;
};

// All of it, in one database.
class RunStore : public WorkflowStore,
                 public RunRecordStore,
                 public AgentWorkStore,
                 public RunTimerStore,
                 public AgentLinkStore {};

}  // namespace kiln::runs
