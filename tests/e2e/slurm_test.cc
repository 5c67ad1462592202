// Issue 12 end to end: kilnd's Slurm driver against a real Slurm 22.05 (munged, slurmctld and
// four slurmd from Debian's packages, started by deploy/lib/slurm-cluster.sh once for the suite),
// real sbatch jobs, and a virtual fleet (kiln-vfleet) standing in for the GPUs. Label `slurm`.
//
// The Slurm nodes are the first four hosts of the one pod (e2e-b01-p01-h01..h04, --slurm-node-name
// {host}); the pod's other hosts have no node, which Kiln reports and otherwise ignores.

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/vfleet.h"

namespace kiln::e2e {
namespace {

const std::vector<std::string> kNodes = {"e2e-b01-p01-h01", "e2e-b01-p01-h02", "e2e-b01-p01-h03", "e2e-b01-p01-h04"};
const std::string kPod = "e2e-b01-p01";

std::string slurmDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/kiln-slurm-XXXXXX";
    std::string d = ::mkdtemp(tmpl);
    ::chmod(d.c_str(), 0755);  // munged and slurmctld run as their own users
    return d;
  }();
  return dir;
}

std::map<std::string, std::string> slurmEnv() {
  return {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}, {"SLURM_CONF", slurmDir() + "/cluster/slurm.conf"}};
}

// A Slurm client command (runCommand execs without a PATH search: /usr/bin/NAME).
CommandResult slurm(std::vector<std::string> args, std::chrono::milliseconds timeout = 20s) {
  args[0] = "/usr/bin/" + args[0];
  return runCommand(args, slurmEnv(), timeout);
}

// `scontrol -o show node` of one node, as {State, Reason} (Reason without the [user@time] tail).
std::pair<std::string, std::string> nodeState(const std::string& node) {
  auto r = slurm({"scontrol", "-o", "show", "node", node});
  std::smatch m;
  std::string state, reason;
  if (std::regex_search(r.output, m, std::regex(" State=(\\S+)"))) state = m[1];
  if (std::regex_search(r.output, m, std::regex(" Reason=(.*) \\[[^\\]]*\\]"))) reason = m[1];
  return {state, reason};
}

// `scontrol -o show job ID`'s KEY field.
std::string jobField(const std::string& id, const std::string& key) {
  auto r = slurm({"scontrol", "-o", "show", "job", id});
  std::smatch m;
  if (std::regex_search(r.output, m, std::regex(" " + key + "=(\\S+)"))) return m[1];
  return "";
}

// The cluster, once per test process (ctest runs each test in a process of its own).
class SlurmCluster : public ::testing::Environment {
 public:
  void SetUp() override {
    const std::string dir = slurmDir();
    // The prolog: Kiln's pre-job check when the test wrote DIR/prolog.env (url and token),
    // else nothing (the tests that do not test it).
    const std::string prolog = dir + "/prolog.sh";
    {
      std::ofstream p(prolog);
      p << "#!/bin/sh\n"
        << "PATH=/usr/bin:/bin; export PATH\n"  // Slurm runs a prolog with no PATH
        << "[ -f " << dir << "/prolog.env ] || exit 0\n"
        << ". " << dir << "/prolog.env\n"
        << "exec " << KILN_KILNCTL_BIN << " slurm prolog --timeout 40s --poll-interval 1s 2>>" << dir
        << "/prolog.log\n";
    }
    ::chmod(prolog.c_str(), 0755);
    std::string nodes;
    for (const auto& n : kNodes) nodes += (nodes.empty() ? "" : ",") + n;
    auto r = runCommand({KILN_DEPLOY_DIR "/lib/slurm-cluster.sh", "start", dir + "/cluster", "--nodes", nodes, "--prolog", prolog},
                        {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}}, 120s);
    started = r.status == 0;
    output = r.output;
  }
  void TearDown() override {
    runCommand({KILN_DEPLOY_DIR "/lib/slurm-cluster.sh", "stop", slurmDir() + "/cluster"}, {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}},
               60s);
    std::filesystem::remove_all(slurmDir());
  }
  static inline bool started = false;
  static inline std::string output;
};
const auto* const kCluster = ::testing::AddGlobalTestEnvironment(new SlurmCluster);

class SlurmTest : public E2eTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(SlurmCluster::started) << "the Slurm cluster did not start:\n" << SlurmCluster::output;
    // Every test starts from a cluster without jobs and without drains.
    slurm({"scancel", "--full", "--user", "root"});
    for (const auto& n : kNodes)  // a node whose slurmd an earlier test killed
      if (nodeState(n).first.find("NOT_RESPONDING") != std::string::npos)
        runCommand({KILN_DEPLOY_DIR "/lib/slurm-cluster.sh", "start-node", slurmDir() + "/cluster", n},
                   {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}}, 60s);
    for (const auto& n : kNodes) slurm({"scontrol", "update", "NodeName=" + n, "State=RESUME"});
    std::filesystem::remove(slurmDir() + "/prolog.env");
    ASSERT_TRUE(waitUntil([] {
      for (const auto& n : kNodes)
        if (nodeState(n).first != "IDLE") return false;
      return true;
    }, 30s)) << slurm({"sinfo", "-N"}).output;
    kilnd_args_ = {"--scheduler", "slurm", "--slurm-interval", "1", "--slurm-timeout", "5"};
    kilnd_args_.insert(kilnd_args_.end(), extra_args_.begin(), extra_args_.end());
    kilnd_env_ = {{"SLURM_CONF", slurmDir() + "/cluster/slurm.conf"}};
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    importFleet(fleetYaml(1, "available"));
    enroll_file_ = enrollTokenFile();
  }

  void TearDown() override {
    if (HasFailure()) {
      std::cerr << "---- sinfo:\n" << slurm({"sinfo", "-N", "-o", "%N %T %E"}).output;
      std::cerr << "---- squeue:\n" << slurm({"squeue", "-t", "all"}).output;
      if (fleet_) std::cerr << "---- kiln-vfleet log tail:\n" << fleet_->logTail() << "\n";
      std::cerr << "---- prolog log:\n" << readFile(slurmDir() + "/prolog.log") << "\n";
    }
    fleet_.reset();
    E2eTest::TearDown();
  }

  void startFleet(const std::vector<std::string>& extra = {}) {
    fleet_ = std::make_unique<VirtualFleet>(KILN_VFLEET_BIN, dir_ + "/vfleet", kilnd_->url(), enroll_file_,
                                            kilnd_->adminTokenFile(), 0.001, extra);
  }

  // sbatch as root: the job id.
  std::string submit(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"sbatch", "--parsable", "-o", "/dev/null", "-e", "/dev/null"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = slurm(argv);
    EXPECT_EQ(r.status, 0) << r.output;
    std::string id = r.output.substr(0, r.output.find_first_of(";\n"));
    return id;
  }

  std::string startRollout() {
    json b = call("POST", "/api/v1/bundles", bundleDoc("1.0", "GB200-P4975_0004_250301.1.0", "28.43.3010", "575.57.08"), 201);
    json policy = {{"canary_pods", 0}, {"waves", {"100%"}}, {"soak", "0s"}, {"max_concurrent_pods", 1},
                   {"capacity_floor", {{"max_percent_down", 100}}}, {"failure_budget", {{"pods", 1}}},
                   {"allocated", "wait"}};
    json r = call("POST", "/api/v1/rollouts",
                  {{"bundle", b.value("id", "")}, {"selector", {{"pods", {kPod}}}}, {"policy", policy}, {"start", true}}, 201);
    watchRollout(r.value("id", ""));
    return r.value("id", "");
  }

  json pod() { return call("GET", "/api/v1/rollouts/ro-1/pods")["items"][0]; }
  // A list's items, by value (a range-for over call(...)["items"] would outlive the document).
  json items(const std::string& path) { return call("GET", path)["items"]; }

  std::vector<std::string> extra_args_;
  std::string enroll_file_;
  std::unique_ptr<VirtualFleet> fleet_;
};

TEST_F(SlurmTest, ARolloutWaitsForARealJobDrainsUpgradesAndResumesAndNeverKillsIt) {
  startFleet();
  const std::string job = submit({"-w", kNodes[0], "--wrap", "sleep 12"});
  ASSERT_TRUE(waitUntil([&] { return host(kNodes[0]).value("state", "") == "allocated"; }, 15s)) << host(kNodes[0]).dump();

  const std::string id = startRollout();
  ASSERT_EQ(id, "ro-1");
  const std::string reason = "kiln: ro-1 firmware-upgrade e2e-gb200-fw 1.0";
  // Kiln asks Slurm for the job's node: drained around the running job, with the rollout's
  // reason. The pod waits; its other nodes serve on until it is admitted.
  ASSERT_TRUE(waitUntil([&] { return nodeState(kNodes[0]) == std::pair<std::string, std::string>{"ALLOCATED+DRAIN", reason}; }, 15s))
      << slurm({"sinfo", "-N", "-o", "%N %T %E"}).output;
  EXPECT_EQ(jobField(job, "JobState"), "RUNNING");
  json p = pod();
  EXPECT_EQ(p.value("phase", ""), "pending") << p.dump();
  EXPECT_NE(p.value("waiting_reason", "").find("allocated"), std::string::npos) << p.dump();
  EXPECT_EQ(nodeState(kNodes[1]).first, "IDLE");
  // Once the job has left, every node of the pod is drained before anything is installed.
  ASSERT_TRUE(waitUntil([&] {
    for (const auto& n : kNodes)
      if (nodeState(n).second != reason && nodeState(n).first.find("DRAIN") == std::string::npos) return false;
    return true;
  }, 30s)) << slurm({"sinfo", "-N", "-o", "%N %T %E"}).output;

  json done = waitRollout(id, {"completed", "halted", "aborted"}, 90s);
  EXPECT_EQ(done.value("state", ""), "completed") << done.dump();
  EXPECT_EQ(jobField(job, "JobState"), "COMPLETED");  // it ran to its end
  EXPECT_EQ(jobField(job, "ExitCode"), "0:0");
  // Validated hosts are back: Kiln resumes every node it drained.
  EXPECT_TRUE(waitUntil([&] {
    for (const auto& n : kNodes)
      if (nodeState(n).first != "IDLE") return false;
    return true;
  }, 15s)) << slurm({"sinfo", "-N", "-o", "%N %T %E"}).output;
  json nodes = call("GET", "/api/v1/scheduler/nodes");
  int known = 0;
  for (const auto& n : nodes["items"]) {
    if (!n.value("known_to_slurm", false)) continue;
    ++known;
    EXPECT_FALSE(n.value("drained_by_kiln", true)) << n.dump();
  }
  EXPECT_EQ(known, 4);
  json sched = call("GET", "/api/v1/scheduler");
  EXPECT_EQ(sched.value("kind", ""), "slurm");
  EXPECT_TRUE(sched["last_error"].is_null()) << sched.dump();
  EXPECT_EQ(sched.value("hosts_without_node", 0), 14);  // h05..h18 have no Slurm node
}

TEST_F(SlurmTest, AnAdminDrainedNodeStaysDrainedAndAKilledKilndResumesExactlyTheNodesItDrained) {
  ASSERT_EQ(slurm({"scontrol", "update", "NodeName=" + kNodes[1], "State=DRAIN", "Reason=rack swap, ticket 4711"}).status, 0);
  startFleet();
  const std::string job = submit({"-w", kNodes[0], "--wrap", "sleep 15"});
  ASSERT_TRUE(waitUntil([&] { return host(kNodes[0]).value("state", "") == "allocated"; }, 15s));
  const std::string id = startRollout();
  const std::string reason = "kiln: ro-1 firmware-upgrade e2e-gb200-fw 1.0";
  ASSERT_TRUE(waitUntil([&] { return nodeState(kNodes[0]) == std::pair<std::string, std::string>{"ALLOCATED+DRAIN", reason}; }, 15s))
      << slurm({"sinfo", "-N", "-o", "%N %T %E"}).output;
  EXPECT_EQ(nodeState(kNodes[1]).second, "rack swap, ticket 4711");  // never re-drained as Kiln's

  // SIGKILL while Kiln's drain of the job's node stands and the job still runs: the restarted
  // kilnd knows the drain from its ledger alone.
  kilnd_->kill();
  ASSERT_TRUE(kilnd_->start().ok()) << kilnd_->logTail();
  json done = waitRollout(id, {"completed", "halted", "aborted"}, 90s);
  EXPECT_EQ(done.value("state", ""), "completed") << done.dump();
  EXPECT_EQ(jobField(job, "JobState"), "COMPLETED");
  EXPECT_TRUE(waitUntil([&] {
    return nodeState(kNodes[0]).first == "IDLE" && nodeState(kNodes[2]).first == "IDLE" && nodeState(kNodes[3]).first == "IDLE";
  }, 15s)) << slurm({"sinfo", "-N", "-o", "%N %T %E"}).output;
  // The operator's drain outlived the whole rollout, Kiln's restart included.
  EXPECT_EQ(nodeState(kNodes[1]).first, "IDLE+DRAIN");
  EXPECT_EQ(nodeState(kNodes[1]).second, "rack swap, ticket 4711");
  bool seen = false;
  for (const auto& n : items("/api/v1/scheduler/nodes"))
    if (n.value("node", "") == kNodes[1]) {
      seen = true;
      EXPECT_FALSE(n.value("drained_by_kiln", true));
      EXPECT_EQ(n.value("reason", ""), "rack swap, ticket 4711");
      EXPECT_EQ(n.value("host_state", ""), "available");
    }
  EXPECT_TRUE(seen);
}

TEST_F(SlurmTest, AFailingPreJobCheckDrainsTheNodeWithKilnsReasonAndTheJobRunsElsewhere) {
  startFleet({"--fault", kNodes[2] + ":row_remap_pending:gpu=0"});
  {
    // The prolog holds the narrow prejob token (issue 31), not an operator's.
    const json prolog = call("POST", "/api/v1/tokens", json{{"role", "prejob"}, {"name", "slurm prolog"}}, 201);
    const std::string token_file = slurmDir() + "/prolog-token";
    std::ofstream(token_file) << prolog.value("token", "") << "\n";
    std::ofstream env(slurmDir() + "/prolog.env");
    env << "KILN_URL=" << kilnd_->url() << "\nexport KILN_URL\nKILN_TOKEN_FILE=" << token_file
        << "\nexport KILN_TOKEN_FILE\n";
  }
  // Slurm picks h03 first of h03/h04; its prolog's check fails there.
  const std::string job = submit({"-N", "1", "--exclude", kNodes[0] + "," + kNodes[1], "--wrap", "sleep 1"});
  ASSERT_TRUE(waitUntil([&] { return jobField(job, "JobState") == "COMPLETED"; }, 60s))
      << slurm({"scontrol", "show", "job", job}).output;
  EXPECT_EQ(jobField(job, "NodeList"), kNodes[3]);
  EXPECT_EQ(host(kNodes[2]).value("state", ""), "failed") << host(kNodes[2]).dump();
  auto [state, reason] = nodeState(kNodes[2]);
  EXPECT_NE(state.find("DRAIN"), std::string::npos) << state;
  EXPECT_EQ(reason.rfind("kiln:", 0), 0u) << reason;
  EXPECT_EQ(nodeState(kNodes[3]).first, "IDLE");
  // Kiln owns that drain: it sits in the ledger, so a repaired and validated host gets its node back.
  EXPECT_TRUE(waitUntil([&] {
    for (const auto& n : items("/api/v1/scheduler/nodes"))
      if (n.value("node", "") == kNodes[2]) return n.value("drained_by_kiln", false);
    return false;
  }, 10s));
}

// Issue 35: the node view and the pre-job check answer on a follower replica as on the leader;
// only the leader changes Slurm.
TEST_F(SlurmTest, AFollowerReplicaShowsSlurmsNodesAndTakesPreJobChecks) {
  auto follower = newKilnd();
  ASSERT_TRUE(follower->start().ok()) << follower->logTail();
  const std::string job = submit({"-N", "1", "-w", kNodes[1], "--wrap", "sleep 60"});
  ASSERT_TRUE(waitUntil([&] { return jobField(job, "JobState") == "RUNNING"; }, 30s));
  json on_follower;
  ASSERT_TRUE(waitUntil([&] {
    on_follower = callOn(*follower, "GET", "/api/v1/scheduler/nodes")["items"];
    for (const auto& n : on_follower)
      if (n.value("node", "") == kNodes[1] && !n["jobs"].empty()) return true;
    return false;
  }, 15s)) << on_follower.dump();
  ASSERT_EQ(on_follower.size(), 18u) << on_follower.dump();  // the pod's hosts, 4 of them Slurm nodes
  int known = 0;
  for (const auto& n : on_follower) {
    known += n.value("known_to_slurm", false) ? 1 : 0;
    EXPECT_EQ(n.value("host", ""), n.value("node", "")) << n.dump();
  }
  EXPECT_EQ(known, 4);
  EXPECT_EQ(callOn(*follower, "GET", "/api/v1/scheduler")["nodes"], 18);
  // A host quarantined in Kiln: the leader drains its node, with Kiln's reason, exactly once.
  call("POST", "/api/v1/hosts/" + kNodes[3] + "/actions", {{"action", "fail"}, {"reason", "e2e"}});
  ASSERT_TRUE(waitUntil([&] { return nodeState(kNodes[3]).first.find("DRAIN") != std::string::npos; }, 15s));
  // The pre-job check through the follower runs and answers there.
  startFleet();
  json check = callOn(*follower, "POST", "/api/v1/scheduler/checks", {{"nodes", {kNodes[0]}}, {"job", job}}, 201);
  EXPECT_EQ(check["nodes"][kNodes[0]], kNodes[0]);
  const std::string id = check.value("id", "");
  ASSERT_TRUE(waitUntil([&] { return callOn(*follower, "GET", "/api/v1/scheduler/checks/" + id).value("state", "") != "running"; }, 60s));
  EXPECT_EQ(callOn(*follower, "GET", "/api/v1/scheduler/checks/" + id).value("state", ""), "passed");
  slurm({"scancel", job});
}

// Issue 35: a run that takes a host out of service waits for the drain gate as a rollout does. An
// operator quarantines a host whose node still runs a job: Kiln drains the node around the job,
// and the quarantine validation it starts runs no step there until the job has left.
TEST_F(SlurmTest, AQuarantineValidationStartsNoStepUnderTheJobStillOnItsNode) {
  startFleet();
  const std::string job = submit({"-w", kNodes[2], "--wrap", "sleep 300"});
  ASSERT_TRUE(waitUntil([&] { return host(kNodes[2]).value("state", "") == "allocated"; }, 15s)) << host(kNodes[2]).dump();
  json q = call("POST", "/api/v1/hosts/" + kNodes[2] + "/actions", {{"action", "quarantine"}, {"reason", "e2e: Xid 79 under a job"}});
  ASSERT_TRUE(q.contains("quarantine_run")) << q.dump();
  const std::string run_id = q["quarantine_run"];
  json h;
  auto hostOfRun = [&] {
    json run = call("GET", "/api/v1/workflow-runs/" + run_id);
    return run["hosts"].empty() ? json::object() : run["hosts"][0];
  };
  ASSERT_TRUE(waitUntil([&] {
    h = hostOfRun();
    return h.contains("waiting_for") && h["waiting_for"].is_string() &&
           h["waiting_for"].get<std::string>().find("job " + job + " running") != std::string::npos;
  }, 20s)) << h.dump();
  EXPECT_NE(nodeState(kNodes[2]).first.find("DRAIN"), std::string::npos) << nodeState(kNodes[2]).first;
  EXPECT_EQ(jobField(job, "JobState"), "RUNNING");
  // Several of the gate's looks later, still nothing has run on the host.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  h = hostOfRun();
  EXPECT_TRUE(h["steps"].empty()) << h.dump();
  EXPECT_TRUE(h["assignment"].is_null()) << h.dump();
  EXPECT_TRUE(h["waiting_for"].is_string()) << h.dump();
  EXPECT_EQ(jobField(job, "JobState"), "RUNNING");

  // The job ends on its own terms (here: its user cancels it): the validation starts.
  slurm({"scancel", job});
  ASSERT_TRUE(waitUntil([&] {
    h = hostOfRun();
    return !h["steps"].empty() || h["assignment"].is_string();
  }, 30s)) << h.dump();
  EXPECT_TRUE(h["waiting_for"].is_null()) << h.dump();
  EXPECT_EQ(jobField(job, "JobState"), "CANCELLED");
}

TEST_F(SlurmTest, AJobThatLosesItsNodeIsOneInterruptionInTheLedger) {
  startFleet();
  const std::string job = submit({"--no-requeue", "-w", kNodes[3], "--wrap", "sleep 120"});
  ASSERT_TRUE(waitUntil([&] { return host(kNodes[3]).value("state", "") == "allocated"; }, 15s));
  ASSERT_EQ(runCommand({KILN_DEPLOY_DIR "/lib/slurm-cluster.sh", "kill-node", slurmDir() + "/cluster", kNodes[3]},
                       {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}}, 30s).status, 0);
  ASSERT_TRUE(waitUntil([&] { return jobField(job, "JobState") == "NODE_FAIL"; }, 45s)) << slurm({"scontrol", "show", "job", job}).output;
  json found;
  ASSERT_TRUE(waitUntil([&] {
    for (const auto& i : items("/api/v1/interruptions"))
      if (i.value("job", "") == job) found = i;
    return !found.is_null();
  }, 15s)) << call("GET", "/api/v1/interruptions").dump();
  EXPECT_EQ(found["hosts"], json({kNodes[3]})) << found.dump();
  EXPECT_EQ(found.value("id", "").rfind("slurm-" + job + "-", 0), 0u) << found.dump();
  // The pass that sees it first words it: the job ended NODE_FAIL, or it lost its DOWN node.
  const std::string why = found.value("description", "");
  EXPECT_TRUE(why.find("NODE_FAIL") != std::string::npos || why.find("(DOWN)") != std::string::npos) << found.dump();
  // Passes go on: still one interruption for the job.
  std::this_thread::sleep_for(3s);
  int n = 0;
  for (const auto& i : items("/api/v1/interruptions")) n += i.value("job", "") == job;
  EXPECT_EQ(n, 1);
  EXPECT_EQ(runCommand({KILN_DEPLOY_DIR "/lib/slurm-cluster.sh", "start-node", slurmDir() + "/cluster", kNodes[3]},
                       {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}}, 60s).status, 0);
}

TEST_F(SlurmTest, ReasonsWithQuotesAndNonAsciiReachSlurmAsOneArgument) {
  call("POST", "/api/v1/hosts/" + kNodes[3] + "/actions", {{"action", "fail"}, {"reason", "GPU \"3\" überhitzt; $(reboot)"}});
  ASSERT_TRUE(waitUntil([&] { return nodeState(kNodes[3]).first == "IDLE+DRAIN"; }, 15s)) << slurm({"sinfo", "-N"}).output;
  const std::string reason = nodeState(kNodes[3]).second;
  EXPECT_EQ(reason.rfind("kiln: failed", 0), 0u) << reason;
  EXPECT_NE(reason.find("GPU  3  überhitzt; $(reboot)"), std::string::npos) << reason;  // quotes made spaces, the rest as given
  json h = host(kNodes[3]);
  EXPECT_EQ(h.value("state", ""), "failed");
}

class SlurmTroubleTest : public SlurmTest {
 protected:
  void SetUp() override {
    // sinfo that hangs: the driver's pass times out, the API does not.
    bin_ = std::string(slurmDir()) + "/hanging-bin";
    std::filesystem::create_directories(bin_);
    for (const std::string tool : {"sinfo", "squeue", "scontrol"}) {
      std::ofstream s(bin_ + "/" + tool);
      s << "#!/bin/sh\nsleep 30\n";
      s.close();
      std::filesystem::permissions(bin_ + "/" + tool, std::filesystem::perms::owner_all);
    }
    extra_args_ = {"--slurm-bin-dir", bin_};
    SlurmTest::SetUp();
  }
  std::string bin_;
};

TEST_F(SlurmTroubleTest, AHangingSlurmTimesOutAndHoldsTheRolloutWithoutHangingKilnd) {
  ASSERT_TRUE(waitUntil([&] {
    auto s = tryGet("/api/v1/scheduler");
    return s && s->value("last_error", json()).is_string();
  }, 20s));
  json s = call("GET", "/api/v1/scheduler");
  EXPECT_NE(s["last_error"].get<std::string>().find("timed out after 5000 ms"), std::string::npos) << s.dump();
  startFleet();
  const auto began = std::chrono::steady_clock::now();
  const std::string id = startRollout();
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);  // the API never waits for Slurm
  ASSERT_TRUE(waitUntil([&] { return pod().value("waiting_reason", "").find("slurm:") != std::string::npos; }, 20s))
      << pod().dump();
  EXPECT_EQ(pod().value("phase", ""), "draining");
  EXPECT_EQ(host(kNodes[0]).value("state", ""), "draining");  // nothing installed blind
}

}  // namespace
}  // namespace kiln::e2e
