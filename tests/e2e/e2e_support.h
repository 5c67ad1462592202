#pragma once
// The end-to-end tier's harness: a fresh PostgreSQL database, real kilnd processes
// (tests/support/kilnd_process.h), one real kiln-agent process per simulated host with its own
// kiln-hwsim state directory and tool shims, and an admin API client. Everything is a real
// process talking over real sockets; nothing is faked.
//
// On a test failure the fixture prints every run and rollout the test registered with
// watch() as JSON, the tail of each agent log it registered with watchAgent(), and (through
// KilndProcess) the tail of kilnd's log.
//
// Binaries come from compile definitions: KILN_AGENT_BIN, KILN_HWSIM_BIN, KILN_WORKFLOWS_DIR
// (the repository's workflows/); rollout_test.cc also takes KILN_VFLEET_BIN (the virtual fleet).
// Not thread-safe: one test thread drives a fixture (the sampler in rollout tests uses its own
// client).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "orchestrator/http/client.h"
#include "tests/support/child_process.h"
#include "tests/support/kilnd_process.h"
#include "tests/support/test_db.h"

namespace kiln::e2e {

using nlohmann::json;
using namespace std::chrono_literals;

// A child process with the environment given (tests/support/child_process.h).
class Child : public kiln::testing::ChildProcess {
 public:
  Child(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
        const std::string& log_path)
      : kiln::testing::ChildProcess(args, log_path, {env, false}) {}
};

// Runs a command to completion (at most `timeout`); its exit status and combined output.
struct CommandResult {
  int status = -1;
  std::string output;
};
CommandResult runCommand(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                         std::chrono::milliseconds timeout = 20s);

std::string readFile(const std::string& path);
// The last `lines` lines of a text.
std::string tailLines(const std::string& text, int lines);

// Polls `pred` every `every` until it is true or `timeout` passed. Returns its last value.
bool waitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
               std::chrono::milliseconds every = 100ms);

// One kiln-agent per host, each with DIR/<host>/{agent,hwsim} and the kiln-hwsim shims in
// DIR/bin, the simulator at `time_scale`.
class AgentFleet {
 public:
  AgentFleet(std::string dir, std::string kilnd_url, std::string enroll_token_file, double time_scale);
  ~AgentFleet();

  // Starts (or starts again, with the same state directory) the agent of `host`.
  void start(const std::string& host);
  void startAll(const std::vector<std::string>& hosts);
  // Sends `sig` and reaps the agent (SIGKILL after 15 s).
  int stop(const std::string& host, int sig = SIGTERM);
  bool running(const std::string& host);
  // `kiln-hwsim ARGS...` against the host's simulator state (e.g. {"fault", "set", ...}).
  CommandResult hwsim(const std::string& host, const std::vector<std::string>& args);
  // The simulator state of the host (`kiln-hwsim state`).
  json simState(const std::string& host);
  std::string logTail(const std::string& host, int lines = 30) const;
  std::map<std::string, std::string> hwsimEnv(const std::string& host) const;
  std::string agentDir(const std::string& host) const { return dir_ + "/" + host + "/agent"; }

  // More kiln-agent flags for the agents started from now on (--artifact-mirror ...).
  std::vector<std::string> extra_args;

 private:
  std::string dir_, url_, enroll_file_;
  double time_scale_;
  std::map<std::string, std::unique_ptr<Child>> agents_;
};

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Starts another kilnd replica on the same database.
  std::unique_ptr<testing::KilndProcess> newKilnd();

  // A request with the admin token; expects `expect` (0: any status) and returns the body as
  // JSON (null when not JSON). A wrong status is a test failure naming the call and the body.
  json call(const std::string& method, const std::string& path, const json& body = nullptr, int expect = 200);
  // The same on another replica.
  json callOn(testing::KilndProcess& kilnd, const std::string& method, const std::string& path,
              const json& body = nullptr, int expect = 200);
  // GET without judging the status (polling across restarts): nullopt on transport errors or
  // a status other than 200.
  std::optional<json> tryGet(const std::string& path);

  json importFleet(const std::string& yaml);
  std::vector<std::string> podHosts(const std::string& pod);
  // Creates an enrolment token and writes it to a file; returns the file.
  std::string enrollTokenFile();
  std::unique_ptr<AgentFleet> makeAgents(double time_scale = 0.001);

  // POST /workflow-runs; returns the run (201 expected) and watches it.
  json startRun(const json& body);
  // Waits until the run is no longer running; returns its last view (and fails the test with
  // the view when it is still running at the deadline).
  json waitRun(const std::string& id, std::chrono::milliseconds timeout);
  json waitRollout(const std::string& id, const std::set<std::string>& states, std::chrono::milliseconds timeout);
  json host(const std::string& id) { return call("GET", "/api/v1/hosts/" + id); }

  // Printed with the test's failure.
  void watchRun(const std::string& id) { watched_runs_.insert(id); }
  void watchRollout(const std::string& id) { watched_rollouts_.insert(id); }
  void watchAgent(const std::string& host) { watched_agents_.insert(host); }

  std::string dir_;
  // More kilnd flags and environment for every replica (set before E2eTest::SetUp).
  std::vector<std::string> kilnd_args_;
  std::map<std::string, std::string> kilnd_env_;
  std::unique_ptr<testing::TestDatabase> db_;
  std::unique_ptr<testing::KilndProcess> kilnd_;
  std::unique_ptr<http::Client> api_;
  std::unique_ptr<AgentFleet> agents_;
  std::set<std::string> watched_runs_, watched_rollouts_, watched_agents_;
};

// A fleet file with one site and building "e2e-b01" holding `pods` catalina pods
// "e2e-b01-p01".., each in `state` (incoming | available), at the simulator's default catalina
// versions (so the agents' first inventory changes nothing).
std::string fleetYaml(int pods, const std::string& state);

// The step records of `step` in `host`'s row of a run view.
std::vector<json> stepRecords(const json& run, const std::string& host, const std::string& step);
const json* hostRow(const json& run, const std::string& host);

}  // namespace kiln::e2e
