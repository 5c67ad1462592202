#pragma once
// Kiln and Slurm (issue 12, deploy/OPERATIONS.md "Slurm"): what Slurm says about its nodes and
// jobs, how a Kiln host is named in Slurm, and the one pure function that decides what to do
// about the difference: drain a node, resume one Kiln drained, move a Kiln host between
// available and allocated, record an interruption. The rules that keep the fleet safe live here:
//
//   - a node is drained while its host is anywhere but available/allocated, or while a rollout
//     asked for it, with a reason that names the Kiln object ("kiln: ro-3 firmware-upgrade ...");
//   - Kiln resumes a node when its host came back into service after the drain (validated,
//     released) and no rollout's ask stands;
//   - Kiln resumes only a node it drained (its drain ledger has the node) whose reason is still
//     Kiln's: a node drained or downed by someone else is never resumed. A drained node whose
//     reason starts "kiln:" is adopted into the ledger while its host is out of service in
//     Kiln, and Slurm's "Prolog error" drain of such a host (Kiln's prolog failed it) is
//     re-drained with Kiln's reason;
//   - a host may leave `draining` for maintenance only once its node is drained and empty
//     (drainHeldBack), judged on an observation made after Kiln's last resume of that node.
//
// Pure: no I/O, no clock. Thread-compatible.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/reliability/reliability_service.h"

namespace kiln::scheduler {

using core::TimePoint;

// One node as `sinfo --json` prints it.
struct SlurmNode {
  std::string name;
  std::string state;               // base state: IDLE, ALLOCATED, MIXED, DOWN, FUTURE, UNKNOWN, ...
  std::set<std::string> flags;     // DRAIN, COMPLETING, NOT_RESPONDING, MAINTENANCE, ...
  std::string reason;              // without Slurm's " [user@time]" suffix
  std::string reason_user;
  std::optional<TimePoint> reason_time;

  bool drain() const { return flags.count("DRAIN") > 0; }
  bool down() const { return state == "DOWN" || flags.count("NOT_RESPONDING") > 0; }
  // Jobs are on it (running or still completing).
  bool busy() const { return state == "ALLOCATED" || state == "MIXED" || flags.count("COMPLETING") > 0; }
  // "IDLE+DRAIN" as sinfo would say it.
  std::string text() const;
};

// One job as `squeue --json` prints it (running, pending and, for MinJobAge, ended ones).
struct SlurmJob {
  std::string id;
  std::string state;               // RUNNING, PENDING, NODE_FAIL, COMPLETED, CANCELLED, ...
  std::vector<std::string> nodes;  // expanded NodeList
  std::optional<TimePoint> start, end;
  std::string reason;              // Slurm's Reason (why pending, or why it ended)
  std::optional<int> gpus;         // from its TRES (gres/gpu), when it asked for GPUs
  bool requeued = false;           // Restarts > 0
};

// A drain Kiln made: a row of its drain ledger (the database), so a kilnd killed while nodes are
// drained still resumes exactly those after a restart, and no other.
struct Drain {
  std::string node, host, reason;
  TimePoint at;
  bool operator==(const Drain&) const = default;
};

// Parsers of Slurm 22.05's `sinfo --json` and `squeue --json` (its scontrol has no --json;
// orchestrator/scheduler/tests/testdata/slurm-22.05). kInvalidArgument naming what was wrong.
Result<std::vector<SlurmNode>> parseNodesJson(std::string_view text);
Result<std::vector<SlurmJob>> parseJobsJson(std::string_view text);

// How a Kiln host is named in Slurm: `nodes` (an explicit map, host -> node) first, then
// `rule`, a template of {host}, {pod}, {tray}, {tray2} (two digits), {rack}, {building}, {site}.
// The fleet model has no host labels, so the map stands in for a label.
struct NodeNaming {
  std::string rule = "{host}";
  std::map<std::string, std::string> nodes;
  // kInvalidArgument for an unknown placeholder or an unclosed brace.
  static Result<NodeNaming> make(std::string rule, std::map<std::string, std::string> nodes);
  std::string nodeOf(const core::HostSummary& h) const;
};

// What to do about jobs on a node a rollout asked for.
enum class JobPolicy {
  kWait,     // let them finish (never kill a job)
  kRequeue,  // ask Slurm to requeue them (scontrol requeue): the job restarts elsewhere
};

// A rollout's ask for a host (the release hook, or the drain gate): drain its node with
// `reason`. Kept until the host has been out of service and back (`touched`), or, untouched,
// until `expires`.
struct DrainRequest {
  std::string reason;
  TimePoint at;
  bool touched = false;
};

struct Notice {
  std::string host, node, text;
  bool warning = false;
};


struct ReconcileInput {
  std::vector<core::HostSummary> hosts;
  std::vector<SlurmNode> nodes;
  std::vector<SlurmJob> jobs;
  std::vector<Drain> ledger;
  std::map<std::string, DrainRequest> requests;  // by host
  // Jobs running on each node at the previous pass (to see a node go down under a job).
  std::map<std::string, std::vector<SlurmJob>> running_before;
  JobPolicy policy = JobPolicy::kWait;
  TimePoint now;
};

struct ReconcilePlan {
  std::vector<Drain> drain;                    // write to the ledger, then scontrol drain
  std::vector<Drain> adopt;                    // drained with a "kiln:" reason: write to the ledger
  std::vector<Drain> resume;                   // scontrol resume, then remove from the ledger
  std::vector<std::string> forget;             // ledger rows of drains someone else took over
  std::vector<core::HostTransition> moves;     // allocate / release
  std::vector<std::string> requeue;            // job ids
  // Ids "slurm-<job>-<start>": the same on every pass and after a restart; owner "slurm".
  std::vector<reliability::Interruption> interruptions;
  std::vector<Notice> notices;
  std::map<std::string, DrainRequest> requests;  // the requests to keep
  std::map<std::string, std::vector<SlurmJob>> running;  // for the next pass's running_before
};

// The reason Kiln writes for a host drained for its state (not for a rollout's ask):
// "kiln: failed (pre-job check wr-12: ...)". At most 200 bytes, no control characters.
std::string stateReason(const core::HostSummary& h);
// `text` made fit for a Slurm reason: control characters and quotes become spaces, at most
// 200 bytes (cut on a UTF-8 boundary).
std::string cleanReason(std::string_view text);

// The interruption cause a Slurm reason points at ("Not responding" -> unknown, "kiln: ..." ->
// host_maintenance, "xid 79 / nvlink" -> nvlink_signal_integrity, ...).
std::string causeFromReason(std::string_view reason);

ReconcilePlan reconcile(const ReconcileInput& in, const NodeNaming& naming);

// The drain gate: nullopt when `node` may be worked on (drained and empty in `observed`, or not
// a Slurm node at all), else why it must wait. `observed` is null when no observation made after
// Kiln's last resume of the node exists.
std::optional<std::string> drainHeldBack(const std::string& node, const SlurmNode* observed, bool known_to_slurm,
                                         const std::vector<SlurmJob>& jobs_on_node);

}  // namespace kiln::scheduler
