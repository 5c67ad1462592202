// kiln-bench-staging: how fast a rollout's staging puts one firmware file on 100 hosts (issue 31),
// against what the same nginx serves the same file at to 100 plain clients, in one run.
//
//   1. nginx (Debian's) serves an N MB file.
//   2. Baseline: 100 concurrent libcurl downloads of it to nowhere (no disk, no hash): nginx's
//      own throughput over loopback on this machine.
//   3. Kiln: a real kilnd and 100 real kiln-agent processes; an artifact-stage run on the 100
//      hosts; each agent fetches the file into its cache, checks its sha256, writes it to disk.
//      From the run's start to its end.
//
// Prints both aggregate throughputs and their ratio. Asserts nothing about time (docs/STYLE.md).
//
//   KILN_TEST_PG="host=... port=... user=kiln" kiln-bench-staging [--hosts 100] [--size-mb 32]
//
// See bench/artifacts/README.md.

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "orchestrator/http/client.h"
#include "tests/support/bench_args.h"
#include "tests/support/child_process.h"
#include "tests/support/kilnd_process.h"
#include "tests/support/nginx.h"
#include "tests/support/test_db.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct Options {
  int hosts = 100;
  int size_mb = 32;
};

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::size_t discard(char*, std::size_t size, std::size_t n, void*) { return size * n; }
std::size_t toFile(char* data, std::size_t size, std::size_t n, void* file) {
  return std::fwrite(data, size, n, static_cast<std::FILE*>(file));
}

// `clients` concurrent GETs of `url`, bodies thrown away (`dir` empty) or each written to a file
// of its own under `dir`: seconds for all of them.
double plainDownloads(const std::string& url, int clients, const std::string& dir = "") {
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int i = 0; i < clients; ++i)
    threads.emplace_back([&, i] {
      std::FILE* out = dir.empty() ? nullptr : std::fopen((dir + "/" + std::to_string(i)).c_str(), "wb");
      CURL* c = curl_easy_init();
      curl_easy_setopt(c, CURLOPT_URL, url.c_str());
      if (out != nullptr) {
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &toFile);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
      } else {
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &discard);
      }
      curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
      curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
      if (curl_easy_perform(c) != CURLE_OK) ++failed;
      curl_easy_cleanup(c);
      if (out != nullptr) std::fclose(out);
    });
  for (auto& t : threads) t.join();
  const double s = seconds(Clock::now() - t0);
  if (failed > 0) std::cerr << "baseline: " << failed << " downloads failed\n";
  return s;
}

std::string fleetYaml(int pods) {
  std::string y = "sites:\n  - name: bench\n    buildings:\n      - name: bench-b01\n        pods:\n";
  for (int i = 1; i <= pods; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "bench-b01-p%02d", i);
    y += std::string("          - {name: ") + name + ", platform: catalina, state: available}\n";
  }
  return y;
}

json call(kiln::http::Client& api, const std::string& method, const std::string& path, const json& body, int expect) {
  auto r = api.request(method, path, body.is_null() ? "" : body.dump());
  if (!r.ok() || r->status != expect) {
    std::cerr << method << " " << path << ": "
              << (r.ok() ? std::to_string(r->status) + " " + r->body : r.error().message) << "\n";
    std::exit(1);
  }
  return json::parse(r->body, nullptr, false);
}

int run(const Options& o) {
  char tmpl[] = "/tmp/kiln-bench-staging-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl;
  curl_global_init(CURL_GLOBAL_DEFAULT);

  // The file: pseudo-random bytes (nothing compresses or dedups it).
  kiln::testing::Nginx nginx(dir + "/mirror", kiln::testing::freeLoopbackPort());
  const std::string name = "fw-ConnectX7-rel-28_45_1200-MCX750500B-0D00_Ax-UEFI-14.37.14.bin";
  std::string content(static_cast<std::size_t>(o.size_mb) << 20, '\0');
  std::mt19937_64 rng(31);
  for (std::size_t i = 0; i + 8 <= content.size(); i += 8) {
    const auto v = rng();
    std::memcpy(&content[i], &v, 8);
  }
  fs::create_directories(nginx.www() + "/fw");
  std::ofstream(nginx.www() + "/fw/" + name, std::ios::binary) << content;
  const std::string sha = kiln::sha256Hex(content);
  if (!nginx.start()) return 1;
  const std::string url = nginx.url() + "fw/" + name;
  const double total_mb = static_cast<double>(o.hosts) * o.size_mb;

  std::cout << "kiln-bench-staging: " << o.hosts << " hosts x " << o.size_mb << " MB (" << total_mb << " MB), nginx "
            << url << "\n";
  const double base_s = plainDownloads(url, o.hosts);
  std::cout << "  nginx, " << o.hosts << " plain concurrent downloads: " << base_s << " s, " << total_mb / base_s
            << " MB/s\n";
  // The same downloads written to disk (the same file system as the agents' caches): what the
  // disk costs, apart from Kiln.
  fs::create_directories(dir + "/plain");
  const double disk_s = plainDownloads(url, o.hosts, dir + "/plain");
  fs::remove_all(dir + "/plain");
  std::cout << "  nginx, " << o.hosts << " plain concurrent downloads to files: " << disk_s << " s, "
            << total_mb / disk_s << " MB/s\n";

  kiln::testing::TestDatabase db;
  kiln::testing::KilndOptions ko;
  ko.database_url = db.url();
  ko.extra_args = {"--workflows-dir", KILN_WORKFLOWS_DIR};
  ko.log_level = "warn";
  kiln::testing::KilndProcess kilnd(ko);
  if (auto st = kilnd.start(); !st.ok()) {
    std::cerr << st.error().message << "\n";
    return 1;
  }
  kiln::http::Client api({.base_url = kilnd.url(), .token = kilnd.adminToken(), .timeout = 60s});
  const int pods = (o.hosts + 17) / 18;
  auto put = api.request("POST", "/api/v1/fleet/import", fleetYaml(pods), "application/yaml");
  if (!put.ok() || put->status >= 300) {
    std::cerr << "fleet import: " << (put.ok() ? put->body : put.error().message) << "\n";
    return 1;
  }
  std::vector<std::string> hosts;
  for (int p = 1; p <= pods && static_cast<int>(hosts.size()) < o.hosts; ++p) {
    char pod[32];
    std::snprintf(pod, sizeof pod, "bench-b01-p%02d", p);
    json list = call(api, "GET", std::string("/api/v1/hosts?limit=100&pod=") + pod, nullptr, 200);
    for (const auto& h : list["items"])
      if (static_cast<int>(hosts.size()) < o.hosts) hosts.push_back(h.value("id", ""));
  }
  json token = call(api, "POST", "/api/v1/tokens", {{"role", "enroll"}, {"name", "bench agents"}}, 201);
  const std::string enroll = dir + "/enroll-token";
  std::ofstream(enroll) << token.value("token", "") << "\n";

  std::vector<std::unique_ptr<kiln::testing::ChildProcess>> agents;
  for (const auto& h : hosts) {
    const std::string state = dir + "/agents/" + h;
    fs::create_directories(state);
    agents.push_back(std::make_unique<kiln::testing::ChildProcess>(
        std::vector<std::string>{KILN_AGENT_BIN, "run", "--url", kilnd.url(), "--host", h, "--state-dir", state,
                                 "--enroll-token-file", enroll, "--inventory-command", "/bin/echo {}", "--boot-id-file",
                                 "/proc/sys/kernel/random/boot_id", "--log-level", "warn"},
        state + ".log"));
  }
  // Every agent enrolled (it has a token file) before the clock starts.
  const auto enrol_deadline = Clock::now() + 120s;
  for (const auto& h : hosts)
    while (!fs::exists(dir + "/agents/" + h + "/agent_token") && Clock::now() < enrol_deadline)
      std::this_thread::sleep_for(50ms);
  std::this_thread::sleep_for(1s);  // their first polls parked

  const auto t0 = Clock::now();
  json started = call(
      api, "POST", "/api/v1/workflow-runs",
      {{"workflow", "artifact-stage"}, {"hosts", hosts}, {"params", {{"nic_image", url + "#sha256=" + sha}}}}, 201);
  const std::string id = started.value("id", "");
  json view;
  for (;;) {
    view = call(api, "GET", "/api/v1/workflow-runs/" + id, nullptr, 200);
    if (view.value("state", "") != "running" || Clock::now() - t0 > 15min) break;
    std::this_thread::sleep_for(20ms);
  }
  const double kiln_s = seconds(Clock::now() - t0);
  std::cout << "  kiln, artifact-stage on " << o.hosts << " hosts (fetch, sha256, cache): " << kiln_s << " s, "
            << total_mb / kiln_s << " MB/s, run " << view.value("state", "") << "\n";
  int cached = 0;
  for (const auto& h : hosts)
    if (fs::exists(dir + "/agents/" + h + "/artifacts/" + sha + "/" + name)) ++cached;
  std::cout << "  hosts with the verified file in their cache: " << cached << " of " << hosts.size() << "\n";
  std::cout << "  ratio kiln/nginx: " << base_s / kiln_s << " (kiln/plain downloads to files: " << disk_s / kiln_s
            << ")\n";
  for (auto& a : agents) a->stop(5s);
  kilnd.stop();
  std::error_code ec;
  fs::remove_all(dir, ec);
  return view.value("state", "") == "passed" ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  kiln::testing::BenchArgs args("usage: KILN_TEST_PG=... kiln-bench-staging [--hosts N (100)] [--size-mb MB (32)]");
  args.number("--hosts", &o.hosts).number("--size-mb", &o.size_mb);
  if (int rc = args.parse(argc, argv); rc >= 0) return rc;
  if (o.hosts < 1 || o.size_mb < 1) {
    std::cerr << "--hosts and --size-mb must be at least 1\n";
    return 2;
  }
  return run(o);
}
