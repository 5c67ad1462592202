#include "orchestrator/db/pg_internal.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "orchestrator/core/fleet_model.h"

namespace kiln::db {

core::TimePoint fromEpoch(double seconds) {
  return core::TimePoint(std::chrono::duration_cast<core::TimePoint::duration>(std::chrono::duration<double>(seconds)));
}

void writeAudit(pqxx::work& txn, const core::Actor& actor, const std::string& action,
                const std::string& target, const std::string& details) {
  txn.exec_params("INSERT INTO audit_log (actor, action, target, details) VALUES ($1,$2,$3,$4::jsonb)",
                  actor.token_id, action, target, details.empty() ? "{}" : details);
}

Status claimIdempotencyKey(pqxx::work& txn, const std::optional<core::IdempotencyClaim>& claim,
                           const std::string& object_id, const core::Actor& actor) {
  if (!claim) return Ok{};
  auto taken = txn.exec_params(
      "INSERT INTO idempotency_keys (key, scope, fingerprint, object_id, created_by) VALUES ($1,$2,$3,$4,$5)"
      " ON CONFLICT (key) DO NOTHING RETURNING key",
      claim->key, claim->scope, claim->fingerprint, object_id, actor.token_id);
  if (taken.empty())
    return Error(conflict("Idempotency-Key '" + claim->key + "' was taken by another request"))
        .with("idempotency_key", claim->key)
        .with("reason", std::string(core::kIdempotencyKeyTaken));
  return Ok{};
}

void refreshPodState(pqxx::work& txn, const std::string& pod_id) {
  auto rows = txn.exec_params(
      "SELECT h.state, count(*), p.platform FROM hosts h JOIN pods p ON p.id = h.pod_id"
      " WHERE h.pod_id = $1 GROUP BY h.state, p.platform",
      pod_id);
  if (rows.empty()) return;
  std::map<core::HostState, int> by_state;
  for (const auto& r : rows) by_state[hostStateColumn(r[0])] = r[1].as<int>();
  const auto& g = core::geometry(*core::parsePlatform(rows[0][2].as<std::string>()));
  txn.exec_params("UPDATE pods SET state = $2 WHERE id = $1 AND state <> $2", pod_id,
                  std::string(core::podStateName(core::podState(by_state, g))));
}

double toEpoch(core::TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

std::optional<core::TimePoint> optEpoch(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return fromEpoch(f.as<double>());
}

Result<std::int64_t> numericCursor(const std::string& cursor) {
  if (cursor.empty()) return std::numeric_limits<std::int64_t>::max();
  try {
    std::size_t used = 0;
    const std::int64_t n = std::stoll(cursor, &used);
    if (used == cursor.size()) return n;
  } catch (...) {
  }
  return invalidArgument("cursor is not valid");
}

const char* const kHostColumns =
    "h.id, h.pod_id, h.rack_id, h.building_id, h.site_id, p.platform, h.state, h.tray, h.spare,"
    " extract(epoch from h.state_since)::float8, h.state_reason,"
    " extract(epoch from h.last_seen)::float8";

core::HostState hostStateFromDb(const std::string& name, const std::string& where) {
  if (auto s = core::parseHostState(name)) return *s;
  // The hosts table's CHECK allows only known states: a row that is not one is a store error
  // (the transaction turns it into kInternal), never a crash.
  throw std::runtime_error("unknown host state '" + name + "' in " + where);
}

core::HostState hostStateColumn(const pqxx::field& f) { return hostStateFromDb(f.as<std::string>(), f.name()); }

core::PodState podStateColumn(const pqxx::field& f, const std::string& pod_id) {
  const auto name = f.as<std::string>();
  if (auto s = core::parsePodState(name)) return *s;
  // Written only by refreshPodState, so a name this binary does not know came from another
  // one (an older or newer kilnd): a store error, never a crash.
  throw std::runtime_error("unknown pod state '" + name + "' of pod " + pod_id);
}

core::HostSummary hostFromRow(const pqxx::row& r) {
  core::HostSummary h;
  h.id = r[0].as<std::string>();
  h.pod = r[1].as<std::string>();
  h.rack = r[2].as<std::string>();
  h.building = r[3].as<std::string>();
  h.site = r[4].as<std::string>();
  h.platform = r[5].as<std::string>();
  h.state = hostStateColumn(r[6]);
  h.tray = r[7].as<int>();
  h.spare = r[8].as<bool>();
  h.state_since = fromEpoch(r[9].as<double>());
  h.state_reason = r[10].as<std::string>();
  h.last_seen = optEpoch(r[11]);
  return h;
}


Result<core::HostState> applyTransition(pqxx::work& txn, const core::HostTransition& t, const core::Actor& actor,
                                    std::string* defer_pod_refresh) {
  auto rows = txn.exec_params("SELECT state, pod_id FROM hosts WHERE id = $1 FOR UPDATE", t.host);
  if (rows.empty()) return notFound("no host '" + t.host + "'");
  const core::HostState from_state = hostStateColumn(rows[0][0]);
  const std::string from(core::hostStateName(from_state));
  const std::string pod = rows[0][1].as<std::string>();
  auto next = core::nextState(from_state, t.action, t.override_to);
  if (!next.ok()) {
    next.error().with("host", t.host);
    return next.error();
  }
  const std::string to(core::hostStateName(*next));
  const std::string action(core::hostActionName(t.action));
  txn.exec_params(
      "UPDATE hosts SET state = $2, state_since = now(), state_reason = $3, version = version + 1,"
      " repairs = repairs + $4 WHERE id = $1",
      t.host, to, t.reason, t.action == core::HostAction::kRepairComplete ? 1 : 0);
  txn.exec_params(
      "INSERT INTO host_events (host_id, action, from_state, to_state, actor, reason)"
      " VALUES ($1, $2, $3, $4, $5, $6)",
      t.host, action, from, to, actor.token_id, t.reason);
  writeAudit(txn, actor, "host." + action, t.host,
             nlohmann::json{{"from", from}, {"to", to}, {"reason", t.reason}}.dump());
  if (defer_pod_refresh) *defer_pod_refresh = pod;
  else refreshPodState(txn, pod);
  if (from_state == core::HostState::kAllocated && *next == core::HostState::kFailed) {
    // A job was running on the host: record an interruption candidate for triage.
    const std::string id = "cand-" + txn.exec1("SELECT nextval('interruption_candidate_seq')")[0].as<std::string>();
    txn.exec_params(
        "INSERT INTO interruptions (id, at, pod, cause, description, candidate, created_by)"
        " VALUES ($1, now(), $2, 'unknown', $3, true, $4)",
        id, pod, "host " + t.host + " failed while allocated: " + t.reason, actor.token_id);
    txn.exec_params("INSERT INTO interruption_hosts (interruption_id, host_id) VALUES ($1, $2)", id, t.host);
  }
  return *next;
}

}  // namespace kiln::db
