#include "orchestrator/db/pg_store.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <sstream>

#include "common/crypto.h"
#include "common/runner_key.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/db/pg_audit.h"
#include "orchestrator/db/pg_internal.h"
#include "orchestrator/db/pg_pool.h"

namespace kiln::db {
namespace {

using core::TimePoint;
using nlohmann::json;

// Builds a WHERE clause from fixed fragments; every value is a bind parameter.
class Where {
 public:
  void add(const std::string& fragment_with_placeholder, const std::string& value) {
    params_.push_back(value);
    std::string f = fragment_with_placeholder;
    f.replace(f.find('?'), 1, "$" + std::to_string(params_.size()));
    sql_ += (sql_.empty() ? " WHERE " : " AND ") + f;
  }
  void addIf(const std::string& fragment, const std::string& value) {
    if (!value.empty()) add(fragment, value);
  }
  // A fragment with one '?' per value, in order.
  void addAll(const std::string& fragment_with_placeholders, const std::vector<std::string>& values) {
    std::string f = fragment_with_placeholders;
    std::size_t at = 0;
    for (const auto& v : values) {
      params_.push_back(v);
      at = f.find('?', at);
      const std::string ph = "$" + std::to_string(params_.size());
      f.replace(at, 1, ph);
      at += ph.size();
    }
    sql_ += (sql_.empty() ? " WHERE " : " AND ") + f;
  }
  std::string limit(int n) {
    params_.push_back(std::to_string(n));
    return " LIMIT $" + std::to_string(params_.size());
  }
  const std::string& sql() const { return sql_; }
  const std::vector<std::string>& params() const { return params_; }

 private:
  std::string sql_;
  std::vector<std::string> params_;
};

int clampLimit(int limit) { return std::clamp(limit, 1, 1000); }

// pods.management (schema 22): the block's non-empty fields; '{}' for none.
json managementJson(const core::ManagementSpec& m) {
  json j = json::object();
  if (!m.protocol.empty()) j["protocol"] = m.protocol;
  if (!m.credential.empty()) j["credential"] = m.credential;
  if (!m.tray_bmc.empty()) j["tray_bmc"] = m.tray_bmc;
  if (!m.switch_bmc.empty()) j["switch_bmc"] = m.switch_bmc;
  if (!m.runner.empty()) j["runner"] = m.runner;
  return j;
}

core::ManagementSpec managementFromText(const char* text) {
  core::ManagementSpec m;
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return m;
  auto field = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
  m.protocol = field("protocol");
  m.credential = field("credential");
  m.tray_bmc = field("tray_bmc");
  m.switch_bmc = field("switch_bmc");
  m.runner = field("runner");
  return m;
}

constexpr const char* kPodColumns =
    "p.id, p.site_id, p.building_id, p.platform, p.state, p.labels::text,"
    " (SELECT coalesce(json_object_agg(state, n), '{}')::text FROM"
    "   (SELECT state, count(*) n FROM hosts h WHERE h.pod_id = p.id GROUP BY state) s),"
    " (SELECT count(*) FROM racks r WHERE r.pod_id = p.id)";

core::PodSummary podFromRow(const pqxx::row& r) {
  core::PodSummary p;
  p.id = r[0].as<std::string>();
  p.site = r[1].as<std::string>();
  p.building = r[2].as<std::string>();
  p.platform = r[3].as<std::string>();
  p.state = podStateColumn(r[4], p.id);
  const json labels = json::parse(r[5].c_str());
  for (const auto& [k, v] : labels.items())
    p.labels[k] = v.is_string() ? v.get<std::string>() : v.dump();
  const auto& g = core::geometry(*core::parsePlatform(p.platform));
  const json by_state = json::parse(r[6].c_str());
  for (const auto& [state, n] : by_state.items()) {
    p.hosts_by_state[state] = n.get<std::int64_t>();
    if (core::servesJobs(hostStateFromDb(state, "pod " + p.id + "'s hosts"))) p.healthy_gpus += n.get<int>() * g.gpus_per_tray;
  }
  p.racks = r[7].as<std::int64_t>();
  return p;
}

core::TokenInfo tokenFromRow(const pqxx::row& r) {
  core::TokenInfo t;
  t.id = r[0].as<std::string>();
  t.name = r[1].as<std::string>();
  t.role = core::parseRole(r[2].as<std::string>()).value_or(core::Role::kViewer);
  t.host = r[3].is_null() ? "" : r[3].as<std::string>();
  t.created_at = fromEpoch(r[4].as<double>());
  t.created_by = r[5].as<std::string>();
  t.revoked_at = optEpoch(r[6]);
  t.expires_at = optEpoch(r[7]);
  t.last_used_at = optEpoch(r[8]);
  return t;
}

// /metrics: hosts by building, state, platform (for GPUs per host) and agent version, with how
// many of them have an agent that registered and is reachable or not. One scan of hosts at
// every scrape.
constexpr const char* kFleetCountsSql =
    "SELECT h.building_id, h.state, p.platform, count(*),"
    " count(*) FILTER (WHERE h.last_seen IS NOT NULL AND NOT h.unreachable),"
    " count(*) FILTER (WHERE h.last_seen IS NOT NULL AND h.unreachable), coalesce(h.agent_version, '')"
    " FROM hosts h JOIN pods p ON p.id = h.pod_id GROUP BY 1, 2, 3, 7";

constexpr const char* kTokenColumns =
    "id, name, role, host_id, extract(epoch from created_at)::float8, created_by,"
    " extract(epoch from revoked_at)::float8, extract(epoch from expires_at)::float8,"
    " extract(epoch from last_used_at)::float8";

template <typename T, typename F>
core::Page<T> pageFrom(const pqxx::result& rows, int limit, F&& convert) {
  core::Page<T> page;
  for (const auto& r : rows) {
    if (static_cast<int>(page.items.size()) == limit) break;
    page.items.push_back(convert(r));
  }
  if (static_cast<int>(rows.size()) > limit) page.next_cursor = rows[limit - 1][0].as<std::string>();
  return page;
}

class PgStore final : public core::Store {
 public:
  explicit PgStore(const PgStoreOptions& o) : pool_(o.database_url, o.pool_size) {}

  Status ping() override {
    return pool_.transact<Ok>([](pqxx::work& txn) -> Status {
      txn.exec1("SELECT 1");
      return Ok{};
    });
  }

  Result<std::optional<core::IdempotencyRecord>> findIdempotencyKey(const std::string& key) override {
    return pool_.transact<std::optional<core::IdempotencyRecord>>(
        [&](pqxx::work& txn) -> Result<std::optional<core::IdempotencyRecord>> {
          auto rows = txn.exec_params("SELECT scope, fingerprint, object_id FROM idempotency_keys WHERE key = $1", key);
          if (rows.empty()) return std::optional<core::IdempotencyRecord>();
          return std::optional<core::IdempotencyRecord>(core::IdempotencyRecord{
              rows[0][0].as<std::string>(), rows[0][1].as<std::string>(), rows[0][2].as<std::string>()});
        });
  }

  Result<core::ImportSummary> importFleet(const core::FleetSpec& fleet,
                                          const core::Actor& actor) override {
    return pool_.transact<core::ImportSummary>(
        [&](pqxx::work& txn) -> Result<core::ImportSummary> { return importIn(txn, fleet, actor); });
  }

  Result<std::vector<core::SiteSummary>> listSites() override {
    return pool_.transact<std::vector<core::SiteSummary>>(
        [&](pqxx::work& txn) -> Result<std::vector<core::SiteSummary>> {
          std::vector<core::SiteSummary> out;
          for (const auto& r : txn.exec(
                   "SELECT s.id, coalesce((SELECT json_agg(b.id ORDER BY b.id) FROM buildings b"
                   " WHERE b.site_id = s.id), '[]')::text,"
                   " (SELECT count(*) FROM pods p WHERE p.site_id = s.id),"
                   " (SELECT count(*) FROM hosts h WHERE h.site_id = s.id)"
                   " FROM sites s ORDER BY s.id")) {
            core::SiteSummary s;
            s.id = r[0].as<std::string>();
            s.buildings = json::parse(r[1].c_str()).get<std::vector<std::string>>();
            s.pods = r[2].as<std::int64_t>();
            s.hosts = r[3].as<std::int64_t>();
            out.push_back(std::move(s));
          }
          return out;
        });
  }

  Result<core::Page<core::PodSummary>> listPods(const core::PodFilter& f,
                                                const core::PageRequest& page) override {
    Where w;
    w.addIf("p.site_id = ?", f.site);
    w.addIf("p.building_id = ?", f.building);
    w.addIf("p.platform = ?", f.platform);
    if (f.state) w.add("p.state = ?", std::string(core::podStateName(*f.state)));
    if (!f.label.empty()) {
      auto eq = f.label.find('=');
      if (eq == std::string::npos) return invalidArgument("label filter must be key=value");
      w.add("p.labels @> ?::jsonb", json{{f.label.substr(0, eq), f.label.substr(eq + 1)}}.dump());
    }
    w.addIf("p.id > ?", page.cursor);
    const int limit = clampLimit(page.limit);
    const std::string sql = std::string("SELECT ") + kPodColumns + " FROM pods p" + w.sql() +
                            " ORDER BY p.id" + w.limit(limit + 1);
    return pool_.transact<core::Page<core::PodSummary>>(
        [&](pqxx::work& txn) -> Result<core::Page<core::PodSummary>> {
          auto rows = txn.exec_params(sql, pqxx::prepare::make_dynamic_params(w.params()));
          return pageFrom<core::PodSummary>(rows, limit, podFromRow);
        });
  }

  Result<std::vector<core::PodSummary>> heatmapPods() override {
    return pool_.transact<std::vector<core::PodSummary>>([&](pqxx::work& txn) -> Result<std::vector<core::PodSummary>> {
      // One aggregate over the hosts instead of a subquery per pod (14 pages of 1,000 did that).
      auto rows = txn.exec(
          "SELECT p.id, p.site_id, p.building_id, p.platform, p.state, p.labels::text, coalesce(h.serving, 0),"
          " coalesce(h.out_of_service, 0)"
          " FROM pods p LEFT JOIN (SELECT pod_id, count(*) FILTER (WHERE state IN " +
          core::hostStateSqlList(core::servingHostStates()) + ") serving,"
          " count(*) FILTER (WHERE state IN " + core::hostStateSqlList(core::outOfServiceHostStates()) + ") out_of_service"
          " FROM hosts GROUP BY pod_id) h ON h.pod_id = p.id ORDER BY p.id");
      std::vector<core::PodSummary> out;
      out.reserve(rows.size());
      for (const auto& r : rows) {
        core::PodSummary p;
        p.id = r[0].as<std::string>();
        p.site = r[1].as<std::string>();
        p.building = r[2].as<std::string>();
        p.platform = r[3].as<std::string>();
        p.state = podStateColumn(r[4], p.id);
        const json labels = json::parse(r[5].c_str());
        for (const auto& [k, v] : labels.items()) p.labels[k] = v.is_string() ? v.get<std::string>() : v.dump();
        p.healthy_gpus = r[6].as<std::int64_t>() * core::geometry(*core::parsePlatform(p.platform)).gpus_per_tray;
        p.hosts_out = r[7].as<std::int64_t>();
        out.push_back(std::move(p));
      }
      return out;
    });
  }

  Result<core::PodDetail> getPod(const std::string& id) override {
    return pool_.transact<core::PodDetail>([&](pqxx::work& txn) -> Result<core::PodDetail> {
      auto rows = txn.exec_params(std::string("SELECT ") + kPodColumns + " FROM pods p WHERE p.id = $1", id);
      if (rows.empty()) return notFound("no pod '" + id + "'");
      core::PodDetail d;
      d.pod = podFromRow(rows[0]);
      d.management = managementFromText(txn.exec_params1("SELECT management::text FROM pods WHERE id = $1", id)[0].c_str());
      for (const auto& r : txn.exec_params("SELECT id FROM racks WHERE pod_id = $1 ORDER BY idx", id))
        d.racks.push_back(r[0].as<std::string>());
      for (const auto& r : txn.exec_params(std::string("SELECT ") + kHostColumns +
                                               " FROM hosts h JOIN pods p ON p.id = h.pod_id"
                                               " WHERE h.pod_id = $1 ORDER BY h.tray",
                                           id))
        d.hosts.push_back(hostFromRow(r));
      for (const auto& r : txn.exec_params(
               "SELECT id, rack_id, tray FROM switch_trays WHERE pod_id = $1 ORDER BY tray", id))
        d.switch_trays.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<int>()});
      for (const auto& r : txn.exec_params(
               "SELECT target_id, kind, version FROM components WHERE pod_id = $1"
               " ORDER BY target_id, kind",
               id))
        d.components.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>()});
      return d;
    });
  }

  Result<std::map<std::string, std::vector<core::HostSummary>>> hostsOfPods(const std::vector<std::string>& ids) override {
    using Hosts = std::map<std::string, std::vector<core::HostSummary>>;
    return pool_.transact<Hosts>([&](pqxx::work& txn) -> Result<Hosts> {
      Hosts out;
      const std::string list = json(ids).dump();
      for (const auto& r : txn.exec_params("SELECT id FROM pods WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))", list))
        out[r[0].as<std::string>()];
      for (const auto& r : txn.exec_params(std::string("SELECT ") + kHostColumns +
                                               " FROM hosts h JOIN pods p ON p.id = h.pod_id"
                                               " WHERE h.pod_id IN (SELECT jsonb_array_elements_text($1::jsonb))"
                                               " ORDER BY h.pod_id, h.tray",
                                           list)) {
        core::HostSummary h = hostFromRow(r);
        out[h.pod].push_back(std::move(h));
      }
      return out;
    });
  }

  Result<std::map<std::string, core::ManagementSpec>> podManagement(const std::vector<std::string>& ids) override {
    using Blocks = std::map<std::string, core::ManagementSpec>;
    if (ids.empty()) return Blocks{};
    return pool_.transact<Blocks>([&](pqxx::work& txn) -> Result<Blocks> {
      Blocks out;
      for (const auto& r : txn.exec_params("SELECT id, management::text FROM pods"
                                           " WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb)))"
                                           " AND management <> '{}'",
                                           json(ids).dump()))
        out[r[0].as<std::string>()] = managementFromText(r[1].c_str());
      return out;
    });
  }

  Result<std::map<std::string, core::HostSummary>> hostsById(const std::vector<std::string>& ids) override {
    using Hosts = std::map<std::string, core::HostSummary>;
    if (ids.empty()) return Hosts{};
    return pool_.transact<Hosts>([&](pqxx::work& txn) -> Result<Hosts> {
      Hosts out;
      for (const auto& r : txn.exec_params(std::string("SELECT ") + kHostColumns +
                                               " FROM hosts h JOIN pods p ON p.id = h.pod_id"
                                               " WHERE h.id IN (SELECT jsonb_array_elements_text($1::jsonb))",
                                           json(ids).dump())) {
        core::HostSummary h = hostFromRow(r);
        std::string id = h.id;
        out.emplace(std::move(id), std::move(h));
      }
      return out;
    });
  }

  Result<core::Page<core::HostSummary>> listHosts(const core::HostFilter& f,
                                                  const core::PageRequest& page) override {
    Where w;
    w.addIf("h.pod_id = ?", f.pod);
    w.addIf("h.building_id = ?", f.building);
    w.addIf("h.site_id = ?", f.site);
    w.addIf("h.state = ?", f.state);
    if (!f.label.empty()) {
      auto eq = f.label.find('=');
      if (eq == std::string::npos) return invalidArgument("label filter must be key=value");
      w.add("p.labels @> ?::jsonb", json{{f.label.substr(0, eq), f.label.substr(eq + 1)}}.dump());
    }
    // strpos, not LIKE: '%' and '_' in the text are plain characters.
    w.addIf("strpos(lower(h.state_reason), lower(?)) > 0", f.reason);
    // The prefix's LIKE wildcards escaped; hosts_lower_id (0015) serves it as a range scan.
    if (!f.id_prefix.empty()) {
      std::string escaped;
      for (char c : f.id_prefix) {
        if (c == '%' || c == '_' || c == '\\') escaped += '\\';
        escaped += c;
      }
      w.add("lower(h.id) LIKE lower(?) || '%'", escaped);
    }
    // Sorted by a column, then by id: the cursor is [the column's value as text, id].
    const char* column = nullptr;
    const char* cast = "";
    switch (f.sort.key) {
      case core::HostSortKey::kId: break;
      case core::HostSortKey::kPod: column = "h.pod_id"; break;
      case core::HostSortKey::kState: column = "h.state"; break;
      case core::HostSortKey::kStateSince: column = "h.state_since"; cast = "::timestamptz"; break;
      case core::HostSortKey::kReason: column = "h.state_reason"; break;
    }
    const std::string cmp = f.sort.descending ? " < " : " > ";
    const std::string dir = f.sort.descending ? " DESC" : "";
    if (!page.cursor.empty()) {
      if (!column) {
        w.add("h.id" + cmp + "?", page.cursor);
      } else {
        json key = json::parse(page.cursor, nullptr, /*allow_exceptions=*/false);
        if (!key.is_array() || key.size() != 2 || !key[0].is_string() || !key[1].is_string())
          return invalidArgument("cursor is not valid");
        w.addAll(std::string("(") + column + ", h.id)" + cmp + "(?" + cast + ", ?)",
                 {key[0].get<std::string>(), key[1].get<std::string>()});
      }
    }
    const int limit = clampLimit(page.limit);
    const std::string sql = std::string("SELECT ") + kHostColumns + (column ? std::string(", ") + column + "::text" : "") +
                            " FROM hosts h JOIN pods p ON p.id = h.pod_id" + w.sql() + " ORDER BY " +
                            (column ? std::string(column) + dir + ", " : "") + "h.id" + dir + w.limit(limit + 1);
    return pool_.transact<core::Page<core::HostSummary>>(
        [&](pqxx::work& txn) -> Result<core::Page<core::HostSummary>> {
          auto rows = txn.exec_params(sql, pqxx::prepare::make_dynamic_params(w.params()));
          auto out = pageFrom<core::HostSummary>(rows, limit, hostFromRow);
          if (out.next_cursor && column) {
            const auto& last = rows[limit - 1];
            out.next_cursor = json::array({last[kHostColumnCount].as<std::string>(), last[0].as<std::string>()}).dump();
          }
          return out;
        });
  }

  Result<std::map<std::string, std::int64_t>> hostsByState() override {
    using Counts = std::map<std::string, std::int64_t>;
    return pool_.transact<Counts>([&](pqxx::work& txn) -> Result<Counts> {
      Counts out;
      for (const auto& r : txn.exec("SELECT state, count(*) FROM hosts GROUP BY state"))
        out[r[0].as<std::string>()] = r[1].as<std::int64_t>();
      return out;
    });
  }

  Result<core::HostDetail> getHost(const std::string& id) override {
    return pool_.transact<core::HostDetail>([&](pqxx::work& txn) -> Result<core::HostDetail> {
      auto rows = txn.exec_params(std::string("SELECT ") + kHostColumns +
                                      " FROM hosts h JOIN pods p ON p.id = h.pod_id WHERE h.id = $1",
                                  id);
      if (rows.empty()) return notFound("no host '" + id + "'");
      core::HostDetail d;
      d.host = hostFromRow(rows[0]);
      d.management = managementFromText(
          txn.exec_params1("SELECT management::text FROM pods WHERE id = $1", d.host.pod)[0].c_str());
      for (const auto& r : txn.exec_params(
               "SELECT id, idx, serial, uuid FROM gpus WHERE host_id = $1 ORDER BY idx", id))
        d.gpus.push_back({r[0].as<std::string>(), r[1].as<int>(), r[2].as<std::string>(), r[3].as<std::string>()});
      for (const auto& r : txn.exec_params(
               "SELECT kind, version FROM components WHERE target_id = $1 ORDER BY kind", id))
        d.components[r[0].as<std::string>()] = r[1].as<std::string>();
      for (auto a : core::allowedActions(d.host.state))
        d.allowed_actions.emplace_back(core::hostActionName(a));
      return d;
    });
  }

  Result<core::Page<core::HostEvent>> hostEvents(const std::string& host_id,
                                                 const core::PageRequest& page) override {
    const int limit = clampLimit(page.limit);
    // Newest first; the cursor is the id of the last event seen.
    auto cursor = numericCursor(page.cursor);
    if (!cursor.ok()) return cursor.error();
    const std::int64_t before = *cursor;
    return pool_.transact<core::Page<core::HostEvent>>(
        [&](pqxx::work& txn) -> Result<core::Page<core::HostEvent>> {
          if (txn.exec_params("SELECT 1 FROM hosts WHERE id = $1", host_id).empty())
            return notFound("no host '" + host_id + "'");
          // ORDER BY the column, not the output "id" (id::text): text order put event 5 after 20.
          auto rows = txn.exec_params(
              "SELECT id::text, host_id, extract(epoch from at)::float8, action,"
              " coalesce(from_state, ''), to_state, actor, reason FROM host_events"
              " WHERE host_id = $1 AND id < $2 ORDER BY host_events.id DESC LIMIT $3",
              host_id, before, limit + 1);
          return pageFrom<core::HostEvent>(rows, limit, [](const pqxx::row& r) {
            core::HostEvent e;
            e.id = std::stoll(r[0].as<std::string>());
            e.host = r[1].as<std::string>();
            e.at = fromEpoch(r[2].as<double>());
            e.action = r[3].as<std::string>();
            e.from_state = r[4].as<std::string>();
            e.to_state = r[5].as<std::string>();
            e.actor = r[6].as<std::string>();
            e.reason = r[7].as<std::string>();
            return e;
          });
        });
  }

  Result<core::HostSummary> transitionHost(const core::HostTransition& t,
                                           const core::Actor& actor) override {
    return pool_.transact<core::HostSummary>([&](pqxx::work& txn) -> Result<core::HostSummary> {
      auto applied = applyTransition(txn, t, actor);
      if (!applied.ok()) return applied.error();
      return hostFromRow(txn.exec_params1(std::string("SELECT ") + kHostColumns +
                                          " FROM hosts h JOIN pods p ON p.id = h.pod_id WHERE h.id = $1",
                                          t.host));
    });
  }

  Result<std::vector<Result<core::HostState>>> transitionHosts(const std::vector<core::HostTransition>& ts,
                                                               const core::Actor& actor) override {
    using Outcomes = std::vector<Result<core::HostState>>;
    if (ts.empty()) return Outcomes{};
    return pool_.transact<Outcomes>([&](pqxx::work& txn) -> Result<Outcomes> { return applyTransitions(txn, ts, actor); });
  }

  Result<std::int64_t> countHealthyPods(const std::string& platform) override {
    return pool_.transact<std::int64_t>([&](pqxx::work& txn) -> Result<std::int64_t> {
      static const std::string query = "SELECT count(*) FROM pods WHERE state IN " +
                                       core::podStateSqlList({core::PodState::kInService}) +
                                       " AND ($1 = '' OR platform = $1)";
      return txn.exec_params1(query, platform)[0]
          .as<std::int64_t>();
    });
  }

  Result<core::FleetCounts> fleetCounts() override {
    return pool_.transact<core::FleetCounts>([&](pqxx::work& txn) -> Result<core::FleetCounts> {
      core::FleetCounts c;
      for (const auto& r : txn.exec(kFleetCountsSql)) {
        const auto building = r[0].as<std::string>(), state = r[1].as<std::string>();
        const auto hosts = r[3].as<std::int64_t>();
        c.hosts_by_state[state] += hosts;
        c.hosts_by_building[building][state] += hosts;
        const auto platform = core::parsePlatform(r[2].as<std::string>());
        c.gpus_by_state[state] += hosts * (platform ? core::geometry(*platform).gpus_per_tray : 0);
        if (hostStateFromDb(state, "the fleet counts") != core::HostState::kRetired) {
          const auto reachable = r[4].as<std::int64_t>(), unreachable = r[5].as<std::int64_t>();
          c.agents_by_building[building].reachable += reachable;
          c.agents_by_building[building].unreachable += unreachable;
          if (reachable + unreachable > 0) c.agents_by_version[r[6].as<std::string>()] += reachable + unreachable;
        }
      }
      for (const auto& r : txn.exec("SELECT platform, count(*) FROM pods GROUP BY platform"))
        c.pods_by_platform[r[0].as<std::string>()] = r[1].as<std::int64_t>();
      return c;
    });
  }

  Result<core::NewToken> createToken(core::Role role, const std::string& name,
                                     const std::string& host, const core::Actor& actor) override {
    return pool_.transact<core::NewToken>([&](pqxx::work& txn) -> Result<core::NewToken> {
      if (role == core::Role::kAgent) {
        if (host.empty()) return invalidContent("an agent token needs a host or a runner");
        // A runner's key names no host row (common/runner_key.h).
        if (!isRunnerKey(host) && txn.exec_params("SELECT 1 FROM hosts WHERE id = $1", host).empty())
          return invalidContent("no host '" + host + "'");
      } else if (!host.empty()) {
        return invalidContent("only agent tokens are bound to a host");
      }
      const std::string id = randomHex(6);
      const std::string secret = randomHex(24);
      auto row = txn.exec_params1(
          std::string("INSERT INTO tokens (id, secret_hash, role, name, host_id, created_by)"
                      " VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6) RETURNING ") + kTokenColumns,
          id, sha256Hex(secret), std::string(core::roleName(role)), name, host, actor.token_id);
      writeAudit(txn, actor, "token.create", id,
                 json{{"role", core::roleName(role)}, {"name", name}, {"host", host}}.dump());
      return core::NewToken{tokenFromRow(row), "kiln_" + id + "_" + secret};
    });
  }

  Result<std::vector<core::TokenInfo>> listTokens() override {
    return pool_.transact<std::vector<core::TokenInfo>>(
        [&](pqxx::work& txn) -> Result<std::vector<core::TokenInfo>> {
          std::vector<core::TokenInfo> out;
          for (const auto& r : txn.exec(std::string("SELECT ") + kTokenColumns +
                                        " FROM tokens ORDER BY created_at, id"))
            out.push_back(tokenFromRow(r));
          return out;
        });
  }

  Status revokeToken(const std::string& id, const core::Actor& actor) override {
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      auto r = txn.exec_params(
          "UPDATE tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING id", id);
      if (r.empty()) {
        if (txn.exec_params("SELECT 1 FROM tokens WHERE id = $1", id).empty())
          return notFound("no token '" + id + "'");
        return conflict("token '" + id + "' is already revoked");
      }
      writeAudit(txn, actor, "token.revoke", id, "{}");
      return Ok{};
    });
  }

  Result<std::optional<core::TokenRecord>> findToken(const std::string& id) override {
    return pool_.transact<std::optional<core::TokenRecord>>(
        [&](pqxx::work& txn) -> Result<std::optional<core::TokenRecord>> {
          // A token past its expiry authenticates as a revoked one does (no longer).
          auto rows = txn.exec_params(std::string("SELECT ") + kTokenColumns +
                                          ", secret_hash, CASE WHEN expires_at <= now()"
                                          " THEN extract(epoch from expires_at)::float8 END FROM tokens WHERE id = $1",
                                      id);
          if (rows.empty()) return std::optional<core::TokenRecord>();
          core::TokenRecord record{tokenFromRow(rows[0]), rows[0][9].as<std::string>()};
          if (!record.info.revoked_at && !rows[0][10].is_null()) record.info.revoked_at = fromEpoch(rows[0][10].as<double>());
          return std::optional<core::TokenRecord>(std::move(record));
        });
  }

  Result<core::Store::Revocations> tokensRevokedSince(core::TimePoint since) override {
    return pool_.read<core::Store::Revocations>([&](pqxx::nontransaction& txn) -> Result<core::Store::Revocations> {
      core::Store::Revocations out;
      // One statement, so the clock and the rows come from one snapshot. Tokens that expired
      // since `since` count too: a cache holding an older expires_at (one a renewal shortened,
      // or one moved by hand) forgets them within a second as well.
      auto rows = txn.exec_params(
          "SELECT extract(epoch from now())::float8, array_to_string(array("
          "SELECT id FROM tokens WHERE revoked_at >= to_timestamp($1)"
          " UNION SELECT id FROM tokens WHERE expires_at >= to_timestamp($1) AND expires_at <= now()), ',')",
          toEpoch(since));
      out.now = fromEpoch(rows[0][0].as<double>());
      std::stringstream ids(rows[0][1].as<std::string>());
      for (std::string id; std::getline(ids, id, ',');)
        if (!id.empty()) out.ids.push_back(id);
      return out;
    });
  }

  Status recordTokenUse(const std::vector<std::pair<std::string, core::TimePoint>>& uses) override {
    if (uses.empty()) return Ok{};
    json rows = json::array();
    for (const auto& [id, t] : uses) rows.push_back({{"id", id}, {"at", toEpoch(t)}});
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      txn.exec_params(
          "UPDATE tokens t SET last_used_at = to_timestamp(v.at)"
          " FROM jsonb_to_recordset($1::jsonb) AS v(id text, at float8)"
          " WHERE t.id = v.id AND (t.last_used_at IS NULL OR t.last_used_at < to_timestamp(v.at))",
          rows.dump());
      return Ok{};
    });
  }

  Result<bool> hasAdminToken() override {
    return pool_.transact<bool>([&](pqxx::work& txn) -> Result<bool> {
      return !txn.exec("SELECT 1 FROM tokens WHERE role = 'admin' AND revoked_at IS NULL LIMIT 1").empty();
    });
  }

  Status audit(const core::Actor& actor, const std::string& action, const std::string& target,
               const std::string& details_json) override {
    return pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      writeAudit(txn, actor, action, target, details_json);
      return Ok{};
    });
  }

  Result<core::AuditPage> listAudit(const core::AuditFilter& filter) override {
    return pool_.read<core::AuditPage>(
        [&](pqxx::nontransaction& txn) -> Result<core::AuditPage> { return listAuditIn(txn, filter); });
  }

  Result<std::vector<core::ActorName>> actorNames() override {
    return pool_.read<std::vector<core::ActorName>>(
        [&](pqxx::nontransaction& txn) -> Result<std::vector<core::ActorName>> { return actorNamesIn(txn); });
  }

 private:
  Result<core::ImportSummary> importIn(pqxx::work& txn, const core::FleetSpec& fleet,
                                       const core::Actor& actor);

  PgPool pool_;
};

Result<core::ImportSummary> PgStore::importIn(pqxx::work& txn, const core::FleetSpec& fleet,
                                              const core::Actor& actor) {
  core::ImportSummary sum;
  // Serialise imports: two at once would race on the "which pods are new" decision.
  txn.exec("LOCK TABLE pods IN SHARE ROW EXCLUSIVE MODE");

  for (const auto& site : fleet.sites) {
    sum.sites_created +=
        txn.exec_params("INSERT INTO sites (id) VALUES ($1) ON CONFLICT DO NOTHING", site).affected_rows();
  }
  for (const auto& b : fleet.buildings) {
    auto r = txn.exec_params(
        "INSERT INTO buildings (id, site_id) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id",
        b.id, b.site);
    if (!r.empty()) {
      ++sum.buildings_created;
      continue;
    }
    auto existing = txn.exec_params1("SELECT site_id FROM buildings WHERE id = $1", b.id);
    if (existing[0].as<std::string>() != b.site)
      return conflict("building '" + b.id + "' already exists in site '" +
                      existing[0].as<std::string>() + "', not '" + b.site + "'");
  }

  // Which pods exist already? Stage the file's pods and compare in one query.
  txn.exec0("CREATE TEMP TABLE import_pods (id text COLLATE \"C\", building_id text, platform text, management jsonb)"
            " ON COMMIT DROP");
  {
    pqxx::stream_to s(txn, "import_pods", std::vector<std::string>{"id", "building_id", "platform", "management"});
    for (const auto& p : fleet.pods)
      s << std::make_tuple(p.id, p.building, std::string(core::platformName(p.platform)), managementJson(p.management).dump());
    s.complete();
  }
  std::set<std::string> existing;
  for (const auto& r : txn.exec(
           "SELECT i.id, p.building_id, p.platform, i.building_id, i.platform"
           " FROM import_pods i JOIN pods p ON p.id = i.id")) {
    const std::string id = r[0].as<std::string>();
    if (r[1].as<std::string>() != r[3].as<std::string>() || r[2].as<std::string>() != r[4].as<std::string>()) {
      Error e = conflict("pod '" + id + "' already exists in building '" + r[1].as<std::string>() +
                         "' as " + r[2].as<std::string>() + "; the file says building '" +
                         r[3].as<std::string>() + "' as " + r[4].as<std::string>());
      e.with("pod", id);
      return e;
    }
    existing.insert(id);
  }
  sum.pods_existing = static_cast<std::int64_t>(existing.size());
  // A known pod's management endpoints follow the file (the one field a re-import changes: BMC
  // names move with the management network, and pods imported before schema 22 have none).
  sum.pods_management_updated = static_cast<std::int64_t>(
      txn.exec("UPDATE pods p SET management = i.management FROM import_pods i"
               " WHERE p.id = i.id AND p.management IS DISTINCT FROM i.management")
          .affected_rows());

  {
    pqxx::stream_to pods(txn, "pods",
                         std::vector<std::string>{"id", "building_id", "site_id", "platform", "labels", "state", "management"});
    for (const auto& p : fleet.pods) {
      if (existing.count(p.id)) continue;
      std::map<core::HostState, int> by_state{{p.initial_state, 18}};
      pods << std::make_tuple(p.id, p.building, p.site, std::string(core::platformName(p.platform)),
                              json(p.labels).dump(),
                              std::string(core::podStateName(core::podState(by_state, core::geometry(p.platform)))),
                              managementJson(p.management).dump());
      ++sum.pods_created;
    }
    pods.complete();
  }
  {
    // libpqxx allows one COPY stream per transaction at a time: one table after the other.
    std::vector<std::pair<const core::PodSpec*, core::PodLayout>> layouts;
    layouts.reserve(fleet.pods.size());
    for (const auto& p : fleet.pods) {
      if (existing.count(p.id)) continue;
      layouts.emplace_back(&p, core::expandPod(p.id, p.platform));
    }
    auto stream = [&](const char* table, std::vector<std::string> cols, auto&& rows) {
      pqxx::stream_to s(txn, table, cols);
      for (const auto& [pod, layout] : layouts) rows(s, *pod, layout);
      s.complete();
    };
    stream("racks", {"id", "pod_id", "idx"}, [&](pqxx::stream_to& s, const core::PodSpec& p, const core::PodLayout& l) {
      for (const auto& r : l.racks) {
        s << std::make_tuple(r.id, p.id, r.index);
        ++sum.racks_created;
      }
    });
    stream("hosts", {"id", "pod_id", "rack_id", "building_id", "site_id", "tray", "spare", "state"},
           [&](pqxx::stream_to& s, const core::PodSpec& p, const core::PodLayout& l) {
             const std::string state(core::hostStateName(p.initial_state));
             for (const auto& h : l.hosts) {
               s << std::make_tuple(h.id, p.id, h.rack_id, p.building, p.site, h.tray,
                                    h.spare ? "t" : "f", state);
               ++sum.hosts_created;
             }
           });
    stream("switch_trays", {"id", "pod_id", "rack_id", "tray"},
           [&](pqxx::stream_to& s, const core::PodSpec& p, const core::PodLayout& l) {
             for (const auto& t : l.switch_trays) {
               s << std::make_tuple(t.id, p.id, t.rack_id, t.tray);
               ++sum.switch_trays_created;
             }
           });
    stream("gpus", {"id", "host_id", "idx"},
           [&](pqxx::stream_to& s, const core::PodSpec& p, const core::PodLayout& l) {
             const int per_tray = core::geometry(p.platform).gpus_per_tray;
             for (const auto& h : l.hosts)
               for (int g = 0; g < per_tray; ++g) {
                 s << std::make_tuple(core::gpuId(h.id, g), h.id, g);
                 ++sum.gpus_created;
               }
           });
    stream("components", {"target_id", "pod_id", "kind", "version"},
           [&](pqxx::stream_to& s, const core::PodSpec& p, const core::PodLayout& l) {
             for (const auto& [kind, version] : p.versions) {
               if (kind == core::kSwitchComponent) {
                 for (const auto& t : l.switch_trays) {
                   s << std::make_tuple(t.id, p.id, kind, version);
                   ++sum.components_created;
                 }
               } else {
                 for (const auto& h : l.hosts) {
                   s << std::make_tuple(h.id, p.id, kind, version);
                   ++sum.components_created;
                 }
               }
             }
           });
    stream("host_events", {"host_id", "action", "to_state", "actor", "reason"},
           [&](pqxx::stream_to& s, const core::PodSpec& p, const core::PodLayout& l) {
             const std::string state(core::hostStateName(p.initial_state));
             for (const auto& h : l.hosts)
               s << std::make_tuple(h.id, std::string("import"), state, actor.token_id,
                                    std::string("fleet import"));
           });
  }
  // Fresh planner statistics: without them the first queries on a big import plan seq scans.
  if (sum.pods_created > 0) txn.exec0("ANALYZE pods, racks, hosts, switch_trays, gpus, components");
  writeAudit(txn, actor, "fleet.import", "fleet",
             json{{"pods_created", sum.pods_created},
                  {"pods_existing", sum.pods_existing},
                  {"hosts_created", sum.hosts_created}}
                 .dump());
  return sum;
}

}  // namespace

std::unique_ptr<core::Store> makePgStore(const PgStoreOptions& options) {
  return std::make_unique<PgStore>(options);
}

}  // namespace kiln::db
