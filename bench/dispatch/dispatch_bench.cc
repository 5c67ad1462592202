// kiln-bench-dispatch: how fast one kilnd hands out steps and takes their results, how many
// polling hosts it carries, and what a pod's pre-job-health costs beyond its tools. A program
// that prints figures next to targets (STYLE: a benchmark is not a test with a time limit).
//
//   KILN_TEST_PG="host=... port=... user=kiln" kiln-bench-dispatch [--hosts 10000] [--steps 3]
//
// Everything runs against a real kilnd (KilndProcess) on a fresh database (TestDatabase) of the
// server in KILN_TEST_PG, with kiln-vfleet child processes as the hosts. See README.md here.

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/dispatch/proc_stats.h"
#include "bench/dispatch/queue_baseline.h"
#include "common/crypto.h"
#include "orchestrator/core/fleet_generator.h"
#include "orchestrator/http/client.h"
#include "tests/support/bench_args.h"
#include "tests/support/haproxy.h"
#include "tests/support/kilnd_process.h"
#include "tests/support/test_db.h"
#ifdef KILN_BENCH_WITH_AGENT
#include "tests/e2e/e2e_support.h"
#endif

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kHostsPerPod = 18;  // NVL72: 18 compute trays of 4 GPUs (docs/FACTS.md)

struct Options {
  long hosts = 10000;            // simulated hosts of the dispatch run, rounded up to pods of 18
  int steps = 3;                 // steps of the bench workflow
  // Small output (~280 bytes) so the figure is dispatch, not output volume: `nvidia-smi -q -x`
  // of the simulator is ~30 KB per step, ~900 MB stored for 10,000 hosts x 3 steps.
  std::string step_argv = "nvidia-smi -L";
  double time_scale = 0.001;     // kiln-vfleet's tool time factor for the big fleet
  double health_time_scale = 1;  // the pre-job-health pod: real tool time
  // kiln-vfleet --connections; 0: enough for every host to long-poll (idle hosts may take 3/4 of
  // the long-poll slots, which are 3/4 of the connections: 16/9 per host), at most 16,000.
  int connections = 0;
  int idle_poll_s = 30;          // kiln-vfleet --idle-poll: the poll interval of hosts without a long poll
  int poll_wait_s = 25;          // kiln-vfleet --poll-wait
  int idle_window_s = 60;        // the poll latency window
  int queue_workers = 8;         // baseline connections (kilnd's default --db-pool is 8)
  int run_timeout_s = 3600;
  std::string kilnd_bin, vfleet_bin, kilnd_log_level = "info";
  std::vector<std::string> kilnd_args;  // extra kilnd flags, e.g. --threads=16
  std::vector<std::string> vfleet_args;  // extra kiln-vfleet flags, e.g. --running-poll-delay-ms=0
  bool skip_baseline = false, skip_dispatch = false, skip_idle = false, skip_health = false, skip_agent = false;
  bool keep = false;  // leave the database behind for EXPLAIN and timelines by hand
  // More than 1: that many kilnd on the database behind a real HAProxy (deploy/haproxy/kiln.cfg),
  // every host, the probe and this program's calls through it (issue 14).
  int replicas = 1;
  // Figure 5 (issue 35): a pre-job check of a job of --job-pods pods x 16 hosts (32,768 GPUs at
  // 512 pods) through `kilnctl slurm prolog`, --job-checks times alone and as many times during
  // a rollout-class run over --burst-pods of the dispatch pods. 0: skipped.
  int job_pods = 0;
  int job_checks = 3;
  int burst_pods = 500;
  double job_time_scale = 1;  // the job's hosts: real tool time, as the pre-job-health pod's
  std::string kilnctl_bin;
};

const char* kUsage =
    "usage: kiln-bench-dispatch [--hosts N] [--steps N] [--step-argv 'TOOL ARGS'] [--time-scale X]\n"
    "         [--health-time-scale X] [--connections N] [--idle-poll S] [--poll-wait S] [--idle-window S]\n"
    "         [--queue-workers N] [--run-timeout S] [--kilnd-bin PATH] [--vfleet-bin PATH]\n"
    "         [--kilnd-log-level L] [--kilnd-arg FLAG=VALUE]... [--vfleet-arg FLAG=VALUE]... [--skip-baseline] [--skip-dispatch] [--skip-idle] [--skip-health]\n"
    "         [--skip-agent] [--keep] [--replicas N] [--job-pods N] [--job-checks N] [--burst-pods N]\n"
    "         [--job-time-scale X] [--kilnctl-bin PATH]\n"
    "Starts its own kilnd on a fresh database of the server in KILN_TEST_PG and kiln-vfleet as the hosts.\n";

// -1: go on; otherwise the exit status for main (0 after --help, 2 after a bad flag).
int parseArgs(int argc, char** argv, Options& o) {
  const int st = kiln::testing::BenchArgs(kUsage)
                     .number("--hosts", &o.hosts)
                     .number("--steps", &o.steps)
                     .text("--step-argv", &o.step_argv)
                     .number("--time-scale", &o.time_scale)
                     .number("--health-time-scale", &o.health_time_scale)
                     .number("--connections", &o.connections)
                     .number("--idle-poll", &o.idle_poll_s)
                     .number("--poll-wait", &o.poll_wait_s)
                     .number("--idle-window", &o.idle_window_s)
                     .number("--queue-workers", &o.queue_workers)
                     .number("--run-timeout", &o.run_timeout_s)
                     .text("--kilnd-bin", &o.kilnd_bin)
                     .text("--vfleet-bin", &o.vfleet_bin)
                     .text("--kilnd-log-level", &o.kilnd_log_level)
                     .texts("--kilnd-arg", &o.kilnd_args)
                     .texts("--vfleet-arg", &o.vfleet_args)
                     .flag("--skip-baseline", &o.skip_baseline)
                     .flag("--skip-dispatch", &o.skip_dispatch)
                     .flag("--skip-idle", &o.skip_idle)
                     .flag("--skip-health", &o.skip_health)
                     .flag("--skip-agent", &o.skip_agent)
                     .flag("--keep", &o.keep)
                     .number("--replicas", &o.replicas)
                     .number("--job-pods", &o.job_pods)
                     .number("--job-checks", &o.job_checks)
                     .number("--burst-pods", &o.burst_pods)
                     .number("--job-time-scale", &o.job_time_scale)
                     .text("--kilnctl-bin", &o.kilnctl_bin)
                     .parse(argc, argv);
  if (st != -1) return st;
  if (o.hosts < 1 || o.steps < 1 || o.steps > 50 || o.idle_window_s < 1 || o.queue_workers < 1) {
    std::cerr << "--hosts, --steps (<= 50), --idle-window and --queue-workers must be positive\n";
    return 2;
  }
  if (o.job_pods < 0 || o.job_checks < 1 || o.burst_pods < 0) {
    std::cerr << "--job-pods and --burst-pods must not be negative, --job-checks must be positive\n";
    return 2;
  }
  if (o.vfleet_bin.empty()) o.vfleet_bin = KILN_VFLEET_BIN;
  if (o.kilnctl_bin.empty()) o.kilnctl_bin = KILN_KILNCTL_BIN;
  return -1;
}

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "kiln-bench-dispatch: " << msg << "\n";
  std::exit(1);
}

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Stats {
  std::size_t n = 0;
  double p50 = 0, p99 = 0, max = 0;
};
Stats stats(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))]; };
  s.p50 = at(0.5);
  s.p99 = at(0.99);
  s.max = v.back();
  return s;
}

std::string met(bool ok) { return ok ? "(met)" : "(MISSED)"; }

// Calls the API and exits on a transport error or an unexpected status.
json call(kiln::http::Client& c, const std::string& method, const std::string& path, const std::string& body = "",
          std::set<int> expect = {200}, const std::string& content_type = "application/json") {
  auto r = c.request(method, path, body, content_type);
  if (!r.ok()) die(method + " " + path + ": " + r.error().message);
  if (!expect.count(r->status)) die(method + " " + path + " answered " + std::to_string(r->status) + ": " + r->body.substr(0, 2000));
  if (r->body.empty()) return json();
  return json::parse(r->body, nullptr, false);
}

// kilnd's kiln_agent_* counters (GET /metrics), by series.
std::map<std::string, double> agentCounters(kiln::http::Client& c) {
  std::map<std::string, double> out;
  auto r = c.request("GET", "/metrics", "", "text/plain");
  if (!r.ok() || r->status != 200) return out;
  std::istringstream in(r->body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("kiln_agent_", 0) != 0) continue;
    const auto sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    try {
      out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
    } catch (const std::exception&) {
    }
  }
  return out;
}

// ---- the fleet: bulk pods for the dispatch run and the idle poll window, one pod for
// pre-job-health at real tool time, one pod whose first host is the bench's own poll probe
// and whose second host runs a real kiln-agent.
struct Fleet {
  std::vector<std::string> bulk_pods;
  std::vector<std::string> job_pods;  // figure 5's job, after the bulk pods
  std::string health_pod, probe_pod;
  std::map<std::string, std::vector<std::string>> hosts_of;  // pod -> hosts, sorted
  std::map<std::string, std::string> platform_of;            // pod -> platform
};

Fleet importFleet(kiln::http::Client& api, const std::string& db_url, long hosts, long job_pods) {
  const long bulk = (hosts + kHostsPerPod - 1) / kHostsPerPod;
  kiln::core::FleetGenRequest gen;
  gen.gpus = (bulk + job_pods + 2) * 72;
  const auto t0 = Clock::now();
  const std::string body = kiln::core::generateFleet(gen).dump();
  auto r = api.request("POST", "/api/v1/fleet/import", body);
  if (!r.ok() || (r->status != 201 && r->status != 200))
    die("fleet import: " + (r.ok() ? std::to_string(r->status) + " " + r->body.substr(0, 1000) : r.error().message));
  Fleet f;
  pqxx::connection c(db_url);
  pqxx::work txn(c);
  std::vector<std::string> pods;
  for (const auto& row : txn.exec("SELECT id, platform FROM pods ORDER BY id")) {
    pods.push_back(row[0].as<std::string>());
    f.platform_of[pods.back()] = row[1].as<std::string>();
  }
  for (const auto& row : txn.exec("SELECT pod_id, id FROM hosts ORDER BY pod_id, id"))
    f.hosts_of[row[0].as<std::string>()].push_back(row[1].as<std::string>());
  txn.commit();
  if (static_cast<long>(pods.size()) != bulk + job_pods + 2)
    die("expected " + std::to_string(bulk + job_pods + 2) + " pods, got " + std::to_string(pods.size()));
  for (const auto& p : pods)
    if (f.hosts_of[p].size() != static_cast<std::size_t>(kHostsPerPod)) die("pod " + p + " does not have 18 hosts");
  f.bulk_pods.assign(pods.begin(), pods.begin() + bulk);
  f.job_pods.assign(pods.begin() + bulk, pods.begin() + bulk + job_pods);
  f.health_pod = pods[static_cast<std::size_t>(bulk + job_pods)];
  f.probe_pod = pods[static_cast<std::size_t>(bulk + job_pods + 1)];
  std::printf("fleet: %zu pods imported in %.1f s (%ld for the dispatch run = %ld hosts, %ld for the job's pre-job "
              "check, 1 for pre-job-health, 1 for the probe and the real agent)\n",
              pods.size(), since(t0), bulk, bulk * kHostsPerPod, job_pods);
  return f;
}

// Agent tokens written straight into the database, as enrollAgent stores them (sha256 of the
// secret; orchestrator/db/pg_run_store.cc): enrolment runs at ~60 hosts/s (agents/sim/fleet/
// README.md), so 10,000 hosts would spend ~3 min enrolling before anything is measured.
// Returns host -> "kiln_<id>_<secret>".
std::map<std::string, std::string> createAgentTokens(const std::string& db_url, const std::vector<std::string>& hosts) {
  std::map<std::string, std::string> out;
  pqxx::connection c(db_url);
  pqxx::work txn(c);
  for (std::size_t start = 0; start < hosts.size(); start += 1000) {
    std::string sql = "INSERT INTO tokens (id, secret_hash, role, name, host_id, created_by) VALUES ";
    for (std::size_t i = start; i < std::min(hosts.size(), start + 1000); ++i) {
      const std::string id = kiln::randomHex(6), secret = kiln::randomHex(24);
      out[hosts[i]] = "kiln_" + id + "_" + secret;
      sql += (i == start ? "(" : ",(") + txn.quote(id) + "," + txn.quote(kiln::sha256Hex(secret)) + ",'agent'," +
             txn.quote("agent " + hosts[i]) + "," + txn.quote(hosts[i]) + ",'bench')";
    }
    txn.exec0(sql);
  }
  txn.commit();
  return out;
}

// A kiln-vfleet state directory holding the tokens, and its hosts file ("host platform").
std::string prepareFleetDir(const std::string& dir, const Fleet& f, const std::vector<std::string>& pods,
                            const std::map<std::string, std::string>& tokens) {
  fs::create_directories(dir + "/state/tokens");
  std::ofstream hosts_file(dir + "/hosts");
  for (const auto& p : pods)
    for (const auto& h : f.hosts_of.at(p)) {
      hosts_file << h << " " << f.platform_of.at(p) << "\n";
      std::ofstream(dir + "/state/tokens/" + h) << tokens.at(h) << "\n";
    }
  return dir + "/hosts";
}

std::unique_ptr<kiln::bench::ChildProcess> startVfleet(const Options& o, const std::string& dir, const std::string& url,
                                                       const std::string& enroll_file, double time_scale,
                                                       int connections) {
  std::ostringstream scale;
  scale << time_scale;
  std::vector<std::string> args = {o.vfleet_bin, "--url", url, "--enroll-token-file", enroll_file, "--hosts",
                                   dir + "/hosts", "--state-dir", dir + "/state", "--time-scale", scale.str(),
                                   "--connections", std::to_string(connections), "--idle-poll",
                                   std::to_string(o.idle_poll_s), "--poll-wait", std::to_string(o.poll_wait_s),
                                   "--status-interval", "5", "--seed", "1"};
  args.insert(args.end(), o.vfleet_args.begin(), o.vfleet_args.end());
  return std::make_unique<kiln::bench::ChildProcess>(args, dir + "/vfleet.log");
}

// The big fleet's kiln-vfleet processes, each with its own directory (hosts file, tokens, log).
struct BulkFleet {
  struct Shard {
    std::string dir;
    std::unique_ptr<kiln::bench::ChildProcess> proc;
  };
  std::vector<Shard> shards;
  double cpuSeconds() const {
    double s = 0;
    for (const auto& sh : shards) s += kiln::bench::cpuSeconds(sh.proc->pid());
    return s;
  }
  std::vector<std::size_t> logOffsets() const;
};

// ---- resource counters of kilnd and of its database.
struct Snapshot {
  Clock::time_point at;
  double kilnd_cpu = 0;            // all replicas
  std::vector<double> replica_cpu;  // each
  std::map<int, double> backend_cpu;  // PostgreSQL backends serving the bench database
  long commits = 0;
};

class DbWatch {
 public:
  explicit DbWatch(const std::string& url) : conn_(url) {}
  Snapshot snapshot(const std::vector<pid_t>& kilnds) {
    Snapshot s;
    s.at = Clock::now();
    for (pid_t k : kilnds) {
      s.replica_cpu.push_back(kiln::bench::cpuSeconds(k));
      s.kilnd_cpu += s.replica_cpu.back();
    }
    pqxx::nontransaction txn(conn_);
    // The statistics of other backends reach pg_stat_database within ~1 s (PostgreSQL 15).
    txn.exec("SELECT pg_stat_clear_snapshot()");
    s.commits = txn.exec("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")[0][0].as<long>();
    for (const auto& r : txn.exec("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")) {
      const int pid = r[0].as<int>();
      s.backend_cpu[pid] = kiln::bench::cpuSeconds(pid);
    }
    return s;
  }
  json query(const std::string& sql) {
    pqxx::nontransaction txn(conn_);
    auto r = txn.exec(sql);
    return r.empty() || r[0][0].is_null() ? json() : json(r[0][0].as<std::string>());
  }
  long count(const std::string& sql) {
    pqxx::nontransaction txn(conn_);
    return txn.exec(sql)[0][0].as<long>();
  }

 private:
  pqxx::connection conn_;
};

struct Usage {
  double seconds = 0, kilnd_cores = 0, db_cores = 0, commits_per_s = 0;
  long commits = 0;
  std::vector<double> replica_cores;
  // "41.0 % + 12.3 % + 11.9 %" of one core, one per replica.
  std::string perReplica() const {
    std::string out;
    char buf[32];
    for (double c : replica_cores) {
      std::snprintf(buf, sizeof buf, "%s%.1f %%", out.empty() ? "" : " + ", 100 * c);
      out += buf;
    }
    return out;
  }
};
Usage usage(const Snapshot& a, const Snapshot& b) {
  Usage u;
  u.seconds = std::chrono::duration<double>(b.at - a.at).count();
  double db = 0;
  for (const auto& [pid, cpu] : b.backend_cpu)
    if (auto it = a.backend_cpu.find(pid); it != a.backend_cpu.end() && cpu >= 0 && it->second >= 0) db += cpu - it->second;
    else if (cpu >= 0) db += cpu;  // a backend opened within the window
  u.kilnd_cores = (b.kilnd_cpu - a.kilnd_cpu) / u.seconds;
  for (std::size_t i = 0; i < a.replica_cpu.size() && i < b.replica_cpu.size(); ++i)
    u.replica_cores.push_back((b.replica_cpu[i] - a.replica_cpu[i]) / u.seconds);
  u.db_cores = db / u.seconds;
  u.commits = b.commits - a.commits;
  u.commits_per_s = static_cast<double>(u.commits) / u.seconds;
  return u;
}

// ---- kiln-vfleet status lines (agents/sim/fleet/fleet_cli.cc statusLine).
struct VfleetStatus {
  double polls_per_s = 0, quick_p50_ms = 0, quick_p99_ms = 0, poll_p99_s = 0, cpu = 0, rss_mb = 0;
  long polling = 0, long_polls = 0, conns = 0, errors = 0, done = 0, queued = 0;
};
std::vector<VfleetStatus> statusLinesSince(const std::string& log, std::size_t offset) {
  std::vector<VfleetStatus> out;
  std::ifstream in(log);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string line;
  auto num = [&](const std::string& key) -> double {
    auto p = line.find(key);
    return p == std::string::npos ? -1 : std::atof(line.c_str() + p + key.size());
  };
  while (std::getline(in, line)) {
    if (line.find("polls/s ") == std::string::npos || line.find("quick p50 ") == std::string::npos) continue;
    VfleetStatus s;
    s.polls_per_s = num("polls/s ");
    s.quick_p50_ms = num("quick p50 ");
    s.quick_p99_ms = num("ms p99 ");  // the first "ms p99" is quick's (the poll one is in s)
    s.poll_p99_s = num("s p99 ");
    s.cpu = num("cpu ");
    s.rss_mb = num("rss ");
    s.polling = static_cast<long>(num("| polling "));
    s.long_polls = static_cast<long>(num("(long "));
    s.conns = static_cast<long>(num("conns "));
    s.errors = static_cast<long>(num(" errors "));
    s.done = static_cast<long>(num(" done "));
    s.queued = static_cast<long>(num(" queued "));
    out.push_back(s);
  }
  return out;
}
std::size_t fileSize(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

std::vector<std::size_t> BulkFleet::logOffsets() const {
  std::vector<std::size_t> out;
  for (const auto& sh : shards) out.push_back(fileSize(sh.dir + "/vfleet.log"));
  return out;
}

// ---- runs.
struct RunOutcome {
  json view;
  double client_s = 0;  // POST to seeing it finished, this process's clock
};

RunOutcome runWorkflow(kiln::http::Client& api, const json& request, int timeout_s, double poll_every_s,
                       bool poll_view, const std::function<void(double)>& progress) {
  RunOutcome out;
  const auto t0 = Clock::now();
  const json started = call(api, "POST", "/api/v1/workflow-runs", request.dump(), {201, 200});
  const std::string id = started.value("id", "");
  if (id.empty()) die("POST /workflow-runs: no id in " + started.dump().substr(0, 500));
  const std::string workflow = request.value("workflow", "");
  double last_progress = 0;
  for (;;) {
    std::string state;
    if (poll_view) {
      state = call(api, "GET", "/api/v1/workflow-runs/" + id).value("state", "");
    } else {
      // The list answers without the per-host records (a 10,000-host run view is large).
      const json list = call(api, "GET", "/api/v1/workflow-runs?workflow=" + kiln::http::urlEncode(workflow) + "&limit=20");
      for (const auto& r : list.value("items", json::array()))
        if (r.value("id", "") == id) state = r.value("state", "");
    }
    if (!state.empty() && state != "running") break;
    if (since(t0) > timeout_s) die("run " + id + " still " + state + " after " + std::to_string(timeout_s) + " s");
    if (progress && since(t0) - last_progress >= 10) {
      last_progress = since(t0);
      progress(last_progress);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_every_s));
  }
  out.client_s = since(t0);
  out.view = call(api, "GET", "/api/v1/workflow-runs/" + id);
  return out;
}

std::string benchWorkflowYaml(const Options& o) {
  std::istringstream words(o.step_argv);
  std::string w, argv;
  while (words >> w) argv += (argv.empty() ? "" : ", ") + json(w).dump();
  std::string y =
      "name: bench-dispatch\n"
      "version: \"1\"\n"
      "description: kiln-bench-dispatch, quick simulated steps on every host\n"
      "scope: host\n"
      "timeout: 3600s\n"
      "steps:\n";
  for (int i = 1; i <= o.steps; ++i)
    y += "  - id: step-" + std::to_string(i) + "\n    run: [" + argv + "]\n    timeout: 600s\n";
  return y;
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Polls as one host with wait=0 every 100 ms on its own thread: kilnd's answer time for a
// short poll, measured outside kiln-vfleet's connection queue.
class PollProbe {
 public:
  PollProbe(const std::string& url, const std::string& host, const std::string& token)
      : client_({.base_url = url, .token = token, .timeout = 30s}), host_(host) {
    thread_ = std::thread([this] { run(); });
  }
  ~PollProbe() { stop(); }
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<double> ms() {
    std::lock_guard lock(mu_);
    return ms_;
  }
  long errors() const { return errors_; }

 private:
  void run() {
    while (!done_) {
      const auto t0 = Clock::now();
      auto r = client_.request("GET", "/api/v1/agents/" + kiln::http::urlEncode(host_) + "/work?wait=0&boot_id=bench-probe");
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (r.ok() && (r->status == 204 || r->status == 200)) {
        std::lock_guard lock(mu_);
        ms_.push_back(ms);
      } else {
        ++errors_;
      }
      std::this_thread::sleep_for(100ms);
    }
  }
  kiln::http::Client client_;
  std::string host_;
  std::atomic<bool> done_{false};
  std::atomic<long> errors_{0};
  std::mutex mu_;
  std::vector<double> ms_;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  Options o;
  if (const int st = parseArgs(argc, argv, o); st != -1) return st;
  const std::string load_at_start = kiln::bench::loadAverage();
  std::vector<std::string> report;  // the figures, printed together at the end
  auto add = [&](const char* fmt, auto... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, args...);
    report.push_back(buf);
    std::printf("%s\n", buf);
  };

  auto db_owner = std::make_unique<kiln::testing::TestDatabase>();  // aborts with a message without KILN_TEST_PG
  const kiln::testing::TestDatabase& db = *db_owner;
  const std::string work = (fs::temp_directory_path() / ("kiln-bench-dispatch-" + std::to_string(getpid()))).string();
  fs::create_directories(work);
  kiln::testing::KilndProcess kilnd({.database_url = db.url(), .extra_args = o.kilnd_args, .binary = o.kilnd_bin, .log_level = o.kilnd_log_level});
  if (auto st = kilnd.start(); !st.ok()) die("cannot start kilnd: " + st.error().message);
  std::printf("kilnd pid %d at %s, log %s; work dir %s\n", kilnd.pid(), kilnd.url().c_str(), kilnd.logPath().c_str(),
              work.c_str());
  // Replicas behind HAProxy: `front` is what every host, the probe and this program talk to.
  std::vector<std::unique_ptr<kiln::testing::KilndProcess>> more_kilnd;
  std::vector<pid_t> kilnd_pids = {kilnd.pid()};
  std::unique_ptr<kiln::bench::ChildProcess> haproxy;
  std::string front = kilnd.url();
  if (o.replicas > 1) {
    auto portOf = [](const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); };
    std::vector<int> ports = {portOf(kilnd.url())};
    for (int i = 1; i < o.replicas; ++i) {
      more_kilnd.push_back(std::make_unique<kiln::testing::KilndProcess>(
          kiln::testing::KilndOptions{.database_url = db.url(), .extra_args = o.kilnd_args,
                                      .admin_token_file = kilnd.adminTokenFile(), .binary = o.kilnd_bin,
                                      .log_level = o.kilnd_log_level}));
      if (auto st = more_kilnd.back()->start(); !st.ok()) die("cannot start kilnd replica: " + st.error().message);
      ports.push_back(portOf(more_kilnd.back()->url()));
      kilnd_pids.push_back(more_kilnd.back()->pid());
    }
    const int port = kiln::testing::freeLoopbackPort();
    // Two descriptors per proxied connection, 20,000 a process here: 9,000 connections.
    std::ofstream(work + "/haproxy.cfg")
        << kiln::testing::localHaproxyConfig(readText(KILN_DEPLOY_DIR "/haproxy/kiln.cfg"), port, ports, 9000);
    haproxy = std::make_unique<kiln::bench::ChildProcess>(
        std::vector<std::string>{"/usr/sbin/haproxy", "-db", "-f", work + "/haproxy.cfg"}, work + "/haproxy.log");
    front = "http://127.0.0.1:" + std::to_string(port);
    kiln::http::Client probe_client({.base_url = front, .timeout = 2s});
    bool up = false;
    for (int i = 0; i < 100 && !up; ++i) {
      auto r = probe_client.request("GET", "/healthz");
      up = r.ok() && r->status == 200;
      if (!up) std::this_thread::sleep_for(100ms);
    }
    if (!up) die("HAProxy did not come up; log " + work + "/haproxy.log");
    std::printf("%d kilnd replicas behind HAProxy at %s (deploy/haproxy/kiln.cfg)\n", o.replicas, front.c_str());
  }
  kiln::http::Client api({.base_url = front, .token = kilnd.adminToken(), .timeout = 30min});
  DbWatch watch(db.url());

  const Fleet fleet = importFleet(api, db.url(), o.hosts, o.job_pods);
  const long bulk_hosts = static_cast<long>(fleet.bulk_pods.size()) * kHostsPerPod;
  // The simulated hosts of the bulk kiln-vfleet processes: the dispatch pods and the job's.
  std::vector<std::string> sim_pods = fleet.bulk_pods;
  sim_pods.insert(sim_pods.end(), fleet.job_pods.begin(), fleet.job_pods.end());
  const long sim_hosts = static_cast<long>(sim_pods.size()) * kHostsPerPod;
  const long items = bulk_hosts * o.steps;

  // 1a. The bare queue, before any host polls (the same server, an idle kilnd).
  std::optional<kiln::bench::QueueResult> queue;
  if (!o.skip_baseline && !o.skip_dispatch) {
    std::printf("baseline: bare SKIP LOCKED queue, %ld items, %d connections ...\n", items, o.queue_workers);
    try {
      queue = kiln::bench::runQueueBaseline(db.url(), "bench_queue", items, o.queue_workers);
    } catch (const std::exception& e) {
      die(e.what());
    }
    std::printf("baseline: %ld items in %.1f s = %.0f/s (claimed twice: %ld), load %s\n", queue->items, queue->seconds,
                queue->per_second, queue->claimed_twice, kiln::bench::loadAverage().c_str());
  }

  // Tokens and kiln-vfleet processes.
  std::vector<std::string> token_hosts;
  for (const auto& p : sim_pods) for (const auto& h : fleet.hosts_of.at(p)) token_hosts.push_back(h);
  for (const auto& h : fleet.hosts_of.at(fleet.health_pod)) token_hosts.push_back(h);
  const std::string probe_host = fleet.hosts_of.at(fleet.probe_pod)[0];
  const std::string agent_host = fleet.hosts_of.at(fleet.probe_pod)[1];
  token_hosts.push_back(probe_host);
  auto t0 = Clock::now();
  const auto tokens = createAgentTokens(db.url(), token_hosts);
  std::printf("%zu agent tokens written to the database in %.1f s (no enrolment)\n", tokens.size(), since(t0));
  const json enroll = call(api, "POST", "/api/v1/tokens", json{{"role", "enroll"}, {"name", "bench"}}.dump(), {201});
  const std::string enroll_file = work + "/enroll-token";
  std::ofstream(enroll_file) << enroll.value("token", "") << "\n";

  const bool need_bulk = !o.skip_dispatch || !o.skip_idle || o.job_pods > 0;
  std::unique_ptr<kiln::bench::ChildProcess> health_fleet;
  BulkFleet bulk;
  const std::string health_dir = work + "/health";
  if (need_bulk) {
    // Every host gets a long-poll slot where kilnd's descriptors allow: kiln-vfleet lets idle
    // hosts take 3/4 of its slots, which are 3/4 of its connections (16/9 connections per host),
    // and one process holds at most 16,000 (docs/DEPENDENCIES.md: 20,000 descriptors a process).
    // Beyond 16,000 the hosts are split over two processes, the sum kept at 18,000 (kilnd's own
    // 20,000 descriptors hold them, its database connections and its files); the rest of a
    // larger fleet short-polls every --idle-poll s. A host without a slot sees new work only at
    // its next short poll: with one process at 10,008 hosts, the 1,008 hosts past 9,000 slots
    // got their first step 10-23 s late, at ~80/s, which halved the dispatch figure.
    const long wanted = o.connections > 0 ? o.connections : std::min(18000L, sim_hosts * 16 / 9 + 64);
    // The job's pods (figure 5) run in a process of their own, at --job-time-scale; the
    // connections are shared in proportion to the hosts.
    struct Group {
      std::vector<std::string> pods;
      double scale;
      long connections;
    };
    std::vector<Group> groups;
    if (fleet.job_pods.empty()) {
      const int shards = wanted > 16000 ? 2 : 1;
      for (int k = 0; k < shards; ++k) {
        Group g{{}, o.time_scale, wanted / shards};
        for (std::size_t i = static_cast<std::size_t>(k); i < fleet.bulk_pods.size(); i += static_cast<std::size_t>(shards))
          g.pods.push_back(fleet.bulk_pods[i]);
        groups.push_back(std::move(g));
      }
    } else {
      const long job_connections = wanted * static_cast<long>(fleet.job_pods.size()) / static_cast<long>(sim_pods.size());
      groups.push_back({fleet.bulk_pods, o.time_scale, wanted - job_connections});
      groups.push_back({fleet.job_pods, o.job_time_scale, job_connections});
    }
    for (std::size_t k = 0; k < groups.size(); ++k) {
      if (groups[k].pods.empty()) continue;
      const std::string dir = work + "/bulk-" + std::to_string(k);
      prepareFleetDir(dir, fleet, groups[k].pods, tokens);
      bulk.shards.push_back({dir, startVfleet(o, dir, front, enroll_file, groups[k].scale,
                                              static_cast<int>(std::min(16000L, groups[k].connections)))});
      std::printf("kiln-vfleet %zu: %zu pods, --time-scale %g, %ld connections\n", k, groups[k].pods.size(),
                  groups[k].scale, groups[k].connections);
    }
  }
  if (!o.skip_health) {
    prepareFleetDir(health_dir, fleet, {fleet.health_pod}, tokens);
    health_fleet = startVfleet(o, health_dir, front, enroll_file, o.health_time_scale, 64);
  }
#ifdef KILN_BENCH_WITH_AGENT
  std::unique_ptr<kiln::e2e::AgentFleet> agents;
  if (!o.skip_agent) {
    agents = std::make_unique<kiln::e2e::AgentFleet>(work + "/agent", front, enroll_file, 1.0);
    agents->start(agent_host);
  }
#endif

  // Every simulated host has polled once (last_seen is written in batches).
  const long expected = (need_bulk ? sim_hosts : 0) + (o.skip_health ? 0 : kHostsPerPod);
  t0 = Clock::now();
  long seen = 0;
  const std::string seen_sql = "SELECT count(*) FROM hosts WHERE last_seen IS NOT NULL AND pod_id <> " +
                               pqxx::connection(db.url()).quote(fleet.probe_pod);
  while ((seen = watch.count(seen_sql)) < expected) {
    for (const auto& sh : bulk.shards)
      if (!sh.proc->running()) die("kiln-vfleet exited; log " + sh.dir + "/vfleet.log");
    if (since(t0) > 300 + expected / 50.0) die("only " + std::to_string(seen) + " of " + std::to_string(expected) + " hosts polled");
    std::this_thread::sleep_for(1s);
  }
  std::printf("%ld simulated hosts polled kilnd within %.1f s of the fleet's start\n", seen, since(t0));
  // kiln-vfleet spreads its hosts' first actions over --ramp (hosts/500 s, at most 30): let
  // the schedule settle into its steady state.
  std::this_thread::sleep_for(std::chrono::seconds(10));

  // 2. Idle fleet: poll latency, kilnd CPU, commits.
  if (!o.skip_idle && need_bulk) {
    std::printf("idle window: %d s with %ld hosts polling ...\n", o.idle_window_s, sim_hosts);
    const auto offsets = bulk.logOffsets();
    const double vfleet_cpu0 = bulk.cpuSeconds();
    pid_t agent_pid = 0;
    double agent_cpu0 = 0;
#ifdef KILN_BENCH_WITH_AGENT
    if (agents) {
      auto pids = kiln::bench::findProcesses("kiln-agent", "--host", agent_host);
      if (!pids.empty()) agent_pid = pids[0];
      agent_cpu0 = kiln::bench::cpuSeconds(agent_pid);
    }
#endif
    const Snapshot a = watch.snapshot(kilnd_pids);
    PollProbe probe(front, probe_host, tokens.at(probe_host));
    std::this_thread::sleep_for(std::chrono::seconds(o.idle_window_s));
    probe.stop();
    const Snapshot b = watch.snapshot(kilnd_pids);
    const Usage u = usage(a, b);
    const double vfleet_cores = (bulk.cpuSeconds() - vfleet_cpu0) / u.seconds;
    std::vector<VfleetStatus> lines;
    std::vector<double> p99s, p50s;
    double polls_per_s = 0;
    long conns = 0, long_polls = 0;
    for (std::size_t k = 0; k < bulk.shards.size(); ++k) {
      const auto shard_lines = statusLinesSince(bulk.shards[k].dir + "/vfleet.log", offsets[k]);
      double shard_polls = 0;
      long shard_conns = 0, shard_long = 0;
      for (const auto& l : shard_lines) {
        p99s.push_back(l.quick_p99_ms);
        p50s.push_back(l.quick_p50_ms);
        shard_polls += l.polls_per_s;
        shard_conns = std::max(shard_conns, l.conns);
        shard_long = std::max(shard_long, l.long_polls);
        lines.push_back(l);
      }
      if (!shard_lines.empty()) polls_per_s += shard_polls / static_cast<double>(shard_lines.size());
      conns += shard_conns;
      long_polls += shard_long;
    }
    const Stats vp99 = stats(p99s), vp50 = stats(p50s);
    const Stats pr = stats(probe.ms());

    add("");
    add("2. hosts carried at a %d s poll interval (MEASURED at %ld hosts, %d s window)", o.idle_poll_s, sim_hosts,
        o.idle_window_s);
    add("  kiln-vfleet (%zu process(es)): %ld connections, up to %ld long polls (wait %d s), the other hosts poll with "
        "wait=0 every %d s",
        bulk.shards.size(), conns, long_polls, o.poll_wait_s, o.idle_poll_s);
    add("  polls/s (kiln-vfleet, mean of %zu status lines)          %10.0f", lines.size(), polls_per_s);
    long short_polls = 0;
    for (const auto& l : lines) short_polls += l.quick_p99_ms > 0;
    if (short_polls > 0)
      add("  quick poll p99 per 5 s interval (kiln-vfleet), ms       median %.1f  max %.1f  (p50 median %.1f)   target p99 < 100 ms %s",
          vp99.p50, vp99.max, vp50.p50, met(vp99.max < 100).c_str());
    else
      add("  quick poll latency (kiln-vfleet): none answered before their wait (every host long-polls)");
    add("  probe: GET /work?wait=0 every 100 ms, ms          n %zu  p50 %.2f  p99 %.2f  max %.2f  errors %ld   target p99 < 100 ms %s",
        pr.n, pr.p50, pr.p99, pr.max, probe.errors(), met(pr.n > 0 && pr.p99 < 100).c_str());
    add("  kilnd CPU                                              %10.1f %% of one core", 100 * u.kilnd_cores);
    if (o.replicas > 1) add("  kilnd CPU per replica (behind HAProxy)                 %s", u.perReplica().c_str());
    add("  PostgreSQL backends of the bench database, CPU         %10.1f %% of one core", 100 * u.db_cores);
    add("  commits/s in the bench database                        %10.1f   (%ld in %.0f s)", u.commits_per_s, u.commits,
        u.seconds);
    add("  kiln-vfleet CPU                                        %10.1f %% of one core", 100 * vfleet_cores);
    // The probe's polls are kilnd's work too.
    polls_per_s += static_cast<double>(pr.n + static_cast<std::size_t>(probe.errors())) / u.seconds;
    if (polls_per_s > 0) {
      const double per_poll_us = 1e6 * u.kilnd_cores / polls_per_s;
      const double polls_100k = polls_per_s * 100000.0 / static_cast<double>(sim_hosts);
      add("  kilnd CPU per poll                                     %10.1f us", per_poll_us);
      if (sim_hosts < 100000) {
        add("  EXTRAPOLATED (linear in hosts, NOT measured; fixed background costs make it an upper bound) to 100,000 "
            "hosts:");
        add("    polls/s %.0f, kilnd %.2f cores, DB backends %.2f cores, %.0f commits/s", polls_100k,
            per_poll_us * polls_100k / 1e6, u.db_cores * 100000.0 / static_cast<double>(sim_hosts),
            u.commits_per_s * 100000.0 / static_cast<double>(sim_hosts));
        add("    (kiln-vfleet itself would need %.2f cores; this machine has 2 shared cores)",
            vfleet_cores * 100000.0 / static_cast<double>(sim_hosts));
      }
    }
    if (agent_pid > 0) {
      const double agent_cpu = kiln::bench::cpuSeconds(agent_pid) - agent_cpu0;
      add("");
      add("4. kiln-agent footprint (one real agent, idle, long-polling, pid %d)", agent_pid);
      add("  VmRSS %.1f MiB; CPU %.2f s in %.0f s (%.0f ticks)   earlier measurement: ~11 MiB, 0 CPU idle",
          kiln::bench::rssKib(agent_pid) / 1024.0, agent_cpu, u.seconds, agent_cpu * static_cast<double>(sysconf(_SC_CLK_TCK)));
    } else if (!o.skip_agent) {
      add("");
      add("4. kiln-agent footprint: not measured (no kiln-agent process found)");
    }
  }

  // 3. pre-job-health on one pod at real tool time.
  if (!o.skip_health) {
    auto wf = api.request("GET", "/api/v1/workflows/pre-job-health");
    if (!wf.ok() || wf->status != 200)
      call(api, "PUT", "/api/v1/workflows/pre-job-health", readText(std::string(KILN_WORKFLOWS_DIR) + "/pre-job-health.yaml"),
           {200, 201}, "application/yaml");
    std::printf("pre-job-health on pod %s (kiln-vfleet time scale %g) ...\n", fleet.health_pod.c_str(), o.health_time_scale);
    const Snapshot a = watch.snapshot(kilnd_pids);
    const RunOutcome r = runWorkflow(api, json{{"workflow", "pre-job-health"}, {"pods", {fleet.health_pod}}}, 300, 0.1, true, nullptr);
    const Usage u = usage(a, watch.snapshot(kilnd_pids));
    const json& v = r.view;
    const double wall_s = (v.value("finished_at_ms", 0.0) - v.value("created_at_ms", 0.0)) / 1000.0;
    double slowest = 0, fastest = 1e18;
    std::string slowest_host;
    long step_records = 0;
    for (const auto& h : v.value("hosts", json::array())) {
      double sum = 0;
      for (const auto& s : h.value("steps", json::array())) {
        sum += s.value("duration_ms", 0.0) / 1000.0;
        ++step_records;
      }
      if (sum > slowest) slowest = sum, slowest_host = h.value("host", "");
      fastest = std::min(fastest, sum);
    }
    add("");
    add("3. pre-job-health on one pod (%d hosts, kiln-vfleet --time-scale %g): run %s, %s", kHostsPerPod,
        o.health_time_scale, v.value("state", "").c_str(), v["progress"].dump().c_str());
    add("  run wall time (created_at -> finished_at, kilnd's clock) %8.2f s   (POST -> seen finished: %.2f s)", wall_s,
        r.client_s);
    add("  slowest host's own tool time (sum of duration_ms)      %8.2f s   (%s; fastest host %.2f s; %ld step records)",
        slowest, slowest_host.c_str(), fastest, step_records);
    add("  overhead beyond the slowest host's tools                %8.2f s   target < 2 s %s", wall_s - slowest,
        met(wall_s - slowest < 2).c_str());
    add("  during the run: kilnd CPU %.1f %%, commits %ld (%.1f/s)", 100 * u.kilnd_cores, u.commits, u.commits_per_s);
    if (health_fleet) health_fleet->stop(10s);
  }

  // 1b. The dispatch run over the bulk fleet.
  if (!o.skip_dispatch) {
    call(api, "PUT", "/api/v1/workflows/bench-dispatch", benchWorkflowYaml(o), {200, 201}, "application/yaml");
    std::printf("dispatch run: %d steps (%s) on %ld hosts ...\n", o.steps, o.step_argv.c_str(), bulk_hosts);
    json pods = json::array();
    for (const auto& p : fleet.bulk_pods) pods.push_back(p);
    const auto offsets = bulk.logOffsets();
    const Snapshot a = watch.snapshot(kilnd_pids);
    const auto counters_before = agentCounters(api);
    const double vfleet_cpu0 = bulk.cpuSeconds();
    const RunOutcome r = runWorkflow(api, json{{"workflow", "bench-dispatch"}, {"pods", pods}, {"purpose", "manual"}},
                                     o.run_timeout_s, 1.0, false, [&](double s) {
                                       long done = 0, queued = 0;
                                       for (std::size_t k = 0; k < bulk.shards.size(); ++k) {
                                         const auto l = statusLinesSince(bulk.shards[k].dir + "/vfleet.log", offsets[k]);
                                         if (l.empty()) continue;
                                         done += l.back().done;
                                         queued += l.back().queued;
                                       }
                                       std::printf("  %.0f s: %ld steps done (kiln-vfleet), %.0f steps/s, %ld requests queued in kiln-vfleet\n",
                                                   s, done, s > 0 ? static_cast<double>(done) / s : 0.0, queued);
                                     });
    const Usage u = usage(a, watch.snapshot(kilnd_pids));
    const json& v = r.view;
    const double wall_s = (v.value("finished_at_ms", 0.0) - v.value("created_at_ms", 0.0)) / 1000.0;
    long acked = 0, passed_steps = 0;
    for (const auto& h : v.value("hosts", json::array()))
      for (const auto& s : h.value("steps", json::array())) {
        ++acked;
        passed_steps += s.value("outcome", "") == "passed";
      }
    const double rate = wall_s > 0 ? static_cast<double>(acked) / wall_s : 0;
    add("");
    add("1. dispatch throughput, %ld hosts x %d steps (%s), kiln-vfleet --time-scale %g: run %s, %s", bulk_hosts, o.steps,
        o.step_argv.c_str(), o.time_scale, v.value("state", "").c_str(), v["progress"].dump().c_str());
    add("  step records (acknowledged results) in the run view     %8ld   (%ld passed; expected %ld)", acked, passed_steps,
        items);
    add("  run wall time (created_at -> finished_at, kilnd's clock) %8.1f s   (POST -> seen finished: %.1f s)", wall_s,
        r.client_s);
    add("  kilnd: steps dispatched and acknowledged per second     %8.0f /s", rate);
    add("  during the run: kilnd CPU %.0f %%, DB backends %.0f %%, kiln-vfleet %.0f %%, %.0f commits/s = %.2f commits "
        "per step",
        100 * u.kilnd_cores, 100 * u.db_cores,
        100 * (bulk.cpuSeconds() - vfleet_cpu0) / u.seconds, u.commits_per_s,
        acked > 0 ? static_cast<double>(u.commits) / static_cast<double>(acked) : 0.0);
    if (o.replicas > 1) add("  kilnd CPU per replica (behind HAProxy): %s", u.perReplica().c_str());
    if (acked > 0)
      add("  CPU per step: kilnd %.0f us, DB backends %.0f us",
          1e6 * u.kilnd_cores * u.seconds / static_cast<double>(acked),
          1e6 * u.db_cores * u.seconds / static_cast<double>(acked));
    {
      std::string counts;
      for (const auto& [series, after] : agentCounters(api)) {
        if (series.find("_total") == std::string::npos) continue;
        const double delta = after - (counters_before.count(series) ? counters_before.at(series) : 0.0);
        counts += (counts.empty() ? "" : ", ") + series.substr(std::string("kiln_agent_").size()) + " " +
                  std::to_string(static_cast<long>(delta));
      }
      add("  kilnd's agent counters over the run: %s", counts.c_str());
    }
    if (queue) {
      add("  bare SKIP LOCKED queue (%d connections, claim + finish = 2 commits per item, %ld items) %8.0f /s",
          o.queue_workers, queue->items, queue->per_second);
      add("  kilnd / bare queue                                      %8.1f %%   target >= 50 %% %s",
          100 * rate / queue->per_second, met(rate >= 0.5 * queue->per_second).c_str());
      // The issue-35 figure: CPU per item, which on one machine does not count the simulated
      // agents as the throughput ratio does.
      if (acked > 0 && queue->items > 0) {
        const double kiln_us = 1e6 * (u.kilnd_cores + u.db_cores) * u.seconds / static_cast<double>(acked);
        const double queue_us = 1e6 * (queue->db_cpu_s + queue->client_cpu_s) / static_cast<double>(queue->items);
        add("  CPU per item: kilnd + DB backends %.0f us, bare queue (DB backends %.0f us + client %.0f us) %.0f us",
            kiln_us, 1e6 * queue->db_cpu_s / static_cast<double>(queue->items),
            1e6 * queue->client_cpu_s / static_cast<double>(queue->items), queue_us);
        add("  kilnd CPU per step / bare queue CPU per item            %8.2f x   target <= 1.25 x %s",
            queue_us > 0 ? kiln_us / queue_us : 0.0, met(queue_us > 0 && kiln_us <= 1.25 * queue_us).c_str());
      }
    } else {
      add("  bare queue baseline skipped (--skip-baseline)");
    }
  }

  // 5. A large job's pre-job check through `kilnctl slurm prolog` (PrologSlurmctld: one kilnctl
  // for the job, its hostlist in SLURM_JOB_NODELIST), alone and during a rollout-class run.
  if (o.job_pods > 0) {
    auto wf = api.request("GET", "/api/v1/workflows/pre-job-health");
    if (!wf.ok() || wf->status != 200)
      call(api, "PUT", "/api/v1/workflows/pre-job-health", readText(std::string(KILN_WORKFLOWS_DIR) + "/pre-job-health.yaml"),
           {200, 201}, "application/yaml");
    call(api, "PUT", "/api/v1/workflows/bench-dispatch", benchWorkflowYaml(o), {200, 201}, "application/yaml");
    const json prolog_token = call(api, "POST", "/api/v1/tokens", json{{"role", "prejob"}, {"name", "bench prolog"}}.dump(), {201});
    const std::string token_file = work + "/prolog-token";
    std::ofstream(token_file) << prolog_token.value("token", "") << "\n";
    // The job's nodes as Slurm writes a hostlist: 16 of each pod's 18 trays (64 of 72 GPUs in
    // use, 8 spare), "POD-h[01-16]" per pod when the hosts are named so, else every name.
    constexpr int kJobHostsPerPod = 16;
    std::string hostlist;
    long job_hosts = 0;
    for (const auto& p : fleet.job_pods) {
      const auto& hs = fleet.hosts_of.at(p);
      bool regular = true;
      for (int i = 0; i < kJobHostsPerPod; ++i) {
        char want[16];
        std::snprintf(want, sizeof want, "-h%02d", i + 1);
        regular = regular && hs[static_cast<std::size_t>(i)] == p + want;
      }
      if (regular) {
        hostlist += (hostlist.empty() ? "" : ",") + p + "-h[01-16]";
      } else {
        for (int i = 0; i < kJobHostsPerPod; ++i) hostlist += (hostlist.empty() ? "" : ",") + hs[static_cast<std::size_t>(i)];
      }
      job_hosts += kJobHostsPerPod;
    }
    std::vector<std::string> burst;
    for (const auto& p : fleet.bulk_pods)
      if (static_cast<int>(burst.size()) < o.burst_pods) burst.push_back(p);
    struct Check {
      double client_s = 0, kilnd_s = 0, tools_s = 0;
      std::string id, state;
      long failed_hosts = 0, lost_leases = 0;  // hosts the check failed; of them, for a report past its lease
      long out_of_pool = 0;                    // the job's hosts in state failed after the check
      std::string where;                       // where the machine's time went meanwhile
    };
    int job_no = 1000;
    auto checkOnce = [&]() -> Check {
      Check c;
      const std::string log = work + "/prolog-" + std::to_string(job_no) + ".log";
      const auto t = Clock::now();
      const Snapshot before = watch.snapshot(kilnd_pids);
      const auto counters0 = agentCounters(api);
      std::vector<double> fleet_cpu0;
      for (const auto& sh : bulk.shards) fleet_cpu0.push_back(kiln::bench::cpuSeconds(sh.proc->pid()));
      kiln::bench::ChildProcess prolog({"/usr/bin/env", "KILN_URL=" + front, "KILN_TOKEN_FILE=" + token_file,
                                        "SLURM_JOB_ID=" + std::to_string(job_no++), "SLURM_JOB_NODELIST=" + hostlist,
                                        "SLURM_SCRIPT_CONTEXT=prolog_slurmctld", o.kilnctl_bin, "--timeout", "60",
                                        "slurm", "prolog", "--timeout", "300s", "--unreachable", "closed"},
                                       log);
      const int status = prolog.waitExit(std::chrono::minutes(6));
      c.client_s = since(t);
      {
        // Where the time went: each process's CPU (cores over the check's wall time) and the
        // report path's waits (kilnd's histograms: mean queue wait, mean transaction).
        const Usage u = usage(before, watch.snapshot(kilnd_pids));
        const auto counters1 = agentCounters(api);
        auto delta = [&](const std::string& k) {
          const double a = counters0.count(k) ? counters0.at(k) : 0.0, b = counters1.count(k) ? counters1.at(k) : 0.0;
          return b - a;
        };
        char buf[512];
        std::string fleets;
        for (std::size_t k = 0; k < bulk.shards.size(); ++k)
          fleets += (fleets.empty() ? "" : " + ") +
                    std::to_string(static_cast<int>(
                        100 * (kiln::bench::cpuSeconds(bulk.shards[k].proc->pid()) - fleet_cpu0[k]) / u.seconds)) +
                    " %";
        const double reports = delta("kiln_agent_report_queue_seconds_count");
        std::snprintf(buf, sizeof buf,
                      "kilnd %.0f %%, DB backends %.0f %%, kiln-vfleet %s of a core; %.0f reports in %.0f "
                      "transactions, queued %.0f ms and applied in %.0f ms on average",
                      100 * u.kilnd_cores, 100 * u.db_cores, fleets.c_str(), reports,
                      delta("kiln_agent_report_batches_total"),
                      reports > 0 ? 1000 * delta("kiln_agent_report_queue_seconds_sum") / reports : 0.0,
                      reports > 0 ? 1000 * delta("kiln_agent_report_apply_seconds_sum") / reports : 0.0);
        c.where = buf;
      }
      const std::string text = readText(log);
      // Exit 1 is a verdict (the check failed): counted and shown, not fatal.
      if (status != 0 && status != 1) die("kilnctl slurm prolog exited " + std::to_string(status) + ": " + text.substr(0, 2000));
      const auto at = text.find("pre-job check ");
      if (at == std::string::npos) die("kilnctl slurm prolog said no check id: " + text.substr(0, 2000));
      // "pre-job check r-3 passed ..." or, without a verdict, "pre-job check r-3: no report ...".
      c.id = text.substr(at + 14, text.find_first_of(" :", at + 14) - at - 14);
      // From the database: the run view of 8,192 hosts takes kilnd tens of seconds to build.
      pqxx::connection conn(db.url());
      pqxx::work txn(conn);
      auto row = txn.exec_params1(
          "SELECT state, extract(epoch FROM finished_at - created_at)::float8 FROM workflow_runs WHERE id = $1", c.id);
      c.state = row[0].as<std::string>();
      c.kilnd_s = row[1].is_null() ? 0.0 : row[1].as<double>();
      c.tools_s = txn.exec_params1("SELECT coalesce(max(s), 0) / 1000.0 FROM (SELECT sum((record->>'duration_ms')::float8) s"
                                   " FROM run_step_records WHERE run_id = $1 GROUP BY host_id) t",
                                   c.id)[0]
                      .as<double>();
      auto failed = txn.exec_params1(
          "SELECT count(DISTINCT host_id), count(DISTINCT host_id) FILTER (WHERE record->>'message' LIKE 'no report from the agent within the lease%')"
          " FROM run_step_records WHERE run_id = $1 AND record->>'outcome' = 'failed'",
          c.id);
      c.failed_hosts = failed[0].as<long>();
      c.lost_leases = failed[1].as<long>();
      c.out_of_pool = txn.exec_params1("SELECT count(*) FROM hosts h JOIN run_hosts r ON r.host_id = h.id"
                                       " WHERE r.run_id = $1 AND h.state = 'failed'",
                                       c.id)[0]
                          .as<long>();
      txn.commit();
      return c;
    };
    auto runState = [&](const std::string& id) {
      const json list = call(api, "GET", "/api/v1/workflow-runs?workflow=pre-job-health&limit=20");
      for (const auto& r : list.value("items", json::array()))
        if (r.value("id", "") == id) return r.value("state", "");
      return std::string();
    };
    add("");
    add("5. pre-job check of a %ld-GPU job (%zu pods x %d hosts) through kilnctl slurm prolog (SLURM_JOB_NODELIST "
        "of %zu bytes), the job's kiln-vfleet --time-scale %g; the burst: pre-job-health as purpose rollout on %zu "
        "pods at --time-scale %g",
        job_hosts * 4, fleet.job_pods.size(), kJobHostsPerPod, hostlist.size(), o.job_time_scale,
        std::min(fleet.bulk_pods.size(), static_cast<std::size_t>(o.burst_pods)), o.time_scale);
    std::vector<double> alone, during;
    for (int i = 0; i < o.job_checks; ++i) {
      const Check c = checkOnce();
      alone.push_back(c.client_s - c.tools_s);
      add("  alone #%d: %s %s (%ld hosts failed, %ld for a lost lease, %ld out of the pool); kilnctl %.2f s, run "
          "(kilnd's clock) %.2f s, slowest host's tools %.2f s, overhead %.2f s",
          i + 1, c.id.c_str(), c.state.c_str(), c.failed_hosts, c.lost_leases, c.out_of_pool, c.client_s, c.kilnd_s,
          c.tools_s, c.client_s - c.tools_s);
      add("    meanwhile: %s", c.where.c_str());
    }
    for (int i = 0; i < o.job_checks && !burst.empty(); ++i) {
      json pods = json::array();
      for (const auto& p : burst) pods.push_back(p);
      // A rollout's validation: pre-job-health (the stand-in for its validation workflow) on
      // every host of the burst's pods, at the dispatch fleet's time scale, as purpose rollout.
      const json started = call(api, "POST", "/api/v1/workflow-runs",
                                json{{"workflow", "pre-job-health"}, {"pods", pods}, {"purpose", "rollout"}}.dump(), {201});
      const std::string burst_id = started.value("id", "");
      std::this_thread::sleep_for(5s);  // the burst under way: its hosts claim, run and report
      const Check c = checkOnce();
      const std::string burst_state = runState(burst_id);
      during.push_back(c.client_s - c.tools_s);
      add("  during a %zu-pod rollout validation (%s, %s when the check ended) #%d: %s %s (%ld hosts failed, %ld for a "
          "lost lease, %ld out of the pool); kilnctl %.2f s, run %.2f s, tools %.2f s, overhead %.2f s",
          burst.size(), burst_id.c_str(), burst_state.c_str(), i + 1, c.id.c_str(), c.state.c_str(), c.failed_hosts,
          c.lost_leases, c.out_of_pool, c.client_s, c.kilnd_s, c.tools_s, c.client_s - c.tools_s);
      add("    meanwhile: %s", c.where.c_str());
      const auto t = Clock::now();
      while (runState(burst_id) == "running" && since(t) < o.run_timeout_s) std::this_thread::sleep_for(1s);
    }
    const Stats a = stats(alone), d = stats(during);
    add("  overhead beyond the slowest host's tools, alone: p50 %.2f s, p99 %.2f s (%zu checks)   target < 2 s %s", a.p50,
        a.p99, a.n, met(a.p99 < 2).c_str());
    if (d.n > 0)
      add("  overhead during the rollout validation: p50 %.2f s, p99 %.2f s (%zu checks)   target < 5 s %s", d.p50, d.p99,
          d.n, met(d.p99 < 5).c_str());
  }

  for (auto& sh : bulk.shards) sh.proc->stop(15s);
#ifdef KILN_BENCH_WITH_AGENT
  if (agents) agents->stop(agent_host);
#endif
  std::printf("\n==== kiln-bench-dispatch: load average %s at the start, %s at the end ====\n", load_at_start.c_str(),
              kiln::bench::loadAverage().c_str());
  for (const auto& l : report) std::printf("%s\n", l.c_str());
  std::printf("\n(a shared 2-core machine: kilnd, PostgreSQL, kiln-vfleet and this program share it; read the ratios)\n");
  if (haproxy) haproxy->stop(5s);
  for (auto& k : more_kilnd) k->stop();
  std::printf("kilnd stopped with status %d\n", kilnd.stop());
  if (o.keep) {
    std::printf("database kept: %s\n", db.url().c_str());
    (void)db_owner.release();  // NOLINT: leaves it behind on purpose
  }
  std::error_code ec;
  fs::remove_all(work, ec);
  return 0;
}
