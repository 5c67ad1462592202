#include "orchestrator/db/pg_reliability_store.h"

#include <nlohmann/json.hpp>
#include <set>

#include "orchestrator/db/pg_internal.h"
#include "orchestrator/db/pg_pool.h"

namespace kiln::db {
namespace {

using nlohmann::json;
using reliability::LedgerData;


// Hosts (alias h) and pods (alias p) in scope; $1 site, $2 building, $3 platform ('' = any).
#define KILN_SCOPE "($1 = '' OR p.site_id = $1) AND ($2 = '' OR p.building_id = $2) AND ($3 = '' OR p.platform = $3)"

// The same scope over a rollup table (alias s) and buildings (alias b).
#define KILN_ROLLUP_IN_SCOPE(table)                                  \
  " FROM " table " s JOIN buildings b ON b.id = s.building_id"       \
  " WHERE ($1 = '' OR b.site_id = $1) AND ($2 = '' OR s.building_id = $2) AND ($3 = '' OR s.platform = $3)"
#define KILN_UTC_DAY(param) " (to_timestamp(" param ") AT TIME ZONE 'UTC')::date"
// Two time ranges [$4, $5) and [$6, $7) of a column, epoch seconds.
#define KILN_IN_RANGES(column)                                                      \
  " ((" column " >= to_timestamp($4) AND " column " < to_timestamp($5))"            \
  " OR (" column " >= to_timestamp($6) AND " column " < to_timestamp($7)))"

// Where the scope's history starts: the first hour with a host entering (or passing through)
// service, then the first such event in that hour (the rollup's hours keep the search off the
// whole event table).
constexpr const char* kFirstServiceHour =
    "SELECT extract(epoch FROM min(s.hour))::float8" KILN_ROLLUP_IN_SCOPE("service_hours")
    " AND (s.net_hosts <> 0 OR s.tail_host_us <> 0)";
constexpr const char* kFirstServiceEvent =
    "SELECT extract(epoch FROM min(e.at))::float8"
    " FROM host_events e JOIN hosts h ON h.id = e.host_id JOIN pods p ON p.id = h.pod_id"
    " WHERE e.at >= to_timestamp($4) AND e.at < to_timestamp($4) + interval '1 hour'"
    " AND kiln_service_delta(e.from_state, e.to_state) > 0 AND " KILN_SCOPE;

// Hosts in service at the start of the day $4 (epoch seconds at midnight UTC).
constexpr const char* kServiceLevel =
    "SELECT coalesce(sum(s.net_hosts), 0)::bigint" KILN_ROLLUP_IN_SCOPE("service_days") " AND s.day <" KILN_UTC_DAY("$4");

// The rolled-up days in [$4, $5).
constexpr const char* kServiceDays =
    "SELECT extract(epoch FROM s.day::timestamp)::float8, sum(s.net_hosts)::bigint, sum(s.tail_host_us)::bigint"
    KILN_ROLLUP_IN_SCOPE("service_days") " AND s.day >=" KILN_UTC_DAY("$4") " AND s.day <" KILN_UTC_DAY("$5")
    " GROUP BY s.day ORDER BY s.day";

// The rolled-up hours in [$4, $5) and [$6, $7).
constexpr const char* kServiceHours =
    "SELECT extract(epoch FROM s.hour)::float8, sum(s.net_hosts)::bigint, sum(s.tail_host_us)::bigint"
    KILN_ROLLUP_IN_SCOPE("service_hours") " AND" KILN_IN_RANGES("s.hour") " GROUP BY s.hour ORDER BY s.hour";

// Hosts entering (+) or leaving (-) service in [$4, $5) and [$6, $7), by the rule the rollup
// follows (kiln_service_delta); several at one instant are fine.
constexpr const char* kServiceRawDeltas =
    "SELECT extract(epoch FROM e.at)::float8, kiln_service_delta(e.from_state, e.to_state)"
    " FROM host_events e JOIN hosts h ON h.id = e.host_id JOIN pods p ON p.id = h.pod_id"
    " WHERE" KILN_IN_RANGES("e.at") " AND kiln_service_delta(e.from_state, e.to_state) <> 0 AND " KILN_SCOPE
    " ORDER BY e.at";

// Interruptions in [$4, $5) in scope (by their pod or one of their hosts), counted by week
// (Monday 00:00 UTC, whatever the session's time zone), cause and candidate flag. IN rather
// than correlated EXISTS: each subquery runs once into a hash (0.13 s instead of 0.28 s for a
// site of the 72k-GPU bench); the pod first, it decides most rows.
constexpr const char* kInterruptionCounts =
    "SELECT extract(epoch FROM date_trunc('week', i.at AT TIME ZONE 'UTC'))::float8, i.cause, i.candidate, count(*)"
    " FROM interruptions i WHERE i.at >= to_timestamp($4) AND i.at < to_timestamp($5) AND ("
    " ($1 = '' AND $2 = '' AND $3 = '')"
    " OR i.pod IN (SELECT p.id FROM pods p WHERE " KILN_SCOPE ")"
    " OR i.id IN (SELECT ih.interruption_id FROM interruption_hosts ih JOIN hosts h ON h.id = ih.host_id"
    "   JOIN pods p ON p.id = h.pod_id WHERE " KILN_SCOPE "))"
    " GROUP BY 1, 2, 3";

// Interruptions (candidates included) and 'repair' events per host in [from, to): one
// aggregate over both kinds of rows.
#define KILN_LEMON_COUNTS(from, to)                                                                                    \
  "c AS (SELECT host_id, sum(ni)::int AS ni, sum(nr)::int AS nr FROM ("                                                \
  "   SELECT ih.host_id, 1 AS ni, 0 AS nr FROM interruption_hosts ih JOIN interruptions x ON x.id = ih.interruption_id" \
  "   WHERE x.at >= to_timestamp(" from ") AND x.at < to_timestamp(" to ")"                                            \
  "   UNION ALL SELECT host_id, 0, 1 FROM host_events WHERE action = 'repair'"                                         \
  "   AND at >= to_timestamp(" from ") AND at < to_timestamp(" to ")) u GROUP BY host_id)"

// Lemons: hosts with more than the threshold of both together, worst first, at most 500.
// The planner expects a few dozen hosts out of that aggregate (76,034 at threshold 0 on the
// 1M-GPU bench data) and looks each one up in hosts; so without a scope the 500 worst are
// taken first and only they are looked up ($1 from, $2 to, $3 threshold; 0.19-0.33 s instead of
// 0.95-1.1 s at threshold 0), and with one the hosts in scope are collected first and hashed
// ($4 from, $5 to, $6 threshold; a building at threshold 0: 0.23-0.33 s instead of 0.83-1.1 s).
constexpr const char* kLemonsOfFleet =
    "WITH " KILN_LEMON_COUNTS("$1", "$2")
    " SELECT h.id, h.pod_id, h.state, c.ni, c.nr"
    " FROM (SELECT * FROM c WHERE ni + nr > $3 ORDER BY ni + nr DESC, host_id LIMIT 500) c JOIN hosts h ON h.id = c.host_id"
    " ORDER BY c.ni + c.nr DESC, c.host_id";
constexpr const char* kLemonsInScope =
    "WITH s AS MATERIALIZED (SELECT h.id, h.pod_id, h.state FROM hosts h JOIN pods p ON p.id = h.pod_id WHERE " KILN_SCOPE "),"
    " " KILN_LEMON_COUNTS("$4", "$5")
    " SELECT s.id, s.pod_id, s.state, c.ni, c.nr FROM c JOIN s ON s.id = c.host_id"
    " WHERE c.ni + c.nr > $6 ORDER BY c.ni + c.nr DESC, c.host_id LIMIT 500";

// An interruptions cursor: "<at in epoch microseconds>.<id>" of the last row of the previous page
// (opaque to clients); "" = from the newest: (0, "") then.
Result<std::pair<std::int64_t, std::string>> interruptionCursor(const std::string& cursor) {
  if (cursor.empty()) return std::pair<std::int64_t, std::string>{0, ""};
  const auto dot = cursor.find('.');
  if (dot != std::string::npos && dot > 0 && dot + 1 < cursor.size() && cursor[0] != '+' && cursor[0] != ' ') {
    auto micros = numericCursor(cursor.substr(0, dot));
    if (micros.ok()) return std::pair{*micros, cursor.substr(dot + 1)};
  }
  return invalidArgument("cursor is not valid (pass back next_cursor of the previous page unchanged)");
}

class PgReliabilityStore final : public reliability::ReliabilityStore {
 public:
  explicit PgReliabilityStore(const PgStoreOptions& o) : pool_(o.database_url, o.pool_size) {}

  Result<bool> record(const reliability::Interruption& i, const core::Actor& actor) override {
    return pool_.transact<bool>([&](pqxx::work& txn) -> Result<bool> {
      std::set<std::string> hosts(i.hosts.begin(), i.hosts.end());
      // Retries of one interruption may arrive together: they queue here, so the second sees
      // the first's row (and answers "already recorded") instead of failing on the key.
      txn.exec_params("SELECT pg_advisory_xact_lock(hashtextextended('interruption:' || $1, 0))", i.id);
      auto existing = txn.exec_params(
          "SELECT extract(epoch from at)::float8, job, coalesce(job_gpus, -1), coalesce(pod, ''), cause, owner, description,"
          " (SELECT coalesce(json_agg(host_id ORDER BY host_id), '[]')::text FROM interruption_hosts WHERE interruption_id = i.id)"
          " FROM interruptions i WHERE id = $1 FOR UPDATE",
          i.id);
      if (!existing.empty()) {
        const auto& r = existing[0];
        const bool same = std::llround(r[0].as<double>()) == std::llround(toEpoch(i.at)) && r[1].as<std::string>() == i.job &&
                          r[2].as<int>() == i.job_gpus.value_or(-1) && r[3].as<std::string>() == i.pod &&
                          r[4].as<std::string>() == i.cause && r[5].as<std::string>() == i.owner &&
                          r[6].as<std::string>() == i.description &&
                          json::parse(r[7].c_str()).get<std::vector<std::string>>() ==
                              std::vector<std::string>(hosts.begin(), hosts.end());
        if (same) return false;
        return conflict("interruption '" + i.id + "' was recorded with other content: use a new id").with("id", i.id);
      }
      for (const auto& h : hosts)
        if (txn.exec_params("SELECT 1 FROM hosts WHERE id = $1", h).empty())
          return Error(invalidContent("no host '" + h + "'")).with("field", "hosts");
      if (!i.pod.empty() && txn.exec_params("SELECT 1 FROM pods WHERE id = $1", i.pod).empty())
        return Error(invalidContent("no pod '" + i.pod + "'")).with("field", "pod");
      std::optional<int> gpus = i.job_gpus;
      txn.exec_params(
          "INSERT INTO interruptions (id, at, job, job_gpus, pod, cause, owner, description, created_by)"
          " VALUES ($1, to_timestamp($2), $3, $4, NULLIF($5, ''), $6, $7, $8, $9)",
          i.id, toEpoch(i.at), i.job, gpus, i.pod, i.cause, i.owner, i.description, actor.token_id);
      for (const auto& h : hosts)
        txn.exec_params("INSERT INTO interruption_hosts (interruption_id, host_id) VALUES ($1, $2)", i.id, h);
      writeAudit(txn, actor, "interruption.record", i.id, json{{"cause", i.cause}, {"hosts", hosts.size()}}.dump());
      return true;
    });
  }

  Result<core::Page<reliability::Interruption>> list(core::TimePoint from, core::TimePoint to, const std::string& cause,
                                                     std::optional<bool> candidate, const core::PageRequest& page) override {
    using Page = core::Page<reliability::Interruption>;
    const int limit = std::clamp(page.limit, 1, 1000);
    auto after = interruptionCursor(page.cursor);
    if (!after.ok()) return after.error();
    return pool_.transact<Page>([&](pqxx::work& txn) -> Result<Page> {
      Page out;
      // Keyset on (at DESC, id): the cursor holds the last row's `at` in whole microseconds (what
      // timestamptz stores, so the comparison is exact) and its id.
      auto rows = txn.exec_params(
          "SELECT id, extract(epoch from at)::float8, job, job_gpus, coalesce(pod, ''), cause, owner, description, candidate,"
          " (SELECT coalesce(json_agg(host_id ORDER BY host_id), '[]')::text FROM interruption_hosts WHERE interruption_id = i.id),"
          " (extract(epoch from at) * 1000000)::bigint"
          " FROM interruptions i WHERE at >= to_timestamp($1) AND at < to_timestamp($2) AND ($3 = '' OR cause = $3)"
          " AND ($4 = '' OR candidate = ($4 = 'true'))"
          " AND ($6 = '' OR at < timestamptz 'epoch' + $5 * interval '1 microsecond'"
          "      OR (at = timestamptz 'epoch' + $5 * interval '1 microsecond' AND id > $6))"
          " ORDER BY at DESC, id LIMIT $7",
          toEpoch(from), toEpoch(to), cause, candidate ? (*candidate ? "true" : "false") : "", after->first, after->second,
          limit + 1);
      for (const auto& r : rows) {
        if (static_cast<int>(out.items.size()) == limit) {
          const auto& last = rows[limit - 1];
          out.next_cursor = std::to_string(last[10].as<std::int64_t>()) + "." + last[0].as<std::string>();
          break;
        }
        reliability::Interruption i;
        i.id = r[0].as<std::string>();
        i.at = fromEpoch(r[1].as<double>());
        i.job = r[2].as<std::string>();
        if (!r[3].is_null()) i.job_gpus = r[3].as<int>();
        i.pod = r[4].as<std::string>();
        i.cause = r[5].as<std::string>();
        i.owner = r[6].as<std::string>();
        i.description = r[7].as<std::string>();
        i.candidate = r[8].as<bool>();
        i.hosts = json::parse(r[9].c_str()).get<std::vector<std::string>>();
        out.items.push_back(std::move(i));
      }
      return out;
    });
  }

  Result<LedgerData> data(core::TimePoint from, core::TimePoint to, const reliability::Scope& s, int threshold) override {
    return pool_.transact<LedgerData>([&](pqxx::work& txn) -> Result<LedgerData> {
      // One snapshot for every query: the rolled-up days and hours and the raw deltas must agree.
      txn.exec0("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
      // JIT compiling costs more than it saves at this size: the correlated-EXISTS form of the
      // interruption query crossed jit_above_cost on the 1M-GPU bench data and took 0.4-0.5 s
      // with JIT, 0.11-0.13 s without. The queries below stay under the threshold there, but a
      // longer ledger would cross it.
      txn.exec0("SET LOCAL jit = off");
      // Parallel workers each rebuild the lemon query's hash tables: on the 1M-GPU bench data (2
      // cores) 0.30-0.38 s with 2 workers, 0.12-0.21 s without (whole fleet, threshold 0).
      txn.exec0("SET LOCAL max_parallel_workers_per_gather = 0");
      LedgerData d;
      const reliability::RollupWindow w = reliability::rollupWindow(from, to);
      d.service_level_at_first_day =
          txn.exec_params1(kServiceLevel, s.site, s.building, s.platform, toEpoch(w.first_day))[0].as<std::int64_t>();
      auto periods = [&](const pqxx::result& rows, std::vector<reliability::ServicePeriod>& out) {
        for (const auto& r : rows) out.push_back({fromEpoch(r[0].as<double>()), r[1].as<std::int64_t>(), r[2].as<std::int64_t>()});
      };
      periods(txn.exec_params(kServiceDays, s.site, s.building, s.platform, toEpoch(w.first_day), toEpoch(w.days_end)),
              d.service_days);
      // One or two ranges each (the one twice when there is one).
      auto ranges = [&](const char* sql, const std::vector<std::pair<core::TimePoint, core::TimePoint>>& r) {
        return txn.exec_params(sql, s.site, s.building, s.platform, toEpoch(r.front().first), toEpoch(r.front().second),
                               toEpoch(r.back().first), toEpoch(r.back().second));
      };
      if (!w.hour_ranges.empty()) periods(ranges(kServiceHours, w.hour_ranges), d.service_hours);
      if (!w.raw_ranges.empty())
        for (const auto& r : ranges(kServiceRawDeltas, w.raw_ranges))
          d.service_raw_deltas.emplace_back(fromEpoch(r[0].as<double>()), r[1].as<int>());
      for (const auto& r : txn.exec_params(kInterruptionCounts, s.site, s.building, s.platform, toEpoch(from), toEpoch(to)))
        d.interruptions.push_back({fromEpoch(r[0].as<double>()), r[1].as<std::string>(), r[2].as<bool>(), r[3].as<std::int64_t>()});
      const bool fleet = s.site.empty() && s.building.empty() && s.platform.empty();
      for (const auto& r : fleet ? txn.exec_params(kLemonsOfFleet, toEpoch(from), toEpoch(to), threshold)
                                 : txn.exec_params(kLemonsInScope, s.site, s.building, s.platform, toEpoch(from), toEpoch(to),
                                                   threshold))
        d.lemons.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<int>(),
                            r[4].as<int>()});
      if (auto hour = txn.exec_params1(kFirstServiceHour, s.site, s.building, s.platform)[0]; !hour.is_null()) {
        auto first = txn.exec_params1(kFirstServiceEvent, s.site, s.building, s.platform, hour.as<double>())[0];
        d.history_start = fromEpoch(first.is_null() ? hour.as<double>() : first.as<double>());
      }
      return d;
    });
  }

  Result<std::map<std::string, std::int64_t>> countsByCause() override {
    return pool_.transact<std::map<std::string, std::int64_t>>([&](pqxx::work& txn) -> Result<std::map<std::string, std::int64_t>> {
      std::map<std::string, std::int64_t> out;
      for (const auto& r : txn.exec("SELECT cause, count(*) FROM interruptions WHERE NOT candidate GROUP BY cause"))
        out[r[0].as<std::string>()] = r[1].as<std::int64_t>();
      return out;
    });
  }

 private:
  PgPool pool_;
};

}  // namespace

std::unique_ptr<reliability::ReliabilityStore> makePgReliabilityStore(const PgStoreOptions& options) {
  return std::make_unique<PgReliabilityStore>(options);
}

}  // namespace kiln::db
