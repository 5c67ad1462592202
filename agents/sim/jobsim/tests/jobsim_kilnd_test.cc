// kiln-jobsim against a real kilnd (label api): both run as child processes on a throwaway
// database (tests/support/test_db.h, KILN_TEST_PG from deploy/test.sh). No agents: the
// rollout's part under test ends when its pod leaves draining.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/http/client.h"
#include "tests/support/kilnd_process.h"
#include "tests/support/test_db.h"

namespace kiln::jobsim {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kPod = "t01-b01-p0001";
constexpr const char* kOtherPod = "t01-b01-p0002";

// kiln-jobsim as a child process, its stderr in a log file; SIGKILLed with the test process.
class JobSim {
 public:
  JobSim(std::vector<std::string> args, std::string log) : log_(std::move(log)) {
    args.insert(args.begin(), KILN_JOBSIM_BIN);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    KILN_CHECK(fd >= 0);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    KILN_CHECK(pid_ >= 0);
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fd);
  }
  ~JobSim() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (::testing::Test::HasFailure()) std::fprintf(stderr, "---- kiln-jobsim log\n%s\n", log().c_str());
  }
  // SIGTERM, then the exit status within `limit` (-1 if it had to be killed).
  int terminate(std::chrono::milliseconds limit) {
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(20ms);
    }
    return -1;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream buf;
    buf << in.rdbuf();
    return buf.str();
  }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

bool waitFor(const std::function<bool()>& done, std::chrono::milliseconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return done();
}

class JobSimKilndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    jobsim_port_ = testing::freeLoopbackPort();
    hook_ = "http://127.0.0.1:" + std::to_string(jobsim_port_) + "/release";
    kilnd_ = std::make_unique<testing::KilndProcess>(testing::KilndOptions{
        .database_url = db_.url(),
        .extra_args = {"--scheduler-hook", hook_, "--workflows-dir", KILN_WORKFLOWS_DIR}});
    auto started = kilnd_->start();
    ASSERT_TRUE(started.ok()) << started.error().message;
    admin_ = std::make_unique<http::Client>(http::ClientOptions{.base_url = kilnd_->url(), .token = kilnd_->adminToken()});
    // Two catalina pods of 18 hosts (2 of them spares) each.
    json pods = json::array({{{"name", kPod}, {"platform", "catalina"}}, {{"name", kOtherPod}, {"platform", "catalina"}}});
    json fleet = {{"versions", {{"driver", "570.133.20"}}},
                  {"sites", {{{"name", "t01"}, {"buildings", {{{"name", "t01-b01"}, {"pods", pods}}}}}}}};
    auto imported = call("POST", "/api/v1/fleet/import", fleet.dump());
    ASSERT_EQ(imported.status, 201) << imported.body;
    auto token = call("POST", "/api/v1/tokens", json{{"role", "operator"}, {"name", "kiln-jobsim"}}.dump());
    ASSERT_EQ(token.status, 201) << token.body;
    token_file_ = kilnd_->tempDir() + "/jobsim.token";
    std::ofstream(token_file_) << json::parse(token.body)["token"].get<std::string>() << "\n";
  }

  http::ClientResponse call(const std::string& method, const std::string& path, const std::string& body = "") {
    auto r = admin_->request(method, path, body);
    if (!r.ok()) {
      ADD_FAILURE() << method << " " << path << ": " << r.error().message;
      return {};
    }
    return *r;
  }

  std::unique_ptr<JobSim> startJobSim(double hold_s) {
    std::ostringstream hold;
    hold << hold_s;
    auto sim = std::make_unique<JobSim>(
        std::vector<std::string>{"--url", kilnd_->url(), "--token-file", token_file_, "--listen",
                                 "127.0.0.1:" + std::to_string(jobsim_port_), "--hold", hold.str(), "--allocate", kPod},
        kilnd_->tempDir() + "/jobsim.log");
    return sim;
  }

  // host id -> state, spares marked with a trailing '*'.
  std::map<std::string, std::string> podHosts(const std::string& pod) {
    std::map<std::string, std::string> out;
    auto r = call("GET", "/api/v1/pods/" + pod);
    const json doc = json::parse(r.body, nullptr, false);
    if (!doc.is_object() || !doc.contains("hosts")) return out;
    for (const auto& h : doc["hosts"])
      out[h["id"].get<std::string>() + (h.value("spare", false) ? "*" : "")] = h["state"].get<std::string>();
    return out;
  }
  int countState(const std::string& pod, const std::string& state, bool spares) {
    int n = 0;
    for (const auto& [id, s] : podHosts(pod))
      if (s == state && (id.back() == '*') == spares) ++n;
    return n;
  }

  testing::TestDatabase db_;
  std::unique_ptr<testing::KilndProcess> kilnd_;
  std::unique_ptr<http::Client> admin_;
  int jobsim_port_ = 0;
  std::string hook_, token_file_;
};

TEST_F(JobSimKilndTest, AllocatesThePodAndReleasesItTheHoldAfterKilndAsks) {
  auto sim = startJobSim(3);
  ASSERT_TRUE(waitFor([&] { return countState(kPod, "allocated", false) == 16; })) << json(podHosts(kPod)).dump();
  EXPECT_EQ(countState(kPod, "available", true), 2) << "spares are not given to jobs";
  EXPECT_EQ(countState(kOtherPod, "available", false), 16) << "only the --allocate pods";
  std::vector<std::string> allocated;
  for (const auto& [id, s] : podHosts(kPod))
    if (s == "allocated") allocated.push_back(id);
  ASSERT_EQ(allocated.size(), 16u);
  const std::string first = allocated.front();
  auto events = call("GET", "/api/v1/hosts/" + first + "/events");
  EXPECT_NE(events.body.find("job jobsim-" + std::string(kPod)), std::string::npos) << events.body;
  http::Client hook({.base_url = "http://127.0.0.1:" + std::to_string(jobsim_port_), .timeout = 3000ms});
  // What kilnd sends, twice (a second kilnd replica, or a restart, asks again).
  const std::string ask = json{{"action", "release"}, {"rollout", "ro-x"}, {"pod", kPod}, {"hosts", allocated}}.dump();
  const auto asked = std::chrono::steady_clock::now();
  auto r = hook.request("POST", "/release", ask);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(json::parse(r->body)["accepted"], true);
  EXPECT_EQ(json::parse(r->body)["release_in_s"], 3.0);
  r = hook.request("POST", "/", ask);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 202);
  EXPECT_EQ(json::parse(r->body)["duplicate"], true);
  // Bad JSON.
  r = hook.request("POST", "/release", "{oops");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body, nullptr, false)["error"]["code"], "invalid_argument") << r->body;

  // Held: nothing is released before the hold.
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(countState(kPod, "allocated", false), 16);
  ASSERT_TRUE(waitFor([&] { return countState(kPod, "available", false) == 16; }, 15s)) << json(podHosts(kPod)).dump();
  EXPECT_GE(std::chrono::steady_clock::now() - asked, 2900ms);
  events = call("GET", "/api/v1/hosts/" + first + "/events");
  EXPECT_NE(events.body.find("checkpointed and left for rollout ro-x"), std::string::npos) << events.body;
  // One release, not two, although kilnd asked twice.
  int releases = 0;
  const json history = json::parse(events.body);
  for (const auto& e : history["items"])
    if (e.value("action", "") == "release") ++releases;
  EXPECT_EQ(releases, 1) << events.body;

  EXPECT_EQ(sim->terminate(10s), 0) << sim->log();
  const std::string log = sim->log();
  EXPECT_NE(log.find("released 16 of 16 hosts"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped"), std::string::npos) << log;
}

// kilnd's hook with the pod allocated before the rollout starts: the pod the limits would admit
// is held at admission with "allocated", kilnd asks the scheduler (once, an event in the
// rollout), and the pod drains once the job lets go.
TEST_F(JobSimKilndTest, ARolloutWaitsForTheHeldPodThenDrainsIt) {
  auto sim = startJobSim(4);
  ASSERT_TRUE(waitFor([&] { return countState(kPod, "allocated", false) == 16; })) << json(podHosts(kPod)).dump();

  const std::string sha(64, 'a');
  json bundle = {{"name", "jobsim-fw"},
                 {"version", "1.0"},
                 {"platforms", {"catalina"}},
                 {"components",
                  {{{"kind", "driver"}, {"version", "580.65.06"},
                    {"artifact", "/opt/kiln/drivers/NVIDIA-Linux-aarch64-580.65.06.run"}, {"sha256", sha}}}}};
  auto b = call("POST", "/api/v1/bundles", bundle.dump());
  ASSERT_EQ(b.status, 201) << b.body;
  json policy = {{"canary_pods", 1}, {"waves", {"100%"}}, {"soak", "0s"}, {"max_concurrent_pods", 1},
                 {"capacity_floor", {{"max_percent_down", 100}}}, {"failure_budget", {{"pods", 1}}},
                 {"allocated", "wait"}};
  auto r = call("POST", "/api/v1/rollouts",
                json{{"bundle", json::parse(b.body)["id"]}, {"selector", {{"pods", {kPod}}}}, {"policy", policy},
                     {"start", true}}
                    .dump());
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = json::parse(r.body)["id"].get<std::string>();
  auto pod = [&] {
    const json items = json::parse(call("GET", "/api/v1/rollouts/" + id + "/pods").body, nullptr, false)["items"];
    return items.is_array() && !items.empty() ? items[0] : json::object();
  };
  ASSERT_TRUE(waitFor([&] { return pod().value("waiting_reason", "").rfind("allocated", 0) == 0; }, 10s))
      << pod().dump();
  // The job holds the pod: still waiting a little later, nothing drained.
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(pod().value("waiting_reason", "").rfind("allocated", 0), 0u) << pod().dump();
  EXPECT_EQ(countState(kPod, "allocated", false), 16);
  // After the hold the hosts are released and drained; the pod leaves draining (its upgrade
  // run then waits for agents this test does not start).
  ASSERT_TRUE(waitFor([&] { return countState(kPod, "allocated", false) == 0; }, 20s))
      << json(podHosts(kPod)).dump() << "\n" << sim->log();
  ASSERT_TRUE(waitFor([&] {
    const std::string phase = pod().value("phase", "");
    return phase != "pending" && phase != "draining";
  }, 20s)) << pod().dump();
  EXPECT_EQ(countState(kPod, "maintenance", false), 16) << json(podHosts(kPod)).dump();
  auto abort = call("POST", "/api/v1/rollouts/" + id + "/abort", json{{"reason", "test over"}}.dump());
  EXPECT_EQ(abort.status, 200) << abort.body;
  EXPECT_TRUE(waitFor([&] {
    return json::parse(call("GET", "/api/v1/rollouts/" + id).body, nullptr, false).value("state", "") == "aborted";
  }));
  EXPECT_NE(sim->log().find("pod " + std::string(kPod) + ": release of 16 hosts asked (rollout " + id), std::string::npos)
      << sim->log();
  const std::string events = call("GET", "/api/v1/rollouts/" + id + "/events").body;
  EXPECT_NE(events.find("asked the job scheduler to release 16 allocated hosts"), std::string::npos) << events;
  EXPECT_EQ(sim->terminate(10s), 0);
}

}  // namespace
}  // namespace kiln::jobsim
