// Kiln in the operators' stack (issue 16), against a real kilnd and Debian's promtool (2.42):
// /metrics passes `promtool check metrics`; the shipped rules and their unit tests pass
// `promtool check rules` / `promtool test rules`; the example config passes `promtool check
// config`; every query of the Grafana dashboard and of the rules parses and names only series
// kilnd exports or a rule records; `--log-format json` writes one parsable object per line with
// the request's id, actor and objects.

#include <spawn.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/api/api_fixture.h"

extern char** environ;

namespace kiln::apitest {
namespace {

namespace fs = std::filesystem;
const std::string kPrometheusDir = std::string(KILN_DEPLOY_DIR) + "/prometheus";
const std::string kDashboard = std::string(KILN_DEPLOY_DIR) + "/grafana/kiln-dashboard.json";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct ToolRun {
  int status = -1;
  std::string output;
};

// Runs argv (no shell) in `dir`, stdin from `input` (a file; empty: /dev/null), stdout and
// stderr together into the result.
ToolRun run(const std::vector<std::string>& argv, const std::string& dir = "", const std::string& input = "") {
  char out_path[] = "/tmp/kiln-monitoring-out.XXXXXX";
  const int out_fd = ::mkstemp(out_path);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, input.empty() ? "/dev/null" : input.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  if (!dir.empty()) posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  ToolRun r;
  if (posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ) == 0) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  posix_spawn_file_actions_destroy(&fa);
  ::close(out_fd);
  r.output = slurp(out_path);
  ::unlink(out_path);
  return r;
}

std::string tempDir() {
  char dir[] = "/tmp/kiln-monitoring.XXXXXX";
  return ::mkdtemp(dir);
}

// Metric names a /metrics text declares (# TYPE lines), with a histogram's series names.
std::set<std::string> exportedNames(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    std::istringstream parts(line.substr(7));
    std::string name, type;
    parts >> name >> type;
    out.insert(name);
    if (type == "histogram")
      for (const char* suffix : {"_bucket", "_sum", "_count"}) out.insert(name + suffix);
  }
  return out;
}

// The metric names a PromQL expression reads: identifiers that are neither functions, keywords,
// label names (inside {...}, by (...), on (...) and the like), strings, numbers nor durations.
std::set<std::string> seriesIn(std::string expr) {
  expr = std::regex_replace(expr, std::regex(R"("(\\.|[^"\\])*"|'(\\.|[^'\\])*')"), " ");
  expr = std::regex_replace(expr, std::regex(R"(\{[^}]*\})"), " ");
  expr = std::regex_replace(expr, std::regex(R"(\[[^\]]*\])"), " ");
  expr = std::regex_replace(expr, std::regex(R"(\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\))"), " ");
  static const std::set<std::string> kKeywords = {"and", "or", "unless", "bool", "offset", "inf", "nan", "Inf", "NaN",
                                                  "by", "without", "on", "ignoring", "group_left", "group_right"};
  std::set<std::string> out;
  std::regex ident(R"([A-Za-z_:][A-Za-z0-9_:]*)");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), ident); it != std::sregex_iterator(); ++it) {
    const auto end = static_cast<std::size_t>(it->position() + it->length());
    const auto next = expr.find_first_not_of(" \t\n", end);
    if (next != std::string::npos && expr[next] == '(') continue;  // a function or aggregation
    const auto begin = static_cast<std::size_t>(it->position());
    if (begin > 0 && (std::isdigit(static_cast<unsigned char>(expr[begin - 1])) || expr[begin - 1] == '.')) continue;  // 5m, 1e3
    if (kKeywords.count(it->str())) continue;
    out.insert(it->str());
  }
  return out;
}

// Every `expr` of the dashboard's panels, Grafana variables replaced as a query would see them.
void collectExprs(const json& j, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "expr" && it->is_string()) out.push_back(*it);
      else collectExprs(*it, out);
    }
  } else if (j.is_array()) {
    for (const auto& e : j) collectExprs(e, out);
  }
}

std::string substituteGrafanaVariables(std::string e) {
  e = std::regex_replace(e, std::regex(R"(\$__(rate_)?interval|\$__range)"), "5m");
  return std::regex_replace(e, std::regex(R"(\$\{?[A-Za-z_][A-Za-z0-9_]*(:[a-z]+)?\}?)"), ".*");
}

// expr of every rule in a rule file, with the names the recording rules define.
void ruleExprs(const std::string& file, std::vector<std::string>& exprs, std::set<std::string>& recorded) {
  YAML::Node doc = YAML::LoadFile(file);
  for (const auto& g : doc["groups"])
    for (const auto& r : g["rules"]) {
      exprs.push_back(r["expr"].as<std::string>());
      if (r["record"]) recorded.insert(r["record"].as<std::string>());
    }
}

class MonitoringTest : public ApiTest {
 protected:
  // The shipped workflows: a bundle is installed by firmware-upgrade.
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", KILN_WORKFLOWS_DIR}; }
  void SetUp() override {
    ApiTest::SetUp();
    if (HasFatalFailure()) return;
    dir_ = tempDir();
  }
  void TearDown() override {
    fs::remove_all(dir_);
    ApiTest::TearDown();
  }

  // A fleet of 4 pods (2 catalina), a driver bundle and a rollout (created, not started) of the
  // two catalina pods: every per-rollout series has a value.
  void fleetAndRollout() {
    importFleet(smallFleet(4));
    json bundle = {{"name", "mon-driver"},
                   {"version", "1.0"},
                   {"platforms", {"catalina"}},
                   {"components",
                    {{{"kind", "driver"},
                      {"version", "580.65.06"},
                      {"artifact", "/opt/kiln/drivers/NVIDIA-Linux-aarch64-580.65.06.run"},
                      {"sha256", std::string(64, 'a')}}}}};
    Reply b = call(*admin_, "POST", "/api/v1/bundles", bundle.dump());
    ASSERT_EQ(b.status, 201) << b.body;
    Reply r = call(*admin_, "POST", "/api/v1/rollouts",
                   json{{"bundle", b.doc()["id"]}, {"selector", {{"pods", {"t01-b01-p0001", "t01-b01-p0003"}}}}}.dump());
    ASSERT_EQ(r.status, 201) << r.body;
    rollout_ = r.doc().value("id", "");
    bundle_ = b.doc().value("id", "");
  }

  // /metrics once this kilnd holds the controller lock (a second or so after start).
  std::string metrics() {
    std::string body;
    for (int i = 0; i < 100; ++i) {
      Reply m = call(*admin_, "GET", "/metrics");
      EXPECT_EQ(m.status, 200) << m.body;
      body = m.body;
      if (body.find("\nkiln_leader 1\n") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return body;
  }

  std::string dir_, rollout_, bundle_;
};

TEST_F(MonitoringTest, MetricsPassPromtoolCheckMetricsAndCarryTheFleetRolloutAndControllerSeries) {
  fleetAndRollout();
  if (HasFatalFailure()) return;
  const std::string text = metrics();
  const std::string file = dir_ + "/metrics.txt";
  std::ofstream(file) << text;
  ToolRun lint = run({"promtool", "check", "metrics"}, "", file);
  EXPECT_EQ(lint.status, 0) << lint.output;
  EXPECT_EQ(lint.output, "") << "promtool's lint findings:\n" << lint.output;

  // 4 pods x 18 hosts, available at import; 4 GPUs each.
  for (const std::string& line : std::vector<std::string>
       {"kiln_leader 1", "kiln_database_up 1", "kiln_building_hosts{building=\"t01-b01\",state=\"available\"} 72",
        "kiln_gpus{state=\"available\"} 288", "kiln_rollout_pod_phase{rollout=\"" + rollout_ + "\",phase=\"pending\"} 2",
        "kiln_rollout_failure_budget_pods{rollout=\"" + rollout_ + "\"} 1",
        "kiln_reliability_north_star_per_8k_gpus_per_day 2", "kiln_reliability_north_star_mtbi_gpu_seconds 345600000",
        "kiln_controller_passes_total{result=\"error\"} 0"})
    EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos) << line << "\n" << text;
  EXPECT_NE(text.find("kiln_rollout_info{rollout=\"" + rollout_ + "\",bundle=\"" + bundle_ + "\",state=\"created\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kiln_controller_last_pass_timestamp_seconds 1"), std::string::npos) << "no pass recorded:\n" << text;
}

TEST_F(MonitoringTest, ShippedRulesAndTheirUnitTestsPassPromtool) {
  ToolRun check = run({"promtool", "check", "rules", "kiln-recording.yml", "kiln-alerts.yml"}, kPrometheusDir);
  EXPECT_EQ(check.status, 0) << check.output;
  ToolRun tests = run({"promtool", "test", "rules", "tests/kiln-recording.test.yml", "tests/kiln-recording-7d.test.yml",
                   "tests/kiln-alerts.test.yml"},
                  kPrometheusDir);
  EXPECT_EQ(tests.status, 0) << tests.output;
  EXPECT_EQ(tests.output.find("FAILED"), std::string::npos) << tests.output;
  // Every alert carries a runbook line and a severity.
  YAML::Node alerts = YAML::LoadFile(kPrometheusDir + "/kiln-alerts.yml");
  int n = 0;
  for (const auto& g : alerts["groups"])
    for (const auto& r : g["rules"]) {
      ++n;
      const std::string name = r["alert"].as<std::string>();
      EXPECT_TRUE(r["annotations"]["runbook"] && !r["annotations"]["runbook"].as<std::string>().empty()) << name;
      EXPECT_TRUE(r["labels"]["severity"]) << name;
    }
  EXPECT_GE(n, 10);
}

TEST_F(MonitoringTest, TheExampleConfigPassesPromtoolWithItsRules) {
  // The config names a token file that exists only in production: a copy beside the rules
  // with the token file pointed at one of ours.
  for (const char* f : {"kiln-recording.yml", "kiln-alerts.yml"}) fs::copy_file(kPrometheusDir + "/" + f, dir_ + "/" + f);
  std::ofstream(dir_ + "/token") << "kiln_x_y\n";
  std::string config = slurp(kPrometheusDir + "/prometheus.yml");
  const std::string from = "/etc/kiln/prometheus-token";
  ASSERT_NE(config.find(from), std::string::npos);
  config.replace(config.find(from), from.size(), dir_ + "/token");
  std::ofstream(dir_ + "/prometheus.yml") << config;
  ToolRun check = run({"promtool", "check", "config", dir_ + "/prometheus.yml"});
  EXPECT_EQ(check.status, 0) << check.output;
}

TEST_F(MonitoringTest, EveryDashboardAndRuleQueryParsesAndNamesOnlySeriesKilnExportsOrRecords) {
  std::set<std::string> known = exportedNames(metrics());
  known.insert("up");  // Prometheus's own, per scrape target
  std::vector<std::string> rule_exprs;
  std::set<std::string> recorded;
  ruleExprs(kPrometheusDir + "/kiln-recording.yml", rule_exprs, recorded);
  ruleExprs(kPrometheusDir + "/kiln-alerts.yml", rule_exprs, recorded);
  known.insert(recorded.begin(), recorded.end());
  ASSERT_GE(recorded.size(), 10u);

  const json dashboard = json::parse(slurp(kDashboard));
  ASSERT_TRUE(dashboard.contains("panels")) << "not a Grafana dashboard";
  std::vector<std::string> panel_exprs;
  collectExprs(dashboard["panels"], panel_exprs);
  ASSERT_GE(panel_exprs.size(), 10u);

  // promtool parses each query as the expr of a recording rule.
  std::ostringstream rules;
  rules << "groups:\n  - name: dashboard\n    rules:\n";
  for (std::size_t i = 0; i < panel_exprs.size(); ++i) {
    json quoted = substituteGrafanaVariables(panel_exprs[i]);  // a JSON string is a YAML string
    rules << "      - record: kiln_dashboard:q" << i << "\n        expr: " << quoted.dump() << "\n";
  }
  std::ofstream(dir_ + "/dashboard-rules.yml") << rules.str();
  ToolRun parse = run({"promtool", "check", "rules", dir_ + "/dashboard-rules.yml"});
  EXPECT_EQ(parse.status, 0) << parse.output << "\n" << rules.str();

  auto expectKnown = [&](const std::string& where, const std::string& expr) {
    for (const auto& name : seriesIn(expr))
      EXPECT_TRUE(known.count(name)) << where << " reads '" << name << "', which kilnd does not export nor a rule record:\n"
                                     << expr;
  };
  for (const auto& e : panel_exprs) expectKnown("the dashboard", substituteGrafanaVariables(e));
  for (const auto& e : rule_exprs) expectKnown("a rule", e);
  // The checker itself: a misspelt series is caught.
  EXPECT_EQ(seriesIn("sum by (state) (rate(kiln_hostz{state=\"a\"}[5m])) > on(x) group_left kiln:y offset 1h"),
            (std::set<std::string>{"kiln_hostz", "kiln:y"}));
}

class JsonLogTest : public ApiTest {
 protected:
  std::vector<std::string> extraKilndArgs() const override { return {"--log-format", "json"}; }
};

TEST_F(JsonLogTest, EveryLineIsJsonAndARequestLineNamesItsIdActorRouteAndObject) {
  std::string id;
  const std::string secret = createToken("operator", "nightly-ci", &id);
  auto op = client(secret);
  auto r = op->request("GET", "/api/v1/rollouts/ro-77", "", "application/json", {{"X-Request-Id", "probe-123"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->headers["x-request-id"], "probe-123");
  auto bad = op->request("GET", "/api/v1/rollouts/ro-78", "", "application/json", {{"X-Request-Id", "not a plain id"}});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->headers["x-request-id"].size(), 16u);

  json probe, other;
  for (int i = 0; i < 50 && (probe.is_null() || other.is_null()); ++i) {
    std::istringstream in(slurp(kilnd_->logPath()));
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      json j = json::parse(line, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << "not a JSON line: " << line;
      ASSERT_TRUE(j.contains("ts") && j.contains("level") && j.contains("msg")) << line;
      if (j.value("request_id", "") == "probe-123") probe = j;
      if (j.value("rollout", "") == "ro-78") other = j;
    }
    if (probe.is_null() || other.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(probe.is_null()) << slurp(kilnd_->logPath());
  EXPECT_EQ(probe["route"], "/api/v1/rollouts/{id}");
  EXPECT_EQ(probe["rollout"], "ro-77");
  EXPECT_EQ(probe["status"], "404");
  EXPECT_EQ(probe["actor"], "nightly-ci");
  EXPECT_EQ(probe["token_id"], id);
  EXPECT_EQ(probe["method"], "GET");
  ASSERT_FALSE(other.is_null());
  const std::string generated = other.value("request_id", "");
  EXPECT_EQ(generated.size(), 16u) << "an id with spaces is replaced by a generated one: " << other.dump();
}

}  // namespace
}  // namespace kiln::apitest
