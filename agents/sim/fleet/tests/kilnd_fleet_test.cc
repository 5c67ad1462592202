// The virtual fleet against a real kilnd (label exec): kilnd and kiln-vfleet run as child
// processes on a throwaway database (tests/support/test_db.h, KILN_TEST_PG from deploy/test.sh).

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "agents/sim/faults.h"
#include "orchestrator/http/client.h"
#include "tests/support/child_process.h"
#include "tests/support/test_db.h"

namespace kiln::vfleet {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// A child process with stdout and stderr in a log file (tests/support/child_process.h).
class Child : public kiln::testing::ChildProcess {
 public:
  Child(std::vector<std::string> args, std::string log)
      : kiln::testing::ChildProcess(args, log), log_(std::move(log)) {}
  // SIGTERM, then the exit status within `limit` (-1 if it had to be killed).
  int terminate(std::chrono::milliseconds limit) {
    signal(SIGTERM);
    return waitExit(limit);
  }
  std::string log() const { return readAll(log_); }

 private:
  std::string log_;
};

constexpr const char* kFleetYaml = R"(versions:
  gpu_vbios: "97.00.82.00.0F"
  hmc_bundle: "GB200-P4059-0301-1.3.1"
  nic: "28.43.1014"
  bmc: "25.04-1"
  sbios: "2.4.0"
  driver: "570.133.20"
  nvswitch: "1.3.0"
sites:
  - name: vft
    buildings:
      - name: vft-b01
        pods:
          - {name: vft-b01-p01, platform: catalina}
          - {name: vft-b01-p02, platform: catalina}
)";

class VirtualFleetKilndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vfleet-exec-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    port_ = freeLoopbackPort();
    url_ = "http://127.0.0.1:" + std::to_string(port_);
    kilnd_ = std::make_unique<Child>(
        std::vector<std::string>{KILN_KILND_BIN, "--listen", "127.0.0.1:" + std::to_string(port_),
                                 "--database-url", db_.url(), "--admin-token-file",
                                 dir_ + "/admin-token", "--workflows-dir", KILN_WORKFLOWS_DIR,
                                 "--log-level", "warn"},
        dir_ + "/kilnd.log");
    http::ClientOptions anon;
    anon.base_url = url_;
    anon.timeout = 2000ms;
    http::Client probe(anon);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    bool up = false;
    while (!up && std::chrono::steady_clock::now() < deadline && kilnd_->running()) {
      auto r = probe.request("GET", "/healthz");
      up = r.ok() && r->status == 200;
      if (!up) std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(up) << "kilnd did not come up:\n" << kilnd_->log();
    admin_token_ = readAll(dir_ + "/admin-token");
    while (!admin_token_.empty() && std::isspace(static_cast<unsigned char>(admin_token_.back())))
      admin_token_.pop_back();
    ASSERT_FALSE(admin_token_.empty());
    http::ClientOptions admin = anon;
    admin.token = admin_token_;
    admin.timeout = 10000ms;
    api_ = std::make_unique<http::Client>(admin);

    auto imported = api_->request("POST", "/api/v1/fleet/import", kFleetYaml, "application/yaml");
    ASSERT_TRUE(imported.ok());
    ASSERT_TRUE(imported->status == 200 || imported->status == 201) << imported->body;
    auto token = call("POST", "/api/v1/tokens", json{{"role", "enroll"}, {"name", "vfleet"}}, 201);
    std::ofstream(dir_ + "/enroll-token") << token["token"].get<std::string>() << "\n";
    for (const char* pod : {"vft-b01-p01", "vft-b01-p02"}) {
      auto hosts = call("GET", std::string("/api/v1/hosts?limit=100&pod=") + pod);
      for (const auto& h : hosts["items"]) hosts_[pod].push_back(h["id"].get<std::string>());
      ASSERT_EQ(hosts_[pod].size(), 18u) << pod;
    }
  }

  void TearDown() override {
    if (::testing::Test::HasFailure()) {
      if (fleet_) std::cerr << "---- kiln-vfleet log\n" << fleet_->log();
      if (kilnd_) std::cerr << "---- kilnd log\n" << kilnd_->log();
    }
    fleet_.reset();
    kilnd_.reset();
    std::filesystem::remove_all(dir_);
  }

  json call(const std::string& method, const std::string& path, const json& body = nullptr,
            int expect = 200) {
    auto r = api_->request(method, path, body.is_null() ? "" : body.dump());
    EXPECT_TRUE(r.ok()) << method << " " << path;
    if (!r.ok()) return json();
    EXPECT_EQ(r->status, expect) << method << " " << path << ": " << r->body;
    return json::parse(r->body, nullptr, false);
  }

  void startFleet(std::vector<std::string> extra) {
    std::vector<std::string> args = {KILN_VFLEET_BIN, "--url", url_, "--enroll-token-file",
                                     dir_ + "/enroll-token", "--token-file", dir_ + "/admin-token",
                                     "--hosts", "pod:vft-b01-p01,vft-b01-p02", "--time-scale",
                                     "0.001", "--status-interval", "1", "--state-dir",
                                     dir_ + "/fleet-state", "--seed", "7",
                                     // 36 hosts on 16 connections: 9 long-poll, the others
                                     // short-poll every 2 s (poll_policy.h).
                                     "--connections", "16", "--idle-poll", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    fleet_ = std::make_unique<Child>(args, dir_ + "/fleet.log");
  }

  // Waits until kilnd has seen every host of both pods poll (heartbeats are batched).
  void waitAllSeen() {
    const auto deadline = std::chrono::steady_clock::now() + 45s;
    int seen = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      seen = 0;
      for (const auto& [pod, _] : hosts_) {
        auto page = call("GET", "/api/v1/hosts?limit=100&pod=" + pod);
        for (const auto& h : page["items"]) seen += h["last_seen"].is_null() ? 0 : 1;
      }
      if (seen == 36) return;
      ASSERT_TRUE(fleet_->running()) << "kiln-vfleet exited";
      std::this_thread::sleep_for(250ms);
    }
    FAIL() << "only " << seen << " of 36 hosts were seen polling";
  }

  json runPreJobHealth(const std::string& pod) {
    auto run = call("POST", "/api/v1/workflow-runs",
                    json{{"workflow", "pre-job-health"}, {"pods", {pod}}}, 201);
    const std::string id = run["id"].get<std::string>();
    const auto deadline = std::chrono::steady_clock::now() + 90s;
    while (std::chrono::steady_clock::now() < deadline) {
      run = call("GET", "/api/v1/workflow-runs/" + id);
      if (run["state"] != "running") return run;
      std::this_thread::sleep_for(200ms);
    }
    ADD_FAILURE() << "run " << id << " still running: " << run["progress"].dump();
    return run;
  }

  testing::TestDatabase db_;
  std::string dir_;
  int port_ = 0;
  std::string url_;
  std::string admin_token_;
  std::unique_ptr<Child> kilnd_;
  std::unique_ptr<http::Client> api_;
  std::unique_ptr<Child> fleet_;
  std::map<std::string, std::vector<std::string>> hosts_;
};

TEST_F(VirtualFleetKilndTest, HealthyPodPassesPreJobHealthWithEveryHostHealthy) {
  startFleet({});
  waitAllSeen();
  json run = runPreJobHealth("vft-b01-p01");
  EXPECT_EQ(run["state"], "passed") << run["summary"].dump();
  EXPECT_EQ(run["summary"]["healthy"], 18) << run["summary"].dump();
  EXPECT_TRUE(run["summary"]["unhealthy"].empty());
  // Every step's result came from the simulator through the real parsers.
  const json& host = run["hosts"][0];
  EXPECT_EQ(host["status"], "passed");
  EXPECT_EQ(fleet_->terminate(15s), 0) << fleet_->log();
  // Its last words count every host enrolled (a status line may not have come yet: the run
  // can end within the first status interval).
  auto log = fleet_->log();
  EXPECT_NE(log.find("stopped: 36 enrolled"), std::string::npos) << log;
  // The agent tokens were kept for a restart.
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/fleet-state/tokens/" + hosts_["vft-b01-p01"][0]));
}

TEST_F(VirtualFleetKilndTest, SeededRowRemapFaultFailsThatHostOnly) {
  // A seed whose draw at rate 1/18 picks exactly one host of the first pod.
  const auto& pod = hosts_["vft-b01-p01"];
  const double rate = 1.0 / 18;
  std::uint64_t seed = 0;
  std::string faulty;
  for (std::uint64_t s = 1; s < 10000 && faulty.empty(); ++s) {
    std::vector<std::string> chosen;
    for (const auto& h : pod) {
      if (sim::seededFault(s, h, rate, {sim::FaultKind::kRowRemapPending}, 4, 18)) chosen.push_back(h);
    }
    if (chosen.size() == 1) {
      seed = s;
      faulty = chosen[0];
    }
  }
  ASSERT_FALSE(faulty.empty());
  startFleet({"--fault-kind", "row_remap_pending", "--fault-seed", std::to_string(seed),
              "--fault-rate", std::to_string(rate)});
  waitAllSeen();
  json run = runPreJobHealth("vft-b01-p01");
  EXPECT_EQ(run["state"], "failed");
  EXPECT_EQ(run["summary"]["healthy"], 17) << run["summary"].dump();
  ASSERT_EQ(run["summary"]["unhealthy"].size(), 1u) << run["summary"].dump();
  EXPECT_EQ(run["summary"]["unhealthy"][0]["host"], faulty);
  EXPECT_NE(run["summary"]["unhealthy"][0]["reasons"].dump().find("remap"), std::string::npos)
      << run["summary"].dump();
  EXPECT_EQ(call("GET", "/api/v1/hosts/" + faulty)["state"], "failed");
  const std::string other = pod[0] == faulty ? pod[1] : pod[0];
  EXPECT_EQ(call("GET", "/api/v1/hosts/" + other)["state"], "available");
  EXPECT_EQ(fleet_->terminate(15s), 0) << fleet_->log();
}

}  // namespace
}  // namespace kiln::vfleet
