#include "orchestrator/db/pg_run_store.h"

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/db/pg_internal.h"
#include "orchestrator/db/pg_pool.h"

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
         "finished_at)::float8, " + a + "summary::text";
}
const std::string kRunColumns = runColumns("");

constexpr int kRunColumnCount = 11;

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
  return run;
}

constexpr const char* kAssignmentColumns =
    "id, run_id, group_key, host_id, step_id, type, parse, state, attempt, lease, argv::text, timeout_ms,"
    " inventory_after, extract(epoch from dispatched_at)::float8, extract(epoch from lease_expires_at)::float8,"
    " extract(epoch from finished_at)::float8, result::text";

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
  a.argv = json::parse(r[10].c_str());
  a.timeout_ms = r[11].as<std::int64_t>();
  a.inventory_after = r[12].as<bool>();
  a.dispatched_at = optEpoch(r[13]);
  a.lease_expires_at = optEpoch(r[14]);
  a.finished_at = optEpoch(r[15]);
  if (!r[16].is_null()) a.result = json::parse(r[16].c_str());
  return a;
}

// The dispatch hot path (claim, report, lease checks), prepared on every pooled connection.
// A group row is locked before any of its assignment rows, everywhere (claims skip locked rows).
const std::string kLockGroup = "SELECT " + runColumns("r.") +
                               ", g.state::text FROM run_groups g JOIN workflow_runs r ON r.id = g.run_id"
                               " WHERE g.run_id = $1 AND g.group_key = $2 FOR UPDATE OF g";
// An assignment's run, group and host never change: read with its group's lock.
const std::string kReportLock = "SELECT a.host_id, a.group_key, " + runColumns("r.") +
                                ", g.state::text FROM assignments a"
                                " JOIN run_groups g ON g.run_id = a.run_id AND g.group_key = a.group_key"
                                " JOIN workflow_runs r ON r.id = a.run_id WHERE a.id = $1 FOR UPDATE OF g";
constexpr const char* kReportDone =
    "UPDATE assignments SET state = 'done', finished_at = now(), result = $3::jsonb"
    " WHERE id = $1 AND state = 'dispatched' AND lease = $2 RETURNING id";
constexpr const char* kAssignmentState = "SELECT state, lease FROM assignments WHERE id = $1";
constexpr const char* kUpdateGroup =
    "UPDATE run_groups SET state = $3::jsonb, done = $4, next_wakeup = to_timestamp($5)"
    " WHERE run_id = $1 AND group_key = $2";
constexpr const char* kInsertAssignment =
    "INSERT INTO assignments (id, run_id, group_key, host_id, step_id, attempt, type, argv, timeout_ms,"
    " parse, inventory_after, state) VALUES ($1,$2,$3,$4,$5,$6,$7,$8::jsonb,$9,$10,$11,'pending')";
constexpr const char* kCancelAssignment =
    "UPDATE assignments SET state = 'cancelled', finished_at = now() WHERE id = $1 AND state IN ('pending', 'dispatched')";
// The host's work for an agent that holds no step: first a step handed out before whose answer
// never reached the agent (kilnd died between the commit and the reply, or the agent gave up
// on the poll), the same id and lease again with the lease counted from now (kiln-agent's
// journal knows an id it already ran); else its oldest pending step with a new lease.
const std::string kClaim =
    std::string("UPDATE assignments a SET state = 'dispatched',"
                " lease = CASE WHEN a.state = 'pending' THEN a.lease + 1 ELSE a.lease END,"
                " dispatched_at = CASE WHEN a.state = 'pending' THEN now() ELSE a.dispatched_at END,"
                " lease_expires_at = now() + (a.timeout_ms + $2) * interval '1 millisecond'"
                " WHERE a.id = (SELECT id FROM assignments WHERE host_id = $1"
                "   AND (state = 'pending' OR (state = 'dispatched' AND lease_expires_at > now()))"
                "   ORDER BY state = 'pending', CASE WHEN state = 'pending' THEN created_at ELSE dispatched_at END, id"
                "   LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING ") +
    kAssignmentColumns;
const std::string kAssignmentById = std::string("SELECT ") + kAssignmentColumns + " FROM assignments WHERE id = $1";

std::vector<PreparedStatement> runStatements() {
  return {{"lock_group", kLockGroup},          {"report_lock", kReportLock},
          {"report_done", kReportDone},        {"assignment_state", kAssignmentState},
          {"update_group", kUpdateGroup},      {"insert_assignment", kInsertAssignment},
          {"cancel_assignment", kCancelAssignment}, {"claim", kClaim},
          {"assignment_by_id", kAssignmentById}};
}

runs::WorkflowRow workflowFromRow(const pqxx::row& r) {
  return {r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<std::string>(),
          fromEpoch(r[4].as<double>())};
}


// Writes what the engine and the service decided for one group.
void persistUpdate(pqxx::work& txn, const RunRow& run, const std::string& group_key, const GroupUpdate& u,
                   const core::Actor& actor, bool insert) {
  const bool done = runs::Engine::done(u.state);
  const std::string state = runs::toJson(u.state).dump();
  std::optional<double> wake;
  if (u.effects.next_wakeup && !done) wake = toEpoch(*u.effects.next_wakeup);
  if (insert) {
    txn.exec_params(
        "INSERT INTO run_groups (run_id, group_key, state, done, next_wakeup)"
        " VALUES ($1, $2, $3::jsonb, $4, to_timestamp($5))",
        run.id, group_key, state, done, wake);
  } else {
    txn.exec_prepared("update_group", run.id, group_key, state, done, wake);
  }
  for (const auto& d : u.effects.dispatches)
    txn.exec_prepared("insert_assignment", d.assignment_id, run.id, group_key, d.host, d.step_id, d.attempt, d.type,
                      json(d.argv).dump(), d.timeout_ms, d.parse, d.inventory_after);
  for (const auto& id : u.effects.cancel_assignments) txn.exec_prepared("cancel_assignment", id);
  for (const auto& t : u.transitions) {
    // A transition the host's current state refuses (an operator moved it meanwhile) is
    // skipped: the run's verdict stands, the host stays where the operator put it.
    (void)applyTransition(txn, t, actor);
  }
}

// A row of runColumns() at `offset` followed by the group's state.
Result<std::pair<RunRow, GroupState>> runAndGroup(const pqxx::row& r, int offset) {
  RunRow run = runFromRow(r, offset);
  auto state = runs::groupFromJson(json::parse(r[offset + kRunColumnCount].c_str()));
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

  Status putWorkflow(const runs::WorkflowRow& w, const core::Actor& actor) override {
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      txn.exec_params(
          "INSERT INTO workflow_versions (name, hash, yaml, source, created_by) VALUES ($1,$2,$3,$4,$5)"
          " ON CONFLICT DO NOTHING",
          w.name, w.hash, w.yaml, w.source, actor.token_id);
      auto changed = txn.exec_params(
          "INSERT INTO workflows (name, hash) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE"
          " SET hash = excluded.hash, updated_at = now() WHERE workflows.hash <> excluded.hash RETURNING name",
          w.name, w.hash);
      if (!changed.empty())
        writeAudit(txn, actor, "workflow.put", w.name, json{{"hash", w.hash}, {"source", w.source}}.dump());
      return Ok{};
    });
  }

  Result<std::optional<runs::WorkflowRow>> currentWorkflow(const std::string& name) override {
    return pool_.transact<std::optional<runs::WorkflowRow>>(
        [&](pqxx::work& txn) -> Result<std::optional<runs::WorkflowRow>> {
          auto rows = txn.exec_params(
              "SELECT v.name, v.hash, v.source, v.yaml, extract(epoch from w.updated_at)::float8"
              " FROM workflows w JOIN workflow_versions v USING (name, hash) WHERE w.name = $1",
              name);
          if (rows.empty()) return std::optional<runs::WorkflowRow>();
          return std::optional<runs::WorkflowRow>(workflowFromRow(rows[0]));
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
    return pool_.transact<RunRow>([&](pqxx::work& txn) -> Result<RunRow> {
      const RunRow& run = nr.run;
      txn.exec_params(
          "INSERT INTO workflow_runs (id, workflow, workflow_hash, scope, purpose, params, state, created_by, owner)"
          " VALUES ($1,$2,$3,$4,$5,$6::jsonb,'running',$7,NULLIF($8, ''))",
          run.id, run.workflow, run.workflow_hash, run.scope, run.purpose, run.params.dump(), actor.token_id, run.owner);
      for (const auto& t : nr.start_transitions) {
        auto applied = applyTransition(txn, t, actor);
        if (!applied.ok()) return applied.error();
      }
      for (const auto& g : nr.groups) {
        for (const auto& h : g.hosts)
          txn.exec_params("INSERT INTO run_hosts (run_id, host_id, group_key) VALUES ($1,$2,$3)", run.id, h, g.key);
        persistUpdate(txn, run, g.key, g.update, actor, /*insert=*/true);
      }
      writeAudit(txn, actor, "run.create", run.id,
                 json{{"workflow", run.workflow}, {"purpose", run.purpose}, {"groups", nr.groups.size()}}.dump());
      return runFromRow(txn.exec_params1(std::string("SELECT ") + kRunColumns + " FROM workflow_runs WHERE id = $1", run.id));
    });
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
      for (const auto& r : txn.exec_params("SELECT state::text FROM run_groups WHERE run_id = $1 ORDER BY group_key", id)) {
        auto g = runs::groupFromJson(json::parse(r[0].c_str()));
        if (!g.ok()) return g.error();
        out.push_back(std::move(*g));
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
          std::string("SELECT ") + kRunColumns + ", substr(id, 3)::bigint AS n FROM workflow_runs r"
          " WHERE substr(id, 3)::bigint < $1 AND ($2 = '' OR workflow = $2) AND ($3 = '' OR state = $3)"
          " AND ($4 = '' OR purpose = $4)"
          " AND ($5 = '' OR EXISTS (SELECT 1 FROM run_hosts h WHERE h.run_id = r.id AND h.host_id = $5))"
          " ORDER BY n DESC LIMIT $6",
          before, f.workflow, f.state, f.purpose, f.host, limit + 1);
      core::Page<RunRow> out;
      for (const auto& r : rows) {
        if (static_cast<int>(out.items.size()) == limit) {
          out.next_cursor = std::to_string(rows[limit - 1][11].as<std::int64_t>());
          break;
        }
        out.items.push_back(runFromRow(r));
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
    auto ids = pool_.transact<std::vector<std::string>>([&](pqxx::work& txn) -> Result<std::vector<std::string>> {
      std::vector<std::string> out;
      for (const auto& r : txn.exec(
               "SELECT id FROM workflow_runs r WHERE state = 'running' AND NOT EXISTS"
               " (SELECT 1 FROM run_groups g WHERE g.run_id = r.id AND NOT g.done) LIMIT 200"))
        out.push_back(r[0].as<std::string>());
      return out;
    });
    if (!ids.ok()) return ids.error();
    std::vector<std::string> finished;
    for (const auto& id : *ids) {
      auto r = pool_.transact<bool>([&](pqxx::work& txn) -> Result<bool> {
        auto rows = txn.exec_params(std::string("SELECT ") + kRunColumns + " FROM workflow_runs WHERE id = $1 FOR UPDATE", id);
        if (rows.empty()) return false;
        RunRow run = runFromRow(rows[0]);
        if (run.state != "running") return false;
        std::vector<GroupState> groups;
        for (const auto& g : txn.exec_params("SELECT state::text, done FROM run_groups WHERE run_id = $1", id)) {
          if (!g[1].as<bool>()) return false;
          auto st = runs::groupFromJson(json::parse(g[0].c_str()));
          if (!st.ok()) return st.error();
          groups.push_back(std::move(*st));
        }
        auto [state, summary] = verdict(run, groups);
        txn.exec_params("UPDATE workflow_runs SET state = $2, summary = $3::jsonb, finished_at = now() WHERE id = $1",
                        id, state, summary.dump());
        writeAudit(txn, {"system", "kilnd"}, "run.finish", id, json{{"state", state}}.dump());
        return true;
      });
      if (r.ok() && *r) finished.push_back(id);
    }
    return finished;
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
      return claim(txn, host, grace_ms);
    });
  }

  Result<runs::ReportReply> report(const std::string& id, const std::string& host, int lease, const json& result,
                                   const GroupFn& fn, bool claim_next, std::int64_t grace_ms) override {
    return pool_.transact<runs::ReportReply>([&](pqxx::work& txn) -> Result<runs::ReportReply> {
      auto locked_rows = txn.exec_prepared("report_lock", id);
      if (locked_rows.empty()) return notFound("no assignment '" + id + "'");
      const auto& lr = locked_rows[0];
      if (lr[0].as<std::string>() != host)
        return Error(ErrorCode::kPermissionDenied, "assignment '" + id + "' belongs to another host");
      const std::string group_key = lr[1].as<std::string>();
      runs::ReportReply reply;
      if (txn.exec_prepared("report_done", id, lease, result.dump()).empty()) {
        // Not a live lease: say which, under the group's lock.
        auto row = txn.exec_prepared1("assignment_state", id);
        const std::string state = row[0].as<std::string>();
        const int current = row[1].as<int>();
        if (state == "done" && current == lease) {
          reply.outcome = runs::ReportOutcome::kDuplicate;
        } else if (state == "cancelled") {
          txn.exec_params("UPDATE assignments SET result = $2::jsonb WHERE id = $1 AND result IS NULL", id, result.dump());
          reply.outcome = runs::ReportOutcome::kCancelled;
        } else {
          return runs::ReportReply{runs::ReportOutcome::kStale, std::nullopt};
        }
      } else {
        auto locked = runAndGroup(lr, 2);
        if (!locked.ok()) return locked.error();
        // The versions the step left behind commit with its result: a kilnd killed after this
        // commit must not lose them (the agent's retry is then only a duplicate).
        if (result.contains("inventory")) writeInventory(txn, host, result["inventory"]);
        auto update = fn(locked->first, std::move(locked->second));
        if (!update.ok()) return update.error();
        persistUpdate(txn, locked->first, group_key, *update, {"agent:" + host, host}, false);
        reply.outcome = runs::ReportOutcome::kAccepted;
      }
      if (claim_next) reply.next = claim(txn, host, grace_ms);
      return reply;
    });
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
      persistUpdate(txn, locked->first, peek[0][1].as<std::string>(), *update, {"system", "kilnd"}, false);
      return true;
    });
  }

  Result<std::vector<std::string>> hostsWithOpenWork() override {
    return pool_.transact<std::vector<std::string>>([&](pqxx::work& txn) -> Result<std::vector<std::string>> {
      std::vector<std::string> out;
      for (const auto& r : txn.exec("SELECT DISTINCT host_id FROM assignments WHERE state IN ('pending', 'dispatched')"))
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

  Result<core::NewToken> enrollAgent(const std::string& host, const std::string& boot_id, const std::string& agent_version,
                                     const json& inventory, const core::Actor& actor) override {
    return pool_.transact<core::NewToken>([&](pqxx::work& txn) -> Result<core::NewToken> {
      if (txn.exec_params("SELECT 1 FROM hosts WHERE id = $1 FOR UPDATE", host).empty())
        return notFound("no host '" + host + "' in the fleet");
      txn.exec_params("UPDATE tokens SET revoked_at = now() WHERE host_id = $1 AND role = 'agent' AND revoked_at IS NULL",
                      host);
      const std::string id = randomHex(6), secret = randomHex(24);
      auto row = txn.exec_params1(
          "INSERT INTO tokens (id, secret_hash, role, name, host_id, created_by) VALUES ($1,$2,'agent',$3,$4,$5)"
          " RETURNING id, name, extract(epoch from created_at)::float8",
          id, sha256Hex(secret), "agent " + host, host, actor.token_id);
      txn.exec_params(
          "UPDATE hosts SET boot_id = $2, agent_version = $3, last_seen = now(), unreachable = false WHERE id = $1",
          host, boot_id, agent_version);
      writeInventory(txn, host, inventory);
      writeAudit(txn, actor, "agent.enroll", host, json{{"token", id}, {"agent_version", agent_version}}.dump());
      core::NewToken t;
      t.info.id = id;
      t.info.name = row[1].as<std::string>();
      t.info.role = core::Role::kAgent;
      t.info.host = host;
      t.info.created_at = fromEpoch(row[2].as<double>());
      t.info.created_by = actor.token_id;
      t.secret = "kiln_" + id + "_" + secret;
      return t;
    });
  }

  Status recordHeartbeats(const std::vector<runs::Heartbeat>& beats) override {
    if (beats.empty()) return Ok{};
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      for (std::size_t start = 0; start < beats.size(); start += 1000) {
        const std::size_t end = std::min(beats.size(), start + 1000);
        std::string values;
        std::vector<std::string> params;
        for (std::size_t i = start; i < end; ++i) {
          const std::size_t n = params.size();
          values += (values.empty() ? "" : ",") + std::string("($") + std::to_string(n + 1) + ", to_timestamp($" +
                    std::to_string(n + 2) + "::float8), $" + std::to_string(n + 3) + ")";
          params.push_back(beats[i].host);
          params.push_back(std::to_string(toEpoch(beats[i].at)));
          params.push_back(beats[i].boot_id);
        }
        const std::string from = " FROM (VALUES " + values + ") v(id, t, b) WHERE h.id = v.id";
        auto back = txn.exec_params("UPDATE hosts h SET unreachable = false" + from + " AND h.unreachable RETURNING h.id, h.state",
                                    pqxx::prepare::make_dynamic_params(params));
        for (const auto& r : back)
          txn.exec_params(
              "INSERT INTO host_events (host_id, action, from_state, to_state, actor, reason)"
              " VALUES ($1, 'reachable', $2, $2, 'system', 'the agent polls again')",
              r[0].as<std::string>(), r[1].as<std::string>());
        txn.exec_params("UPDATE hosts h SET last_seen = v.t, boot_id = NULLIF(v.b, '')" + from,
                        pqxx::prepare::make_dynamic_params(params));
      }
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
        q.repairs = r[12].as<int>();
        q.last_failure = r[13].is_null() ? "" : r[13].as<std::string>();
        if (!r[14].is_null()) {
          const std::string v = r[14].as<std::string>();
          q.run_id = v.substr(0, v.find(' '));
          q.run_state = v.substr(v.find(' ') + 1);
          auto g = txn.exec_params("SELECT state::text FROM run_groups WHERE run_id = $1 AND group_key = $2", q.run_id,
                                   q.host.id);
          if (!g.empty()) {
            auto st = runs::groupFromJson(json::parse(g[0][0].c_str()));
            if (st.ok() && !st->hosts.empty()) {
              const auto& h = st->hosts[0];
              q.progress = {{"pass", h.pass}, {"step_index", h.step_index}, {"status", runs::hostStatusName(h.status)},
                            {"waiting_until_ms", h.not_before ? json(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                        h.not_before->time_since_epoch()).count())
                                                              : json()}};
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
  static std::optional<AssignmentRow> claim(pqxx::work& txn, const std::string& host, std::int64_t grace_ms) {
    auto rows = txn.exec_prepared("claim", host, grace_ms);
    if (rows.empty()) return std::nullopt;
    return assignmentFromRow(rows[0]);
  }

  static void writeInventory(pqxx::work& txn, const std::string& host, const json& inventory) {
    if (!inventory.is_object()) return;
    for (const auto& [kind, v] : inventory.items()) {
      if (!core::isComponentKind(kind) || !v.is_string() || v.get<std::string>().empty()) continue;
      if (kind == core::kSwitchComponent) {
        txn.exec_params(
            "INSERT INTO components (target_id, pod_id, kind, version) SELECT s.id, s.pod_id, $2, $3"
            " FROM switch_trays s JOIN hosts h ON h.pod_id = s.pod_id WHERE h.id = $1"
            " ON CONFLICT (target_id, kind) DO UPDATE SET version = excluded.version, updated_at = now()"
            " WHERE components.version <> excluded.version",
            host, kind, v.get<std::string>());
      } else {
        txn.exec_params(
            "INSERT INTO components (target_id, pod_id, kind, version) SELECT id, pod_id, $2, $3 FROM hosts WHERE id = $1"
            " ON CONFLICT (target_id, kind) DO UPDATE SET version = excluded.version, updated_at = now()"
            " WHERE components.version <> excluded.version",
            host, kind, v.get<std::string>());
      }
    }
    txn.exec_params("UPDATE hosts SET inventory_at = now() WHERE id = $1", host);
  }

  PgPool pool_;
};

}  // namespace

std::unique_ptr<runs::RunStore> makePgRunStore(const PgStoreOptions& options) {
  return std::make_unique<PgRunStore>(options);
}

}  // namespace kiln::db
