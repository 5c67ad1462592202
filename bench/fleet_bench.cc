// kiln-bench-fleet: imports a generated fleet (default 1,000,000 GPUs = 13,889 NVL72 pods) into
// a fresh kilnd and measures the import, kilnd's peak memory and the latency of paginated reads.
// A program that prints figures next to targets (STYLE: a benchmark is not a test with a time
// limit); it asserts nothing about time.
//
//   KILN_TEST_PG="host=... port=... user=kiln" kiln-bench-fleet            # own kilnd + database
//   kiln-bench-fleet --url http://127.0.0.1:8080 --token kiln_... [--pid N]   # a running kilnd
//
// See bench/README.md.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
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
  std::string url, token;
  int pid = 0;                 // kilnd to sample for memory (own kilnd: its pid)
  std::int64_t gpus = 1000000;
  int random_pages = 300;      // GET /pods?limit=100&cursor=<random pod>
  int host_queries = 300;      // GET /hosts?pod=<random pod>
  int healthz = 300;           // the trivial baseline
  unsigned seed = 1;
};

const char* kUsage =
    "usage: kiln-bench-fleet [--gpus N] [--random-pages N] [--host-queries N] [--healthz N] [--seed N]\n"
    "                        [--url URL --token TOKEN [--pid PID]]\n"
    "Without --url it starts its own kilnd on a fresh database of the server in KILN_TEST_PG.\n";

// -1: go on; otherwise the exit status for main (0 after --help, 2 after a bad flag).
int parseArgs(int argc, char** argv, Options& o) {
  const int st = kiln::testing::BenchArgs(kUsage)
                     .text("--url", &o.url)
                     .text("--token", &o.token)
                     .number("--pid", &o.pid)
                     .number("--gpus", &o.gpus)
                     .number("--random-pages", &o.random_pages)
                     .number("--host-queries", &o.host_queries)
                     .number("--healthz", &o.healthz)
                     .number("--seed", &o.seed)
                     .parse(argc, argv);
  if (st != -1) return st;
  if (!o.url.empty() && o.token.empty()) {
    std::cerr << "--url needs --token (an admin token: the import needs the admin role)\n";
    return 2;
  }
  return -1;
}

// Peak and current resident memory of a process, in KiB, from /proc/PID/status.
struct Memory {
  long hwm_kib = 0, rss_kib = 0;
};
Memory readMemory(int pid) {
  Memory m;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) m.hwm_kib = std::atol(line.c_str() + 6);
    if (line.rfind("VmRSS:", 0) == 0) m.rss_kib = std::atol(line.c_str() + 6);
  }
  return m;
}

// Samples a process's memory every 20 ms on a thread of its own while it lives.
class MemorySampler {
 public:
  explicit MemorySampler(int pid) : pid_(pid) {
    if (pid_ > 0) thread_ = std::thread([this] { run(); });
  }
  ~MemorySampler() { stop(); }
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  long peakKib() const { return peak_; }
  long peakRssSampledKib() const { return peak_rss_; }

 private:
  void run() {
    while (!done_) {
      const Memory m = readMemory(pid_);
      peak_ = std::max(peak_.load(), m.hwm_kib);
      peak_rss_ = std::max(peak_rss_.load(), m.rss_kib);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  int pid_;
  std::atomic<bool> done_{false};
  std::atomic<long> peak_{0}, peak_rss_{0};
  std::thread thread_;
};

struct Stats {
  std::size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};
Stats stats(std::vector<double> ms) {
  Stats s;
  s.n = ms.size();
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * ms.size()))]; };
  s.p50 = at(0.50);
  s.p90 = at(0.90);
  s.p99 = at(0.99);
  s.max = ms.back();
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean = sum / ms.size();
  return s;
}

// One timed request; exits on a transport failure or an unexpected status.
std::string timed(kiln::http::Client& c, const std::string& path, std::vector<double>& ms) {
  const auto t0 = Clock::now();
  auto r = c.request("GET", path);
  const double elapsed = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!r.ok() || r->status != 200) {
    std::cerr << "GET " << path << " failed: " << (r.ok() ? std::to_string(r->status) + " " + r->body : r.error().message)
              << "\n";
    std::exit(1);
  }
  ms.push_back(elapsed);
  return r->body;
}

void printRow(const char* what, const Stats& s, const char* target) {
  std::printf("  %-40s %6zu %8.2f %8.2f %8.2f %8.2f   %s\n", what, s.n, s.p50, s.p90, s.p99, s.max, target);
}

std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines show up when piped to a file
  Options o;
  if (const int st = parseArgs(argc, argv, o); st != -1) return st;
  const std::string load_at_start = loadAverage();

  std::unique_ptr<kiln::testing::TestDatabase> db;
  std::unique_ptr<kiln::testing::KilndProcess> kilnd;
  if (o.url.empty()) {
    db = std::make_unique<kiln::testing::TestDatabase>();  // aborts with a message without KILN_TEST_PG
    kilnd = std::make_unique<kiln::testing::KilndProcess>(kiln::testing::KilndOptions{.database_url = db->url()});
    if (auto st = kilnd->start(); !st.ok()) {
      std::cerr << "cannot start kilnd: " << st.error().message << "\n";
      return 1;
    }
    o.url = kilnd->url();
    o.token = kilnd->adminToken();
    o.pid = kilnd->pid();
    std::printf("kilnd pid %d at %s, log %s\n", o.pid, o.url.c_str(), kilnd->logPath().c_str());
  }

  // The fleet file.
  kiln::core::FleetGenRequest gen;
  gen.gpus = o.gpus;
  auto t0 = Clock::now();
  const json fleet = kiln::core::generateFleet(gen);
  std::vector<std::string> pod_ids;
  for (const auto& s : fleet["sites"])
    for (const auto& b : s["buildings"])
      for (const auto& p : b["pods"]) pod_ids.push_back(p["name"].get<std::string>());
  const std::string body = fleet.dump();
  const double gen_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("generated %zu pods (%lld GPUs requested), %.1f MB of JSON in %.2f s\n", pod_ids.size(),
              static_cast<long long>(o.gpus), body.size() / 1e6, gen_s);

  kiln::http::Client client({.base_url = o.url, .token = o.token, .timeout = std::chrono::minutes(30)});
  const Memory before = o.pid > 0 ? readMemory(o.pid) : Memory{};

  // The import, with kilnd's memory sampled throughout.
  MemorySampler sampler(o.pid);
  t0 = Clock::now();
  auto imported = client.request("POST", "/api/v1/fleet/import", body);
  const double import_s = std::chrono::duration<double>(Clock::now() - t0).count();
  sampler.stop();
  if (!imported.ok() || (imported->status != 201 && imported->status != 200)) {
    std::cerr << "import failed: "
              << (imported.ok() ? std::to_string(imported->status) + " " + imported->body.substr(0, 2000)
                                : imported.error().message)
              << "\n";
    return 1;
  }
  const json summary = json::parse(imported->body);
  std::printf("import answered %d in %.1f s: %s\n", imported->status, import_s, summary.dump().c_str());

  // Reads. Baseline first, then the paginated walk, random cursors, hosts of a pod, and the
  // baseline again so drift over the run shows.
  std::mt19937 rng(o.seed);
  std::vector<double> healthz_ms, walk_ms, random_ms, hosts_ms;
  for (int i = 0; i < o.healthz / 2; ++i) timed(client, "/healthz", healthz_ms);

  std::string cursor;
  std::size_t walked = 0;
  for (;;) {
    std::string path = "/api/v1/pods?limit=100";
    if (!cursor.empty()) path += "&cursor=" + kiln::http::urlEncode(cursor);
    const json page = json::parse(timed(client, path, walk_ms));
    walked += page["items"].size();
    if (page["next_cursor"].is_null()) break;
    cursor = page["next_cursor"].get<std::string>();
  }
  std::uniform_int_distribution<std::size_t> pick(0, pod_ids.size() - 1);
  for (int i = 0; i < o.random_pages; ++i)
    timed(client, "/api/v1/pods?limit=100&cursor=" + kiln::http::urlEncode(pod_ids[pick(rng)]), random_ms);
  for (int i = 0; i < o.host_queries; ++i)
    timed(client, "/api/v1/hosts?pod=" + kiln::http::urlEncode(pod_ids[pick(rng)]), hosts_ms);
  for (int i = o.healthz / 2; i < o.healthz; ++i) timed(client, "/healthz", healthz_ms);

  const Memory after = o.pid > 0 ? readMemory(o.pid) : Memory{};
  const long peak_kib = std::max(sampler.peakKib(), after.hwm_kib);

  const Stats hz = stats(healthz_ms), walk = stats(walk_ms), rnd = stats(random_ms), hosts = stats(hosts_ms);
  std::vector<double> pages = walk_ms;
  pages.insert(pages.end(), random_ms.begin(), random_ms.end());
  const Stats all_pages = stats(pages);

  std::printf("\nkiln-bench-fleet: %zu pods, %s; load average %s at the start, %s at the end\n\n",
              pod_ids.size(), o.url.c_str(), load_at_start.c_str(), loadAverage().c_str());
  std::printf("  %-40s %12s   %s\n", "figure", "value", "target");
  std::printf("  %-40s %10.1f s   < 60 s %s\n", "POST /fleet/import", import_s, import_s < 60 ? "(met)" : "(MISSED)");
  if (o.pid > 0) {
    std::printf("  %-40s %8.0f MiB   < 2048 MiB %s\n", "kilnd peak RSS (VmHWM) incl. import", peak_kib / 1024.0,
                peak_kib < 2L * 1024 * 1024 ? "(met)" : "(MISSED)");
    std::printf("  %-40s %8.0f MiB\n", "kilnd RSS before import", before.rss_kib / 1024.0);
    std::printf("  %-40s %8.0f MiB\n", "kilnd RSS after the reads", after.rss_kib / 1024.0);
  } else {
    std::printf("  %-40s %12s   (give --pid to sample kilnd)\n", "kilnd peak RSS", "n/a");
  }
  std::printf("  %-40s %12zu   (expected %zu)\n", "pods seen walking all pages", walked, pod_ids.size());
  std::printf("\n  %-40s %6s %8s %8s %8s %8s   %s\n", "latency, ms", "n", "p50", "p90", "p99", "max", "target");
  printRow("GET /healthz (baseline)", hz, "");
  printRow("GET /pods?limit=100, walk with cursors", walk, "p99 < 50 ms");
  printRow("GET /pods?limit=100&cursor=<random>", rnd, "p99 < 50 ms");
  printRow("GET /pods pages, both", all_pages,
           all_pages.p99 < 50 ? "p99 < 50 ms (met)" : "p99 < 50 ms (MISSED)");
  printRow("GET /hosts?pod=<random>", hosts, "");
  std::printf("\n  page / healthz ratio: p50 %.1fx, p99 %.1fx (the cost of the page over a trivial request)\n",
              hz.p50 > 0 ? all_pages.p50 / hz.p50 : 0.0, hz.p99 > 0 ? all_pages.p99 / hz.p99 : 0.0);
  std::printf("  hosts?pod / healthz ratio: p50 %.1fx, p99 %.1fx\n", hz.p50 > 0 ? hosts.p50 / hz.p50 : 0.0,
              hz.p99 > 0 ? hosts.p99 / hz.p99 : 0.0);
  std::printf("  (one client, sequential requests; a shared 2-core machine: read the ratios)\n");

  if (kilnd) std::printf("\nkilnd stopped with status %d\n", kilnd->stop());
  return 0;
}
