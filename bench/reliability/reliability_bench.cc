// kiln-bench-reliability: the reliability report over a year of history on a big fleet.
// Imports a generated fleet (default 1,000,000 GPUs) into a fresh kilnd, seeds a year of host
// state history and 100,000 interruptions straight into PostgreSQL (the way kilnd stores
// them), then times GET /api/v1/reliability for the whole year, per site / building /
// platform, with the lemon list opened up, and GET /api/v1/interruptions, against GET /healthz
// in the same run. Checks the report's figures against the same figures computed from the
// seeded rows by independent SQL. A program that prints figures (STYLE: a benchmark is not a
// test with a time limit); it asserts nothing about time.
//
//   KILN_TEST_PG="host=... port=... user=kiln" kiln-bench-reliability [--gpus N] ...
//
// See bench/reliability/README.md.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "orchestrator/core/fleet_generator.h"
#include "orchestrator/http/client.h"
#include "tests/support/bench_args.h"
#include "tests/support/kilnd_process.h"
#include "tests/support/test_db.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  std::int64_t gpus = 1000000;
  std::int64_t interruptions = 100000;  // the figure
  double linked_share = 0.6;            // interruptions that end in a repair cycle of their host
  int rollouts = 4;                     // fleet-wide firmware rollouts in the year (every host)
  double retire_share = 0.002;          // repair cycles that end in retirement instead
  double requarantine_share = 0.10;     // repair cycles whose first quarantine validation fails
  int lemons = 2000;                    // hosts that take `lemon_share` of all failures
  double lemon_share = 0.10;
  int reports = 10;                     // requests per report series
  int healthz = 200;                    // requests of the baseline series
  std::string from = "2025-12-01T00:00:00Z";  // the year: [from, from + 365 days)
  double seed = 0.42;                   // setseed() for PostgreSQL's random()
  bool keep = false;                    // leave the database behind for EXPLAIN by hand
};

const char* kUsage =
    "usage: kiln-bench-reliability [--gpus N] [--interruptions N] [--linked-share X] [--rollouts N]\n"
    "         [--retire-share X] [--requarantine-share X] [--lemons N] [--lemon-share X]\n"
    "         [--reports N] [--healthz N] [--from 2025-12-01T00:00:00Z] [--seed X] [--keep]\n"
    "Starts its own kilnd on a fresh database of the server in KILN_TEST_PG.\n";

// -1: go on; otherwise the exit status for main (0 after --help, 2 after a bad flag).
int parseArgs(int argc, char** argv, Options& o) {
  const int st = kiln::testing::BenchArgs(kUsage)
                     .number("--gpus", &o.gpus)
                     .number("--interruptions", &o.interruptions)
                     .number("--linked-share", &o.linked_share)
                     .number("--rollouts", &o.rollouts)
                     .number("--retire-share", &o.retire_share)
                     .number("--requarantine-share", &o.requarantine_share)
                     .number("--lemons", &o.lemons)
                     .number("--lemon-share", &o.lemon_share)
                     .number("--reports", &o.reports)
                     .number("--healthz", &o.healthz)
                     .text("--from", &o.from)
                     .number("--seed", &o.seed)
                     .flag("--keep", &o.keep)
                     .parse(argc, argv);
  if (st != -1) return st;
  if (o.rollouts < 0 || o.rollouts > 13 || o.seed < -1 || o.seed > 1 || o.lemons < 1 || o.reports < 1) {
    std::cerr << "--rollouts is 0-13, --seed -1..1, --lemons and --reports at least 1\n";
    return 2;
  }
  return -1;
}

// ---- Seeding. All of it is SQL run in one session (temp tables, setseed). ----
//
// The year is cut into 26 slots of 14 days. Each rollout takes one slot for the whole fleet
// (pods start at random within its first 10 days; drain -> drained -> maintenance_done ->
// validation_pass takes 1.3-3 h per host). Repair cycles take the other slots, at most one
// cycle per host and slot, so a host's events never interleave and their ids (bigserial,
// inserted in time order) follow time, as kilnd's do: the independent SQL below orders a host's
// events by id, and every event's from_state is the previous one's to_state (checked), which
// the rollup relies on. The triggers on host_events keep service_days/_hours as rows go in; the
// backdating UPDATE of the import events moves their share through the update trigger.
// A cycle starts 1 h-3 days into its slot and lasts at most 10 days:
//   repair:        fail -> repair (2-24 h) -> repair_complete (1-4 d) -> quarantine_pass (6-48 h)
//   requarantine:  ... repair_complete -> quarantine_fail (6-24 h) -> repair_complete (1-2 d)
//                  -> quarantine_pass (6-48 h)
//   retire:        fail -> retire (2-24 h); the host's later events are dropped.
// Times are $1 = from (epoch seconds); the import events move to 30 days before it.

constexpr const char* kSeedBackdateImport =
    "UPDATE host_events SET at = to_timestamp($1) - interval '30 days' WHERE action = 'import'";

constexpr const char* kSeedBackdateHosts = "UPDATE hosts SET state_since = to_timestamp($1) - interval '30 days'";

constexpr const char* kSeedHosts =
    "CREATE TEMP TABLE seed_hosts AS"
    " SELECT row_number() OVER (ORDER BY md5(id)) AS k, id, pod_id FROM hosts";

constexpr const char* kSeedEvents =
    "CREATE TEMP TABLE seed_ev (host_id text COLLATE \"C\", at timestamptz, action text, from_state text,"
    " to_state text)";

// $1 from, $2 rollouts.
constexpr const char* kSeedRollouts =
    "INSERT INTO seed_ev"
    " WITH pw AS (SELECT r.slot, p.id AS pod_id,"
    "     to_timestamp($1) + r.slot * interval '14 days' + random() * interval '10 days' AS t0"
    "   FROM (SELECT floor((r + 0.5) * 26 / $2::int)::int AS slot FROM generate_series(0, $2::int - 1) r) r CROSS JOIN pods p),"
    " hw AS (SELECT h.id, pw.t0 + random() * interval '10 minutes' AS t1,"
    "     interval '20 minutes' + random() * interval '40 minutes' AS d1,"
    "     interval '40 minutes' + random() * interval '80 minutes' AS d2,"
    "     interval '20 minutes' + random() * interval '40 minutes' AS d3"
    "   FROM pw JOIN hosts h ON h.pod_id = pw.pod_id)"
    " SELECT id, t1, 'drain', 'available', 'draining' FROM hw"
    " UNION ALL SELECT id, t1 + d1, 'drained', 'draining', 'maintenance' FROM hw"
    " UNION ALL SELECT id, t1 + d1 + d2, 'maintenance_done', 'maintenance', 'validating' FROM hw"
    " UNION ALL SELECT id, t1 + d1 + d2 + d3, 'validation_pass', 'validating', 'available' FROM hw";

// $1 from, $2 rollouts, $3 cycles to draw, $4 lemons, $5 lemon share, $6 retire share,
// $7 requarantine share, $8 hosts.
constexpr const char* kSeedCyclesTable =
    "CREATE TEMP TABLE seed_cycles (host_id text COLLATE \"C\", pod_id text COLLATE \"C\", slot int, kind text,"
    " t_fail timestamptz, d_repair interval, d_fix interval, d_pass interval, d_qfail interval, d_fix2 interval)";
constexpr const char* kSeedCycles =
    "INSERT INTO seed_cycles"
    " WITH free AS (SELECT array_agg(s ORDER BY s) AS slots FROM generate_series(0, 25) s"
    "   WHERE s NOT IN (SELECT floor((r + 0.5) * 26 / $2::int)::int FROM generate_series(0, $2::int - 1) r)),"
    " draw AS (SELECT g,"
    "     1 + floor(random() * CASE WHEN random() < $5::float8 THEN $4::float8 ELSE $8::float8 END)::bigint AS k,"
    "     (SELECT slots FROM free)[1 + floor(random() * (SELECT cardinality(slots) FROM free))::int] AS slot,"
    "     random() AS u_kind, random() AS u0, random() AS u1, random() AS u2, random() AS u3,"
    "     random() AS u4, random() AS u5"
    "   FROM generate_series(1, $3::int) g),"
    " c AS (SELECT DISTINCT ON (h.id, d.slot) h.id AS host_id, h.pod_id, d.slot,"
    "     CASE WHEN d.u_kind < $6::float8 THEN 'retire' WHEN d.u_kind < $6::float8 + $7::float8 THEN 'requarantine' ELSE 'repair' END AS kind,"
    "     to_timestamp($1) + d.slot * interval '14 days' + interval '1 hour' + d.u0 * interval '71 hours' AS t_fail,"
    "     interval '2 hours' + d.u1 * interval '22 hours' AS d_repair,"
    "     interval '1 day' + d.u2 * interval '3 days' AS d_fix,"
    "     interval '6 hours' + d.u3 * interval '42 hours' AS d_pass,"
    "     interval '6 hours' + d.u4 * interval '18 hours' AS d_qfail,"
    "     interval '1 day' + d.u5 * interval '1 day' AS d_fix2"
    "   FROM draw d JOIN seed_hosts h ON h.k = d.k ORDER BY h.id, d.slot, d.g)"
    " SELECT * FROM c";

constexpr const char* kSeedCycleEvents =
    "INSERT INTO seed_ev"
    " SELECT host_id, t_fail, 'fail', 'available', 'failed' FROM seed_cycles"
    " UNION ALL SELECT host_id, t_fail + d_repair, 'retire', 'failed', 'retired' FROM seed_cycles WHERE kind = 'retire'"
    " UNION ALL SELECT host_id, t_fail + d_repair, 'repair', 'failed', 'repair' FROM seed_cycles WHERE kind <> 'retire'"
    " UNION ALL SELECT host_id, t_fail + d_repair + d_fix, 'repair_complete', 'repair', 'quarantine' FROM seed_cycles"
    "   WHERE kind <> 'retire'"
    " UNION ALL SELECT host_id, t_fail + d_repair + d_fix + d_qfail, 'quarantine_fail', 'quarantine', 'repair'"
    "   FROM seed_cycles WHERE kind = 'requarantine'"
    " UNION ALL SELECT host_id, t_fail + d_repair + d_fix + d_qfail + d_fix2, 'repair_complete', 'repair', 'quarantine'"
    "   FROM seed_cycles WHERE kind = 'requarantine'"
    " UNION ALL SELECT host_id, t_fail + d_repair + d_fix + d_pass, 'quarantine_pass', 'quarantine', 'available'"
    "   FROM seed_cycles WHERE kind = 'repair'"
    " UNION ALL SELECT host_id, t_fail + d_repair + d_fix + d_qfail + d_fix2 + d_pass, 'quarantine_pass', 'quarantine',"
    "   'available' FROM seed_cycles WHERE kind = 'requarantine'";

// A retired host does nothing afterwards: no rollout, no further repair cycle.
constexpr const char* kSeedDropAfterRetire =
    "WITH r AS (SELECT host_id, min(t_fail) AS t FROM seed_cycles WHERE kind = 'retire' GROUP BY host_id),"
    " e AS (DELETE FROM seed_ev e USING r WHERE e.host_id = r.host_id AND e.at > r.t + interval '1 day' RETURNING 1),"
    " c AS (DELETE FROM seed_cycles c USING r WHERE c.host_id = r.host_id AND c.t_fail > r.t RETURNING 1)"
    " SELECT (SELECT count(*) FROM e), (SELECT count(*) FROM c)";

// $1 the admin token id (kilnd writes the acting token's id; 'system' for controller steps).
constexpr const char* kSeedInsertEvents =
    "INSERT INTO host_events (host_id, at, action, from_state, to_state, actor, reason)"
    " SELECT host_id, at, action, from_state, to_state,"
    "   CASE WHEN action IN ('fail', 'repair', 'repair_complete', 'retire', 'drain') THEN $1 ELSE 'system' END,"
    "   'bench: seeded history'"
    " FROM seed_ev ORDER BY at, host_id";

constexpr const char* kSeedHostState =
    "WITH l AS (SELECT host_id, (array_agg(to_state ORDER BY at DESC))[1] AS state, max(at) AS at, count(*) AS n,"
    "   count(*) FILTER (WHERE action = 'repair_complete') AS repairs FROM seed_ev GROUP BY host_id)"
    " UPDATE hosts h SET state = l.state, state_since = l.at, version = h.version + l.n, repairs = h.repairs + l.repairs"
    " FROM l WHERE h.id = l.host_id";

// pods.state as core::podState() would summarise it (only retirements leave hosts out of
// service at the end of the year; 64 active GPUs = 16 serving hosts of 4).
constexpr const char* kSeedPodState =
    "UPDATE pods p SET state = CASE WHEN s.retired = s.total THEN 'retired' WHEN s.serving * 4 >= 64 THEN 'in_service'"
    "   WHEN s.serving > 0 THEN 'degraded' ELSE 'down' END"
    " FROM (SELECT pod_id, count(*) AS total, count(*) FILTER (WHERE state = 'retired') AS retired,"
    "   count(*) FILTER (WHERE state IN ('available', 'allocated')) AS serving FROM hosts GROUP BY pod_id) s"
    " WHERE s.pod_id = p.id AND s.serving < s.total";

// Interruptions: the first $2 of the cycles in random order are preceded by an interruption of
// a job on that host 1-30 min before it fails; the rest ($3 - linked) are transient (the job
// restarts, the host stays) at a random time on a random host, lemons over-represented.
// Causes: the docs/FACTS.md classes, NVLink signal integrity first (weights are ours).
// nvswitch_fabric is recorded against the pod only, the others against their host and pod.
// $1 from, $2 linked, $3 total, $4 lemons, $5 lemon share, $6 hosts.
constexpr const char* kSeedInterruptionsTable =
    "CREATE TEMP TABLE seed_int (n bigint, host_id text COLLATE \"C\", pod_id text COLLATE \"C\", at timestamptz,"
    " cause text, job_gpus int)";
constexpr const char* kSeedInterruptions =
    "INSERT INTO seed_int"
    " WITH linked AS (SELECT host_id, pod_id, t_fail - interval '1 minute' - random() * interval '29 minutes' AS at"
    "   FROM seed_cycles ORDER BY random() LIMIT $2::bigint),"
    " transient AS (SELECT h.id AS host_id, h.pod_id, d.at FROM"
    "   (SELECT 1 + floor(random() * CASE WHEN random() < $5::float8 THEN $4::float8 ELSE $6::float8 END)::bigint AS k,"
    "      to_timestamp($1) + random() * interval '365 days' AS at"
    "    FROM generate_series(1, $3::bigint - (SELECT count(*) FROM linked))) d JOIN seed_hosts h ON h.k = d.k),"
    " a AS (SELECT * FROM linked UNION ALL SELECT * FROM transient),"
    " u AS (SELECT row_number() OVER (ORDER BY at, host_id) AS n, host_id, pod_id, at, random() AS u, random() AS v FROM a)"
    " SELECT n, host_id, pod_id, at,"
    "   CASE WHEN u < 0.25 THEN 'nvlink_signal_integrity' WHEN u < 0.37 THEN 'hbm' WHEN u < 0.42 THEN 'lpddr'"
    "     WHEN u < 0.50 THEN 'nvswitch_fabric' WHEN u < 0.60 THEN 'backend_network' WHEN u < 0.65 THEN 'storage'"
    "     WHEN u < 0.69 THEN 'thermal' WHEN u < 0.72 THEN 'power' WHEN u < 0.85 THEN 'software' WHEN u < 0.95 THEN 'gpu'"
    "     WHEN u < 0.98 THEN 'host_maintenance' ELSE 'unknown' END AS cause,"
    "   (ARRAY[576, 2048, 4096, 8192, 16384, 32768])[1 + floor(v * 6)::int] AS job_gpus"
    " FROM u";

// $1 the admin token id.
constexpr const char* kSeedInsertInterruptions =
    "INSERT INTO interruptions (id, at, job, job_gpus, pod, cause, owner, description, created_by)"
    " SELECT 'int-' || lpad(n::text, 7, '0'), at, 'job-' || (n % 5000), job_gpus, pod_id, cause, 'bench',"
    "   'bench: seeded interruption', $1 FROM seed_int ORDER BY n";

constexpr const char* kSeedInsertInterruptionHosts =
    "INSERT INTO interruption_hosts (interruption_id, host_id)"
    " SELECT 'int-' || lpad(n::text, 7, '0'), host_id FROM seed_int WHERE cause <> 'nvswitch_fabric'";

// ---- The figures the report must show, computed from the rows another way: per host, time
// in a serving state (lead() instead of the report's fleet-wide step function).
// $1 from, $2 to, $3 site, $4 building, $5 platform ('' = any).
constexpr const char* kExpectedGpuHours =
    "WITH ev AS (SELECT e.at, e.to_state, lead(e.at) OVER (PARTITION BY e.host_id ORDER BY e.id) AS nxt"
    "   FROM host_events e JOIN hosts h ON h.id = e.host_id JOIN pods p ON p.id = h.pod_id"
    "   WHERE e.action NOT IN ('unreachable', 'reachable')"
    "   AND ($3 = '' OR p.site_id = $3) AND ($4 = '' OR p.building_id = $4) AND ($5 = '' OR p.platform = $5))"
    " SELECT coalesce(sum(extract(epoch FROM least(coalesce(nxt, to_timestamp($2)), to_timestamp($2))"
    "   - greatest(at, to_timestamp($1)))), 0)::float8 / 3600 * 4"
    " FROM ev WHERE to_state IN ('available', 'allocated')"
    "   AND least(coalesce(nxt, to_timestamp($2)), to_timestamp($2)) > greatest(at, to_timestamp($1))";

constexpr const char* kExpectedInterruptions =
    "SELECT count(*) FROM interruptions i WHERE NOT candidate AND at >= to_timestamp($1) AND at < to_timestamp($2)"
    " AND (($3 = '' AND $4 = '' AND $5 = '') OR EXISTS (SELECT 1 FROM pods p WHERE p.id = i.pod"
    "   AND ($3 = '' OR p.site_id = $3) AND ($4 = '' OR p.building_id = $4) AND ($5 = '' OR p.platform = $5)))";

// The rule the rollup relies on: every event's from_state is its host's previous to_state
// (NULL for the first). Counts the events that break it.
constexpr const char* kFromStateBreaks =
    "SELECT count(*) FROM (SELECT from_state, lag(to_state) OVER (PARTITION BY host_id ORDER BY id) AS prev"
    "   FROM host_events) e WHERE from_state IS DISTINCT FROM prev";

// service_days and service_hours as the triggers kept them through the seeding (the
// backdating UPDATE included) against kiln_rebuild_service_days() from host_events; run in a
// transaction rolled back afterwards. A missing row is a row of zeros.
constexpr const char* kKeepRollup =
    "CREATE TEMP TABLE kept_days AS SELECT * FROM service_days; CREATE TEMP TABLE kept_hours AS SELECT * FROM service_hours";
constexpr const char* kRebuildRollup = "SELECT kiln_rebuild_service_days()";
constexpr const char* kRollupDiffers =
    "SELECT (SELECT count(*) FROM kept_days k FULL JOIN service_days s USING (day, building_id, platform)"
    "   WHERE coalesce(k.net_hosts, 0) <> coalesce(s.net_hosts, 0) OR coalesce(k.tail_host_us, 0) <> coalesce(s.tail_host_us, 0))"
    " + (SELECT count(*) FROM kept_hours k FULL JOIN service_hours s USING (hour, building_id, platform)"
    "   WHERE coalesce(k.net_hosts, 0) <> coalesce(s.net_hosts, 0) OR coalesce(k.tail_host_us, 0) <> coalesce(s.tail_host_us, 0)),"
    " (SELECT count(*) FROM service_days) + (SELECT count(*) FROM service_hours)";

struct Stats {
  std::size_t n = 0;
  double p50 = 0, p90 = 0, max = 0;
};
Stats stats(std::vector<double> ms) {
  Stats s;
  s.n = ms.size();
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * ms.size()))]; };
  s.p50 = at(0.50);
  s.p90 = at(0.90);
  s.max = ms.back();
  return s;
}

// One timed request; exits on a transport failure or an unexpected status.
std::string timed(kiln::http::Client& c, const std::string& path, std::vector<double>& ms) {
  const auto t0 = Clock::now();
  auto r = c.request("GET", path);
  const double elapsed = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!r.ok() || r->status != 200) {
    std::cerr << "GET " << path << " failed: "
              << (r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 2000) : r.error().message) << "\n";
    std::exit(1);
  }
  ms.push_back(elapsed);
  return r->body;
}

std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

std::string isoTime(std::int64_t epoch) {
  const std::time_t t = epoch;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::int64_t parseIso(const std::string& s) {
  std::tm tm{};
  if (!strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) {
    std::cerr << "--from expects 2025-12-01T00:00:00Z\n";
    std::exit(2);
  }
  return timegm(&tm);
}

// A report series: what it asks, its latencies, and what the last answer said.
struct Series {
  std::string label, path;
  std::string site, building, platform;  // the scope, for the expected figures
  std::int64_t from = 0, to = 0;         // the window, epoch seconds; 0 = the year
  std::vector<double> ms;
  json last;
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines show up when piped to a file
  Options o;
  if (const int st = parseArgs(argc, argv, o); st != -1) return st;
  const std::string load_at_start = loadAverage();
  const std::int64_t from = parseIso(o.from);
  const std::int64_t to = from + 365LL * 86400;

  auto db = std::make_unique<kiln::testing::TestDatabase>();  // aborts with a message without KILN_TEST_PG
  // No retention sweep: the seeded year is history older than the default host_events rule, and
  // the bench compares the rollup with kiln_rebuild_service_days(), which refuses after a prune.
  auto kilnd = std::make_unique<kiln::testing::KilndProcess>(
      kiln::testing::KilndOptions{.database_url = db->url(), .extra_args = {"--retention-interval", "0"}});
  if (auto st = kilnd->start(); !st.ok()) {
    std::cerr << "cannot start kilnd: " << st.error().message << "\n";
    return 1;
  }
  std::printf("kilnd pid %d at %s, log %s\n", kilnd->pid(), kilnd->url().c_str(), kilnd->logPath().c_str());
  kiln::http::Client client({.base_url = kilnd->url(), .token = kilnd->adminToken(), .timeout = std::chrono::minutes(30)});

  // The fleet, through the API as an operator would load it.
  kiln::core::FleetGenRequest gen;
  gen.gpus = o.gpus;
  const json fleet = kiln::core::generateFleet(gen);
  std::string site, building;
  for (const auto& s : fleet["sites"]) {
    if (site.empty()) site = s["name"].get<std::string>();
    for (const auto& b : s["buildings"])
      if (building.empty()) building = b["name"].get<std::string>();
  }
  auto t0 = Clock::now();
  auto imported = client.request("POST", "/api/v1/fleet/import", fleet.dump());
  const double import_s = seconds(t0);
  if (!imported.ok() || imported->status != 201) {
    std::cerr << "import failed: "
              << (imported.ok() ? std::to_string(imported->status) + " " + imported->body.substr(0, 2000)
                                : imported.error().message)
              << "\n";
    return 1;
  }
  std::printf("import answered %d in %.1f s: %s\n", imported->status, import_s, imported->body.c_str());

  // A year of history, written as kilnd writes it.
  pqxx::connection conn(db->url());
  const std::string token_id = pqxx::nontransaction(conn).exec1("SELECT id FROM tokens WHERE role = 'admin' LIMIT 1")[0].as<std::string>();
  const std::int64_t hosts = pqxx::nontransaction(conn).exec1("SELECT count(*) FROM hosts")[0].as<std::int64_t>();
  o.lemons = static_cast<int>(std::min<std::int64_t>(o.lemons, hosts));  // a tiny fleet: every host may be a lemon
  // Draw enough repair cycles for the linked interruptions (a few are lost to (host, slot)
  // collisions and to retirements).
  const std::int64_t cycles_to_draw = static_cast<std::int64_t>(std::ceil(o.interruptions * o.linked_share * 1.03));
  struct Step {
    std::string what;
    double s;
    std::int64_t rows;
  };
  std::vector<Step> steps;
  auto step = [&](const std::string& what, auto&& fn) {
    const auto t = Clock::now();
    pqxx::work txn(conn);
    const std::int64_t rows = fn(txn);
    txn.commit();
    steps.push_back({what, seconds(t), rows});
    std::printf("  seeded %-46s %10lld rows %8.1f s\n", what.c_str(), static_cast<long long>(rows), steps.back().s);
  };
  const auto seed_t0 = Clock::now();
  step("setseed", [&](pqxx::work& t) {
    t.exec_params("SELECT setseed($1)", o.seed);
    return std::int64_t{0};
  });
  step("import events moved to 30 days before the year", [&](pqxx::work& t) {
    t.exec_params(kSeedBackdateHosts, from);
    return static_cast<std::int64_t>(t.exec_params(kSeedBackdateImport, from).affected_rows());
  });
  step("hosts numbered (temp)", [&](pqxx::work& t) {
    t.exec0(kSeedHosts);
    t.exec0(kSeedEvents);
    return hosts;
  });
  step("rollout events (temp)", [&](pqxx::work& t) {
    return o.rollouts == 0 ? std::int64_t{0}
                           : static_cast<std::int64_t>(t.exec_params(kSeedRollouts, from, o.rollouts).affected_rows());
  });
  step("repair cycles (temp)", [&](pqxx::work& t) {
    t.exec0(kSeedCyclesTable);
    t.exec_params(kSeedCycles, from, o.rollouts, cycles_to_draw, o.lemons, o.lemon_share, o.retire_share,
                  o.requarantine_share, hosts);
    return t.exec1("SELECT count(*) FROM seed_cycles")[0].as<std::int64_t>();
  });
  step("repair cycle events (temp)",
       [&](pqxx::work& t) { return static_cast<std::int64_t>(t.exec(kSeedCycleEvents).affected_rows()); });
  step("events dropped after retirement (temp)", [&](pqxx::work& t) {
    auto r = t.exec1(kSeedDropAfterRetire);
    return r[0].as<std::int64_t>() + r[1].as<std::int64_t>();
  });
  step("host_events", [&](pqxx::work& t) {
    return static_cast<std::int64_t>(t.exec_params(kSeedInsertEvents, token_id).affected_rows());
  });
  step("hosts: state, state_since, repairs",
       [&](pqxx::work& t) { return static_cast<std::int64_t>(t.exec(kSeedHostState).affected_rows()); });
  step("pods: state", [&](pqxx::work& t) { return static_cast<std::int64_t>(t.exec(kSeedPodState).affected_rows()); });
  step("interruptions (temp)", [&](pqxx::work& t) {
    const auto linked = static_cast<std::int64_t>(std::llround(o.interruptions * o.linked_share));
    t.exec0(kSeedInterruptionsTable);
    t.exec_params(kSeedInterruptions, from, linked, o.interruptions, o.lemons, o.lemon_share, hosts);
    return t.exec1("SELECT count(*) FROM seed_int")[0].as<std::int64_t>();
  });
  step("interruptions", [&](pqxx::work& t) {
    return static_cast<std::int64_t>(t.exec_params(kSeedInsertInterruptions, token_id).affected_rows());
  });
  step("interruption_hosts",
       [&](pqxx::work& t) { return static_cast<std::int64_t>(t.exec(kSeedInsertInterruptionHosts).affected_rows()); });
  {
    // Autovacuum would get there on its own; the figure is the steady state, not the minute after a bulk load.
    const auto t = Clock::now();
    pqxx::nontransaction(conn).exec0("ANALYZE host_events, service_days, service_hours, hosts, pods, interruptions, interruption_hosts");
    steps.push_back({"ANALYZE", seconds(t), 0});
    std::printf("  %-53s %10s      %8.1f s\n", "ANALYZE", "", steps.back().s);
  }
  const double seed_s = seconds(seed_t0);

  json counts = json::object();
  {
    pqxx::nontransaction t(conn);
    for (const char* table : {"pods", "hosts", "host_events", "service_days", "service_hours", "interruptions", "interruption_hosts"})
      counts[table] = t.exec1(std::string("SELECT count(*) FROM ") + table)[0].as<std::int64_t>();
    counts["retired_hosts"] = t.exec1("SELECT count(*) FROM hosts WHERE state = 'retired'")[0].as<std::int64_t>();
    counts["repair_cycles"] = t.exec1("SELECT count(*) FROM seed_cycles")[0].as<std::int64_t>();
    counts["host_events_size"] = t.exec1("SELECT pg_size_pretty(pg_total_relation_size('host_events'))")[0].as<std::string>();
  }

  // The series. The whole year, then each scope the console offers, then the lemon list opened up.
  const std::string window = "from=" + isoTime(from) + "&to=" + isoTime(to);
  std::vector<Series> series = {
      {"GET /reliability (whole fleet, year)", "/api/v1/reliability?" + window, "", "", ""},
      {"GET /reliability?site=" + site, "/api/v1/reliability?" + window + "&site=" + site, site, "", ""},
      {"GET /reliability?building=" + building, "/api/v1/reliability?" + window + "&building=" + building, "", building, ""},
      {"GET /reliability?platform=clemente", "/api/v1/reliability?" + window + "&platform=clemente", "", "", "clemente"},
      {"GET /reliability?lemon_threshold=0", "/api/v1/reliability?" + window + "&lemon_threshold=0", "", "", ""},
  };
  {
    // As the console asks (from and to not on midnight nor on the hour), the end in the third
    // rollout's slot of the default four: the partial days and hours of the rollup at their busiest.
    const std::int64_t f = from + 210 * 86400 + 13 * 3600 + 17 * 60 + 23, t = from + 228 * 86400 + 9 * 3600 + 41 * 60 + 7;
    const std::string w = "from=" + isoTime(f) + "&to=" + isoTime(t);
    series.push_back({"GET /reliability (18 days, mid-hour edges)", "/api/v1/reliability?" + w, "", "", "", f, t});
    series.push_back({"GET /reliability?building=" + building + " (18 d)", "/api/v1/reliability?" + w + "&building=" + building, "",
                      building, "", f, t});
  }
  std::vector<double> healthz_ms, list_ms, list_cause_ms;
  for (int i = 0; i < o.healthz / 2; ++i) timed(client, "/healthz", healthz_ms);
  std::printf("timing %zu report series x %d requests...\n", series.size(), o.reports);
  for (auto& s : series) {
    for (int i = 0; i < o.reports; ++i) s.last = json::parse(timed(client, s.path, s.ms));
    std::printf("  %-44s p50 %9.1f ms\n", s.label.c_str(), stats(s.ms).p50);
  }
  for (int i = 0; i < o.reports; ++i) timed(client, "/api/v1/interruptions?" + window + "&limit=100", list_ms);
  for (int i = 0; i < o.reports; ++i) timed(client, "/api/v1/interruptions?" + window + "&cause=hbm&limit=100", list_cause_ms);
  for (int i = o.healthz / 2; i < o.healthz; ++i) timed(client, "/healthz", healthz_ms);

  // What the report should have said, from the rows.
  struct Check {
    std::string what;
    bool ok;
  };
  std::vector<Check> checks;
  std::vector<std::pair<double, std::int64_t>> expected;  // per series: GPU-hours, interruptions
  double expected_s = 0;
  {
    pqxx::nontransaction t(conn);
    for (const auto& s : series) {
      const auto tq = Clock::now();
      const std::int64_t f = s.from ? s.from : from, e = s.to ? s.to : to;
      const double gh = t.exec_params1(kExpectedGpuHours, f, e, s.site, s.building, s.platform)[0].as<double>();
      expected_s = std::max(expected_s, seconds(tq));
      const auto n = t.exec_params1(kExpectedInterruptions, f, e, s.site, s.building, s.platform)[0].as<std::int64_t>();
      expected.emplace_back(gh, n);
    }
  }
  std::int64_t from_state_breaks = 0, rollup_differs = 0, rollup_rebuilt = 0;
  double rebuild_s = 0;
  {
    pqxx::nontransaction t(conn);
    from_state_breaks = t.exec1(kFromStateBreaks)[0].as<std::int64_t>();
  }
  {
    pqxx::work t(conn);
    t.exec0(kKeepRollup);
    const auto tr = Clock::now();
    t.exec(kRebuildRollup);
    rebuild_s = seconds(tr);
    const auto r = t.exec1(kRollupDiffers);
    rollup_differs = r[0].as<std::int64_t>();
    rollup_rebuilt = r[1].as<std::int64_t>();
    t.abort();
  }
  const Stats hz = stats(healthz_ms);
  std::printf("\nkiln-bench-reliability: %lld GPUs (%lld hosts), year %s .. %s; load average %s at the start, %s at the end\n\n",
              static_cast<long long>(o.gpus), static_cast<long long>(hosts), isoTime(from).c_str(), isoTime(to).c_str(),
              load_at_start.c_str(), loadAverage().c_str());
  std::printf("  %-53s %10.1f s\n", "POST /fleet/import", import_s);
  std::printf("  %-53s %10.1f s\n", "seeding a year of history (SQL, incl. ANALYZE)", seed_s);
  std::printf("  rows: %s\n", counts.dump().c_str());
  std::printf("  %-53s %10.1f s (%lld rows)\n", "kiln_rebuild_service_days() (the migration on this data)", rebuild_s,
              static_cast<long long>(rollup_rebuilt));

  std::printf("\n  %-44s %6s %9s %9s %9s %9s   %s\n", "latency, ms", "n", "p50", "p90", "max", "/healthz", "target");
  auto row = [&](const std::string& what, const Stats& s, const char* target) {
    std::printf("  %-44s %6zu %9.2f %9.2f %9.2f %8.0fx   %s\n", what.c_str(), s.n, s.p50, s.p90, s.max,
                hz.p50 > 0 ? s.p50 / hz.p50 : 0.0, target);
  };
  row("GET /healthz (baseline)", hz, "");
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Stats s = stats(series[i].ms);
    row(series[i].label, s, i == 0 ? (s.p90 < 1000 ? "p90 < 1 s (met)" : "p90 < 1 s (MISSED)") : "");
  }
  row("GET /interruptions?limit=100 (year)", stats(list_ms), "");
  row("GET /interruptions?cause=hbm&limit=100", stats(list_cause_ms), "");
  std::printf("  (one client, sequential requests; ratio = p50 / p50 of /healthz; a shared 2-core machine: read the ratios)\n");

  std::printf("\n  %-44s %14s %14s %10s %12s %8s %7s %6s\n", "report says", "GPU-hours", "expected", "interr.", "expected",
              "per8K/d", "MTBI", "lemons");
  const double max_gpu_hours = static_cast<double>(hosts) * 4 * 365 * 24;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const json& r = series[i].last;
    const double gh = r["gpu_hours"].get<double>();
    const auto n = r["interruptions"].get<std::int64_t>();
    std::printf("  %-44s %14.0f %14.0f %10lld %12lld %8.2f %7.0f %6zu\n", series[i].label.c_str(), gh, expected[i].first,
                static_cast<long long>(n), static_cast<long long>(expected[i].second),
                r["per_8k_gpus_per_day"].is_null() ? 0.0 : r["per_8k_gpus_per_day"].get<double>(),
                r["mtbi_gpu_hours"].is_null() ? 0.0 : r["mtbi_gpu_hours"].get<double>(), r["lemons"].size());
    checks.push_back({series[i].label + ": GPU-hours match the per-host sum",
                      std::abs(gh - expected[i].first) <= 1e-6 * std::max(1.0, expected[i].first)});
    checks.push_back({series[i].label + ": interruptions match", n == expected[i].second});
  }
  const json& year = series[0].last;
  checks.push_back({"whole year: interruptions == " + std::to_string(o.interruptions),
                    year["interruptions"].get<std::int64_t>() == o.interruptions});
  {
    // The seeding bounds the time out of service: a repair cycle lasts at most 10 days, a
    // rollout at most 3 h per host, a retired host is out for at most the whole year.
    const double lower = max_gpu_hours - counts["repair_cycles"].get<double>() * 10 * 24 * 4 -
                         static_cast<double>(o.rollouts) * static_cast<double>(hosts) * 3 * 4 -
                         counts["retired_hosts"].get<double>() * 365 * 24 * 4;
    const double gh = year["gpu_hours"].get<double>();
    char what[200];
    std::snprintf(what, sizeof what, "whole year: GPU-hours %.0f within [%.0f, %.0f] (%.2f%% of hosts x 4 GPUs x 8,760 h)", gh,
                  lower, max_gpu_hours, gh / max_gpu_hours * 100);
    checks.push_back({what, gh >= lower && gh <= max_gpu_hours});
  }
  {
    // Weeks start on Monday 00:00 UTC (1970-01-01 was a Thursday).
    const std::int64_t day = from / 86400, first_week = (day - (day + 3) % 7) * 86400;
    const std::size_t weeks = static_cast<std::size_t>((to - first_week + 7 * 86400 - 1) / (7 * 86400));
    checks.push_back({"whole year: " + std::to_string(weeks) + " weeks in the weekly series (" +
                          std::to_string(year["weekly"].size()) + ")",
                      year["weekly"].size() == weeks});
  }
  std::int64_t weekly_sum = 0;
  for (const auto& w : year["weekly"]) weekly_sum += w["interruptions"].get<std::int64_t>();
  checks.push_back({"whole year: weekly interruptions add up", weekly_sum == o.interruptions});
  std::int64_t cause_sum = 0;
  for (const auto& c : year["causes"]) cause_sum += c["count"].get<std::int64_t>();
  checks.push_back({"whole year: causes add up (" + std::to_string(year["causes"].size()) + " causes)",
                    cause_sum == o.interruptions && year["causes"].size() == 12});
  checks.push_back({"whole year: lemons found", !year["lemons"].empty()});
  checks.push_back({"every event's from_state is its host's previous to_state (" + std::to_string(from_state_breaks) + " not)",
                    from_state_breaks == 0});
  checks.push_back({"service_days/_hours kept by the triggers equal kiln_rebuild_service_days() (" +
                        std::to_string(rollup_differs) + " rows differ)",
                    rollup_differs == 0});
  std::printf("\n  causes (year): ");
  for (const auto& c : year["causes"])
    std::printf("%s %lld (%.1f%%)  ", c["cause"].get<std::string>().c_str(), static_cast<long long>(c["count"].get<std::int64_t>()),
                c["share"].get<double>() * 100);
  if (!year["lemons"].empty()) {
    const json& l = year["lemons"][0];
    std::printf("\n  worst lemon: %s (%s, %s): %d interruptions, %d repairs; %zu lemons over threshold 2, %zu at threshold 0 (LIMIT 500)\n",
                l["host"].get<std::string>().c_str(), l["pod"].get<std::string>().c_str(), l["state"].get<std::string>().c_str(),
                l["interruptions"].get<int>(), l["repairs"].get<int>(), year["lemons"].size(), series[4].last["lemons"].size());
  }
  std::printf("  expected figures by independent SQL: slowest %.1f s\n", expected_s);
  int failed = 0;
  std::printf("\n  sanity checks:\n");
  for (const auto& c : checks) {
    std::printf("    %-4s %s\n", c.ok ? "ok" : "FAIL", c.what.c_str());
    failed += c.ok ? 0 : 1;
  }

  std::printf("\nkilnd stopped with status %d\n", kilnd->stop());
  if (o.keep) {
    std::printf("database kept: %s\n", db->url().c_str());
    db.release();  // NOLINT: leaves it behind on purpose
  }
  return failed == 0 ? 0 : 1;
}
