#include "tests/e2e/e2e_support.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace kiln::e2e {
namespace fs = std::filesystem;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string tailLines(const std::string& text, int lines) {
  std::size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int i = 0; i < lines && pos > 0; ++i) {
    auto nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    pos = nl;
  }
  return text.substr(pos == 0 ? 0 : pos + 1);
}

CommandResult runCommand(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                         std::chrono::milliseconds timeout) {
  char tmpl[] = "/tmp/kiln-e2e-cmd-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  KILN_CHECK(fd >= 0);
  ::close(fd);
  CommandResult r;
  {
    Child child(args, env, tmpl);
    r.status = child.waitExit(timeout);
  }
  r.output = readFile(tmpl);
  ::unlink(tmpl);
  return r;
}

bool waitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout, std::chrono::milliseconds every) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(every);
  }
}

// ---- AgentFleet

AgentFleet::AgentFleet(std::string dir, std::string kilnd_url, std::string enroll_token_file, double time_scale)
    : dir_(std::move(dir)), url_(std::move(kilnd_url)), enroll_file_(std::move(enroll_token_file)), time_scale_(time_scale) {
  fs::create_directories(dir_);
  auto r = runCommand({KILN_HWSIM_BIN, "install-shims", dir_ + "/bin"}, {{"PATH", "/usr/bin:/bin"}});
  KILN_CHECK(r.status == 0);
}

AgentFleet::~AgentFleet() {
  for (auto& [host, child] : agents_) child->signal(SIGKILL);
  agents_.clear();
}

std::map<std::string, std::string> AgentFleet::hwsimEnv(const std::string& host) const {
  std::ostringstream scale;
  scale << time_scale_;
  return {{"KILN_HWSIM_DIR", dir_ + "/" + host + "/hwsim"},
          {"KILN_HWSIM_HOST", host},
          {"KILN_HWSIM_TIME_SCALE", scale.str()},
          {"PATH", "/usr/bin:/bin"},
          {"HOME", dir_ + "/" + host}};
}

void AgentFleet::start(const std::string& host) {
  auto& slot = agents_[host];
  if (slot && slot->running()) return;
  fs::create_directories(dir_ + "/" + host + "/agent");
  std::vector<std::string> argv{KILN_AGENT_BIN, "run", "--url", url_, "--host", host, "--state-dir",
                                dir_ + "/" + host + "/agent", "--enroll-token-file", enroll_file_, "--path-prepend",
                                dir_ + "/bin", "--env-allow", "KILN_HWSIM_DIR,KILN_HWSIM_HOST,KILN_HWSIM_TIME_SCALE",
                                "--poll-wait", "25", "--stop-grace", "2", "--log-level", "info"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  slot = std::make_unique<Child>(argv, hwsimEnv(host), dir_ + "/" + host + "/agent.log");
}

void AgentFleet::startAll(const std::vector<std::string>& hosts) {
  for (const auto& h : hosts) start(h);
}

int AgentFleet::stop(const std::string& host, int sig) {
  auto it = agents_.find(host);
  if (it == agents_.end()) return -1;
  it->second->signal(sig);
  int status = it->second->waitExit(15s);
  if (status < 0) {
    it->second->signal(SIGKILL);
    status = it->second->waitExit(15s);
  }
  return status;
}

bool AgentFleet::running(const std::string& host) {
  auto it = agents_.find(host);
  return it != agents_.end() && it->second->running();
}

CommandResult AgentFleet::hwsim(const std::string& host, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {KILN_HWSIM_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv, hwsimEnv(host));
}

json AgentFleet::simState(const std::string& host) {
  auto r = hwsim(host, {"state"});
  return json::parse(r.output, nullptr, false);
}

std::string AgentFleet::logTail(const std::string& host, int lines) const {
  return tailLines(readFile(dir_ + "/" + host + "/agent.log"), lines);
}

// ---- E2eTest

void E2eTest::SetUp() {
  char tmpl[] = "/tmp/kiln-e2e-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  dir_ = tmpl;
  db_ = std::make_unique<testing::TestDatabase>();
  kilnd_ = newKilnd();
  ASSERT_TRUE(kilnd_->start().ok()) << kilnd_->logTail();
  http::ClientOptions o;
  o.base_url = kilnd_->url();
  o.token = kilnd_->adminToken();
  o.timeout = 15s;
  api_ = std::make_unique<http::Client>(o);
}

std::unique_ptr<testing::KilndProcess> E2eTest::newKilnd() {
  testing::KilndOptions o;
  o.database_url = db_->url();
  o.extra_args = {"--workflows-dir", KILN_WORKFLOWS_DIR};
  o.extra_args.insert(o.extra_args.end(), kilnd_args_.begin(), kilnd_args_.end());
  o.extra_env = kilnd_env_;
  if (kilnd_) o.admin_token_file = kilnd_->adminTokenFile();
  return std::make_unique<testing::KilndProcess>(o);
}

void E2eTest::TearDown() {
  if (HasFailure() && kilnd_) {
    for (const auto& id : watched_runs_) {
      auto r = tryGet("/api/v1/workflow-runs/" + id);
      std::cerr << "---- run " << id << ":\n" << (r ? r->dump(1) : std::string("(unavailable)")) << "\n";
    }
    for (const auto& id : watched_rollouts_) {
      for (const std::string suffix : {"", "/pods", "/events"}) {
        auto r = tryGet("/api/v1/rollouts/" + id + suffix);
        std::cerr << "---- rollout " << id << suffix << ":\n" << (r ? r->dump(1) : std::string("(unavailable)")) << "\n";
      }
    }
    if (agents_)
      for (const auto& h : watched_agents_) std::cerr << "---- agent " << h << " log tail:\n" << agents_->logTail(h) << "\n";
  }
  agents_.reset();  // agents first: they would only retry against a stopped kilnd
  kilnd_.reset();   // prints kilnd's log tail after a failure
  std::error_code ec;
  if (!HasFailure()) fs::remove_all(dir_, ec);
  else std::cerr << "e2e files kept in " << dir_ << "\n";
}

json E2eTest::callOn(testing::KilndProcess& kilnd, const std::string& method, const std::string& path,
                     const json& body, int expect) {
  http::ClientOptions o;
  o.base_url = kilnd.url();
  o.token = kilnd.adminToken().empty() ? kilnd_->adminToken() : kilnd.adminToken();
  o.timeout = 15s;
  http::Client client(o);
  auto r = client.request(method, path, body.is_null() ? "" : body.dump());
  if (!r.ok()) {
    ADD_FAILURE() << method << " " << kilnd.url() << path << ": " << r.error().message;
    return json();
  }
  if (expect != 0) {
    EXPECT_EQ(r->status, expect) << method << " " << path << " answered " << r->body;
  }
  return json::parse(r->body, nullptr, false);
}

json E2eTest::call(const std::string& method, const std::string& path, const json& body, int expect) {
  auto r = api_->request(method, path, body.is_null() ? "" : body.dump());
  if (!r.ok()) {
    ADD_FAILURE() << method << " " << path << ": " << r.error().message;
    return json();
  }
  if (expect != 0) {
    EXPECT_EQ(r->status, expect) << method << " " << path << " answered " << r->body;
  }
  auto doc = json::parse(r->body, nullptr, false);
  return doc.is_discarded() ? json() : doc;
}

std::optional<json> E2eTest::tryGet(const std::string& path) {
  auto r = api_->request("GET", path);
  if (!r.ok() || r->status != 200) return std::nullopt;
  auto doc = json::parse(r->body, nullptr, false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

json E2eTest::importFleet(const std::string& yaml) {
  auto r = api_->request("POST", "/api/v1/fleet/import", yaml, "application/yaml");
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return json();
  EXPECT_TRUE(r->status == 200 || r->status == 201) << r->body;
  return json::parse(r->body, nullptr, false);
}

std::vector<std::string> E2eTest::podHosts(const std::string& pod) {
  std::vector<std::string> out;
  auto hosts = call("GET", "/api/v1/hosts?limit=100&pod=" + pod);
  for (const auto& h : hosts["items"]) out.push_back(h["id"].get<std::string>());
  return out;
}

std::string E2eTest::enrollTokenFile() {
  auto token = call("POST", "/api/v1/tokens", json{{"role", "enroll"}, {"name", "e2e agents"}}, 201);
  const std::string path = dir_ + "/enroll-token";
  std::ofstream(path) << token.value("token", "") << "\n";
  return path;
}

std::unique_ptr<AgentFleet> E2eTest::makeAgents(double time_scale) {
  return std::make_unique<AgentFleet>(dir_ + "/agents", kilnd_->url(), enrollTokenFile(), time_scale);
}

json E2eTest::startRun(const json& body) {
  json run = call("POST", "/api/v1/workflow-runs", body, 201);
  if (run.contains("id")) watchRun(run["id"].get<std::string>());
  return run;
}

json E2eTest::waitRun(const std::string& id, std::chrono::milliseconds timeout) {
  watchRun(id);
  json last;
  waitUntil(
      [&] {
        if (auto r = tryGet("/api/v1/workflow-runs/" + id)) last = *r;
        return last.is_object() && last.value("state", "running") != "running";
      },
      timeout, 200ms);
  EXPECT_NE(last.value("state", "running"), "running")
      << "run " << id << " did not finish within " << timeout.count() << " ms";
  return last;
}

json E2eTest::waitRollout(const std::string& id, const std::set<std::string>& states, std::chrono::milliseconds timeout) {
  watchRollout(id);
  json last;
  waitUntil(
      [&] {
        if (auto r = tryGet("/api/v1/rollouts/" + id)) last = *r;
        return last.is_object() && states.count(last.value("state", "")) > 0;
      },
      timeout, 200ms);
  EXPECT_TRUE(last.is_object() && states.count(last.value("state", "")) > 0)
      << "rollout " << id << " did not reach the expected state within " << timeout.count()
      << " ms; it is " << (last.is_object() ? last.value("state", "?") : std::string("unknown"));
  return last;
}

std::string fleetYaml(int pods, const std::string& state) {
  // kiln-hwsim's default catalina versions (agents/sim/host_state.cc).
  std::string y =
      "versions:\n"
      "  gpu_vbios: \"97.00.82.00.5F\"\n"
      "  hmc_bundle: \"GB200-P4975_0004_250115.1.0\"\n"
      "  nic: \"28.43.2026\"\n"
      "  bmc: \"25.01-3\"\n"
      "  sbios: \"02.03.12\"\n"
      "  driver: \"570.124.06\"\n"
      "  nvswitch: \"36.2501.0004\"\n"
      "sites:\n"
      "  - name: e2e\n"
      "    buildings:\n"
      "      - name: e2e-b01\n"
      "        pods:\n";
  for (int i = 1; i <= pods; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "e2e-b01-p%02d", i);
    y += std::string("          - {name: ") + name + ", platform: catalina, state: " + state + "}\n";
  }
  return y;
}

const json* hostRow(const json& run, const std::string& host) {
  if (!run.contains("hosts")) return nullptr;
  for (const auto& h : run["hosts"])
    if (h.value("host", "") == host) return &h;
  return nullptr;
}

std::vector<json> stepRecords(const json& run, const std::string& host, const std::string& step) {
  std::vector<json> out;
  const json* h = hostRow(run, host);
  if (!h || !h->contains("steps")) return out;
  for (const auto& s : (*h)["steps"])
    if (s.value("step", "") == step) out.push_back(s);
  return out;
}

}  // namespace kiln::e2e
