#include "orchestrator/db/pg_run_store.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <unordered_map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/runner_key.h"
#include "orchestrator/core/enrolment.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/iso_time.h"
#include "orchestrator/db/pg_internal.h"
#include "orchestrator/db/pg_pool.h"
#include "orchestrator/db/run_state_codec.h"
#include "orchestrator/runs/report_decision.h"
#include "orchestrator/runs/workflow_audit.h"

namespace kiln::db {
namespace {

using nlohmann::json;
using runs::AssignmentRow;
using runs::GroupFn;
using runs::GroupState;
using runs::GroupUpdate;
using runs::RunRow;

// The columns runFromRow reads, of workflow_runs under alias `a` ("" or "r.").
std::string runColumns(const std::string& a) {
  return a + "id, " + a + "workflow, " + a + "workflow_hash, " + a + "scope, " + a + "purpose, " + a + "state, " + a +
         "created_by, " + a + "params::text, extract(epoch from " + a + "created_at)::float8, extract(epoch from " + a +
         "finished_at)::float8, " + a + "summary::text, coalesce(" + a + "owner, '')";
}
const std::string kRunColumns = runColumns("");

constexpr int kRunColumnCount = 12;

RunRow runFromRow(const pqxx::row& r, int o = 0) {
  RunRow run;
  run.id = r[o + 0].as<std::string>();
  run.workflow = r[o + 1].as<std::string>();
  run.workflow_hash = r[o + 2].as<std::string>();
  run.scope = r[o + 3].as<std::string>();
  run.purpose = r[o + 4].as<std::string>();
  run.state = r[o + 5].as<std::string>();
  run.created_by = r[o + 6].as<std::string>();
  run.params = json::parse(r[o + 7].c_str());
  run.created_at = fromEpoch(r[o + 8].as<double>());
  run.finished_at = optEpoch(r[o + 9]);
  run.summary = json::parse(r[o + 10].c_str());
  run.owner = r[o + 11].as<std::string>();
  return run;
}

// The columns assignmentFromRow reads, of assignments under alias `a` ("" or "a.").
std::string assignmentColumns(const std::string& a) {
  return a + "id, " + a + "run_id, " + a + "group_key, " + a + "host_id, " + a + "step_id, " + a + "type, " + a +
         "parse, " + a + "state, " + a + "attempt, " + a + "lease, " + a + "argv::text, " + a + "timeout_ms, " + a +
         "inventory_after, extract(epoch from " + a + "dispatched_at)::float8, extract(epoch from " + a +
         "lease_expires_at)::float8, extract(epoch from " + a + "finished_at)::float8, " + a + "result::text, " + a +
         "artifacts::text, coalesce(" + a + "runner, ''), coalesce(" + a + "parsed_output_cap, -1)";
}
const std::string kAssignmentColumns = assignmentColumns("");

AssignmentRow assignmentFromRow(const pqxx::row& r) {
  AssignmentRow a;
  a.id = r[0].as<std::string>();
  a.run_id = r[1].as<std::string>();
  a.group_key = r[2].as<std::string>();
  a.host = r[3].as<std::string>();
  a.step_id = r[4].as<std::string>();
  a.type = r[5].as<std::string>();
  a.parse = r[6].as<std::string>();
  a.state = r[7].as<std::string>();
  a.attempt = r[8].as<int>();
  a.lease = r[9].as<int>();
  a.argv = json::parse(r[10].c_str()).get<std::vector<std::string>>();  // written from a StepDispatch argv
  a.timeout_ms = r[11].as<std::int64_t>();
  a.inventory_after = r[12].as<bool>();
  a.dispatched_at = optEpoch(r[13]);
  a.lease_expires_at = optEpoch(r[14]);
  a.finished_at = optEpoch(r[15]);
  if (!r[16].is_null()) a.result = json::parse(r[16].c_str());
  if (!r[17].is_null()) {
    auto artifacts = artifactsFromStored(json::parse(r[17].c_str()));
    // The store wrote it (storedArtifacts): unreadable means a damaged row; the transaction's
    // catch turns this into the read's error.
    if (!artifacts.ok()) throw std::runtime_error(artifacts.error().message);
    a.artifacts = std::move(*artifacts);
  }
  a.runner = r[18].as<std::string>();
  a.parsed_output_cap = r[19].as<std::int64_t>();
  return a;
}

// The dispatch hot path (claim, report, lease checks, group writes), prepared on every pooled
// connection. Many rows travel as one JSON parameter (json_to_recordset): one round trip per
// kind of row, however many reports a transaction carries. Reports' results and group states
// are `json` columns (schema 17): stored as sent, not converted to jsonb. A group row is
// locked before any of its assignment rows, everywhere, and several groups in (run, group)
// order (claims skip locked rows and never wait).
//
// Rows are found by key as `key = ANY(ARRAY(SELECT ... FROM jsonb_...($n)))`, not as a join
// with the JSON rows or `key IN (SELECT ...)`: the planner counts 100 rows for any set-returning
// function but 10 for an array it cannot see, so these plans probe the primary key. With the
// join, the report transaction's generic plans read every open assignment (a bitmap scan of
// the partial indexes, ~300 pages a call with 1,800 hosts) or, when planned on a young table,
// scanned it whole (48 M rows read in one 100-pod rollout). bench/rollout/README.md has the
// figures.
const std::string kLockGroup = "SELECT " + runColumns("r.") +
                               ", g.state::text FROM run_groups g JOIN workflow_runs r ON r.id = g.run_id"
                               " WHERE g.run_id = $1 AND g.group_key = $2 FOR UPDATE OF g";
// Reported assignments with their groups, locked. An assignment's run, group and host never
// change, so they are read with the lock.
// The worker of each (common/runner_key.h): the runner's key for a step about a BMC.
const std::string kReportLock = "SELECT a.id, coalesce('runner:' || a.runner, a.host_id), a.group_key, " + runColumns("r.") +
                                ", g.state::text FROM assignments a"
                                " JOIN run_groups g ON g.run_id = a.run_id AND g.group_key = a.group_key"
                                " JOIN workflow_runs r ON r.id = a.run_id"
                                " WHERE a.id = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))"
                                " ORDER BY g.run_id, g.group_key FOR UPDATE OF g";
// $1 the rows (id, lease, result) of the reports runs::decideReports accepted, $2 their ids.
// Guarded by what was decided (dispatched on that lease): every row must come back.
constexpr const char* kReportDone =
    "UPDATE assignments a SET state = 'done', finished_at = now(), result = v.result"
    " FROM json_to_recordset($1::json) AS v(id text, lease int, result json)"
    " WHERE a.id = ANY(ARRAY(SELECT jsonb_array_elements_text($2::jsonb)))"
    " AND a.id = v.id AND a.state = 'dispatched' AND a.lease = v.lease RETURNING a.id, a.lease";
// The reported assignments' states and leases, read once their groups are locked.
constexpr const char* kAssignmentStates =
    "SELECT id, state, lease FROM assignments WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))";
constexpr const char* kGroupRows = "AS v(run_id text, group_key text, state json, done boolean, wake float8)";
const std::string kInsertGroups = std::string(
                                      "INSERT INTO run_groups (run_id, group_key, state, done, next_wakeup)"
                                      " SELECT v.run_id, v.group_key, v.state, v.done, to_timestamp(v.wake)"
                                      " FROM json_to_recordset($1::json) ") +
                                  kGroupRows;
// $1 the rows, $2 their run ids and $3 their group keys (JSON arrays).
const std::string kUpdateGroups = std::string(
                                      "UPDATE run_groups g SET state = v.state, done = v.done, next_wakeup = to_timestamp(v.wake)"
                                      " FROM json_to_recordset($1::json) ") +
                                  kGroupRows +
                                  " WHERE g.run_id = ANY(ARRAY(SELECT jsonb_array_elements_text($2::jsonb)))"
                                  " AND g.group_key = ANY(ARRAY(SELECT jsonb_array_elements_text($3::jsonb)))"
                                  " AND g.run_id = v.run_id AND g.group_key = v.group_key";
// A batch's new step records, in the order given (the log's id orders a run's records).
constexpr const char* kInsertRecords =
    "INSERT INTO run_step_records (run_id, group_key, host_id, record)"
    " SELECT v.run_id, v.group_key, v.host_id, v.record FROM ROWS FROM"
    " (json_to_recordset($1::json) AS (run_id text, group_key text, host_id text, record json))"
    " WITH ORDINALITY AS v(run_id, group_key, host_id, record, n) ORDER BY v.n";
constexpr const char* kInsertAssignments =
    "INSERT INTO assignments (id, run_id, group_key, host_id, step_id, attempt, type, argv, timeout_ms, parse,"
    " inventory_after, artifacts, runner, parsed_output_cap, state)"
    " SELECT v.id, v.run_id, v.group_key, v.host_id, v.step_id, v.attempt, v.type, v.argv, v.timeout_ms, v.parse,"
    " v.inventory_after, v.artifacts, NULLIF(v.runner, ''), v.parsed_output_cap, 'pending'"
    " FROM jsonb_to_recordset($1::jsonb) AS v(id text,"
    " run_id text, group_key text, host_id text, step_id text, attempt int, type text, argv jsonb, timeout_ms bigint,"
    " parse text, inventory_after boolean, artifacts jsonb, runner text, parsed_output_cap integer)";
constexpr const char* kCancelAssignments =
    "UPDATE assignments SET state = 'cancelled', finished_at = now()"
    " WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb))) AND state IN ('pending', 'dispatched')";
// The next work of hosts whose agents hold no step: first a step handed out before whose answer
// never reached the agent (kilnd died between the commit and the reply, or the agent gave up
// on the poll), the same id and lease again with the lease counted from now (kiln-agent's
// journal knows an id it already ran); else the host's oldest pending step with a new lease.
// At most one per host; $1 is a JSON array of host ids. A host's agent never gets a step about
// its BMC (runner set): that is its out-of-band runner's (kClaimRunner, $1 runner names).
std::string claimSql(const std::string& match) {
  return "UPDATE assignments a SET state = 'dispatched',"
         " lease = CASE WHEN a.state = 'pending' THEN a.lease + 1 ELSE a.lease END,"
         " dispatched_at = CASE WHEN a.state = 'pending' THEN now() ELSE a.dispatched_at END,"
         " lease_expires_at = now() + (a.timeout_ms + $2) * interval '1 millisecond'"
         " FROM (SELECT c.id FROM jsonb_array_elements_text($1::jsonb) AS h(host) CROSS JOIN LATERAL"
         "   (SELECT id FROM assignments WHERE " + match +
         "     AND (state = 'pending' OR (state = 'dispatched' AND lease_expires_at > now()))"
         "     ORDER BY state = 'pending', CASE WHEN state = 'pending' THEN created_at ELSE dispatched_at END, id"
         "     LIMIT 1 FOR UPDATE SKIP LOCKED) c) pick"
         " WHERE a.id = pick.id RETURNING " +
         assignmentColumns("a.");
}
const std::string kClaim = claimSql("host_id = h.host AND runner IS NULL");
const std::string kClaimRunner = claimSql("runner = h.host");
const std::string kAssignmentById = "SELECT " + kAssignmentColumns + " FROM assignments WHERE id = $1";
// An agent's inventory (writeInventory): $1 the host, $2 a JSON object kind -> version of its
// own components. Rows already at the reported version are left out before the upsert locks
// them, so the 18 hosts of a pod reporting one switch version after their reboot do not queue
// on each other's switch-tray rows; rows are locked in key order.
constexpr const char* kInventoryHost =
    "INSERT INTO components (target_id, pod_id, kind, version)"
    " SELECT h.id, h.pod_id, v.key, v.value FROM hosts h CROSS JOIN jsonb_each_text($2::jsonb) v"
    " WHERE h.id = $1 AND NOT EXISTS (SELECT 1 FROM components c"
    "   WHERE c.target_id = h.id AND c.kind = v.key AND c.version = v.value)"
    " ORDER BY v.key"
    " ON CONFLICT (target_id, kind) DO UPDATE SET version = excluded.version, updated_at = now()"
    " WHERE components.version <> excluded.version";
// The nvswitch version $3 (kind $2) onto every switch tray of host $1's pod, unless the pod's
// management block names its switch trays' BMCs (issue 32): their versions then come only from
// their own read-back (deviceVersions), never from what a compute host says of them.
constexpr const char* kInventorySwitches =
    "INSERT INTO components (target_id, pod_id, kind, version)"
    " SELECT s.id, s.pod_id, $2, $3 FROM switch_trays s JOIN hosts h ON h.pod_id = s.pod_id"
    " JOIN pods p ON p.id = h.pod_id AND coalesce(p.management->>'switch_bmc', '') = ''"
    " WHERE h.id = $1 AND NOT EXISTS (SELECT 1 FROM components c"
    "   WHERE c.target_id = s.id AND c.kind = $2 AND c.version = $3)"
    " ORDER BY s.id"
    " ON CONFLICT (target_id, kind) DO UPDATE SET version = excluded.version, updated_at = now()"
    " WHERE components.version <> excluded.version";
constexpr const char* kInventoryAt = "UPDATE hosts SET inventory_at = now() WHERE id = $1";
// Read-back versions (runs/read_back.h), $1 [{device, kind, version, host}]: a device is the
// reporting host itself (its own kinds) or a switch tray of its pod (nvswitch), as the engine
// decided; the join keeps to that even if it did not. Rows in key order.
constexpr const char* kDeviceVersions =
    "INSERT INTO components (target_id, pod_id, kind, version)"
    " SELECT v.device, h.pod_id, v.kind, v.version"
    " FROM jsonb_to_recordset($1::jsonb) AS v(device text, kind text, version text, host text)"
    " JOIN hosts h ON h.id = v.host"
    " WHERE (v.device = h.id AND v.kind <> 'nvswitch') OR (v.kind = 'nvswitch' AND EXISTS"
    "   (SELECT 1 FROM switch_trays s WHERE s.id = v.device AND s.pod_id = h.pod_id))"
    " ORDER BY v.device, v.kind"
    " ON CONFLICT (target_id, kind) DO UPDATE SET version = excluded.version, updated_at = now()"
    " WHERE components.version <> excluded.version";

std::vector<PreparedStatement> runStatements() {
  return {{"lock_group", kLockGroup},
          {"report_lock", kReportLock},
          {"report_done", kReportDone},
          {"assignment_states", kAssignmentStates},
          {"insert_groups", kInsertGroups},
          {"update_groups", kUpdateGroups},
          {"insert_records", kInsertRecords},
          {"insert_assignments", kInsertAssignments},
          {"cancel_assignments", kCancelAssignments},
          {"claim", kClaim},
          {"claim_runner", kClaimRunner},
          {"assignment_by_id", kAssignmentById},
          {"inventory_host", kInventoryHost},
          {"inventory_switches", kInventorySwitches},
          {"inventory_at", kInventoryAt},
          {"device_versions", kDeviceVersions}};
}

runs::WorkflowRow workflowFromRow(const pqxx::row& r) {
  return {r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<std::string>(),
          fromEpoch(r[4].as<double>())};
}


// What the engine and the service decided for one group, to be written.
struct GroupWrite {
  const RunRow* run;
  std::string group_key;
  const GroupUpdate* update;
  core::Actor actor;  // of its host transitions
};

// Writes groups' new states (their step records into the run's step log, the rest into the
// group row), the assignments they dispatched or cancelled, and their host transitions: one
// statement per kind of row (transitions one by one).
void persistUpdates(pqxx::work& txn, const std::vector<GroupWrite>& writes, bool insert) {
  json groups = json::array(), records = json::array(), dispatches = json::array(), cancels = json::array();
  json group_runs = json::array(), group_keys = json::array(), devices = json::array();
  for (const auto& w : writes) {
    const GroupUpdate& u = *w.update;
    const bool done = runs::Engine::done(u.state);
    for (const auto& h : u.state.hosts)
      for (const auto& r : h.history)
        records.push_back({{"run_id", w.run->id}, {"group_key", w.group_key}, {"host_id", h.host}, {"record", storedRecord(r)}});
    group_runs.push_back(w.run->id);
    group_keys.push_back(w.group_key);
    groups.push_back({{"run_id", w.run->id},
                      {"group_key", w.group_key},
                      {"state", storedGroup(u.state, Records::kWithout)},
                      {"done", done},
                      {"wake", u.effects.next_wakeup && !done ? json(toEpoch(*u.effects.next_wakeup)) : json()}});
    for (const auto& d : u.effects.dispatches)
      dispatches.push_back({{"id", d.assignment_id}, {"run_id", w.run->id}, {"group_key", w.group_key},
                            {"host_id", d.host}, {"step_id", d.step_id}, {"attempt", d.attempt}, {"type", d.type},
                            {"argv", d.argv}, {"timeout_ms", d.timeout_ms}, {"parse", d.parse},
                            {"inventory_after", d.inventory_after}, {"artifacts", storedArtifacts(d.artifacts)},
                            {"runner", d.runner},
                            {"parsed_output_cap", d.parsed_output_cap >= 0 ? json(d.parsed_output_cap) : json()}});
    for (const auto& id : u.effects.cancel_assignments) cancels.push_back(id);
    for (const auto& v : u.effects.device_versions)
      devices.push_back({{"device", v.device}, {"kind", v.kind}, {"version", v.version}, {"host", v.reported_by}});
  }
  if (!groups.empty()) {
    if (insert) txn.exec_prepared("insert_groups", groups.dump());
    else txn.exec_prepared("update_groups", groups.dump(), group_runs.dump(), group_keys.dump());
  }
  if (!records.empty()) txn.exec_prepared("insert_records", records.dump());
  if (!dispatches.empty()) txn.exec_prepared("insert_assignments", dispatches.dump());
  if (!cancels.empty()) txn.exec_prepared("cancel_assignments", cancels.dump());
  if (!devices.empty()) txn.exec_prepared("device_versions", devices.dump());
  for (const auto& w : writes)
    for (const auto& t : w.update->transitions) {
      // A transition the host's current state refuses (an operator moved it meanwhile) is
      // skipped: the run's verdict stands, the host stays where the operator put it.
      (void)applyTransition(txn, t, w.actor);
    }
}

void persistUpdate(pqxx::work& txn, const RunRow& run, const std::string& group_key, const GroupUpdate& u,
                   const core::Actor& actor, bool insert) {
  persistUpdates(txn, {{&run, group_key, &u, actor}}, insert);
}

// A row of runColumns() at `offset` followed by the group's state.
Result<std::pair<RunRow, GroupState>> runAndGroup(const pqxx::row& r, int offset) {
  RunRow run = runFromRow(r, offset);
  auto state = groupFromStored(json::parse(r[offset + kRunColumnCount].c_str()));
  if (!state.ok()) return state.error();
  return std::make_pair(std::move(run), std::move(*state));
}

Result<std::pair<RunRow, GroupState>> lockGroup(pqxx::work& txn, const std::string& run_id, const std::string& group) {
  auto rows = txn.exec_prepared("lock_group", run_id, group);
  if (rows.empty()) return notFound("no group '" + group + "' in run '" + run_id + "'");
  return runAndGroup(rows[0], 0);
}

class PgRunStore final : public runs::RunStore {
 public:
  explicit PgRunStore(const PgStoreOptions& o) : pool_(o.database_url, o.pool_size, runStatements()) {}

  Status putWorkflow(const runs::WorkflowRow& w, const core::Actor& actor,
                     const std::optional<core::IfMatch>& if_match) override {
    return putWorkflowVersion(w, actor, if_match, false);
  }

  Status putWorkflowFile(const runs::WorkflowRow& w, const core::Actor& actor,
                         const std::optional<core::IfMatch>& if_match) override {
    return putWorkflowVersion(w, actor, if_match, true);
  }

  Result<std::optional<runs::WorkflowRow>> currentWorkflow(const std::string& name) override {
    return pool_.transact<std::optional<runs::WorkflowRow>>(
        [&](pqxx::work& txn) -> Result<std::optional<runs::WorkflowRow>> {
          auto rows = txn.exec_params(
              "SELECT v.name, v.hash, v.source, v.yaml, extract(epoch from w.updated_at)::float8,"
              " coalesce(w.file_hash, '')"
              " FROM workflows w JOIN workflow_versions v USING (name, hash) WHERE w.name = $1",
              name);
          if (rows.empty()) return std::optional<runs::WorkflowRow>();
          runs::WorkflowRow row = workflowFromRow(rows[0]);
          row.file_hash = rows[0][5].as<std::string>();
          return std::optional<runs::WorkflowRow>(std::move(row));
        });
  }

  Result<std::vector<runs::WorkflowVersionInfo>> workflowVersions(const std::string& name) override {
    return pool_.transact<std::vector<runs::WorkflowVersionInfo>>(
        [&](pqxx::work& txn) -> Result<std::vector<runs::WorkflowVersionInfo>> {
          std::vector<runs::WorkflowVersionInfo> out;
          for (const auto& r : txn.exec_params(
                   "SELECT v.hash, v.source, v.created_by, extract(epoch from v.created_at)::float8,"
                   " v.hash = w.hash, coalesce(v.hash = w.file_hash, false)"
                   " FROM workflow_versions v JOIN workflows w USING (name) WHERE v.name = $1"
                   " ORDER BY v.created_at DESC, v.hash",
                   name))
            out.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(),
                           fromEpoch(r[3].as<double>()), r[4].as<bool>(), r[5].as<bool>()});
          return out;
        });
  }

  Result<std::optional<runs::WorkflowRow>> workflowVersion(const std::string& name, const std::string& hash) override {
    return pool_.transact<std::optional<runs::WorkflowRow>>(
        [&](pqxx::work& txn) -> Result<std::optional<runs::WorkflowRow>> {
          auto rows = txn.exec_params(
              "SELECT name, hash, source, yaml, extract(epoch from created_at)::float8"
              " FROM workflow_versions WHERE name = $1 AND hash = $2",
              name, hash);
          if (rows.empty()) return std::optional<runs::WorkflowRow>();
          return std::optional<runs::WorkflowRow>(workflowFromRow(rows[0]));
        });
  }

  Result<std::vector<runs::WorkflowRow>> listWorkflows() override {
    return pool_.transact<std::vector<runs::WorkflowRow>>([&](pqxx::work& txn) -> Result<std::vector<runs::WorkflowRow>> {
      std::vector<runs::WorkflowRow> out;
      for (const auto& r : txn.exec(
               "SELECT v.name, v.hash, v.source, v.yaml, extract(epoch from w.updated_at)::float8"
               " FROM workflows w JOIN workflow_versions v USING (name, hash) ORDER BY w.name"))
        out.push_back(workflowFromRow(r));
      return out;
    });
  }

  Result<std::string> nextRunId() override {
    return pool_.transact<std::string>([&](pqxx::work& txn) -> Result<std::string> {
      return "r-" + txn.exec1("SELECT nextval('workflow_run_seq')")[0].as<std::string>();
    });
  }

  Result<RunRow> createRun(const runs::NewRun& nr, const core::Actor& actor) override {
    auto created = pool_.transact<RunRow>([&](pqxx::work& txn) -> Result<RunRow> {
      const RunRow& run = nr.run;
      txn.exec_params(
          "INSERT INTO workflow_runs (id, workflow, workflow_hash, scope, purpose, params, state, created_by, owner)"
          " VALUES ($1,$2,$3,$4,$5,$6::jsonb,'running',$7,NULLIF($8, ''))",
          run.id, run.workflow, run.workflow_hash, run.scope, run.purpose, run.params.dump(), actor.token_id, run.owner);
      if (auto claimed = claimIdempotencyKey(txn, nr.claim, run.id, actor); !claimed.ok()) return claimed.error();
      for (const auto& t : nr.start_transitions) {
        auto applied = applyTransition(txn, t, actor);
        if (!applied.ok()) return applied.error();
      }
      json run_hosts = json::array();
      std::vector<GroupWrite> writes;
      for (const auto& g : nr.groups) {
        for (const auto& h : g.hosts) run_hosts.push_back({{"host_id", h}, {"group_key", g.key}});
        writes.push_back({&run, g.key, &g.update, actor});
      }
      txn.exec_params(
          "INSERT INTO run_hosts (run_id, host_id, group_key) SELECT $1, v.host_id, v.group_key"
          " FROM jsonb_to_recordset($2::jsonb) AS v(host_id text, group_key text)",
          run.id, run_hosts.dump());
      persistUpdates(txn, writes, /*insert=*/true);
      writeAudit(txn, actor, "run.create", run.id,
                 json{{"workflow", run.workflow}, {"purpose", run.purpose}, {"groups", nr.groups.size()}}.dump());
      return runFromRow(txn.exec_params1(std::string("SELECT ") + kRunColumns + " FROM workflow_runs WHERE id = $1", run.id));
    });
    // Its groups and first steps changed the tables' size: every connection plans anew.
    if (created.ok()) newPlanEpoch();
    return created;
  }

  Result<RunRow> getRun(const std::string& id) override {
    return pool_.transact<RunRow>([&](pqxx::work& txn) -> Result<RunRow> {
      auto rows = txn.exec_params(std::string("SELECT ") + kRunColumns + " FROM workflow_runs WHERE id = $1", id);
      if (rows.empty()) return notFound("no workflow run '" + id + "'");
      RunRow run = runFromRow(rows[0]);
      for (const auto& r : txn.exec_params("SELECT host_id FROM run_hosts WHERE run_id = $1 ORDER BY host_id", id))
        run.hosts.push_back(r[0].as<std::string>());
      return run;
    });
  }

  Result<std::optional<std::string>> runByOwner(const std::string& owner) override {
    return pool_.transact<std::optional<std::string>>([&](pqxx::work& txn) -> Result<std::optional<std::string>> {
      auto rows = txn.exec_params("SELECT id FROM workflow_runs WHERE owner = $1", owner);
      if (rows.empty()) return std::optional<std::string>();
      return std::optional<std::string>(rows[0][0].as<std::string>());
    });
  }

  Result<std::vector<GroupState>> runGroups(const std::string& id) override {
    return pool_.transact<std::vector<GroupState>>([&](pqxx::work& txn) -> Result<std::vector<GroupState>> {
      std::vector<GroupState> out;
      std::map<std::pair<std::string, std::string>, runs::HostRun*> hosts;  // (group, host) -> its run
      for (const auto& r : txn.exec_params("SELECT state::text FROM run_groups WHERE run_id = $1 ORDER BY group_key", id)) {
        auto g = groupFromStored(json::parse(r[0].c_str()));
        if (!g.ok()) return g.error();
        out.push_back(std::move(*g));
      }
      for (auto& g : out)
        for (auto& h : g.hosts) hosts[{g.group, h.host}] = &h;
      // The step log after any records a state written before it still embeds (older).
      for (const auto& r : txn.exec_params(
               "SELECT group_key, host_id, record::text FROM run_step_records WHERE run_id = $1 ORDER BY id", id)) {
        auto it = hosts.find({r[0].as<std::string>(), r[1].as<std::string>()});
        if (it == hosts.end()) return internalError("step record of run " + id + " for unknown host " + r[1].as<std::string>());
        auto rec = recordFromStored(json::parse(r[2].c_str()));
        if (!rec.ok()) return rec.error();
        it->second->history.push_back(std::move(*rec));
      }
      return out;
    });
  }

  Result<std::vector<AssignmentRow>> runAssignments(const std::string& id) override {
    return pool_.transact<std::vector<AssignmentRow>>([&](pqxx::work& txn) -> Result<std::vector<AssignmentRow>> {
      std::vector<AssignmentRow> out;
      for (const auto& r : txn.exec_params(
               std::string("SELECT ") + kAssignmentColumns + " FROM assignments WHERE run_id = $1 ORDER BY created_at, id", id))
        out.push_back(assignmentFromRow(r));
      return out;
    });
  }

  Result<core::Page<RunRow>> listRuns(const runs::RunFilter& f, const core::PageRequest& page) override {
    const int limit = std::clamp(page.limit, 1, 1000);
    // Newest first: ids are "r-<n>", so order by the number.
    auto cursor = numericCursor(page.cursor);
    if (!cursor.ok()) return cursor.error();
    const std::int64_t before = *cursor;
    return pool_.transact<core::Page<RunRow>>([&](pqxx::work& txn) -> Result<core::Page<RunRow>> {
      auto rows = txn.exec_params(
          std::string("SELECT ") + kRunColumns + ", substr(id, 3)::bigint AS n,"
          // The pods of the run's hosts for the runs list: a few, not all of a big run's.
          " (SELECT coalesce(json_agg(p.pod_id), '[]') FROM (SELECT DISTINCT h.pod_id FROM run_hosts rh"
          "   JOIN hosts h ON h.id = rh.host_id WHERE rh.run_id = r.id ORDER BY h.pod_id LIMIT 4) p)::text"
          " FROM workflow_runs r"
          " WHERE substr(id, 3)::bigint < $1 AND ($2 = '' OR workflow = $2) AND ($3 = '' OR state = $3)"
          " AND ($4 = '' OR purpose = $4)"
          " AND ($5 = '' OR EXISTS (SELECT 1 FROM run_hosts h WHERE h.run_id = r.id AND h.host_id = $5))"
          " ORDER BY n DESC LIMIT $6",
          before, f.workflow, f.state, f.purpose, f.host, limit + 1);
      core::Page<RunRow> out;
      for (const auto& r : rows) {
        if (static_cast<int>(out.items.size()) == limit) {
          out.next_cursor = std::to_string(rows[limit - 1][kRunColumnCount].as<std::int64_t>());
          break;
        }
        RunRow run = runFromRow(r);
        for (const auto& pod : json::parse(r[kRunColumnCount + 1].c_str())) run.pods.push_back(pod.get<std::string>());
        out.items.push_back(std::move(run));
      }
      return out;
    });
  }

  Status updateGroup(const std::string& run_id, const std::string& group, const GroupFn& fn,
                     const core::Actor& actor) override {
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      auto locked = lockGroup(txn, run_id, group);
      if (!locked.ok()) return locked.error();
      auto update = fn(locked->first, std::move(locked->second));
      if (!update.ok()) return update.error();
      persistUpdate(txn, locked->first, group, *update, actor, false);
      return Ok{};
    });
  }

  Status stopGroup(const std::string& run_id, const std::string& group, const runs::StopFn& fn,
                   const core::Actor& actor) override {
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      auto locked = lockGroup(txn, run_id, group);
      if (!locked.ok()) return locked.error();
      // claimWork skips locked rows, so none of these is handed out before this commits.
      std::set<std::string> undispatched;
      for (const auto& r : txn.exec_params(
               "SELECT id FROM assignments WHERE run_id = $1 AND group_key = $2 AND state = 'pending' FOR UPDATE",
               run_id, group))
        undispatched.insert(r[0].as<std::string>());
      auto update = fn(locked->first, std::move(locked->second), undispatched);
      if (!update.ok()) return update.error();
      persistUpdate(txn, locked->first, group, *update, actor, false);
      return Ok{};
    });
  }

  Result<std::vector<std::pair<std::string, std::string>>> dueGroups(core::TimePoint now, int limit) override {
    return pool_.transact<std::vector<std::pair<std::string, std::string>>>(
        [&](pqxx::work& txn) -> Result<std::vector<std::pair<std::string, std::string>>> {
          std::vector<std::pair<std::string, std::string>> out;
          for (const auto& r : txn.exec_params(
                   "SELECT run_id, group_key FROM run_groups WHERE NOT done AND next_wakeup <= to_timestamp($1)"
                   " ORDER BY next_wakeup LIMIT $2",
                   toEpoch(now), limit))
            out.emplace_back(r[0].as<std::string>(), r[1].as<std::string>());
          return out;
        });
  }

  Result<std::vector<std::string>> finalizeRuns(const VerdictFn& verdict) override {
    // Every run whose groups are all done, finished in one transaction: when the runs of many
    // pods end in the same round (a rollout's pods admitted together), one commit and three
    // statements plus two a run, instead of a transaction of five statements each, one after
    // another, while the rollout controller's pass waits for them.
    return pool_.transact<std::vector<std::string>>([&](pqxx::work& txn) -> Result<std::vector<std::string>> {
      std::vector<std::string> finished;
      json candidates = json::array();
      for (const auto& r : txn.exec(
               "SELECT id FROM workflow_runs r WHERE state = 'running' AND NOT EXISTS"
               " (SELECT 1 FROM run_groups g WHERE g.run_id = r.id AND NOT g.done) ORDER BY id LIMIT 200"))
        candidates.push_back(r[0].as<std::string>());
      if (candidates.empty()) return finished;
      // Locked in id order; one that another transaction finished or cancelled meanwhile is no
      // longer running.
      std::map<std::string, RunRow> runs;
      json locked = json::array();
      for (const auto& r : txn.exec_params(std::string("SELECT ") + kRunColumns +
                                               " FROM workflow_runs WHERE id = ANY(ARRAY(SELECT"
                                               " jsonb_array_elements_text($1::jsonb))) ORDER BY id FOR UPDATE",
                                           candidates.dump())) {
        RunRow run = runFromRow(r);
        if (run.state != "running") continue;
        locked.push_back(run.id);
        runs.emplace(run.id, std::move(run));
      }
      std::map<std::string, std::vector<GroupState>> groups;
      std::set<std::string> not_now;  // a group not done after all, or one that does not load
      for (const auto& g : txn.exec_params("SELECT run_id, state::text, done FROM run_groups WHERE run_id ="
                                           " ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))",
                                           locked.dump())) {
        const std::string id = g[0].as<std::string>();
        if (!g[2].as<bool>()) {
          not_now.insert(id);
          continue;
        }
        auto st = groupFromStored(json::parse(g[1].c_str()));
        if (!st.ok()) {
          not_now.insert(id);
          continue;
        }
        groups[id].push_back(std::move(*st));
      }
      for (const auto& [id, run] : runs) {
        if (not_now.count(id)) continue;
        auto [state, summary] = verdict(run, groups[id]);
        txn.exec_params("UPDATE workflow_runs SET state = $2, summary = $3::jsonb, finished_at = now() WHERE id = $1",
                        id, state, summary.dump());
        writeAudit(txn, {"system", "kilnd"}, "run.finish", id, json{{"state", state}}.dump());
        finished.push_back(id);
      }
      return finished;
    });
  }

  Status cancelRun(const std::string& id, const GroupFn& fn, const core::Actor& actor) override {
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      auto rows = txn.exec_params(std::string("SELECT ") + kRunColumns + " FROM workflow_runs WHERE id = $1 FOR UPDATE", id);
      if (rows.empty()) return notFound("no workflow run '" + id + "'");
      RunRow run = runFromRow(rows[0]);
      if (run.state != "running") return conflict("run '" + id + "' is already " + run.state).with("state", run.state);
      for (const auto& g : txn.exec_params("SELECT group_key FROM run_groups WHERE run_id = $1 AND NOT done", id)) {
        const std::string key = g[0].as<std::string>();
        auto locked = lockGroup(txn, id, key);
        if (!locked.ok()) return locked.error();
        auto update = fn(locked->first, std::move(locked->second));
        if (!update.ok()) return update.error();
        persistUpdate(txn, run, key, *update, actor, false);
      }
      txn.exec_params(
          "UPDATE workflow_runs SET state = 'cancelled', finished_at = now(),"
          " summary = summary || '{\"cancelled\": true}'::jsonb WHERE id = $1",
          id);
      writeAudit(txn, actor, "run.cancel", id, "{}");
      return Ok{};
    });
  }

  Result<std::optional<AssignmentRow>> claimWork(const std::string& host, std::int64_t grace_ms) override {
    return pool_.transact<std::optional<AssignmentRow>>([&](pqxx::work& txn) -> Result<std::optional<AssignmentRow>> {
      freshPlans(txn);
      auto claimed = claim(txn, {host}, grace_ms);
      if (claimed.empty()) return std::optional<AssignmentRow>();
      return std::optional<AssignmentRow>(std::move(claimed.begin()->second));
    });
  }

  Result<std::map<std::string, AssignmentRow>> claimBatch(const std::vector<std::string>& hosts,
                                                          std::int64_t grace_ms) override {
    return pool_.transact<std::map<std::string, AssignmentRow>>(
        [&](pqxx::work& txn) -> Result<std::map<std::string, AssignmentRow>> {
          freshPlans(txn);
          return claim(txn, hosts, grace_ms);
        });
  }

  Result<std::vector<Result<runs::ReportReply>>> reportBatch(const std::vector<runs::ReportItem>& items,
                                                             std::int64_t grace_ms) override {
    using Replies = std::vector<Result<runs::ReportReply>>;
    // Runs of which this batch closed a group while another group still looked open to it, with
    // their reports: looked at again after the commit (below).
    std::map<std::string, std::vector<std::size_t>> open_after;
    auto out = pool_.transact<Replies>([&](pqxx::work& txn) -> Result<Replies> {
      open_after.clear();
      // The batch's prepared statements (one to a few ids each) have one good plan whatever the
      // ids; PostgreSQL re-planned them on most executions anyway (pg_stat_statements in
      // kiln-bench-rollout: report_lock planned 23,547 times in 35,984 calls, 1.5 ms each, more
      // than it took to run), so the transaction keeps to the cached generic plans. The setting
      // also plans the transaction's unnamed statements (host transitions, the closing check)
      // without their values: all are key lookups, for which that plan is the same.
      txn.exec0("SET LOCAL plan_cache_mode = force_generic_plan");
      freshPlans(txn);
      Replies replies(items.size(), Result<runs::ReportReply>(runs::ReportReply{}));
      json ids = json::array();
      for (const auto& it : items) ids.push_back(it.assignment_id);
      // The reported assignments' groups, locked in (run, group) order; a group shared by
      // several reports (a pod-scope run) once.
      std::map<std::pair<std::string, std::string>, std::pair<RunRow, GroupState>> groups;
      std::map<std::string, runs::LockedAssignment> rows;
      for (const auto& r : txn.exec_prepared("report_lock", ids.dump())) {
        const std::pair<std::string, std::string> key{r[3].as<std::string>(), r[2].as<std::string>()};
        rows[r[0].as<std::string>()] = {r[1].as<std::string>(), key.first, key.second, "", 0};
        if (groups.count(key)) continue;
        auto rg = runAndGroup(r, 3);
        if (!rg.ok()) return rg.error();
        groups.emplace(key, std::move(*rg));
      }
      // Their states and leases, read after the locks: every writer of a dispatched
      // assignment's state or lease holds its group's lock (a claim moves only pending ones).
      if (!rows.empty())
        for (const auto& r : txn.exec_prepared("assignment_states", ids.dump())) {
          auto a = rows.find(r[0].as<std::string>());
          if (a == rows.end()) continue;
          a->second.state = r[1].as<std::string>();
          a->second.lease = r[2].as<int>();
        }
      const runs::ReportDecision decision = runs::decideReports(items, rows);
      // The accepted reports' rows as JSON text built by hand: a report body (tens of KB with an
      // nvidia-smi tail) goes in as the agent sent it, not copied into a document and dumped again.
      std::string done_rows = "[";
      std::size_t body_bytes = 0;
      for (const auto& it : items) body_bytes += it.result_text ? it.result_text->size() : 0;
      done_rows.reserve(body_bytes + 128 * items.size());
      json done_ids = json::array();
      for (std::size_t i = 0; i < items.size(); ++i) {
        const auto& it = items[i];
        const auto v = decision.verdicts[i];
        if (v == runs::ReportVerdict::kNotFound || v == runs::ReportVerdict::kOtherHost) {
          replies[i] = runs::refusal(v, it.assignment_id);
          continue;
        }
        replies[i]->outcome = runs::outcomeOf(v);
        if (v == runs::ReportVerdict::kCancelled) {
          txn.exec_params("UPDATE assignments SET result = $2::json WHERE id = $1 AND result IS NULL", it.assignment_id,
                          it.result_text ? *it.result_text : it.result->dump());
        } else if (v == runs::ReportVerdict::kAccepted) {
          done_ids.push_back(it.assignment_id);
          if (done_rows.size() > 1) done_rows += ',';
          // Appended piece by piece: a body of tens of KB is copied once, not through temporaries.
          done_rows += "{\"id\":";
          done_rows += json(it.assignment_id).dump();
          done_rows += ",\"lease\":";
          done_rows += std::to_string(it.lease);
          done_rows += ",\"result\":";
          if (it.result_text) done_rows += *it.result_text;
          else done_rows += it.result->dump();
          done_rows += '}';
        }
      }
      done_rows += ']';
      if (!done_ids.empty()) {
        // Guarded as decided: a row that is no longer dispatched on its lease means a writer
        // without the group's lock, and the batch is not written.
        auto done = txn.exec_prepared("report_done", done_rows, done_ids.dump());
        if (done.size() != done_ids.size())
          return Error(ErrorCode::kInternal, "an assignment of the report batch changed under its group's lock");
      }
      // Each group's accepted reports through the engine in order, its state written once.
      std::vector<GroupUpdate> updates;
      updates.reserve(decision.groups.size());  // writes point into it
      std::vector<GroupWrite> writes;
      std::vector<std::pair<core::HostTransition, core::Actor>> transitions;  // each by its report's agent
      for (const auto& [key, accepted] : decision.groups) {
        auto& [run, state] = groups.at(key);
        for (std::size_t i : accepted)
          // The versions the step left behind commit with its result: a kilnd killed after
          // this commit must not lose them (the agent's retry is then only a duplicate).
          if (items[i].result->contains("inventory")) writeInventory(txn, items[i].host, (*items[i].result)["inventory"]);
        auto merged = runs::mergeReports(run, std::move(state), items, accepted);
        if (!merged.ok()) return merged.error();  // nothing of the batch is written
        for (auto& t : merged->transitions) transitions.push_back(std::move(t));
        updates.push_back(std::move(merged->update));
        writes.push_back({&run, key.second, &updates.back(), {}});
      }
      persistUpdates(txn, writes, false);
      // Runs whose last open group this batch closed: the controller can give their verdict now
      // instead of at its next periodic pass.
      std::set<std::string> closing;
      for (const auto& w : writes)
        if (runs::Engine::done(w.update->state)) closing.insert(w.run->id);
      for (const auto& run_id : closing) {
        std::vector<std::size_t> of_run;
        for (std::size_t i = 0; i < items.size(); ++i)
          if (auto f = rows.find(items[i].assignment_id); replies[i].ok() && f != rows.end() && f->second.run_id == run_id)
            of_run.push_back(i);
        if (txn.exec_params("SELECT 1 FROM run_groups WHERE run_id = $1 AND NOT done LIMIT 1", run_id).empty()) {
          for (std::size_t i : of_run) replies[i]->run_complete = true;
        } else {
          open_after[run_id] = std::move(of_run);
        }
      }
      // As persistUpdates would: a transition the host's state refuses now is skipped. In host
      // order (each host's in its own order), so that concurrent batches lock host rows and the
      // reliability rollup's building rows in one order.
      runs::orderTransitions(transitions);
      for (const auto& [t, actor] : transitions) (void)applyTransition(txn, t, actor);
      // Hosts whose agents hold no other step get their next one in this transaction; a host
      // with several reports in the batch gets it with its last.
      const auto& claim_for = decision.claim_for;
      if (!claim_for.empty()) {
        std::vector<std::string> hosts;
        for (const auto& [h, _] : claim_for) hosts.push_back(h);
        for (auto& [h, row] : claim(txn, hosts, grace_ms)) replies[claim_for.at(h)]->next = std::move(row);
      }
      return replies;
    });
    if (!out.ok() || open_after.empty()) return out;
    // Two batches closing a run's last two groups at once each saw the other's group open, and
    // neither said the run was complete: the controller gave the verdict only at its next
    // periodic pass (up to leader_interval, 200 ms, later). A statement of its own after the
    // commit sees every commit before it, so the later of the two sees both groups done.
    json runs_open = json::array();
    for (const auto& [run_id, _] : open_after) runs_open.push_back(run_id);
    auto complete = pool_.read<std::vector<std::string>>([&](pqxx::nontransaction& q) -> Result<std::vector<std::string>> {
      std::vector<std::string> ids;
      for (const auto& r : q.exec_params(
               "SELECT r.id FROM workflow_runs r WHERE r.id = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))"
               " AND NOT EXISTS (SELECT 1 FROM run_groups g WHERE g.run_id = r.id AND NOT g.done)",
               runs_open.dump()))
        ids.push_back(r[0].as<std::string>());
      return ids;
    });
    // Unread, the run waits for the controller's periodic pass as before.
    if (complete.ok())
      for (const auto& run_id : *complete)
        for (std::size_t i : open_after.at(run_id)) (*out)[i]->run_complete = true;
    return out;
  }

  Result<std::vector<AssignmentRow>> expiredLeases(core::TimePoint now, int limit) override {
    return pool_.transact<std::vector<AssignmentRow>>([&](pqxx::work& txn) -> Result<std::vector<AssignmentRow>> {
      std::vector<AssignmentRow> out;
      for (const auto& r : txn.exec_params(
               std::string("SELECT ") + kAssignmentColumns +
                   " FROM assignments WHERE state = 'dispatched' AND lease_expires_at < to_timestamp($1)"
                   " ORDER BY lease_expires_at LIMIT $2",
               toEpoch(now), limit))
        out.push_back(assignmentFromRow(r));
      return out;
    });
  }

  Result<bool> expireLease(const std::string& id, int lease, const GroupFn& fn) override {
    return pool_.transact<bool>([&](pqxx::work& txn) -> Result<bool> {
      auto peek = txn.exec_params("SELECT run_id, group_key FROM assignments WHERE id = $1", id);
      if (peek.empty()) return false;
      auto locked = lockGroup(txn, peek[0][0].as<std::string>(), peek[0][1].as<std::string>());
      if (!locked.ok()) return locked.error();
      auto changed = txn.exec_params(
          "UPDATE assignments SET state = 'lost', finished_at = now() WHERE id = $1 AND state = 'dispatched'"
          " AND lease = $2 RETURNING id",
          id, lease);
      if (changed.empty()) return false;
      auto update = fn(locked->first, std::move(locked->second));
      if (!update.ok()) return update.error();
      // Kept dispatched on the same lease (a reboot whose host is being power-cycled).
      for (const auto& [kept, until] : update->effects.extend_leases)
        if (kept == id)
          txn.exec_params("UPDATE assignments SET state = 'dispatched', finished_at = NULL,"
                          " lease_expires_at = to_timestamp($2) WHERE id = $1",
                          id, toEpoch(until));
      persistUpdate(txn, locked->first, peek[0][1].as<std::string>(), *update, {"system", "kilnd"}, false);
      return true;
    });
  }

  Result<std::vector<std::string>> hostsWithOpenWork() override {
    return pool_.transact<std::vector<std::string>>([&](pqxx::work& txn) -> Result<std::vector<std::string>> {
      std::vector<std::string> out;
      for (const auto& r : txn.exec("SELECT DISTINCT coalesce('runner:' || runner, host_id) FROM assignments"
                                    " WHERE state IN ('pending', 'dispatched')"))
        out.push_back(r[0].as<std::string>());
      return out;
    });
  }

  Result<std::optional<AssignmentRow>> assignment(const std::string& id) override {
    return pool_.read<std::optional<AssignmentRow>>([&](pqxx::nontransaction& txn) -> Result<std::optional<AssignmentRow>> {
      auto rows = txn.exec_prepared("assignment_by_id", id);
      if (rows.empty()) return std::optional<AssignmentRow>();
      return std::optional<AssignmentRow>(assignmentFromRow(rows[0]));
    });
  }

  Result<runs::AgentEnrolled> enrollAgent(const std::string& host, const std::string& boot_id,
                                          const std::string& agent_version, const json& inventory,
                                          const core::Actor& actor, std::chrono::seconds token_ttl) override {
    return pool_.transact<runs::AgentEnrolled>([&](pqxx::work& txn) -> Result<runs::AgentEnrolled> {
      // The facts under the locks that every enrolment of the host, and every use of a
      // host's (single-use) enrolment token, takes: the token's row first, then the host's. A
      // fleet-wide token's row is not locked: the fleet's hosts enrol with it at once.
      core::EnrolmentFacts f;
      f.host = host;
      const std::string read_token =
          "SELECT host_id, used_at IS NOT NULL OR revoked_at IS NOT NULL, expires_at IS NOT NULL AND expires_at <= now(),"
          " reenroll FROM tokens WHERE id = $1 AND role = 'enroll'";
      auto token = txn.exec_params(read_token, actor.token_id);
      if (!token.empty() && !token[0][0].is_null()) token = txn.exec_params(read_token + " FOR UPDATE", actor.token_id);
      if (token.empty()) return Error(ErrorCode::kUnauthenticated, "not an enrolment token");
      if (!token[0][0].is_null()) f.token_host = token[0][0].as<std::string>();
      f.token_spent = token[0][1].as<bool>();
      f.token_expired = token[0][2].as<bool>();
      f.reenroll = token[0][3].as<bool>();
      f.host_exists = !txn.exec_params("SELECT 1 FROM hosts WHERE id = $1 FOR UPDATE", host).empty();
      if (f.host_exists) {
        auto live = txn.exec_params(
            "SELECT id FROM tokens WHERE host_id = $1 AND role = 'agent' AND revoked_at IS NULL"
            " AND (expires_at IS NULL OR expires_at > now()) ORDER BY created_at DESC LIMIT 1",
            host);
        if (!live.empty()) f.live_agent_token = live[0][0].as<std::string>();
      }
      if (auto allowed = core::decideEnrolment(f); !allowed.ok()) return allowed.error();

      auto replaced = txn.exec_params(
          "UPDATE tokens SET revoked_at = now() WHERE host_id = $1 AND role = 'agent' AND revoked_at IS NULL RETURNING id",
          host);
      if (f.token_host) txn.exec_params("UPDATE tokens SET used_at = now(), revoked_at = now() WHERE id = $1", actor.token_id);
      runs::AgentEnrolled out;
      out.token = insertAgentToken(txn, host, actor, token_ttl);
      const std::string& id = out.token.info.id;
      txn.exec_params(
          "UPDATE hosts SET boot_id = $2, agent_version = $3, last_seen = now(), unreachable = false WHERE id = $1",
          host, boot_id, agent_version);
      writeInventory(txn, host, inventory);
      json replaced_ids = json::array();
      for (const auto& r : replaced) replaced_ids.push_back(r[0].as<std::string>());
      writeAudit(txn, actor, f.live_agent_token ? "agent.reenroll" : "agent.enroll", host,
                 json{{"token", id},
                      {"agent_version", agent_version},
                      {"enrolment_token", f.token_host ? "host" : "fleet"},
                      {"replaced", replaced_ids}}
                     .dump());
      for (const auto& r : replaced) out.revoked.push_back(r[0].as<std::string>());
      if (f.token_host) out.revoked.push_back(actor.token_id);
      return out;
    });
  }

  Result<runs::AgentEnrolled> renewAgentToken(const std::string& host, const core::Actor& actor,
                                              std::chrono::seconds token_ttl, std::chrono::seconds old_grace) override {
    return pool_.transact<runs::AgentEnrolled>([&](pqxx::work& txn) -> Result<runs::AgentEnrolled> {
      // The old token's row, locked: two renewals with it at once make one new token each, in turn.
      auto old = txn.exec_params(
          "SELECT 1 FROM tokens WHERE id = $1 AND role = 'agent' AND host_id = $2 AND revoked_at IS NULL"
          " AND (expires_at IS NULL OR expires_at > now()) FOR UPDATE",
          actor.token_id, host);
      if (old.empty())
        return Error(ErrorCode::kPermissionDenied, "only host " + host + "'s live agent token renews itself");
      runs::AgentEnrolled out;
      out.token = insertAgentToken(txn, host, actor, token_ttl);
      auto grace = txn.exec_params1(
          "UPDATE tokens SET expires_at = LEAST(COALESCE(expires_at, 'infinity'), now() + $2::bigint * interval '1 second')"
          " WHERE id = $1 RETURNING extract(epoch from expires_at)::float8",
          actor.token_id, static_cast<std::int64_t>(old_grace.count()));
      writeAudit(txn, actor, "agent.token_renew", host,
                 json{{"token", out.token.info.id},
                      {"replaces", actor.token_id},
                      {"expires_at", out.token.info.expires_at ? json(toEpoch(*out.token.info.expires_at)) : json()},
                      {"old_expires_at", grace[0].as<double>()}}
                     .dump());
      return out;
    });
  }

  Result<runs::HostEnrolment> issueEnrolment(const std::string& host, std::chrono::seconds ttl, bool reenroll,
                                             const core::Actor& actor) override {
    return pool_.transact<runs::HostEnrolment>([&](pqxx::work& txn) -> Result<runs::HostEnrolment> {
      if (txn.exec_params("SELECT 1 FROM hosts WHERE id = $1", host).empty())
        return notFound("no host '" + host + "' in the fleet");
      const std::string id = randomHex(6), secret = randomHex(24);
      auto row = txn.exec_params1(
          "INSERT INTO tokens (id, secret_hash, role, name, host_id, created_by, expires_at, reenroll)"
          " VALUES ($1, $2, 'enroll', $3, $4, $5, now() + $6::bigint * interval '1 second', $7::boolean)"
          " RETURNING id, name, extract(epoch from created_at)::float8, extract(epoch from expires_at)::float8",
          id, sha256Hex(secret), std::string(reenroll ? "re-enrolment " : "enrolment ") + host, host, actor.token_id,
          static_cast<std::int64_t>(ttl.count()), reenroll);
      writeAudit(txn, actor, "host.enrolment_token", host,
                 json{{"token", id}, {"ttl_s", ttl.count()}, {"reenroll", reenroll}}.dump());
      runs::HostEnrolment e;
      e.token.info.id = id;
      e.token.info.name = row[1].as<std::string>();
      e.token.info.role = core::Role::kEnroll;
      e.token.info.host = host;
      e.token.info.created_at = fromEpoch(row[2].as<double>());
      e.token.info.created_by = actor.token_id;
      e.token.secret = "kiln_" + id + "_" + secret;
      e.expires_at = fromEpoch(row[3].as<double>());
      e.reenroll = reenroll;
      return e;
    });
  }

  Status recordHeartbeats(const std::vector<runs::Heartbeat>& beats) override {
    if (beats.empty()) return Ok{};
    json rows = json::array();
    for (const auto& b : beats) rows.push_back({{"id", b.host}, {"t", toEpoch(b.at)}, {"b", b.boot_id}});
    const std::string text = rows.dump();
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      // The UPDATE locks ~all the fleet's host rows in the join's order, a host transition (the
      // controller moving a pod's 18 hosts, a report's verdict) locks its few in id order: the
      // two deadlocked three times in the first 300 s of a 1,000-pod rollout, and PostgreSQL broke each only after
      // deadlock_timeout (1 s), with the controller waiting. The heartbeats give way instead:
      // past 100 ms of waiting the write fails and the gateway keeps them for its next flush.
      txn.exec0("SET LOCAL lock_timeout = '100ms'");
      // Hosts that were unreachable get a `reachable` event; then everyone's last poll.
      txn.exec_params(
          "WITH back AS (UPDATE hosts h SET unreachable = false FROM jsonb_to_recordset($1::jsonb) AS v(id text)"
          " WHERE h.id = v.id AND h.unreachable RETURNING h.id, h.state)"
          " INSERT INTO host_events (host_id, action, from_state, to_state, actor, reason)"
          " SELECT id, 'reachable', state, state, 'system', 'the agent polls again' FROM back",
          text);
      txn.exec_params(
          "UPDATE hosts h SET last_seen = to_timestamp(v.t), boot_id = NULLIF(v.b, '')"
          " FROM jsonb_to_recordset($1::jsonb) AS v(id text, t float8, b text) WHERE h.id = v.id",
          text);
      return Ok{};
    });
  }

  Result<std::vector<std::string>> markUnreachable(core::TimePoint cutoff) override {
    return pool_.transact<std::vector<std::string>>([&](pqxx::work& txn) -> Result<std::vector<std::string>> {
      std::vector<std::string> out;
      for (const auto& r : txn.exec_params(
               "UPDATE hosts SET unreachable = true WHERE last_seen < to_timestamp($1) AND NOT unreachable"
               " AND state <> 'retired' RETURNING id, state",
               toEpoch(cutoff))) {
        txn.exec_params(
            "INSERT INTO host_events (host_id, action, from_state, to_state, actor, reason)"
            " VALUES ($1, 'unreachable', $2, $2, 'system', 'the agent stopped polling')",
            r[0].as<std::string>(), r[1].as<std::string>());
        out.push_back(r[0].as<std::string>());
      }
      return out;
    });
  }

  Result<std::vector<runs::QuarantineRow>> quarantine() override {
    return pool_.transact<std::vector<runs::QuarantineRow>>([&](pqxx::work& txn) -> Result<std::vector<runs::QuarantineRow>> {
      std::vector<runs::QuarantineRow> out;
      auto rows = txn.exec(
          std::string("SELECT ") + kHostColumns +
          ", h.repairs,"
          " (SELECT reason FROM host_events e WHERE e.host_id = h.id AND e.action IN"
          "   ('quarantine_fail', 'fail', 'validation_fail', 'burn_in_fail') ORDER BY e.id DESC LIMIT 1),"
          " (SELECT r.id || ' ' || r.state FROM workflow_runs r JOIN run_hosts rh ON rh.run_id = r.id"
          "   WHERE rh.host_id = h.id AND r.purpose = 'quarantine' ORDER BY r.created_at DESC LIMIT 1)"
          " FROM hosts h JOIN pods p ON p.id = h.pod_id WHERE h.state = 'quarantine' ORDER BY h.state_since, h.id");
      for (const auto& r : rows) {
        runs::QuarantineRow q;
        q.host = hostFromRow(r);
        constexpr int k = kHostColumnCount;
        q.repairs = r[k].as<int>();
        q.last_failure = r[k + 1].is_null() ? "" : r[k + 1].as<std::string>();
        if (!r[k + 2].is_null()) {
          const std::string v = r[k + 2].as<std::string>();
          q.run_id = v.substr(0, v.find(' '));
          q.run_state = v.substr(v.find(' ') + 1);
          auto g = txn.exec_params("SELECT state::text FROM run_groups WHERE run_id = $1 AND group_key = $2", q.run_id,
                                   q.host.id);
          if (!g.empty()) {
            auto st = groupFromStored(json::parse(g[0][0].c_str()));
            if (st.ok() && !st->hosts.empty()) {
              const auto& h = st->hosts[0];
              q.progress = {{"pass", h.pass}, {"step_index", h.step_index}, {"status", runs::hostStatusName(h.status)}};
              core::putTime(q.progress, "waiting_until", h.not_before);
              if (!h.waiting_for.empty()) q.progress["waiting_for"] = h.waiting_for;
            }
          }
        }
        out.push_back(std::move(q));
      }
      return out;
    });
  }

  // One statement outside a transaction block: the rollout controller asks on every pass.
  Result<std::map<std::string, std::string>> runStates(const std::vector<std::string>& ids) override {
    using States = std::map<std::string, std::string>;
    if (ids.empty()) return States{};
    return pool_.read<States>([&](pqxx::nontransaction& txn) -> Result<States> {
      States out;
      for (const auto& r : txn.exec_params(
               "SELECT id, state FROM workflow_runs WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))", json(ids).dump()))
        out[r[0].as<std::string>()] = r[1].as<std::string>();
      return out;
    });
  }

 private:
  // putWorkflow, and with `from_file` putWorkflowFile. Under the workflow row's lock: two
  // writers holding the same ETag cannot both replace it, and the audit's diff is against the
  // version this write replaces.
  Status putWorkflowVersion(const runs::WorkflowRow& w, const core::Actor& actor,
                            const std::optional<core::IfMatch>& if_match, bool from_file) {
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      auto current = txn.exec_params(
          "SELECT v.name, v.hash, v.source, v.yaml, extract(epoch from w.updated_at)::float8"
          " FROM workflows w JOIN workflow_versions v USING (name, hash) WHERE w.name = $1 FOR UPDATE OF w",
          w.name);
      std::optional<runs::WorkflowRow> before;
      if (!current.empty()) before = workflowFromRow(current[0]);
      if (if_match) {
        std::optional<std::string> etag;
        if (before) etag = runs::workflowEtag(before->hash);
        if (!if_match->matches(etag)) return core::preconditionFailed("workflow '" + w.name + "'", etag);
      }
      txn.exec_params(
          "INSERT INTO workflow_versions (name, hash, yaml, source, created_by) VALUES ($1,$2,$3,$4,$5)"
          " ON CONFLICT DO NOTHING",
          w.name, w.hash, w.yaml, w.source, actor.token_id);
      auto changed = txn.exec_params(
          "INSERT INTO workflows (name, hash) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE"
          " SET hash = excluded.hash, updated_at = now() WHERE workflows.hash <> excluded.hash RETURNING name",
          w.name, w.hash);
      if (from_file) txn.exec_params("UPDATE workflows SET file_hash = $2 WHERE name = $1", w.name, w.hash);
      if (!changed.empty()) writeAudit(txn, actor, "workflow.put", w.name, runs::workflowChangeAudit(w, before).dump());
      return Ok{};
    });
  }

  // The next work of each host (at most one each), by host.
  static std::map<std::string, AssignmentRow> claim(pqxx::work& txn, const std::vector<std::string>& hosts,
                                                    std::int64_t grace_ms) {
    std::map<std::string, AssignmentRow> out;
    std::vector<std::string> host_ids, runners;
    for (const auto& key : hosts) {
      if (isRunnerKey(key)) runners.push_back(runnerOfKey(key));
      else host_ids.push_back(key);
    }
    if (!host_ids.empty())
      for (const auto& r : txn.exec_prepared("claim", json(host_ids).dump(), grace_ms)) {
        AssignmentRow a = assignmentFromRow(r);
        out.emplace(a.host, std::move(a));
      }
    if (!runners.empty())
      for (const auto& r : txn.exec_prepared("claim_runner", json(runners).dump(), grace_ms)) {
        AssignmentRow a = assignmentFromRow(r);
        out.emplace(runnerKey(a.runner), std::move(a));
      }
    return out;
  }

  // A new agent token of `host`, created by `actor`, expiring after `ttl` (0: never).
  static core::NewToken insertAgentToken(pqxx::work& txn, const std::string& host, const core::Actor& actor,
                                         std::chrono::seconds ttl) {
    const std::string id = randomHex(6), secret = randomHex(24);
    auto row = txn.exec_params1(
        "INSERT INTO tokens (id, secret_hash, role, name, host_id, created_by, expires_at)"
        " VALUES ($1, $2, 'agent', $3, $4, $5,"
        " CASE WHEN $6::bigint > 0 THEN now() + $6::bigint * interval '1 second' END)"
        " RETURNING name, extract(epoch from created_at)::float8, extract(epoch from expires_at)::float8",
        id, sha256Hex(secret), "agent " + host, host, actor.token_id, static_cast<std::int64_t>(ttl.count()));
    core::NewToken t;
    t.info.id = id;
    t.info.name = row[0].as<std::string>();
    t.info.role = core::Role::kAgent;
    t.info.host = host;
    t.info.created_at = fromEpoch(row[1].as<double>());
    t.info.created_by = actor.token_id;
    t.info.expires_at = optEpoch(row[2]);
    t.secret = "kiln_" + id + "_" + secret;
    return t;
  }

  // The host's versions (and the nvswitch version of its pod's switch trays) as reported by its
  // agent: unknown kinds and empty versions are ignored.
  static void writeInventory(pqxx::work& txn, const std::string& host, const json& inventory) {
    if (!inventory.is_object()) return;
    json own = json::object();
    std::string switch_version;
    for (const auto& [kind, v] : inventory.items()) {
      if (!core::isComponentKind(kind) || !v.is_string() || v.get<std::string>().empty()) continue;
      if (kind == core::kSwitchComponent) switch_version = v.get<std::string>();
      else own[kind] = v;
    }
    if (!own.empty()) txn.exec_prepared("inventory_host", host, own.dump());
    if (!switch_version.empty())
      txn.exec_prepared("inventory_switches", host, std::string(core::kSwitchComponent), switch_version);
    txn.exec_prepared("inventory_at", host);
  }

  // Plans made on tables of another size (issue 35). A connection's cached plans of the hot
  // statements are built at their first use, and the report transaction keeps to them
  // (force_generic_plan). Built while a small run was the only one (a pod's pre-job check: a few
  // dozen rows), they stay for the connection's life: auto_explain in kiln-bench-dispatch caught
  // report_lock as a sequential scan of assignments (cost 14 for the tiny table; 10,193 rows
  // filtered a call) hash-joined to workflow_runs, then run_groups probed by run_id alone (290
  // rows a probe, 13,406 buffers, 125 ms a call against ~1 ms), and the group update likewise
  // (44 ms). So the plans are dropped (DISCARD PLANS; the statements stay prepared) on each
  // connection at its next hot transaction after a run was created, and at least every 30 s:
  // rebuilt on the tables as they are then.
  void freshPlans(pqxx::work& txn) {
    {
      std::lock_guard lock(plan_mu_);
      const auto now = std::chrono::steady_clock::now();
      if (now - plan_epoch_at_ > std::chrono::seconds(30)) newPlanEpochLocked(now);
      std::uint64_t& seen = plan_epoch_of_[static_cast<const void*>(&txn.conn())];
      if (seen == plan_epoch_) return;
      seen = plan_epoch_;
    }
    txn.exec0("DISCARD PLANS");
  }
  void newPlanEpoch() {
    std::lock_guard lock(plan_mu_);
    newPlanEpochLocked(std::chrono::steady_clock::now());
  }
  void newPlanEpochLocked(std::chrono::steady_clock::time_point now) {
    ++plan_epoch_;
    plan_epoch_at_ = now;
  }

  PgPool pool_;
  std::mutex plan_mu_;
  std::uint64_t plan_epoch_ = 1;  // under plan_mu_
  std::chrono::steady_clock::time_point plan_epoch_at_ = std::chrono::steady_clock::now();
  std::unordered_map<const void*, std::uint64_t> plan_epoch_of_;  // the epoch each connection planned in
};

}  // namespace

std::unique_ptr<runs::RunStore> makePgRunStore(const PgStoreOptions& options) {
  return std::make_unique<PgRunStore>(options);
}

}  // namespace kiln::db
