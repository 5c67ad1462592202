#pragma once
// The e2e tier's virtual fleet (kiln-vfleet as a child process), a bundle kiln-hwsim can
// install, and a sampler of pods in flight: shared by the rollout, replica and Slurm tests.

#include <algorithm>
#include <atomic>
#include <thread>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/e2e_support.h"

namespace kiln::e2e {

inline std::string sha(char c) { return std::string(64, c); }

// A bundle whose artifacts kiln-hwsim understands: nvfwupd takes the HMC bundle version from
// the package name, mlxfwmanager the NIC version from the image name, kiln-driver-install the
// driver version from its argument.
inline json bundleDoc(const std::string& version, const std::string& hmc, const std::string& nic, const std::string& driver) {
  std::string nic_file = nic;
  std::replace(nic_file.begin(), nic_file.end(), '.', '_');
  return {{"name", "e2e-gb200-fw"},
          {"version", version},
          {"platforms", {"catalina"}},
          {"components",
           {{{"kind", "hmc_bundle"}, {"version", hmc}, {"artifact", "/opt/kiln/fw/nvfw_" + hmc + "_custom_prod-signed.fwpkg"}, {"sha256", sha('a')}},
            {{"kind", "nic"}, {"version", nic}, {"artifact", "/opt/kiln/fw/fw-ConnectX7-rel-" + nic_file + "-MCX750500B-0D00_Ax.bin"}, {"sha256", sha('b')}},
            {{"kind", "driver"}, {"version", driver}, {"artifact", "/opt/kiln/drivers/NVIDIA-Linux-aarch64-" + driver + ".run"}, {"sha256", sha('c')}}}}};
}

// kiln-vfleet: every host of the fleet simulated in one process, speaking the agent protocol
// to `kilnd_url`. Faults at start (--fault HOST:KIND[:k=v,...]) and at run time through its
// control file ("fault HOST KIND[:k=v,...]" / "clear HOST [KIND]", applied within 2 s).
class VirtualFleet {
 public:
  VirtualFleet(const std::string& binary, const std::string& dir, const std::string& kilnd_url, const std::string& enroll_token_file,
               const std::string& admin_token_file, double time_scale, const std::vector<std::string>& extra) : dir_(dir) {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/control").flush();
    std::ostringstream scale;
    scale << time_scale;
    std::vector<std::string> args = {binary, "--url", kilnd_url, "--enroll-token-file", enroll_token_file,
                                     "--token-file", admin_token_file, "--hosts", "all", "--time-scale", scale.str(),
                                     "--poll-wait", "5", "--status-interval", "5", "--state-dir", dir_ + "/state",
                                     "--connections", "256", "--idle-poll", "2", "--seed", "7", "--control-file", dir_ + "/control"};
    args.insert(args.end(), extra.begin(), extra.end());
    child_ = std::make_unique<Child>(args, std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}},
                                     dir_ + "/vfleet.log");
  }
  void control(const std::string& line) {
    std::ofstream out(dir_ + "/control", std::ios::app);
    out << line << "\n";
  }
  std::string logTail(int lines = 40) const { return tailLines(readFile(dir_ + "/vfleet.log"), lines); }

 private:
  std::string dir_;
  std::unique_ptr<Child> child_;
};

// Samples GET /rollouts/{id}/pods every ~100 ms from its own thread and keeps the largest
// number of pods seen in flight (draining, upgrading or validating) at once. Tolerates kilnd
// being down between samples.
class InFlightSampler {
 public:
  InFlightSampler(std::string url, std::string token, std::string rollout) : rollout_(std::move(rollout)) {
    http::ClientOptions o;
    o.base_url = std::move(url);
    o.token = std::move(token);
    o.timeout = 3s;
    client_ = std::make_unique<http::Client>(o);
    thread_ = std::thread([this] { loop(); });
  }
  ~InFlightSampler() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int max() const { return max_; }
  int samples() const { return samples_; }
  std::string worst() const { return worst_; }

 private:
  void loop() {
    while (!stop_) {
      auto r = client_->request("GET", "/api/v1/rollouts/" + rollout_ + "/pods");
      if (r.ok() && r->status == 200) {
        auto doc = json::parse(r->body, nullptr, false);
        int n = 0;
        for (const auto& p : doc["items"]) {
          const std::string phase = p.value("phase", "");
          n += phase == "draining" || phase == "upgrading" || phase == "validating";
        }
        ++samples_;
        if (n > max_) {
          max_ = n;
          worst_ = doc.dump();
        }
      }
      std::this_thread::sleep_for(100ms);
    }
  }
  std::string rollout_;
  std::unique_ptr<http::Client> client_;
  std::atomic<bool> stop_{false};
  std::atomic<int> max_{0}, samples_{0};
  std::string worst_;  // written by the thread, read after stop()
  std::thread thread_;
};

// A rollout of every pod of the fleet file's building, at most two at a time, seen through
// `url` (kilnd, or a balancer in front of it): what the replica and failover tests take apart
// underneath and then check was done once, within its limit.
class BuildingRolloutTest : public E2eTest {
 protected:
  // Imports `pods` pods, starts the virtual fleet and the rollout against `url`, samples the
  // pods in flight; the rollout's id.
  std::string startBuildingRollout(const std::string& url, int pods) {
    importFleet(fleetYaml(pods, "available"));
    fleet_ = std::make_unique<VirtualFleet>(KILN_VFLEET_BIN, dir_ + "/vfleet", url, enrollTokenFile(),
                                            kilnd_->adminTokenFile(), 0.002, std::vector<std::string>{});
    json b = call("POST", "/api/v1/bundles", bundleDoc("1.0", "GB200-P4975_0004_250301.1.0", "28.43.3010", "575.57.08"), 201);
    json policy = {{"canary_pods", 0}, {"waves", {"100%"}}, {"soak", "0s"}, {"max_concurrent_pods", kMaxInFlight},
                   {"capacity_floor", {{"max_percent_down", 100}}}, {"failure_budget", {{"pods", 0}}}};
    json r = call("POST", "/api/v1/rollouts",
                  {{"bundle", b.value("id", "")}, {"selector", {{"buildings", {"e2e-b01"}}}}, {"policy", policy}, {"start", true}},
                  201);
    const std::string id = r.value("id", "");
    watchRollout(id);
    sampler_ = std::make_unique<InFlightSampler>(url, kilnd_->adminToken(), id);
    return id;
  }

  // True once a pod of the rollout is in `phase` (within `timeout`).
  bool waitForAPodIn(const std::string& id, const std::string& phase, std::chrono::milliseconds timeout) {
    return waitUntil([&] {
      auto pods = tryGet("/api/v1/rollouts/" + id + "/pods");
      if (!pods) return false;
      for (const auto& p : (*pods)["items"])
        if (p.value("phase", "") == phase) return true;
      return false;
    }, timeout);
  }

  // The rollout completed with every one of `pods` pods upgraded once (attempt 1, one
  // firmware-upgrade run each) and never more than kMaxInFlight in flight.
  void expectCompletedOnceWithinTheLimit(const std::string& id, int pods) {
    json done = waitRollout(id, {"completed", "halted", "aborted"}, 180s);
    sampler_->stop();
    EXPECT_EQ(done.value("state", ""), "completed") << done.dump();
    EXPECT_EQ(done["counts"].value("succeeded", 0), pods);
    EXPECT_LE(sampler_->max(), kMaxInFlight) << "max_concurrent_pods crossed: " << sampler_->worst();
    EXPECT_GT(sampler_->samples(), 10);
    const json rows = call("GET", "/api/v1/rollouts/" + id + "/pods");
    for (const auto& p : rows["items"]) {
      EXPECT_EQ(p.value("phase", ""), "succeeded") << p.dump();
      EXPECT_EQ(p.value("attempt", 0), 1) << p.dump();
    }
    const json runs = call("GET", "/api/v1/workflow-runs?workflow=firmware-upgrade&limit=100");
    EXPECT_EQ(runs["items"].size(), static_cast<std::size_t>(pods)) << "one upgrade run per pod: " << runs.dump();
  }

  void TearDown() override {
    if (HasFailure() && fleet_) std::cerr << "---- kiln-vfleet log tail:\n" << fleet_->logTail() << "\n";
    sampler_.reset();
    fleet_.reset();
    E2eTest::TearDown();
  }

  static constexpr int kMaxInFlight = 2;
  std::unique_ptr<VirtualFleet> fleet_;
  std::unique_ptr<InFlightSampler> sampler_;
};

}  // namespace kiln::e2e
