#include "orchestrator/db/pg_internal.h"

#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

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
    " extract(epoch from h.last_seen)::float8, coalesce(h.agent_version, '')";

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
  h.agent_version = r[12].as<std::string>();
  return h;
}


namespace {

// A job was running on a host that failed: an interruption candidate for triage.
void recordInterruptionCandidate(pqxx::work& txn, const core::HostTransition& t, const std::string& pod,
                                 const core::Actor& actor) {
  const std::string id = "cand-" + txn.exec1("SELECT nextval('interruption_candidate_seq')")[0].as<std::string>();
  txn.exec_params(
      "INSERT INTO interruptions (id, at, pod, cause, description, candidate, created_by)"
      " VALUES ($1, now(), $2, 'unknown', $3, true, $4)",
      id, pod, "host " + t.host + " failed while allocated: " + t.reason, actor.token_id);
  txn.exec_params("INSERT INTO interruption_hosts (interruption_id, host_id) VALUES ($1, $2)", id, t.host);
}

}  // namespace

Result<core::HostState> applyTransition(pqxx::work& txn, const core::HostTransition& t, const core::Actor& actor) {
  return std::move(applyTransitions(txn, {t}, actor).front());
}

std::vector<Result<core::HostState>> applyTransitions(pqxx::work& txn, const std::vector<core::HostTransition>& ts,
                                                      const core::Actor& actor) {
  using nlohmann::json;
  std::vector<Result<core::HostState>> out;
  if (ts.empty()) return out;
  struct Host {
    core::HostState state;
    std::string pod, reason;
    int moves = 0, repairs = 0;
  };
  std::map<std::string, Host> hosts;
  {
    std::set<std::string> ids;
    for (const auto& t : ts) ids.insert(t.host);
    // Every row lock up front, in id order: two batches over overlapping hosts queue instead of
    // deadlocking.
    for (const auto& r : txn.exec_params("SELECT id, state, pod_id FROM hosts WHERE id IN"
                                         " (SELECT jsonb_array_elements_text($1::jsonb)) ORDER BY id FOR UPDATE",
                                         json(std::vector<std::string>(ids.begin(), ids.end())).dump()))
      hosts[r[0].as<std::string>()] = Host{hostStateColumn(r[1]), r[2].as<std::string>(), "", 0, 0};
  }
  // Each transition from the state the ones before it left (a host may move twice: drain,
  // then drained), as applyTransition one after another would.
  json events = json::array(), audits = json::array();
  for (const auto& t : ts) {
    auto it = hosts.find(t.host);
    if (it == hosts.end()) {
      out.emplace_back(notFound("no host '" + t.host + "'"));
      continue;
    }
    Host& h = it->second;
    auto next = core::nextState(h.state, t.action, t.override_to);
    if (!next.ok()) {
      next.error().with("host", t.host);
      out.emplace_back(next.error());
      continue;
    }
    const std::string from(core::hostStateName(h.state)), to(core::hostStateName(*next));
    const std::string action(core::hostActionName(t.action));
    events.push_back({{"h", t.host}, {"a", action}, {"f", from}, {"t", to}, {"r", t.reason}});
    audits.push_back({{"a", "host." + action}, {"t", t.host}, {"d", {{"from", from}, {"to", to}, {"reason", t.reason}}}});
    if (core::interruptionCandidate(h.state, *next)) recordInterruptionCandidate(txn, t, h.pod, actor);
    h.state = *next;
    h.reason = t.reason;
    ++h.moves;
    h.repairs += t.action == core::HostAction::kRepairComplete ? 1 : 0;
    out.emplace_back(*next);
  }
  if (events.empty()) return out;
  // One statement each for the hosts, their events and the audit records: the host_events
  // trigger (service_days, db/migrations/0005) runs once for the batch instead of once a host,
  // and holds its building's row for one statement's rows.
  json rows = json::array();
  std::set<std::string> pods;
  for (const auto& [id, h] : hosts) {
    if (h.moves == 0) continue;
    rows.push_back({{"id", id}, {"s", core::hostStateName(h.state)}, {"r", h.reason}, {"n", h.moves}, {"p", h.repairs}});
    pods.insert(h.pod);
  }
  txn.exec_params(
      "UPDATE hosts h SET state = v.s, state_since = now(), state_reason = v.r, version = h.version + v.n,"
      " repairs = h.repairs + v.p FROM jsonb_to_recordset($1::jsonb) AS v(id text, s text, r text, n int, p int)"
      " WHERE h.id = v.id",
      rows.dump());
  txn.exec_params(
      "INSERT INTO host_events (host_id, action, from_state, to_state, actor, reason)"
      " SELECT v.h, v.a, v.f, v.t, $2, v.r FROM ROWS FROM (jsonb_to_recordset($1::jsonb)"
      " AS (h text, a text, f text, t text, r text)) WITH ORDINALITY AS v(h, a, f, t, r, n) ORDER BY v.n",
      events.dump(), actor.token_id);
  txn.exec_params(
      "INSERT INTO audit_log (actor, action, target, details)"
      " SELECT $2, v.a, v.t, v.d FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (a text, t text, d jsonb))"
      " WITH ORDINALITY AS v(a, t, d, n) ORDER BY v.n",
      audits.dump(), actor.token_id);
  for (const auto& pod : pods) refreshPodState(txn, pod);
  return out;
}

}  // namespace kiln::db
