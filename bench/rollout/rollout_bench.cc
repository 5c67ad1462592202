// kiln-bench-rollout: how long planning a rollout over the 1,000,000-GPU fleet takes (the
// planner in process, and optionally POST /api/v1/rollouts with dry_run through a real kilnd),
// and how close a simulated rollout over kiln-vfleet comes to its lower bound
// ceil(pods / max_concurrent_pods) x pod time. Prints figures next to targets and asserts
// nothing about time (docs/STYLE.md: a benchmark is not a test with a time limit).
//
//   KILN_TEST_PG="host=... port=... user=kiln" kiln-bench-rollout [--pods N] [--api-plan] ...
//
// See bench/rollout/README.md.

#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <queue>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "orchestrator/api/rollout_documents.h"
#include "orchestrator/core/fleet_generator.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/http/client.h"
#include "orchestrator/rollouts/bundle.h"
#include "orchestrator/rollouts/plan_document.h"
#include "orchestrator/rollouts/policy.h"
#include "tests/support/bench_args.h"
#include "tests/support/child_process.h"
#include "tests/support/kilnd_process.h"
#include "tests/support/proc_stats.h"
#include "tests/support/test_db.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Options {
  std::int64_t gpus = 1000000;  // fleet for planning
  bool api_plan = false;        // also plan through a real kilnd (imports the fleet: minutes)
  int plan_repeats = 5;
  int pods = 1000;              // the simulated rollout
  int max_concurrent = 50;
  double time_scale = 0.02;
  double duration_spread = 0;   // kiln-vfleet --duration-spread for both rollouts; 0 = fixed durations
  double compare_spread = 0;    // > 0: the simulated rollout twice, fixed and with this spread
  int timeout_min = 60;         // give up on the simulated rollout after this long
  bool skip_plan = false, skip_rollout = false;
  std::string state_dir;        // kiln-vfleet --state-dir (agent tokens; useful only on one database)
  int idle_poll = 2;            // kiln-vfleet --idle-poll: hosts without a long-poll slot poll this often
  int connections = 0;          // kiln-vfleet --connections; 0: enough for every host to long-poll (<= 16000)
  std::vector<std::string> vfleet_args;  // extra kiln-vfleet flags, e.g. --running-poll-delay-ms=0
  bool keep = false;            // leave the databases behind (EXPLAIN ANALYZE, timelines by hand)
};

const char* kUsage =
    "usage: kiln-bench-rollout [--gpus N] [--api-plan] [--plan-repeats N] [--skip-plan]\n"
    "                          [--pods N] [--max-concurrent N] [--time-scale X] [--timeout-min N]\n"
    "                          [--duration-spread SIGMA | --compare-spread SIGMA]\n"
    "                          [--state-dir DIR] [--idle-poll S] [--connections N] [--vfleet-arg FLAG=VALUE]...\n"
    "                          [--skip-rollout] [--keep]\n"
    "Starts its own kilnd (and kiln-vfleet) on fresh databases of the server in KILN_TEST_PG.\n"
    "--duration-spread: kiln-vfleet's (each step's tool time x a log-normal factor, median 1, shape\n"
    "SIGMA, 0-2). --compare-spread: the simulated rollout twice, fixed durations then SIGMA, each on\n"
    "a fresh kilnd, database and kiln-vfleet, the figures side by side.\n";

// -1: go on; otherwise the exit status for main (0 after --help, 2 after a bad flag).
int parseArgs(int argc, char** argv, Options& o) {
  const int st = kiln::testing::BenchArgs(kUsage)
                     .number("--gpus", &o.gpus)
                     .flag("--api-plan", &o.api_plan)
                     .number("--plan-repeats", &o.plan_repeats)
                     .number("--pods", &o.pods)
                     .number("--max-concurrent", &o.max_concurrent)
                     .number("--time-scale", &o.time_scale)
                     .number("--duration-spread", &o.duration_spread)
                     .number("--compare-spread", &o.compare_spread)
                     .number("--timeout-min", &o.timeout_min)
                     .text("--state-dir", &o.state_dir)
                     .number("--idle-poll", &o.idle_poll)
                     .texts("--vfleet-arg", &o.vfleet_args)
                     .number("--connections", &o.connections)
                     .flag("--skip-plan", &o.skip_plan)
                     .flag("--skip-rollout", &o.skip_rollout)
                     .flag("--keep", &o.keep)
                     .parse(argc, argv);
  if (st != -1) return st;
  o.plan_repeats = std::max(1, o.plan_repeats);
  // The negations also refuse nan, which strtod reads.
  if (o.pods < 1 || o.max_concurrent < 1 || o.gpus < 72 || !(o.time_scale > 0)) {
    std::cerr << "--pods, --max-concurrent >= 1, --gpus >= 72, --time-scale > 0\n" << kUsage;
    return 2;
  }
  if (!(o.duration_spread >= 0 && o.duration_spread <= 2) || !(o.compare_spread >= 0 && o.compare_spread <= 2)) {
    std::cerr << "--duration-spread and --compare-spread take a SIGMA from 0 to 2\n" << kUsage;
    return 2;
  }
  if (o.duration_spread > 0 && o.compare_spread > 0) {
    std::cerr << "--compare-spread runs fixed durations and its own spread: leave out --duration-spread\n" << kUsage;
    return 2;
  }
  return -1;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}
// Nearest rank, as kilnd's pod_durations.
double pct(const std::vector<double>& v, double p) { return kiln::rollouts::percentile(v, p); }

using kiln::testing::loadAverage;

// kilnd's workflows: the repository's workflows/ (firmware-upgrade, pre-job-health).
kiln::testing::KilndOptions kilndOptions(const std::string& database_url) {
  kiln::testing::KilndOptions k;
  k.database_url = database_url;
  k.extra_args = {"--workflows-dir", KILN_WORKFLOWS_DIR};
  return k;
}

std::string sha(char c) { return std::string(64, c); }

// A bundle whose artifacts kiln-hwsim understands (as tests/e2e/rollout_test.cc): nvfwupd takes
// the HMC bundle version from the package name, mlxfwmanager the NIC version from the image
// name, kiln-driver-install the driver version from its argument. Every version differs from
// the generated fleet's, so every pod needs the upgrade.
json bundleDoc(const std::vector<std::string>& platforms) {
  const std::string hmc = "GB200-P4975_0004_250601.1.0", nic = "28.44.1036", driver = "580.65.06";
  std::string nic_file = nic;
  std::replace(nic_file.begin(), nic_file.end(), '.', '_');
  return {{"name", "bench-fw"},
          {"version", "1.0"},
          {"platforms", platforms},
          {"components",
           {{{"kind", "hmc_bundle"}, {"version", hmc}, {"artifact", "/opt/kiln/fw/nvfw_" + hmc + "_custom_prod-signed.fwpkg"}, {"sha256", sha('a')}},
            {{"kind", "nic"}, {"version", nic}, {"artifact", "/opt/kiln/fw/fw-ConnectX7-rel-" + nic_file + "-MCX750500B-0D00_Ax.bin"}, {"sha256", sha('b')}},
            {{"kind", "driver"}, {"version", driver}, {"artifact", "/opt/kiln/drivers/NVIDIA-Linux-aarch64-" + driver + ".run"}, {"sha256", sha('c')}}}}};
}

// The policy of the plan and of the simulated rollout: no canary, one wave, no soak, per-building
// limits that never bind before max_concurrent_pods does, and a failure budget that never halts.
json benchPolicy(int max_concurrent) {
  return {{"canary_pods", 0},
          {"waves", {"100%"}},
          {"soak", "0s"},
          {"max_concurrent_pods", max_concurrent},
          {"max_rebooting_pods_per_building", max_concurrent},
          {"capacity_floor", {{"max_percent_down", 100}}},
          {"failure_budget", {{"percent", 100}}}};
}

// A request that must answer `expect`; exits with the body otherwise (a benchmark has no use
// for half a run).
json call(kiln::http::Client& c, const std::string& method, const std::string& path, const json& body = nullptr,
          int expect = 200, const std::string& content_type = "application/json") {
  auto r = c.request(method, path, body.is_null() ? "" : (body.is_string() ? body.get<std::string>() : body.dump()),
                     content_type);
  if (!r.ok() || (r->status != expect && !(expect == 201 && r->status == 200))) {
    std::cerr << method << " " << path << " failed: "
              << (r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 2000) : r.error().message) << "\n";
    std::exit(1);
  }
  return json::parse(r->body, nullptr, false);
}

// ---------------------------------------------------------------------------------------------
// 1a. The planner in process.

struct InProcessPlan {
  std::size_t pods = 0;
  int eligible = 0;
  std::size_t waves = 0;
  std::vector<double> facts_s, plan_s, total_s;
};

// What the service does for POST /rollouts minus SQL: a PodFacts per pod with its compliance
// against the bundle (per-host versions of 18 compute trays and 9 switch trays), the selector,
// then planRollout(). The service aggregates versions per pod in SQL first; here every host's
// versions go through podCompliance(), which is at least as much work.
InProcessPlan planInProcess(const json& fleet, int repeats) {
  namespace ro = kiln::rollouts;
  auto bundle = kiln::api::parseBundle(bundleDoc({"catalina", "clemente"}));
  if (!bundle.ok()) {
    std::cerr << "bundle: " << bundle.error().message << "\n";
    std::exit(1);
  }
  auto policy = kiln::api::parsePolicy(benchPolicy(100));
  const ro::Selector everything;
  std::map<std::string, std::string> host_v, switch_v;
  for (const auto& [k, v] : fleet["versions"].items()) {
    if (k == kiln::core::kSwitchComponent) switch_v[k] = v.get<std::string>();
    else host_v[k] = v.get<std::string>();
  }
  InProcessPlan out;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    std::vector<ro::PodFacts> facts;
    for (const auto& s : fleet["sites"])
      for (const auto& b : s["buildings"])
        for (const auto& p : b["pods"]) {
          ro::PodFacts f;
          f.id = p["name"].get<std::string>();
          f.site = s["name"].get<std::string>();
          f.building = b["name"].get<std::string>();
          f.platform = p["platform"].get<std::string>();
          f.state = kiln::core::PodState::kInService;
          for (const auto& [k, v] : p["labels"].items()) f.labels[k] = v.get<std::string>();
          const auto& g = kiln::core::geometry(*kiln::core::parsePlatform(f.platform));
          std::map<std::string, std::map<std::string, std::string>> hosts, switches;
          for (int h = 1; h <= g.compute_trays; ++h) hosts[f.id + "-t" + std::to_string(h)] = host_v;
          for (int t = 1; t <= g.switch_trays; ++t) switches[f.id + "-s" + std::to_string(t)] = switch_v;
          f.compliance = ro::podCompliance(*bundle, f.id, f.platform, hosts, switches);
          if (ro::selectorMatches(everything, f)) facts.push_back(std::move(f));
        }
    const auto t1 = Clock::now();
    const ro::Plan plan = ro::planRollout(facts, *policy);
    const json doc = ro::planDocument(plan);  // the response body is part of the answer
    const auto t2 = Clock::now();
    out.pods = facts.size();
    out.eligible = plan.eligible;
    out.waves = plan.waves.size();
    out.facts_s.push_back(seconds(t1 - t0));
    out.plan_s.push_back(seconds(t2 - t1));
    out.total_s.push_back(seconds(t2 - t0));
    if (doc.empty()) std::exit(1);  // keeps the serialisation from being optimised away
  }
  return out;
}

// 1b. The same through the API: import the fleet into a fresh kilnd, then time
// POST /api/v1/rollouts {dry_run: true, selector: {}}.
struct ApiPlan {
  double import_s = 0;
  std::vector<double> plan_s;
  std::size_t body_bytes = 0;
  int eligible = 0;
  std::size_t excluded = 0, waves = 0;
};

ApiPlan planThroughApi(const json& fleet, int repeats, bool keep) {
  ApiPlan out;
  auto db_owner = std::make_unique<kiln::testing::TestDatabase>();
  const kiln::testing::TestDatabase& db = *db_owner;
  kiln::testing::KilndProcess kilnd(kilndOptions(db.url()));
  if (auto st = kilnd.start(); !st.ok()) {
    std::cerr << "cannot start kilnd: " << st.error().message << "\n";
    std::exit(1);
  }
  std::printf("[plan/api] kilnd pid %d at %s, log %s\n", kilnd.pid(), kilnd.url().c_str(), kilnd.logPath().c_str());
  kiln::http::Client client({.base_url = kilnd.url(), .token = kilnd.adminToken(), .timeout = std::chrono::minutes(30)});
  auto t0 = Clock::now();
  const json summary = call(client, "POST", "/api/v1/fleet/import", fleet.dump(), 201);
  out.import_s = seconds(Clock::now() - t0);
  std::printf("[plan/api] import took %.1f s: %s\n", out.import_s, summary.dump().c_str());
  const json bundle = call(client, "POST", "/api/v1/bundles", bundleDoc({"catalina", "clemente"}), 201);
  const json body = {{"bundle", bundle["id"]}, {"selector", json::object()}, {"policy", benchPolicy(100)}, {"dry_run", true}};
  for (int i = 0; i < repeats; ++i) {
    t0 = Clock::now();
    auto r = client.request("POST", "/api/v1/rollouts", body.dump());
    const double s = seconds(Clock::now() - t0);
    if (!r.ok() || r->status != 200) {
      std::cerr << "dry run failed: " << (r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 2000) : r.error().message)
                << "\n";
      std::exit(1);
    }
    out.plan_s.push_back(s);
    out.body_bytes = r->body.size();
    const json doc = json::parse(r->body);
    out.eligible = doc["plan"]["eligible"].get<int>();
    out.excluded = doc["plan"]["excluded"].size();
    out.waves = doc["plan"]["waves"].size();
    std::printf("[plan/api] dry run %d: %.2f s, %zu bytes\n", i + 1, s, out.body_bytes);
  }
  kilnd.stop();
  if (keep) {
    std::printf("[plan/api] database kept: %s\n", db.url().c_str());
    (void)db_owner.release();  // NOLINT: leaves it behind on purpose
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// 2. The simulated rollout.

// kiln-vfleet as a child process (tests/support/child_process.h), output appended to a log
// file; SIGTERM, then SIGKILL after 15 s, from the destructor.
class VirtualFleet {
 public:
  VirtualFleet(const std::vector<std::string>& args, const std::string& log) : log_(log), child_(args, log) {}
  ~VirtualFleet() { child_.stop(std::chrono::seconds(15)); }
  bool running() { return child_.running(); }
  pid_t pid() const { return child_.pid(); }
  // The newest status line's "enrolled N", or -1 before the first one.
  long enrolled() const {
    std::ifstream in(log_);
    std::string line;
    long last = -1;
    static const std::regex re("hosts (\\d+) enrolled (\\d+)");
    std::smatch m;
    while (std::getline(in, line))
      if (std::regex_search(line, m, re)) last = std::stol(m[2]);
    return last;
  }
  std::string tail(int lines) const {
    std::ifstream in(log_);
    std::vector<std::string> all;
    std::string line;
    while (std::getline(in, line)) all.push_back(line);
    std::string out;
    for (std::size_t i = all.size() > static_cast<std::size_t>(lines) ? all.size() - lines : 0; i < all.size(); ++i)
      out += all[i] + "\n";
    return out;
  }

 private:
  std::string log_;
  kiln::testing::ChildProcess child_;
};

struct PodFigures {
  std::string pod;
  double wall_s = 0;       // the pod row's finished - started (kilnd's clock)
  double tool_s = 0;       // slowest host of the upgrade run + slowest host of the validation run
  double upgrade_tool_s = 0, validation_tool_s = 0;
  std::int64_t started_ms = 0, finished_ms = 0;
  // The two runs' created_at_ms and finished_at_ms (kilnd's clock): where the overhead goes.
  std::int64_t upgrade_created_ms = 0, upgrade_finished_ms = 0, validation_created_ms = 0, validation_finished_ms = 0;
  int steps = 0;
};

// Tool time of the slowest host of a run: per host, the sum of its steps' duration_ms (what
// the agent measured around the tool, reboot included); the maximum over hosts. Also counts
// the run's step records.
double slowestHostToolSeconds(const json& run, int* steps) {
  double worst = 0;
  for (const auto& h : run["hosts"]) {
    double ms = 0;
    for (const auto& s : h["steps"]) {
      ms += s.value("duration_ms", 0.0);
      ++*steps;
    }
    worst = std::max(worst, ms / 1000.0);
  }
  return worst;
}

struct RolloutResult {
  std::string state;
  double wall_s = 0;  // POST (start: true) to the poll that saw it finished
  std::vector<PodFigures> pods;
  int max_in_flight = 0;  // sampled from the rollout's counts at every poll (~2 s)
  double mean_in_flight = 0;
  // Every pod row that was admitted, succeeded or not: [started_at_ms, finished_at_ms], the
  // end at the largest int64 while unfinished.
  std::vector<std::pair<std::int64_t, std::int64_t>> admitted;
};

// The most pods whose [admitted, finished] intervals overlap: pods in flight as kilnd's own
// timestamps tell it, every moment rather than every 2 s. A pod that finishes in the same
// millisecond another is admitted has freed its slot first (finishing frees it in the same
// controller pass that admits the next).
int maxOverlap(const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals) {
  std::vector<std::pair<std::int64_t, int>> events;
  for (const auto& [start, end] : intervals) {
    events.emplace_back(start, +1);
    events.emplace_back(end, -1);
  }
  std::sort(events.begin(), events.end());  // at equal times -1 sorts before +1
  int now = 0, most = 0;
  for (const auto& e : events) most = std::max(most, now += e.second);
  return most;
}

// CPU time over the measured rollout of the processes that make it: kilnd, the kiln-vfleet
// processes, and the PostgreSQL backends of kilnd's database (looked up in pg_stat_activity at
// every poll: a backend that opens mid-way counts from its start, one that closes mid-way up to
// the last poll that saw it). /proc readings: PostgreSQL must run on this machine, else its
// share reads as unknown.
struct CpuShare {
  double seconds = 0;  // wall time of the window
  double vfleet_s = 0, kilnd_s = 0, db_s = -1;  // CPU seconds; db_s -1: unknown
  int backends = 0;
  kiln::testing::MachineCpu machine;  // differences over the window
  double cores(double cpu_s) const { return seconds > 0 ? cpu_s / seconds : 0; }
};

class CpuWatch {
 public:
  CpuWatch(std::string db_url, pid_t kilnd, std::vector<pid_t> vfleets)
      : db_url_(std::move(db_url)), kilnd_(kilnd), vfleets_(std::move(vfleets)) {}
  void start() {
    t0_ = Clock::now();
    machine0_ = kiln::testing::machineCpu();
    kilnd0_ = kiln::testing::cpuSeconds(kilnd_);
    vfleet0_ = vfleetCpu();
    backends0_ = backendCpu();
    backends_ = backends0_;
  }
  void sample() {
    for (const auto& [pid, cpu] : backendCpu()) backends_[pid] = cpu;
  }
  CpuShare stop() {
    sample();
    CpuShare c;
    c.seconds = seconds(Clock::now() - t0_);
    c.kilnd_s = kiln::testing::cpuSeconds(kilnd_) - kilnd0_;
    c.vfleet_s = vfleetCpu() - vfleet0_;
    const auto m = kiln::testing::machineCpu();
    c.machine = {m.busy_s - machine0_.busy_s, m.total_s - machine0_.total_s, m.cpus};
    if (db_ok_ && !backends_.empty()) {
      c.db_s = 0;
      for (const auto& [pid, cpu] : backends_) {
        const auto before = backends0_.find(pid);
        c.db_s += cpu - (before == backends0_.end() ? 0 : before->second);
      }
      c.backends = static_cast<int>(backends_.size());
    }
    return c;
  }

 private:
  double vfleetCpu() const {
    double sum = 0;
    for (pid_t p : vfleets_) sum += std::max(0.0, kiln::testing::cpuSeconds(p));
    return sum;
  }
  std::map<int, double> backendCpu() {
    std::map<int, double> out;
    if (!db_ok_) return out;
    try {
      if (!conn_) conn_ = std::make_unique<pqxx::connection>(db_url_);
      pqxx::nontransaction txn(*conn_);
      for (const auto& r :
           txn.exec("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")) {
        const double cpu = kiln::testing::cpuSeconds(r[0].as<int>());
        if (cpu < 0) continue;
        out[r[0].as<int>()] = cpu;
      }
    } catch (const std::exception& e) {
      std::printf("[rollout] PostgreSQL backends' CPU not measured: %s\n", e.what());
      db_ok_ = false;
    }
    return out;
  }

  std::string db_url_;
  pid_t kilnd_;
  std::vector<pid_t> vfleets_;
  std::unique_ptr<pqxx::connection> conn_;
  bool db_ok_ = true;
  Clock::time_point t0_;
  kiln::testing::MachineCpu machine0_;
  double kilnd0_ = 0, vfleet0_ = 0;
  std::map<int, double> backends0_, backends_;
};

// Starts a rollout of `selector` and waits for it; samples pods in flight every ~2 s, and the
// CPU of the processes `watch` (when given) follows over the rollout.
RolloutResult runRollout(kiln::http::Client& client, const std::string& bundle, const json& selector, const json& policy,
                         int timeout_min, const char* label, CpuWatch* watch = nullptr, CpuShare* cpu = nullptr) {
  RolloutResult out;
  if (watch) watch->start();
  const auto t0 = Clock::now();
  const json created =
      call(client, "POST", "/api/v1/rollouts", {{"bundle", bundle}, {"selector", selector}, {"policy", policy}, {"start", true}}, 201);
  const std::string id = created["id"].get<std::string>();
  std::printf("[%s] rollout %s: %d pods, state %s\n", label, id.c_str(), created["total"].get<int>(),
              created["state"].get<std::string>().c_str());
  const auto deadline = t0 + std::chrono::minutes(timeout_min);
  auto last_print = Clock::now();
  double in_flight_sum = 0;
  int samples = 0;
  for (;;) {
    const json v = call(client, "GET", "/api/v1/rollouts/" + id);
    out.state = v["state"].get<std::string>();
    const json& c = v["counts"];
    const int in_flight = c["draining"].get<int>() + c["upgrading"].get<int>() + c["validating"].get<int>();
    out.max_in_flight = std::max(out.max_in_flight, in_flight);
    in_flight_sum += in_flight;
    ++samples;
    if (watch) watch->sample();
    if (out.state != "running") break;
    if (Clock::now() - last_print > 30s) {
      last_print = Clock::now();
      std::printf("[%s] %5.0f s: %s; load %s\n", label, seconds(Clock::now() - t0), c.dump().c_str(), loadAverage().c_str());
    }
    if (Clock::now() > deadline) {
      std::printf("[%s] still running after %d min: aborting (--timeout-min)\n", label, timeout_min);
      call(client, "POST", "/api/v1/rollouts/" + id + "/abort");
      out.state = "timed out";
      break;
    }
    std::this_thread::sleep_for(2s);
  }
  out.wall_s = seconds(Clock::now() - t0);
  if (watch && cpu) *cpu = watch->stop();
  out.mean_in_flight = samples ? in_flight_sum / samples : 0;
  std::printf("[%s] rollout %s %s after %.1f s\n", label, id.c_str(), out.state.c_str(), out.wall_s);

  const json rows = call(client, "GET", "/api/v1/rollouts/" + id + "/pods")["items"];
  for (const auto& r : rows) {
    if (r["started_at_ms"].is_number_integer())
      out.admitted.emplace_back(r["started_at_ms"].get<std::int64_t>(), r["finished_at_ms"].is_number_integer()
                                                                           ? r["finished_at_ms"].get<std::int64_t>()
                                                                           : std::numeric_limits<std::int64_t>::max());
    if (r["phase"] != "succeeded" || r["started_at_ms"].is_null() || r["finished_at_ms"].is_null()) continue;
    PodFigures f;
    f.pod = r["pod"].get<std::string>();
    f.started_ms = r["started_at_ms"].get<std::int64_t>();
    f.finished_ms = r["finished_at_ms"].get<std::int64_t>();
    f.wall_s = (f.finished_ms - f.started_ms) / 1000.0;
    const json upgrade = call(client, "GET", "/api/v1/workflow-runs/" + r["run_id"].get<std::string>());
    const json validation = call(client, "GET", "/api/v1/workflow-runs/" + r["validation_run_id"].get<std::string>());
    f.upgrade_tool_s = slowestHostToolSeconds(upgrade, &f.steps);
    f.validation_tool_s = slowestHostToolSeconds(validation, &f.steps);
    f.upgrade_created_ms = upgrade.value("created_at_ms", std::int64_t{0});
    f.upgrade_finished_ms = upgrade.value("finished_at_ms", std::int64_t{0});
    f.validation_created_ms = validation.value("created_at_ms", std::int64_t{0});
    f.validation_finished_ms = validation.value("finished_at_ms", std::int64_t{0});
    f.tool_s = f.upgrade_tool_s + f.validation_tool_s;
    out.pods.push_back(f);
  }
  if (out.pods.size() != rows.size())
    std::printf("[%s] %zu of %zu pods succeeded; the figures below count only those\n", label, out.pods.size(), rows.size());
  return out;
}

struct SimFigures {
  double spread = 0;  // kiln-vfleet --duration-spread of both rollouts
  int pods = 0, hosts = 0;
  std::size_t vfleets = 1;  // kiln-vfleet processes
  double enrol_s = 0;
  RolloutResult calibration, main;
  std::string metrics_before, metrics_after;  // kilnd's /metrics around the measured rollout
  CpuShare cpu;                               // over the measured rollout
  std::string load_before, load_after;        // load average around the measured rollout
};

std::string scrapeMetrics(kiln::http::Client& client) {
  auto r = client.request("GET", "/metrics", "", "");
  return r.ok() && r->status == 200 ? r->body : std::string();
}

// One histogram of a /metrics text (the series whose labels contain `labels`): cumulative
// counts by upper bound, its sum and count.
struct Histogram {
  std::map<double, double> le;  // upper bound -> cumulative count (+Inf as infinity)
  double sum = 0, count = 0;
};
Histogram histogramOf(const std::string& text, const std::string& name, const std::string& labels) {
  Histogram h;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!labels.empty() && line.find(labels) == std::string::npos) continue;
    const auto value = [&] { return std::stod(line.substr(line.rfind(' ') + 1)); };
    if (line.rfind(name + "_bucket{", 0) == 0) {
      const auto at = line.find("le=\"");
      if (at == std::string::npos) continue;
      const std::string bound = line.substr(at + 4, line.find('"', at + 4) - at - 4);
      h.le[bound == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(bound)] += value();
    } else if (line.rfind(name + "_sum", 0) == 0) {
      h.sum += value();
    } else if (line.rfind(name + "_count", 0) == 0) {
      h.count += value();
    }
  }
  return h;
}
// An unlabelled counter or gauge of a /metrics text; 0 when absent.
double counterOf(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return 0;
}
Histogram minus(Histogram a, const Histogram& b) {
  for (auto& [le, n] : a.le)
    if (auto it = b.le.find(le); it != b.le.end()) n -= it->second;
  a.sum -= b.sum;
  a.count -= b.count;
  return a;
}
// "p50 <= 25 ms, p90 <= 100 ms, mean 31.2 ms (N)": quantiles as their bucket's upper bound.
std::string describe(const Histogram& h) {
  if (h.count <= 0) return "no samples";
  const auto ms = [](double s) { return std::to_string(static_cast<int>(s * 1000 + 0.5)) + " ms"; };
  const auto upper = [&](double q) {
    double below = 0;  // the largest finite bound passed
    for (const auto& [le, n] : h.le) {
      if (n >= q * h.count) return std::isinf(le) ? "> " + ms(below) : "<= " + ms(le);
      below = le;
    }
    return std::string("?");
  };
  char buf[160];
  std::snprintf(buf, sizeof buf, "p50 %s, p90 %s, mean %.1f ms (%.0f)", upper(0.5).c_str(), upper(0.9).c_str(),
                h.sum / h.count * 1000, h.count);
  return buf;
}

// The simulated rollout on a fresh kilnd, database and kiln-vfleet, whose tools take their
// nominal times x a log-normal factor of shape `spread` (0: nominal).
SimFigures simulatedRollout(const Options& o, double spread) {
#ifndef KILN_VFLEET_BIN
  (void)o;
  (void)spread;
  std::cerr << "kiln-bench-rollout was built without kiln-vfleet: use --skip-rollout\n";
  std::exit(1);
#else
  SimFigures out;
  out.spread = spread;
  // One pod more than measured: the calibration rollout upgrades it alone first.
  out.pods = o.pods;
  kiln::core::FleetGenRequest gen;
  gen.gpus = static_cast<std::int64_t>(o.pods + 1) * 72;
  gen.clemente_share = 0;  // one platform, one bundle
  gen.site_prefix = "sim";
  const json fleet = kiln::core::generateFleet(gen);
  std::vector<std::string> pod_ids;
  for (const auto& s : fleet["sites"])
    for (const auto& b : s["buildings"])
      for (const auto& p : b["pods"]) pod_ids.push_back(p["name"].get<std::string>());

  auto db_owner = std::make_unique<kiln::testing::TestDatabase>();
  const kiln::testing::TestDatabase& db = *db_owner;
  kiln::testing::KilndProcess kilnd(kilndOptions(db.url()));
  if (auto st = kilnd.start(); !st.ok()) {
    std::cerr << "cannot start kilnd: " << st.error().message << "\n";
    std::exit(1);
  }
  std::printf("[rollout] kilnd pid %d at %s, log %s\n", kilnd.pid(), kilnd.url().c_str(), kilnd.logPath().c_str());
  kiln::http::Client client({.base_url = kilnd.url(), .token = kilnd.adminToken(), .timeout = std::chrono::minutes(10)});
  const json summary = call(client, "POST", "/api/v1/fleet/import", fleet.dump(), 201);
  std::printf("[rollout] imported %zu pods: %s\n", pod_ids.size(), summary.dump().c_str());

  const json token = call(client, "POST", "/api/v1/tokens", {{"role", "enroll"}, {"name", "bench vfleet"}}, 201);
  const std::string dir = kilnd.tempDir() + "/vfleet";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/enroll-token") << token["token"].get<std::string>() << "\n";
  std::ostringstream scale, sigma;
  scale << o.time_scale;
  sigma << spread;
  // kiln-vfleet lets 3/4 of its connections carry long polls; a host without a slot sees new
  // work only at its next short poll (--idle-poll, default 30 s there), which would be charged
  // to the rollout as overhead. Idle hosts may take 3/4 of the long-poll slots (agents/sim/
  // fleet/poll_policy.h, main.cc): 16/9 connections per host let every host long-poll. One
  // kiln-vfleet holds at most 16,000 connections (20,000 descriptors a process); beyond that
  // the pods are dealt out to two processes, 18,000 connections in all (what kilnd's own
  // descriptors hold beside its database connections and files). The hosts left without a
  // slot short-poll every --idle-poll s.
  const long hosts = static_cast<long>(pod_ids.size()) * 18;
  const long connections = o.connections > 0 ? o.connections : std::min(18000L, hosts * 16 / 9 + 64);
  const int shards = connections > 16000 ? 2 : 1;
  std::vector<std::unique_ptr<VirtualFleet>> vfleets;
  for (int k = 0; k < shards; ++k) {
    // Pods dealt out in turn (the rollout admits them in order): both processes stay as busy.
    std::string selection = "pod:";
    for (std::size_t i = k; i < pod_ids.size(); i += shards) selection += (i == static_cast<std::size_t>(k) ? "" : ",") + pod_ids[i];
    // A state directory holds the simulated hosts' firmware after the first run: the second run of
    // --compare-spread gets its own, or its hosts would enrol already upgraded.
    const std::string state =
        o.state_dir.empty() ? dir + "/state" : o.state_dir + (o.compare_spread > 0 && spread > 0 ? "-spread" : "");
    std::vector<std::string> args = {KILN_VFLEET_BIN, "--url", kilnd.url(), "--enroll-token-file", dir + "/enroll-token",
                                     "--token-file", kilnd.adminTokenFile(), "--hosts", shards == 1 ? "all" : selection,
                                     "--time-scale", scale.str(), "--duration-spread", sigma.str(),
                                     "--status-interval", "2", "--seed", std::to_string(7 + k),
                                     "--connections", std::to_string(connections / shards), "--idle-poll",
                                     std::to_string(o.idle_poll), "--state-dir", shards == 1 ? state : state + "-" + std::to_string(k)};
    args.insert(args.end(), o.vfleet_args.begin(), o.vfleet_args.end());
    const std::string log = dir + "/vfleet" + (shards == 1 ? "" : "-" + std::to_string(k)) + ".log";
    std::printf("[rollout] kiln-vfleet log %s, %ld connections, --idle-poll %d, --duration-spread %s\n", log.c_str(),
                connections / shards, o.idle_poll, sigma.str().c_str());
    vfleets.push_back(std::make_unique<VirtualFleet>(args, log));
  }
  const auto t0 = Clock::now();
  out.hosts = static_cast<int>(hosts);
  auto last_print = Clock::now();
  for (;;) {
    long n = 0;
    for (auto& v : vfleets) {
      if (!v->running()) {
        std::cerr << "kiln-vfleet exited:\n" << v->tail(30);
        std::exit(1);
      }
      n += std::max(v->enrolled(), 0L);
    }
    if (n >= hosts) break;
    if (Clock::now() - last_print > 20s) {
      last_print = Clock::now();
      std::printf("[rollout] enrolled %ld of %ld hosts after %.0f s\n", n, hosts, seconds(Clock::now() - t0));
    }
    std::this_thread::sleep_for(1s);
  }
  out.enrol_s = seconds(Clock::now() - t0);
  std::printf("[rollout] %ld hosts enrolled in %.1f s (%.0f/s)\n", hosts, out.enrol_s, hosts / out.enrol_s);

  const json bundle = call(client, "POST", "/api/v1/bundles", bundleDoc({"catalina"}), 201);
  const std::string bundle_id = bundle["id"].get<std::string>();
  // Calibration: the first pod alone, nothing else in flight.
  out.calibration = runRollout(client, bundle_id, {{"pods", {pod_ids.front()}}}, benchPolicy(1), o.timeout_min, "calibration");
  // The measured rollout: the others (the calibrated pod is compliant now).
  const std::vector<std::string> rest(pod_ids.begin() + 1, pod_ids.end());
  std::vector<pid_t> vfleet_pids;
  for (const auto& v : vfleets) vfleet_pids.push_back(v->pid());
  out.vfleets = vfleets.size();
  CpuWatch watch(db.url(), kilnd.pid(), vfleet_pids);
  out.metrics_before = scrapeMetrics(client);
  out.load_before = loadAverage();
  out.main = runRollout(client, bundle_id, {{"pods", rest}}, benchPolicy(o.max_concurrent), o.timeout_min, "rollout", &watch,
                        &out.cpu);
  out.load_after = loadAverage();
  out.metrics_after = scrapeMetrics(client);
  for (const auto& v : vfleets) std::printf("[rollout] kiln-vfleet's last status:\n%s", v->tail(1).c_str());
  if (o.keep) {
    std::printf("[rollout] database kept: %s\n", db.url().c_str());
    (void)db_owner.release();  // NOLINT: left behind on purpose
  }
  return out;
#endif
}

// The makespan of an orchestrator that admits this rollout's pods in their admission order
// into `slots` slots, the next one the moment a slot frees, each pod taking its own tool time
// plus `overhead` (a lone pod's). With fixed durations every pod's tool time is about T1's and
// this is rounds x T1; with a spread it is the same bound for the durations this rollout drew,
// where rounds x T1 rests on the one draw of the calibration pod.
double listScheduled(std::vector<PodFigures> pods, int slots, double overhead) {
  std::sort(pods.begin(), pods.end(), [](const PodFigures& a, const PodFigures& b) { return a.started_ms < b.started_ms; });
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int i = 0; i < slots; ++i) free_at.push(0);
  double end = 0;
  for (const auto& p : pods) {
    const double finish = free_at.top() + p.tool_s + overhead;
    free_at.pop();
    free_at.push(finish);
    end = std::max(end, finish);
  }
  return end;
}

// The figures of one simulated rollout, as printSimulated and the side-by-side table show them.
struct Summary {
  bool ok = false;  // the calibration pod and at least one measured pod succeeded
  double t1 = 0, t1_tools = 0;
  int succeeded = 0;
  double makespan = 0, rounds = 0;
  double bound_t1 = 0, bound_list = 0, bound_wall = 0, bound_tool50 = 0, bound_tool90 = 0;
  std::vector<double> wall, tool, overhead, upgrade_tool, validation_tool;
  long steps = 0;
  int in_flight_sampled = 0, in_flight_rows = 0;  // the most pods in flight seen
  bool limit_crossed = false;
  double overheadMean() const {
    double sum = 0;
    for (double v : overhead) sum += v;
    return overhead.empty() ? 0 : sum / overhead.size();
  }
};

Summary summarise(const Options& o, const SimFigures& s) {
  Summary r;
  const auto& m = s.main;
  r.in_flight_sampled = m.max_in_flight;
  r.in_flight_rows = maxOverlap(m.admitted);
  r.limit_crossed = std::max(r.in_flight_sampled, r.in_flight_rows) > o.max_concurrent;
  if (s.calibration.pods.empty() || m.pods.empty()) return r;
  r.ok = true;
  const PodFigures& cal = s.calibration.pods.front();
  r.t1 = cal.wall_s;
  r.t1_tools = cal.tool_s;
  std::int64_t first = m.pods.front().started_ms, last = 0;
  for (const auto& p : m.pods) {
    r.wall.push_back(p.wall_s);
    r.tool.push_back(p.tool_s);
    r.upgrade_tool.push_back(p.upgrade_tool_s);
    r.validation_tool.push_back(p.validation_tool_s);
    r.overhead.push_back(p.wall_s - p.tool_s);
    first = std::min(first, p.started_ms);
    last = std::max(last, p.finished_ms);
    r.steps += p.steps;
  }
  r.makespan = (last - first) / 1000.0;
  r.succeeded = static_cast<int>(m.pods.size());
  r.rounds = std::ceil(static_cast<double>(r.succeeded) / o.max_concurrent);
  r.bound_t1 = r.rounds * r.t1;
  r.bound_list = listScheduled(m.pods, o.max_concurrent, r.t1 - r.t1_tools);
  r.bound_wall = r.rounds * median(r.wall);
  r.bound_tool50 = r.rounds * pct(r.tool, 50);
  r.bound_tool90 = r.rounds * pct(r.tool, 90);
  return r;
}

std::string percentOfCore(double cores) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * cores);
  return buf;
}

void printCpu(const CpuShare& c, std::size_t vfleets) {
  if (c.seconds <= 0) return;
  const double cpus = c.machine.cpus > 0 ? c.machine.cpus : 1;
  const double busy = c.machine.total_s > 0 ? c.machine.busy_s / c.machine.total_s : 0;
  std::printf("  CPU over the measured rollout (%.0f s; %d CPUs, busy %.0f %% of them; %% of one core, (of the machine)):\n",
              c.seconds, c.machine.cpus, 100 * busy);
  const auto line = [&](const std::string& what, double cpu_s) {
    std::printf("    %-50s %8s   (%.1f %%)\n", what.c_str(), percentOfCore(c.cores(cpu_s)).c_str(),
                100 * c.cores(cpu_s) / cpus);
  };
  line("kiln-vfleet (" + std::to_string(vfleets) + (vfleets == 1 ? " process)" : " processes)"), c.vfleet_s);
  line("kilnd", c.kilnd_s);
  if (c.db_s >= 0) {
    line("PostgreSQL backends of its database (" + std::to_string(c.backends) + ")", c.db_s);
    line("everything else on the machine", c.machine.busy_s - c.vfleet_s - c.kilnd_s - c.db_s);
  } else {
    std::printf("    %-50s %8s\n", "PostgreSQL backends of its database", "unknown");
  }
}

void printSimulated(const Options& o, const SimFigures& s) {
  const auto& m = s.main;
  char times[80];
  if (s.spread > 0)
    std::snprintf(times, sizeof times, "tool times log-normal, median 1, --duration-spread %g", s.spread);
  else
    std::snprintf(times, sizeof times, "fixed tool times");
  std::printf("\n  simulated rollout: %d pods (%d hosts in kiln-vfleet, --time-scale %g, %s), max_concurrent_pods %d, "
              "no canary, one wave, soak 0 s\n",
              s.pods, s.hosts, o.time_scale, times, o.max_concurrent);
  std::printf("  load average %s before the measured rollout, %s after\n", s.load_before.c_str(), s.load_after.c_str());
  std::printf("  %-52s %10.1f s   (%.0f hosts/s)\n", "enrolment of every host", s.enrol_s, s.hosts / s.enrol_s);
  const Summary r = summarise(o, s);
  std::printf("  %-52s %10d     sampled every 2 s; %d from the pod rows (admitted -> finished); limit %d: %s\n",
              "pods in flight, the most seen", r.in_flight_sampled, r.in_flight_rows, o.max_concurrent,
              r.limit_crossed ? "LIMIT CROSSED" : "never crossed");
  if (r.limit_crossed)
    std::printf("\n  !!! LIMIT CROSSED: %d pods in flight (sampled %d, pod rows %d) with max_concurrent_pods %d !!!\n\n",
                std::max(r.in_flight_sampled, r.in_flight_rows), r.in_flight_sampled, r.in_flight_rows, o.max_concurrent);
  if (!r.ok) {
    std::printf("  calibration %s, rollout %s: no pod succeeded, no figures\n", s.calibration.state.c_str(), m.state.c_str());
    printCpu(s.cpu, s.vfleets);
    return;
  }
  const PodFigures& cal = s.calibration.pods.front();
  const auto target = [](double ratio) { return ratio <= 1.05 ? "<= 1.05 (met)" : "<= 1.05 (MISSED)"; };

  std::printf("  %-52s %10s   %s\n", "figure", "value", "target");
  std::printf("  %-52s %10.1f s   (tools %.1f s: upgrade %.1f + validation %.1f)\n",
              "calibration pod, alone (pod time T1)", cal.wall_s, cal.tool_s, cal.upgrade_tool_s, cal.validation_tool_s);
  std::printf("  %-52s %10.2f s\n", "calibration pod overhead (wall - tools)", cal.wall_s - cal.tool_s);
  std::printf("  %-52s %10s   (%d of %d succeeded)\n", "rollout state", m.state.c_str(), r.succeeded, s.pods);
  std::printf("  %-52s %10.1f s   (first pod admitted -> last pod finished)\n", "makespan", r.makespan);
  std::printf("  %-52s %10.1f s\n", "wall time, POST -> completed seen", m.wall_s);
  std::printf("  %-52s %10.0f     (in flight: max seen %d, mean %.1f)\n", "rounds ceil(pods / max_concurrent_pods)",
              r.rounds, m.max_in_flight, m.mean_in_flight);
  std::printf("  %-52s %10.3f     %s%s\n", "makespan / (rounds x T1)  [headline]", r.makespan / r.bound_t1,
              target(r.makespan / r.bound_t1), s.spread > 0 ? "; T1 is one pod's draw: read the next line" : "");
  std::printf("  %-52s %10.3f     %s (bound %.1f s: each pod's own tools + T1's overhead, admitted as slots free)\n",
              "makespan / list-scheduled bound", r.makespan / r.bound_list, target(r.makespan / r.bound_list),
              r.bound_list);
  std::printf("  %-52s %10.3f     (pod time = median pod wall in this rollout)\n", "makespan / (rounds x median pod wall)",
              r.makespan / r.bound_wall);
  std::printf("  %-52s %10.3f     (pod time = median tool time: no orchestration at all)\n",
              "makespan / (rounds x median pod tool time)", r.makespan / r.bound_tool50);
  std::printf("  %-52s %10.3f     (pod time = p90 tool time)\n", "makespan / (rounds x p90 pod tool time)",
              r.makespan / r.bound_tool90);
  std::printf("  %-52s %10.2f s   median < 1 s %s\n", "overhead per pod (wall - slowest-host tools), p50", pct(r.overhead, 50),
              pct(r.overhead, 50) < 1 ? "(met)" : "(MISSED)");
  std::printf("  %-52s %10.2f s   p90 %.2f s, max %.2f s\n", "overhead per pod, mean", r.overheadMean(), pct(r.overhead, 90),
              pct(r.overhead, 100));
  std::printf("  %-52s %10.1f s   p90 %.1f s, max %.1f s (T1 %.1f s)\n", "pod wall time, p50", pct(r.wall, 50), pct(r.wall, 90),
              pct(r.wall, 100), cal.wall_s);
  std::printf("  %-52s %10.1f s   p90 %.1f s; upgrade p50 %.1f s + validation p50 %.1f s\n",
              "pod tool time (slowest hosts), p50", pct(r.tool, 50), pct(r.tool, 90), pct(r.upgrade_tool, 50),
              pct(r.validation_tool, 50));
  std::printf("  %-52s %10.1f     (%ld step records over the makespan)\n", "steps completed per second",
              r.steps / r.makespan, r.steps);

  // Where a pod's overhead goes: its phases on kilnd's clock, medians over the pods.
  std::vector<double> drain, upgrade_extra, between, validation_extra, undrain;
  for (const auto& p : m.pods) {
    if (!p.upgrade_created_ms || !p.upgrade_finished_ms || !p.validation_created_ms || !p.validation_finished_ms) continue;
    drain.push_back((p.upgrade_created_ms - p.started_ms) / 1000.0);
    upgrade_extra.push_back((p.upgrade_finished_ms - p.upgrade_created_ms) / 1000.0 - p.upgrade_tool_s);
    between.push_back((p.validation_created_ms - p.upgrade_finished_ms) / 1000.0);
    validation_extra.push_back((p.validation_finished_ms - p.validation_created_ms) / 1000.0 - p.validation_tool_s);
    undrain.push_back((p.finished_ms - p.validation_finished_ms) / 1000.0);
  }
  if (!drain.empty()) {
    std::printf("  overhead by phase, p50 (p90) over the pods:\n");
    std::printf("    %-50s %8.2f s (%.2f)\n", "admission -> upgrade run started (drain)", pct(drain, 50), pct(drain, 90));
    std::printf("    %-50s %8.2f s (%.2f)\n", "upgrade run, beyond its slowest host's tools", pct(upgrade_extra, 50),
                pct(upgrade_extra, 90));
    std::printf("    %-50s %8.2f s (%.2f)\n", "upgrade run finished -> validation run started", pct(between, 50), pct(between, 90));
    std::printf("    %-50s %8.2f s (%.2f)\n", "validation run, beyond its slowest host's tools", pct(validation_extra, 50),
                pct(validation_extra, 90));
    std::printf("    %-50s %8.2f s (%.2f)\n", "validation run finished -> pod finished (undrain)", pct(undrain, 50),
                pct(undrain, 90));
  }
  if (!s.metrics_before.empty() && !s.metrics_after.empty()) {
    const auto delta = [&](const std::string& name, const std::string& labels) {
      return minus(histogramOf(s.metrics_after, name, labels), histogramOf(s.metrics_before, name, labels));
    };
    const Histogram http = delta("kiln_http_request_duration_seconds", "route=\"/api/v1/assignments/{id}/result\"");
    const Histogram executor = delta("kiln_http_executor_wait_seconds", "");
    const Histogram queued = delta("kiln_agent_report_queue_seconds", "");
    const Histogram batch = delta("kiln_agent_report_apply_seconds", "");
    const double batches = counterOf(s.metrics_after, "kiln_agent_report_batches_total") -
                           counterOf(s.metrics_before, "kiln_agent_report_batches_total");
    std::printf("  step reports during the rollout (kilnd's /metrics; quantiles as bucket bounds):\n");
    std::printf("    %-28s %s\n", "answered (HTTP, at kilnd)", describe(http).c_str());
    std::printf("    %-28s %s\n", "executor wait (any request)", describe(executor).c_str());
    std::printf("    %-28s %s\n", "queued for a transaction", describe(queued).c_str());
    std::printf("    %-28s %s; %.0f transactions, %.1f reports each\n", "its transaction", describe(batch).c_str(),
                batches, batches > 0 ? batch.count / batches : 0.0);
    // The controller's rounds (the run pass, then the rollout pass): a pod's drain, the step
    // between its two runs and its undrain each wait for one.
    const Histogram pass = delta("kiln_controller_pass_duration_seconds", "");
    std::printf("    %-28s %s\n", "controller round", describe(pass).c_str());
  }
  printCpu(s.cpu, s.vfleets);
}

// --compare-spread: the two runs' figures side by side.
void printComparison(const Options& o, const SimFigures& fixed, const SimFigures& spread) {
  const Summary a = summarise(o, fixed), b = summarise(o, spread);
  char head[64];
  std::snprintf(head, sizeof head, "spread %g", spread.spread);
  std::printf("\n  fixed tool times against log-normal ones (median 1, shape %g), each on a fresh kilnd, database and "
              "kiln-vfleet; %d pods, max_concurrent_pods %d, --time-scale %g\n",
              spread.spread, o.pods, o.max_concurrent, o.time_scale);
  std::printf("  %-50s %22s %22s\n", "figure", "fixed", head);
  const auto row = [](const char* what, const std::string& x, const std::string& y) {
    std::printf("  %-50s %22s %22s\n", what, x.c_str(), y.c_str());
  };
  const auto f = [](const char* fmt, auto... v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v...);
    return std::string(buf);
  };
  const auto both = [&](const char* what, const std::function<std::string(const Summary&, const SimFigures&)>& cell) {
    row(what, a.ok ? cell(a, fixed) : "no figures", b.ok ? cell(b, spread) : "no figures");
  };
  both("pods succeeded", [&](const Summary& r, const SimFigures& s) { return f("%d of %d", r.succeeded, s.pods); });
  both("T1 (its tools)", [&](const Summary& r, const SimFigures&) { return f("%.1f s (%.1f s)", r.t1, r.t1_tools); });
  both("pod tool time p50 / p90",
       [&](const Summary& r, const SimFigures&) { return f("%.1f / %.1f s", pct(r.tool, 50), pct(r.tool, 90)); });
  both("makespan", [&](const Summary& r, const SimFigures&) { return f("%.1f s", r.makespan); });
  both("makespan / (rounds x T1)", [&](const Summary& r, const SimFigures&) { return f("%.3f", r.makespan / r.bound_t1); });
  both("makespan / list-scheduled bound  [read this]",
       [&](const Summary& r, const SimFigures&) { return f("%.3f", r.makespan / r.bound_list); });
  both("makespan / (rounds x p50 | p90 pod tool time)", [&](const Summary& r, const SimFigures&) {
    return f("%.3f | %.3f", r.makespan / r.bound_tool50, r.makespan / r.bound_tool90);
  });
  both("makespan / (rounds x median pod wall)",
       [&](const Summary& r, const SimFigures&) { return f("%.3f", r.makespan / r.bound_wall); });
  both("overhead per pod p50 / p90",
       [&](const Summary& r, const SimFigures&) { return f("%.2f / %.2f s", pct(r.overhead, 50), pct(r.overhead, 90)); });
  both("steps completed per second", [&](const Summary& r, const SimFigures&) { return f("%.1f", r.steps / r.makespan); });
  row("pods in flight, most seen (sampled; pod rows)",
      f("%d; %d%s", a.in_flight_sampled, a.in_flight_rows, a.limit_crossed ? " LIMIT CROSSED" : ""),
      f("%d; %d%s", b.in_flight_sampled, b.in_flight_rows, b.limit_crossed ? " LIMIT CROSSED" : ""));
  const auto cpu = [&](const SimFigures& s) {
    return f("%.0f | %.0f | %s", 100 * s.cpu.cores(s.cpu.vfleet_s), 100 * s.cpu.cores(s.cpu.kilnd_s),
             s.cpu.db_s >= 0 ? f("%.0f", 100 * s.cpu.cores(s.cpu.db_s)).c_str() : "?");
  };
  row("CPU %: kiln-vfleet | kilnd | PostgreSQL", cpu(fixed), cpu(spread));
  row("load average before -> after", fixed.load_before.substr(0, fixed.load_before.find(' ')) + " -> " +
                                          fixed.load_after.substr(0, fixed.load_after.find(' ')),
      spread.load_before.substr(0, spread.load_before.find(' ')) + " -> " +
          spread.load_after.substr(0, spread.load_after.find(' ')));
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines show up when piped to a file
  Options o;
  if (const int st = parseArgs(argc, argv, o); st != -1) return st;
  const std::string load_at_start = loadAverage();

  std::optional<InProcessPlan> in_process;
  std::optional<ApiPlan> api;
  std::size_t fleet_pods = 0;
  double gen_s = 0;
  if (!o.skip_plan) {
    kiln::core::FleetGenRequest gen;
    gen.gpus = o.gpus;
    auto t0 = Clock::now();
    json fleet = kiln::core::generateFleet(gen);
    gen_s = seconds(Clock::now() - t0);
    for (const auto& s : fleet["sites"])
      for (const auto& b : s["buildings"]) fleet_pods += b["pods"].size();
    std::printf("[plan] generated %zu pods (%lld GPUs) in %.2f s\n", fleet_pods, static_cast<long long>(o.gpus), gen_s);
    in_process = planInProcess(fleet, o.plan_repeats);
    std::printf("[plan] in process: %zu pods, %d eligible, %zu waves\n", in_process->pods, in_process->eligible,
                in_process->waves);
    if (o.api_plan) api = planThroughApi(fleet, o.plan_repeats, o.keep);
  }
  std::optional<SimFigures> sim, sim_spread;
  if (!o.skip_rollout) sim = simulatedRollout(o, o.duration_spread);
  if (!o.skip_rollout && o.compare_spread > 0) sim_spread = simulatedRollout(o, o.compare_spread);

  std::printf("\nkiln-bench-rollout; load average %s at the start, %s at the end\n", load_at_start.c_str(),
              loadAverage().c_str());
  if (in_process) {
    const auto& p = *in_process;
    std::printf("\n  planning over %zu pods (%lld GPUs), %d runs each; median (max)\n", fleet_pods,
                static_cast<long long>(o.gpus), o.plan_repeats);
    std::printf("  %-52s %10s   %s\n", "figure", "value", "target");
    std::printf("  %-52s %8.3f s   (%.3f s)\n", "in process: pod facts + compliance + selector",
                median(p.facts_s), pct(p.facts_s, 100));
    std::printf("  %-52s %8.3f s   (%.3f s)\n", "in process: planRollout + plan JSON", median(p.plan_s), pct(p.plan_s, 100));
    std::printf("  %-52s %8.3f s   < 5 s %s\n", "in process: total", median(p.total_s),
                median(p.total_s) < 5 ? "(met)" : "(MISSED)");
    if (api) {
      std::printf("  %-52s %8.1f s   (fleet import, not part of the plan)\n", "API: POST /fleet/import", api->import_s);
      std::printf("  %-52s %8.3f s   < 5 s %s (max %.3f s)\n", "API: POST /rollouts dry_run, selector {}",
                  median(api->plan_s), median(api->plan_s) < 5 ? "(met)" : "(MISSED)", pct(api->plan_s, 100));
      std::printf("  %-52s %8.1f MB   (%d eligible, %zu excluded, %zu waves)\n", "API: dry-run response",
                  api->body_bytes / 1e6, api->eligible, api->excluded, api->waves);
      std::printf("  %-52s %8.1fx\n", "API / in process ratio", median(api->plan_s) / median(p.total_s));
    } else {
      std::printf("  (through the API: --api-plan; it imports the fleet into a fresh kilnd first)\n");
    }
  }
  if (sim) printSimulated(o, *sim);
  if (sim_spread) {
    printSimulated(o, *sim_spread);
    printComparison(o, *sim, *sim_spread);
  }
  return 0;
}
