#include "orchestrator/db/pg_rollout_store.h"

#include <unordered_map>

#include <nlohmann/json.hpp>

#include "orchestrator/core/fleet_model.h"
#include "orchestrator/db/pg_internal.h"
#include "orchestrator/db/pg_pool.h"
#include "orchestrator/db/rollout_codecs.h"

namespace kiln::db {
namespace {

using nlohmann::json;
using rollouts::BundleRow;
using rollouts::PodPhase;
using rollouts::RolloutPodRow;
using rollouts::RolloutRow;
using rollouts::RolloutState;

constexpr const char* kBundleColumns =
    "b.id, b.spec::text, extract(epoch from b.created_at)::float8, b.created_by,"
    " EXISTS (SELECT 1 FROM rollouts r WHERE r.bundle_id = b.id)";

Result<BundleRow> bundleFromRow(const pqxx::row& r) {
  auto b = bundleFromStored(json::parse(r[1].c_str()));
  if (!b.ok()) return b.error();
  BundleRow row;
  row.bundle = *b;
  row.bundle.id = r[0].as<std::string>();
  row.created_at = fromEpoch(r[2].as<double>());
  row.created_by = r[3].as<std::string>();
  row.used = r[4].as<bool>();
  return row;
}

constexpr const char* kRolloutColumns =
    "id, bundle_id, state, halt_reason, coalesce(rollback_of, ''), created_by, selector::text, policy::text,"
    " plan::text, extract(epoch from created_at)::float8, extract(epoch from started_at)::float8,"
    " extract(epoch from finished_at)::float8, extract(epoch from previous_wave_finished)::float8";

// A selector or policy the store wrote from a typed value (rollout_codecs.h). A row that no longer parses
// (edited by hand) fails the read, as a broken row does, instead of being half read.
template <typename T>
T stored(Result<T> value, const char* what, const std::string& rollout) {
  if (!value.ok()) throw std::runtime_error("rollout " + rollout + ": its stored " + what + " does not parse: " + value.error().message);
  return std::move(*value);
}

RolloutRow rolloutFromRow(const pqxx::row& r) {
  RolloutRow o;
  o.id = r[0].as<std::string>();
  o.bundle_id = r[1].as<std::string>();
  o.state = rollouts::parseRolloutState(r[2].as<std::string>()).value();  // the table's CHECK
  o.halt_reason = r[3].as<std::string>();
  o.rollback_of = r[4].as<std::string>();
  o.created_by = r[5].as<std::string>();
  o.selector = stored(selectorFromStored(json::parse(r[6].c_str())), "selector", o.id);
  o.policy = stored(policyFromStored(json::parse(r[7].c_str())), "policy", o.id);
  o.plan = json::parse(r[8].c_str());
  o.created_at = fromEpoch(r[9].as<double>());
  o.started_at = optEpoch(r[10]);
  o.finished_at = optEpoch(r[11]);
  o.previous_wave_finished = optEpoch(r[12]);
  return o;
}

constexpr const char* kPodColumns =
    "rp.rollout_id, rp.pod_id, p.building_id, rp.wave, rp.position, rp.attempt, rp.phase, rp.waiting_reason,"
    " rp.message, coalesce(rp.run_id, ''), coalesce(rp.validation_run_id, ''), coalesce(rp.before_versions, 'null')::text,"
    " extract(epoch from rp.started_at)::float8, extract(epoch from rp.finished_at)::float8";

RolloutPodRow podFromRow(const pqxx::row& r) {
  RolloutPodRow p;
  p.rollout_id = r[0].as<std::string>();
  p.pod = r[1].as<std::string>();
  p.building = r[2].as<std::string>();
  p.wave = r[3].as<int>();
  p.position = r[4].as<int>();
  p.attempt = r[5].as<int>();
  p.phase = rollouts::parsePodPhase(r[6].as<std::string>()).value_or(PodPhase::kPending);
  p.waiting_reason = r[7].as<std::string>();
  p.message = r[8].as<std::string>();
  p.run_id = r[9].as<std::string>();
  p.validation_run_id = r[10].as<std::string>();
  p.before_versions = json::parse(r[11].c_str());
  p.started_at = optEpoch(r[12]);
  p.finished_at = optEpoch(r[13]);
  return p;
}

void event(pqxx::work& txn, const std::string& rollout, const std::string& pod, const std::string& kind,
           const std::string& message) {
  txn.exec_params("INSERT INTO rollout_events (rollout_id, pod_id, kind, message) VALUES ($1, NULLIF($2, ''), $3, $4)",
                  rollout, pod, kind, message);
}

// "('draining', 'upgrading', 'validating')": a set rollouts/policy.h defines as an SQL list of text literals.
template <typename T, typename Name>
std::string sqlList(const std::vector<T>& values, Name name) {
  std::string out = "(";
  for (const auto& v : values) out += std::string(out.size() > 1 ? ", " : "") + "'" + name(v) + "'";
  return out + ")";
}
std::string phaseSqlList(const std::vector<PodPhase>& phases) { return sqlList(phases, rollouts::podPhaseName); }
std::string stateSqlList(const std::vector<RolloutState>& states) { return sqlList(states, rollouts::rolloutStateName); }

const std::string& unfinishedStatesSql() {
  static const std::string list = stateSqlList(rollouts::unfinishedRolloutStates());
  return list;
}
const std::string& unfinishedPhasesSql() {
  static const std::string list = phaseSqlList(rollouts::unfinishedPhases());
  return list;
}
const std::string& inFlightPhasesSql() {
  static const std::string list = phaseSqlList(rollouts::inFlightPhases());
  return list;
}

// podSnapshots' version counts. Grouped in the "C" collation: the incremental sort behind the
// aggregate compares kind and version bytewise instead of through the locale (equality, and
// so the groups, are the same).
constexpr const char* kVersionCounts =
    "SELECT c.pod_id, c.kind COLLATE \"C\", c.version COLLATE \"C\", count(*) FROM components c";
constexpr const char* kVersionGroups = " GROUP BY 1, 2, 3";

class PgRolloutStore final : public rollouts::RolloutStore {
 public:
  explicit PgRolloutStore(const PgStoreOptions& o) : pool_(o.database_url, o.pool_size) {}

  Result<std::pair<BundleRow, PutOutcome>> putBundle(const rollouts::Bundle& b, const core::Actor& actor,
                                                     const std::optional<core::IfMatch>& if_match) override {
    return pool_.transact<std::pair<BundleRow, PutOutcome>>([&](pqxx::work& txn) -> Result<std::pair<BundleRow, PutOutcome>> {
      const json spec = storedBundle(b);
      auto existing = txn.exec_params(std::string("SELECT ") + kBundleColumns +
                                          " FROM bundles b WHERE name = $1 AND version = $2 FOR UPDATE",
                                      b.name, b.version);
      if (if_match && existing.empty()) return core::preconditionFailed("bundle " + b.name + "@" + b.version, std::nullopt);
      if (!existing.empty()) {
        auto row = bundleFromRow(existing[0]);
        if (!row.ok()) return row.error();
        if (if_match && !if_match->matches(rollouts::bundleEtag(row->bundle)))
          return core::preconditionFailed("bundle " + b.name + "@" + b.version, rollouts::bundleEtag(row->bundle));
        rollouts::Bundle same = b;
        same.id = row->bundle.id;
        if (row->bundle == same) return std::make_pair(*row, PutOutcome::kUnchanged);
        if (row->used)
          return conflict("bundle " + b.name + "@" + b.version + " was used by a rollout and cannot change: publish a new version")
              .with("bundle", row->bundle.id);
        txn.exec_params("UPDATE bundles SET spec = $2::jsonb WHERE id = $1", row->bundle.id, spec.dump());
        writeAudit(txn, actor, "bundle.update", row->bundle.id, "{}");
        auto updated = bundleFromRow(txn.exec_params1(std::string("SELECT ") + kBundleColumns + " FROM bundles b WHERE id = $1",
                                                      row->bundle.id));
        if (!updated.ok()) return updated.error();
        return std::make_pair(*updated, PutOutcome::kUpdated);
      }
      const std::string id = "b-" + txn.exec1("SELECT nextval('bundle_seq')")[0].as<std::string>();
      txn.exec_params("INSERT INTO bundles (id, name, version, spec, created_by) VALUES ($1,$2,$3,$4::jsonb,$5)", id, b.name,
                      b.version, spec.dump(), actor.token_id);
      writeAudit(txn, actor, "bundle.create", id, json{{"name", b.name}, {"version", b.version}}.dump());
      auto row = bundleFromRow(txn.exec_params1(std::string("SELECT ") + kBundleColumns + " FROM bundles b WHERE id = $1", id));
      if (!row.ok()) return row.error();
      return std::make_pair(*row, PutOutcome::kCreated);
    });
  }

  Result<std::optional<BundleRow>> getBundle(const std::string& ref) override {
    return pool_.transact<std::optional<BundleRow>>([&](pqxx::work& txn) -> Result<std::optional<BundleRow>> {
      pqxx::result rows;
      if (auto at = ref.find('@'); at != std::string::npos)
        rows = txn.exec_params(std::string("SELECT ") + kBundleColumns + " FROM bundles b WHERE name = $1 AND version = $2",
                               ref.substr(0, at), ref.substr(at + 1));
      else
        rows = txn.exec_params(std::string("SELECT ") + kBundleColumns + " FROM bundles b WHERE id = $1", ref);
      if (rows.empty()) return std::optional<BundleRow>();
      auto row = bundleFromRow(rows[0]);
      if (!row.ok()) return row.error();
      return std::optional<BundleRow>(*row);
    });
  }

  Result<std::vector<BundleRow>> listBundles() override {
    return pool_.transact<std::vector<BundleRow>>([&](pqxx::work& txn) -> Result<std::vector<BundleRow>> {
      std::vector<BundleRow> out;
      for (const auto& r : txn.exec(std::string("SELECT ") + kBundleColumns + " FROM bundles b ORDER BY b.created_at DESC, b.id")) {
        auto row = bundleFromRow(r);
        if (!row.ok()) return row.error();
        out.push_back(*row);
      }
      return out;
    });
  }

  Result<std::vector<rollouts::PodSnapshot>> podSnapshots(const rollouts::Selector& s) override {
    return pool_.transact<std::vector<rollouts::PodSnapshot>>([&](pqxx::work& txn) -> Result<std::vector<rollouts::PodSnapshot>> {
      // Only the selector's own conditions: "($n = '[]' OR p.id IN (...))" hid a short pod list
      // from the planner, which then walked half of components for three pods (~0.2 s on the
      // 1M-GPU fleet against ~4 ms through components_pod).
      std::vector<std::string> conditions, params;
      auto in = [&](const char* column, const std::vector<std::string>& values) {
        if (values.empty()) return;
        params.push_back(json(values).dump());
        conditions.push_back(std::string(column) + " IN (SELECT jsonb_array_elements_text($" + std::to_string(params.size()) +
                             "::jsonb))");
      };
      in("p.site_id", s.sites);
      in("p.building_id", s.buildings);
      in("p.platform", s.platforms);
      in("p.id", s.pods);
      if (!s.labels.empty()) {
        params.push_back(json(s.labels).dump());
        conditions.push_back("p.labels @> $" + std::to_string(params.size()) + "::jsonb");
      }
      std::string where;
      for (const auto& c : conditions) where += (where.empty() ? " WHERE " : " AND ") + c;
      const bool filtered = !conditions.empty();
      std::vector<rollouts::PodSnapshot> out;
      std::unordered_map<std::string, std::size_t> index;  // pod id -> position in out
      for (const auto& r : txn.exec_params(
               "SELECT p.id, p.site_id, p.building_id, p.platform, p.state, p.labels::text,"
               " EXISTS (SELECT 1 FROM hosts h WHERE h.pod_id = p.id AND h.state IN " +
               core::hostStateSqlList({core::HostState::kAllocated}) + "),"
               " coalesce((SELECT rp.rollout_id FROM rollout_pods rp JOIN rollouts ro ON ro.id = rp.rollout_id"
               "   WHERE rp.pod_id = p.id AND ro.state IN " + unfinishedStatesSql() +
               "   AND rp.phase IN " + unfinishedPhasesSql() + " LIMIT 1), ''),"
               " (SELECT count(*) FROM hosts h WHERE h.pod_id = p.id),"
               " (SELECT count(*) FROM switch_trays t WHERE t.pod_id = p.id)"
               " FROM pods p" + where + " ORDER BY p.id",
               pqxx::prepare::make_dynamic_params(params))) {
        rollouts::PodSnapshot& ps = out.emplace_back();
        ps.id = r[0].as<std::string>();
        ps.site = r[1].as<std::string>();
        ps.building = r[2].as<std::string>();
        ps.platform = r[3].as<std::string>();
        ps.state = podStateColumn(r[4], ps.id);
        const json labels = json::parse(r[5].c_str());
        for (const auto& [k, v] : labels.items()) ps.labels[k] = v.is_string() ? v.get<std::string>() : v.dump();
        ps.allocated = r[6].as<bool>();
        ps.other_rollout = r[7].as<std::string>();
        ps.hosts = r[8].as<int>();
        ps.switch_trays = r[9].as<int>();
        index.emplace(ps.id, out.size() - 1);
      }
      if (out.empty()) return out;
      // Versions counted per pod, kind and version straight from components (1.6M rows for
      // a 1M-GPU fleet): no join with pods (a merge join of every row before the aggregate);
      // a selector that filters pods restricts the rows by a semi-join on the same WHERE.
      const pqxx::result versions =
          filtered ? txn.exec_params(std::string(kVersionCounts) + " WHERE c.pod_id IN (SELECT p.id FROM pods p" + where + ")" +
                                         kVersionGroups,
                                     pqxx::prepare::make_dynamic_params(params))
                   : txn.exec(std::string(kVersionCounts) + kVersionGroups);
      for (const auto& r : versions) {
        auto it = index.find(r[0].c_str());
        if (it == index.end()) continue;
        rollouts::PodSnapshot& ps = out[it->second];
        std::string kind = r[1].as<std::string>();
        auto& target = kind == core::kSwitchComponent ? ps.switch_versions : ps.host_versions;
        target[std::move(kind)][r[2].as<std::string>()] = r[3].as<int>();
      }
      return out;
    });
  }

  Result<std::string> nextRolloutId() override {
    return pool_.transact<std::string>([&](pqxx::work& txn) -> Result<std::string> {
      return "ro-" + txn.exec1("SELECT nextval('rollout_seq')")[0].as<std::string>();
    });
  }

  Result<RolloutRow> createRollout(const RolloutRow& r, const std::vector<RolloutPodRow>& pods, const core::Actor& actor) override {
    return pool_.transact<RolloutRow>([&](pqxx::work& txn) -> Result<RolloutRow> {
      // One active rollout per pod: checked under a lock so two creations cannot both take a pod.
      txn.exec("LOCK TABLE rollout_pods IN SHARE ROW EXCLUSIVE MODE");
      for (const auto& p : pods) {
        auto taken = txn.exec_params(
            "SELECT rp.rollout_id FROM rollout_pods rp JOIN rollouts ro ON ro.id = rp.rollout_id WHERE rp.pod_id = $1"
            " AND ro.state IN " + unfinishedStatesSql() + " AND rp.phase IN " + unfinishedPhasesSql(),
            p.pod);
        if (!taken.empty())
          return conflict("pod " + p.pod + " is already in rollout " + taken[0][0].as<std::string>()).with("pod", p.pod);
      }
      txn.exec_params(
          "INSERT INTO rollouts (id, bundle_id, selector, policy, plan, state, rollback_of, created_by)"
          " VALUES ($1,$2,$3::jsonb,$4::jsonb,$5::jsonb,'created',NULLIF($6,''),$7)",
          r.id, r.bundle_id, storedSelector(r.selector).dump(), storedPolicy(r.policy).dump(), r.plan.dump(),
          r.rollback_of, actor.token_id);
      if (auto claimed = claimIdempotencyKey(txn, r.claim, r.id, actor); !claimed.ok()) return claimed.error();
      for (const auto& p : pods)
        txn.exec_params("INSERT INTO rollout_pods (rollout_id, pod_id, wave, position, phase) VALUES ($1,$2,$3,$4,'pending')",
                        r.id, p.pod, p.wave, p.position);
      event(txn, r.id, "", "created",
            "rollout of bundle " + r.bundle_id + " over " + std::to_string(pods.size()) + " pods by " + actor.token_id +
                (r.rollback_of.empty() ? "" : ", rolling back " + r.rollback_of) +
                (r.downgrade_reason.empty() ? "" : ", a downgrade allowed because: " + r.downgrade_reason));
      json audit = {{"bundle", r.bundle_id}, {"pods", pods.size()}};
      if (!r.downgrade_reason.empty()) {
        audit["allow_downgrade"] = true;
        audit["reason"] = r.downgrade_reason;
      }
      writeAudit(txn, actor, "rollout.create", r.id, audit.dump());
      return rolloutFromRow(txn.exec_params1(std::string("SELECT ") + kRolloutColumns + " FROM rollouts WHERE id = $1", r.id));
    });
  }

  Result<RolloutRow> getRollout(const std::string& id) override {
    return pool_.transact<RolloutRow>([&](pqxx::work& txn) -> Result<RolloutRow> {
      auto rows = txn.exec_params(std::string("SELECT ") + kRolloutColumns + " FROM rollouts WHERE id = $1", id);
      if (rows.empty()) return notFound("no rollout '" + id + "'");
      return rolloutFromRow(rows[0]);
    });
  }

  Result<std::vector<RolloutPodRow>> rolloutPods(const std::string& id) override {
    return pool_.transact<std::vector<RolloutPodRow>>([&](pqxx::work& txn) -> Result<std::vector<RolloutPodRow>> {
      std::vector<RolloutPodRow> out;
      for (const auto& r : txn.exec_params(std::string("SELECT ") + kPodColumns +
                                               " FROM rollout_pods rp JOIN pods p ON p.id = rp.pod_id"
                                               " WHERE rp.rollout_id = $1 ORDER BY rp.position",
                                           id))
        out.push_back(podFromRow(r));
      return out;
    });
  }

  Result<core::Page<RolloutRow>> listRollouts(std::optional<RolloutState> state_filter,
                                              const core::PageRequest& page) override {
    const std::string state = state_filter ? rollouts::rolloutStateName(*state_filter) : "";
    const int limit = std::clamp(page.limit, 1, 1000);
    auto cursor = numericCursor(page.cursor);
    if (!cursor.ok()) return cursor.error();
    const std::int64_t before = *cursor;
    return pool_.transact<core::Page<RolloutRow>>([&](pqxx::work& txn) -> Result<core::Page<RolloutRow>> {
      auto rows = txn.exec_params(std::string("SELECT ") + kRolloutColumns + ", substr(id, 4)::bigint AS n FROM rollouts"
                                  " WHERE substr(id, 4)::bigint < $1 AND ($2 = '' OR state = $2) ORDER BY n DESC LIMIT $3",
                                  before, state, limit + 1);
      core::Page<RolloutRow> out;
      for (const auto& r : rows) {
        if (static_cast<int>(out.items.size()) == limit) {
          out.next_cursor = std::to_string(rows[limit - 1][13].as<std::int64_t>());
          break;
        }
        out.items.push_back(rolloutFromRow(r));
      }
      return out;
    });
  }

  Result<std::vector<rollouts::RolloutEventRow>> rolloutEvents(const std::string& id, int limit) override {
    using Rows = std::vector<rollouts::RolloutEventRow>;
    return pool_.transact<Rows>([&](pqxx::work& txn) -> Result<Rows> {
      Rows out;
      for (const auto& r : txn.exec_params(
               "SELECT id, (extract(epoch from at) * 1000)::bigint, coalesce(pod_id, ''), kind, message FROM rollout_events"
               " WHERE rollout_id = $1 ORDER BY id DESC LIMIT $2",
               id, limit))
        out.push_back({r[0].as<std::int64_t>(), core::TimePoint{} + std::chrono::milliseconds(r[1].as<std::int64_t>()),
                       {r[2].as<std::string>(), r[3].as<std::string>(), r[4].as<std::string>()}});
      return out;
    });
  }

  Result<std::vector<std::string>> activeRollouts() override {
    return pool_.transact<std::vector<std::string>>([&](pqxx::work& txn) -> Result<std::vector<std::string>> {
      std::vector<std::string> out;
      static const std::string query =
          "SELECT id FROM rollouts WHERE state IN " + stateSqlList(rollouts::activeRolloutStates()) + " ORDER BY created_at";
      for (const auto& r : txn.exec(query))
        out.push_back(r[0].as<std::string>());
      return out;
    });
  }

  Result<RolloutRow> transition(const std::string& id, const std::vector<RolloutState>& from, RolloutState to_state,
                                const std::string& reason, const core::Actor& actor) override {
    return pool_.transact<RolloutRow>([&](pqxx::work& txn) -> Result<RolloutRow> {
      auto rows = txn.exec_params("SELECT state FROM rollouts WHERE id = $1 FOR UPDATE", id);
      if (rows.empty()) return notFound("no rollout '" + id + "'");
      const std::string current = rows[0][0].as<std::string>();
      const std::string to = rollouts::rolloutStateName(to_state);
      const auto current_state = rollouts::parseRolloutState(current);
      if (!current_state || std::find(from.begin(), from.end(), *current_state) == from.end())
        return conflict("rollout " + id + " is " + current + "; this needs it to be " + rollouts::stateList(from))
            .with("state", current);
      // A new statement, so a new snapshot: a pod verb that committed while this waited for the
      // row lock is seen here.
      if (to_state == RolloutState::kCompleted || to_state == RolloutState::kAborted) {
        static const std::string unfinished = phaseSqlList(rollouts::unfinishedPhases());
        static const std::string in_flight = phaseSqlList(rollouts::inFlightPhases());
        const bool completing = to_state == RolloutState::kCompleted;
        const auto left = txn.exec_params1("SELECT count(*) FROM rollout_pods WHERE rollout_id = $1 AND phase IN " +
                                               (completing ? unfinished : in_flight),
                                           id)[0]
                              .as<long>();
        if (left > 0)
          return conflict("rollout " + id + " still has " + std::to_string(left) +
                          (completing ? " unfinished" : " in-flight") + (left == 1 ? " pod" : " pods"))
              .with("state", current);
      }
      txn.exec_params(
          "UPDATE rollouts SET state = $2, halt_reason = CASE WHEN $2 = 'halted' THEN $3 ELSE halt_reason END,"
          " started_at = CASE WHEN $2 = 'running' AND started_at IS NULL THEN now() ELSE started_at END,"
          " finished_at = CASE WHEN $2 IN ('completed', 'aborted') THEN now() ELSE finished_at END WHERE id = $1",
          id, to, reason);
      event(txn, id, "", to, reason.empty() ? current + " -> " + to : reason);
      writeAudit(txn, actor, "rollout." + to, id, json{{"from", current}, {"reason", reason}}.dump());
      return rolloutFromRow(txn.exec_params1(std::string("SELECT ") + kRolloutColumns + " FROM rollouts WHERE id = $1", id));
    });
  }

  Status updatePods(const std::string& id, const std::vector<rollouts::PodUpdate>& updates,
                    const std::vector<rollouts::RolloutEvent>& events) override {
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      std::optional<std::string> state;  // the rollout's, locked, once a verb's update needs it
      for (const auto& u : updates) {
        if (!u.only_while.empty()) {
          if (!state) {
            auto rows = txn.exec_params("SELECT state FROM rollouts WHERE id = $1 FOR UPDATE", id);
            if (rows.empty()) return notFound("no rollout '" + id + "'");
            state = rows[0][0].as<std::string>();
          }
          const auto parsed = rollouts::parseRolloutState(*state);
          if (!parsed || std::find(u.only_while.begin(), u.only_while.end(), *parsed) == u.only_while.end())
            return conflict("rollout " + id + " is " + *state + ": pod " + u.pod + " cannot change any more")
                .with("state", *state);
        }
        const auto applied = txn.exec_params(
            "UPDATE rollout_pods SET phase = $3,"
            " run_id = CASE WHEN $4 THEN NULLIF($5, '') ELSE run_id END,"
            " validation_run_id = CASE WHEN $6 THEN NULLIF($7, '') ELSE validation_run_id END,"
            " message = CASE WHEN $8 THEN $9 ELSE message END,"
            " waiting_reason = CASE WHEN $10 THEN $11 ELSE waiting_reason END,"
            " before_versions = CASE WHEN $12 THEN $13::jsonb ELSE before_versions END,"
            " started_at = CASE WHEN $14 THEN now() ELSE started_at END,"
            " finished_at = CASE WHEN $15 THEN now() WHEN $3 IN ('pending') THEN NULL ELSE finished_at END,"
            " attempt = attempt + CASE WHEN $16 THEN 1 ELSE 0 END"
            " WHERE rollout_id = $1 AND pod_id = $2 AND phase = $17",
            id, u.pod, std::string(rollouts::podPhaseName(u.phase)), u.run_id.has_value(), u.run_id.value_or(""),
            u.validation_run_id.has_value(), u.validation_run_id.value_or(""), u.message.has_value(),
            u.message.value_or(""), u.waiting_reason.has_value(), u.waiting_reason.value_or(""),
            u.before_versions.has_value(), u.before_versions.value_or(json()).dump(), u.set_started, u.set_finished,
            u.bump_attempt, std::string(rollouts::podPhaseName(u.expect)));
        if (!u.only_while.empty() && applied.affected_rows() == 0)
          return conflict("pod " + u.pod + " of rollout " + id + " is no longer " + rollouts::podPhaseName(u.expect))
              .with("pod", u.pod);
      }
      for (const auto& e : events) event(txn, id, e.pod, e.kind, e.message);
      return Ok{};
    });
  }

  Status setWaiting(const std::string& id, const std::map<std::string, std::string>& reasons) override {
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      txn.exec_params("UPDATE rollout_pods SET waiting_reason = '' WHERE rollout_id = $1 AND phase = 'pending'"
                      " AND waiting_reason <> '' AND NOT (pod_id IN (SELECT jsonb_object_keys($2::jsonb)))",
                      id, json(reasons).dump());
      // One statement for every pod (the controller calls this on every pass, for every
      // pending pod of a rollout).
      if (!reasons.empty())
        txn.exec_params("UPDATE rollout_pods rp SET waiting_reason = w.value FROM jsonb_each_text($2::jsonb) w"
                        " WHERE rp.rollout_id = $1 AND rp.pod_id = w.key AND rp.waiting_reason <> w.value",
                        id, json(reasons).dump());
      return Ok{};
    });
  }

  Result<std::map<std::string, rollouts::BuildingLoad>> buildingLoads(const std::set<std::string>& buildings) override {
    return pool_.transact<std::map<std::string, rollouts::BuildingLoad>>(
        [&](pqxx::work& txn) -> Result<std::map<std::string, rollouts::BuildingLoad>> {
          std::map<std::string, rollouts::BuildingLoad> out;
          const std::string list = json(std::vector<std::string>(buildings.begin(), buildings.end())).dump();
          // Rebooting (power): the phases that drain and flash, not validation.
          static const std::string query =
              "WITH flight AS (SELECT rp.pod_id, rp.phase FROM rollout_pods rp JOIN rollouts ro ON ro.id = rp.rollout_id"
              "   WHERE rp.phase IN " + inFlightPhasesSql() + ")"
              " SELECT p.building_id, count(*),"
              " count(*) FILTER (WHERE p.state NOT IN " + core::podStateSqlList(core::inServicePodStates()) +
              " OR p.id IN (SELECT pod_id FROM flight)),"
              " count(*) FILTER (WHERE p.id IN (SELECT pod_id FROM flight WHERE phase IN " +
              phaseSqlList({PodPhase::kDraining, PodPhase::kUpgrading}) + "))"
              " FROM pods p WHERE p.building_id IN (SELECT jsonb_array_elements_text($1::jsonb)) GROUP BY p.building_id";
          for (const auto& r : txn.exec_params(query, list))
            out[r[0].as<std::string>()] = {r[1].as<int>(), r[2].as<int>(), r[3].as<int>()};
          return out;
        });
  }

  Result<std::map<std::string, rollouts::PodHostStates>> podHostStates(const std::set<std::string>& pods) override {
    using States = std::map<std::string, rollouts::PodHostStates>;
    return pool_.transact<States>([&](pqxx::work& txn) -> Result<States> {
      States out;
      const std::string list = json(std::vector<std::string>(pods.begin(), pods.end())).dump();
      // The states listed, not "NOT IN (available, ...)": hosts_state finds the few such hosts.
      static const std::string query =
          "SELECT h.pod_id, p.platform, h.state, count(*) FROM hosts h JOIN pods p ON p.id = h.pod_id"
          " WHERE h.state IN " + core::hostStateSqlList(rollouts::admissionHostStates()) +
          " AND h.pod_id IN (SELECT jsonb_array_elements_text($1::jsonb)) GROUP BY h.pod_id, p.platform, h.state";
      for (const auto& r : txn.exec_params(query, list)) {
        auto& pod = out[r[0].as<std::string>()];
        pod.platform = r[1].as<std::string>();
        pod.hosts[hostStateColumn(r[2])] = r[3].as<int>();
      }
      return out;
    });
  }

  Result<std::pair<std::map<RolloutState, int>, std::map<PodPhase, int>>> counts() override {
    using Counts = std::pair<std::map<RolloutState, int>, std::map<PodPhase, int>>;
    return pool_.transact<Counts>([&](pqxx::work& txn) -> Result<Counts> {
      Counts c;
      for (const auto& r : txn.exec("SELECT state, count(*) FROM rollouts GROUP BY state"))
        if (auto st = rollouts::parseRolloutState(r[0].as<std::string>())) c.first[*st] = r[1].as<int>();
      static const std::string pods_query =
          "SELECT rp.phase, count(*) FROM rollout_pods rp JOIN rollouts ro ON ro.id = rp.rollout_id"
          " WHERE ro.state IN " + stateSqlList(rollouts::unfinishedRolloutStates()) + " GROUP BY rp.phase";
      for (const auto& r : txn.exec(pods_query))
        if (auto ph = rollouts::parsePodPhase(r[0].as<std::string>())) c.second[*ph] = r[1].as<int>();
      return c;
    });
  }

  Result<std::vector<rollouts::MetricRollout>> metricRollouts(core::TimePoint finished_since) override {
    using Out = std::vector<rollouts::MetricRollout>;
    return pool_.transact<Out>([&](pqxx::work& txn) -> Result<Out> {
      Out out;
      std::map<std::string, std::size_t> index;
      for (const auto& r : txn.exec_params(
               "SELECT ro.id, ro.bundle_id, ro.state, ro.policy::text, extract(epoch from ro.started_at)::float8,"
               " rp.phase, p.platform, extract(epoch from rp.started_at)::float8, extract(epoch from rp.finished_at)::float8"
               " FROM rollouts ro JOIN rollout_pods rp ON rp.rollout_id = ro.id JOIN pods p ON p.id = rp.pod_id"
               " WHERE ro.state IN " + unfinishedStatesSql() + " OR ro.finished_at >= to_timestamp($1)"
               " ORDER BY ro.created_at, ro.id, rp.position",
               std::chrono::duration<double>(finished_since.time_since_epoch()).count())) {
        const auto id = r[0].as<std::string>();
        auto [it, fresh] = index.try_emplace(id, out.size());
        if (fresh) {
          rollouts::MetricRollout m;
          m.id = id;
          m.bundle_id = r[1].as<std::string>();
          m.state = rollouts::parseRolloutState(r[2].as<std::string>()).value();
          m.policy = stored(policyFromStored(json::parse(r[3].c_str())), "policy", id);
          m.started_at = optEpoch(r[4]);
          out.push_back(std::move(m));
        }
        rollouts::MetricRollout::Pod pod;
        pod.phase = rollouts::parsePodPhase(r[5].as<std::string>()).value_or(PodPhase::kPending);
        pod.platform = r[6].as<std::string>();
        pod.started_at = optEpoch(r[7]);
        pod.finished_at = optEpoch(r[8]);
        out[it->second].pods.push_back(std::move(pod));
      }
      return out;
    });
  }

  Result<std::map<std::string, std::string>> previousBundles(const std::string& rollout_id,
                                                             const std::vector<std::string>& pods) override {
    return pool_.transact<std::map<std::string, std::string>>([&](pqxx::work& txn) -> Result<std::map<std::string, std::string>> {
      std::map<std::string, std::string> out;
      for (const auto& r : txn.exec_params(
               "SELECT DISTINCT ON (rp.pod_id) rp.pod_id, ro.bundle_id FROM rollout_pods rp JOIN rollouts ro ON ro.id = rp.rollout_id"
               " WHERE rp.phase = 'succeeded' AND rp.rollout_id <> $1 AND rp.pod_id IN (SELECT jsonb_array_elements_text($2::jsonb))"
               " AND rp.finished_at < (SELECT coalesce(min(started_at), now()) FROM rollout_pods WHERE rollout_id = $1)"
               " ORDER BY rp.pod_id, rp.finished_at DESC",
               rollout_id, json(pods).dump()))
        out[r[0].as<std::string>()] = r[1].as<std::string>();
      return out;
    });
  }

  Result<std::map<std::string, std::string>> laterChanges(const std::string& rollout_id,
                                                          const std::vector<std::string>& pods) override {
    return pool_.transact<std::map<std::string, std::string>>([&](pqxx::work& txn) -> Result<std::map<std::string, std::string>> {
      std::map<std::string, std::string> out;
      for (const auto& r : txn.exec_params(
               "SELECT DISTINCT ON (rp.pod_id) rp.pod_id, ro.id FROM rollout_pods rp JOIN rollouts ro ON ro.id = rp.rollout_id"
               " WHERE rp.rollout_id <> $1 AND rp.pod_id IN (SELECT jsonb_array_elements_text($2::jsonb))"
               " AND (rp.phase = 'succeeded' OR rp.run_id IS NOT NULL)"
               " AND ro.created_at > (SELECT created_at FROM rollouts WHERE id = $1)"
               " ORDER BY rp.pod_id, ro.created_at DESC",
               rollout_id, json(pods).dump()))
        out[r[0].as<std::string>()] = r[1].as<std::string>();
      return out;
    });
  }

 private:
  PgPool pool_;
};

}  // namespace

std::unique_ptr<rollouts::RolloutStore> makePgRolloutStore(const PgStoreOptions& options) {
  return std::make_unique<PgRolloutStore>(options);
}

}  // namespace kiln::db
