// Tier `exec`: runs real processes (/bin/sh and coreutils) through the Boost.Process runner.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/exec/process_runner.h"

namespace kiln::exec {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

ProcessSpec shell(const std::string& script) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.timeout = 5s;
  spec.kill_grace = 1s;
  return spec;
}

bool groupGone(int pgid) { return ::kill(-pgid, 0) == -1 && errno == ESRCH; }

class BoostProcessRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(becomeSubreaper());
    runner_ = makeBoostProcessRunner();
    dir_ = fs::temp_directory_path() /
           ("kiln_exec_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }

  void TearDown() override {
    // Every child, grandchild and failed spawn has been reaped: nothing is left to wait for.
    int status = 0;
    EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
    fs::remove_all(dir_);
  }

  std::unique_ptr<ProcessRunner> runner_;
  fs::path dir_;
};

TEST_F(BoostProcessRunnerTest, ReportsExitCodeAndBothStreams) {
  int started_pid = 0;
  ProcessResult r = runner_->run(shell("echo out; echo err >&2; exit 3"), nullptr,
                                 [&](int pid) { started_pid = pid; });
  ASSERT_TRUE(r.started) << r.spawn_error;
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.stdout_tail, "out\n");
  EXPECT_EQ(r.stderr_tail, "err\n");
  EXPECT_EQ(r.stdout_bytes, 4u);
  EXPECT_EQ(r.stderr_bytes, 4u);
  EXPECT_GT(r.pid, 0);
  EXPECT_EQ(started_pid, r.pid);
  EXPECT_FALSE(r.succeeded());
}

TEST_F(BoostProcessRunnerTest, ZeroExitSucceeds) {
  ProcessResult r = runner_->run(shell("exit 0"));
  EXPECT_TRUE(r.succeeded());
  EXPECT_EQ(r.exit_code, 0);
}

TEST_F(BoostProcessRunnerTest, ReportsTheSignalThatEndedTheStep) {
  ProcessResult r = runner_->run(shell("kill -KILL $$"));
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_FALSE(r.timed_out);
}

TEST_F(BoostProcessRunnerTest, TimeoutKillsTheWholeGroupIncludingABackgroundGrandchild) {
  ProcessSpec spec = shell("sleep 30 & sleep 30");
  spec.timeout = 1s;
  ProcessResult r = runner_->run(spec);
  ASSERT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_GE(r.duration, 1s);
  EXPECT_LT(r.duration, 5s);
  EXPECT_TRUE(groupGone(r.pid)) << "a process of group " << r.pid << " survived";
}

TEST_F(BoostProcessRunnerTest, StepIgnoringSigtermGetsSigkillAfterGrace) {
  ProcessSpec spec = shell("trap '' TERM; sleep 30 & sleep 30");
  spec.timeout = 1s;
  spec.kill_grace = 500ms;
  ProcessResult r = runner_->run(spec);
  ASSERT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_GE(r.duration, 1500ms);
  EXPECT_LT(r.duration, 6s);
  EXPECT_TRUE(groupGone(r.pid));
}

TEST_F(BoostProcessRunnerTest, StoppedStepIsContinuedSoThatSigtermEndsIt) {
  ProcessSpec spec = shell("kill -STOP $$; sleep 30");
  spec.timeout = 500ms;
  spec.kill_grace = 20s;
  ProcessResult r = runner_->run(spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_LT(r.duration, 5s);
}

TEST_F(BoostProcessRunnerTest, LeftoverBackgroundProcessIsKilledWhenTheMainProcessExits) {
  ProcessSpec spec = shell("sleep 30 & echo done");
  spec.timeout = 20s;
  ProcessResult r = runner_->run(spec);
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.stdout_tail, "done\n");
  EXPECT_LT(r.duration, 5s);
  EXPECT_TRUE(groupGone(r.pid));
}

TEST_F(BoostProcessRunnerTest, ProcessThatLeftTheGroupStopsHoldingTheStepAfterALinger) {
  // setsid escapes the group kill (docs/DEPENDENCIES.md trap 6) and keeps stdout open for 2 s.
  ProcessSpec spec = shell(
      "setsid sh -c 'touch escaped; exec sleep 2' & "
      "while [ ! -e escaped ]; do sleep 0.01; done; echo started");
  spec.working_dir = dir_.string();
  spec.timeout = 20s;
  ProcessResult r = runner_->run(spec);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_tail, "started\n");
  EXPECT_GE(r.duration, 450ms);  // it waited for the escaped writer a while
  EXPECT_LT(r.duration, 1500ms);
  // The escaped process is ours to reap (subreaper) once it ends; TearDown checks for leftovers.
  int status = 0;
  EXPECT_GT(::waitpid(-1, &status, 0), 0);
}

TEST_F(BoostProcessRunnerTest, ExceptionFromOnStartedLeavesNoProcessBehind) {
  int pid = 0;
  EXPECT_THROW(runner_->run(shell("sleep 30 & sleep 30"), nullptr,
                            [&](int started) {
                              pid = started;
                              throw std::runtime_error("journal write failed");
                            }),
               std::runtime_error);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(groupGone(pid));
}

TEST_F(BoostProcessRunnerTest, CapturesFiveMegabytesOnEachStreamAtOnceWithExactTails) {
  constexpr std::size_t kSize = 5 * 1024 * 1024;
  std::string data(kSize, '\0');
  std::uint32_t x = 12345;
  for (char& c : data) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  const fs::path file = dir_ / "blob";
  std::ofstream(file, std::ios::binary).write(data.data(), static_cast<std::streamsize>(kSize));

  ProcessSpec spec = shell("cat blob >&2 & cat blob; wait");
  spec.working_dir = dir_.string();
  ProcessResult r = runner_->run(spec);
  ASSERT_TRUE(r.started) << r.spawn_error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.stdout_bytes, kSize);
  EXPECT_EQ(r.stderr_bytes, kSize);
  ASSERT_EQ(r.stdout_tail.size(), spec.output_cap);
  ASSERT_EQ(r.stderr_tail.size(), spec.output_cap);
  const std::string expected_tail = data.substr(kSize - spec.output_cap);
  EXPECT_TRUE(r.stdout_tail == expected_tail);
  EXPECT_TRUE(r.stderr_tail == expected_tail);
}

TEST_F(BoostProcessRunnerTest, SmallCapKeepsTheLastBytes) {
  ProcessSpec spec = shell("seq 1 1000");
  spec.output_cap = 9;
  ProcessResult r = runner_->run(spec);
  EXPECT_EQ(r.stdout_tail, "999\n1000\n");
  EXPECT_EQ(r.stdout_tail.size(), 9u);
  EXPECT_EQ(r.stdout_bytes, 3893u);  // 9*2 + 90*3 + 900*4 + 5
}

TEST_F(BoostProcessRunnerTest, ParseCaptureKeepsTheWholeStdoutBesideASmallTail) {
  ProcessSpec spec = shell("seq 1 1000; seq 1 3 >&2");
  spec.output_cap = 9;
  spec.parse_capture_cap = 1 << 20;
  ProcessResult r = runner_->run(spec);
  std::string expected;
  for (int i = 1; i <= 1000; ++i) expected += std::to_string(i) + "\n";
  EXPECT_TRUE(r.stdout_full == expected);
  EXPECT_EQ(r.stdout_tail, "999\n1000\n");
  EXPECT_EQ(r.stderr_tail, "1\n2\n3\n");
}

TEST_F(BoostProcessRunnerTest, ParseCaptureStopsAtItsCapAndIsOffByDefault) {
  ProcessSpec spec = shell("seq 1 1000");
  spec.parse_capture_cap = 6;
  ProcessResult capped = runner_->run(spec);
  EXPECT_EQ(capped.stdout_full, "1\n2\n3\n");
  EXPECT_EQ(capped.stdout_bytes, 3893u);
  spec.parse_capture_cap = 0;
  EXPECT_EQ(runner_->run(spec).stdout_full, "");
}

TEST_F(BoostProcessRunnerTest, EnvironmentIsExactlyTheAllowListedOne) {
  std::vector<std::string> parent_entries = {"PATH=/usr/bin:/bin",   "HOME=/root",
                                             "SECRET_TOKEN=hunter2", "LANG=C.UTF-8",
                                             "KILN_HWSIM_DIR=/x",    "LD_PRELOAD=/evil.so"};
  std::vector<char*> parent;
  for (std::string& e : parent_entries) parent.push_back(e.data());
  parent.push_back(nullptr);
  ::setenv("KILN_EXEC_TEST_AGENT_ONLY", "1", 1);

  ProcessSpec spec;
  spec.argv = {"env"};
  spec.env = allowListedEnvironment(parent.data(), defaultEnvAllowList(),
                                    {{"KILN_STEP_ID", "7"}, {"WITH_EQUALS", "a=b"}});
  spec.timeout = 5s;
  ProcessResult r = runner_->run(spec);
  ASSERT_TRUE(r.started) << r.spawn_error;
  ASSERT_EQ(r.exit_code, 0);

  std::map<std::string, std::string> seen;
  std::istringstream lines(r.stdout_tail);
  for (std::string line; std::getline(lines, line);) {
    auto eq = line.find('=');
    ASSERT_NE(eq, std::string::npos) << line;
    seen[line.substr(0, eq)] = line.substr(eq + 1);
  }
  EXPECT_EQ(seen, (std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"},
                                                      {"HOME", "/root"},
                                                      {"LANG", "C.UTF-8"},
                                                      {"KILN_HWSIM_DIR", "/x"},
                                                      {"KILN_STEP_ID", "7"},
                                                      {"WITH_EQUALS", "a=b"}}));
}

TEST_F(BoostProcessRunnerTest, ProgramIsFoundThroughTheStepPathAndKeepsItsArgv0) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "tr '\\000' ' ' < /proc/$$/cmdline"};
  spec.env = {{"PATH", "/nonexistent:/usr/bin:/bin"}};
  ProcessResult r = runner_->run(spec);
  ASSERT_TRUE(r.started) << r.spawn_error;
  EXPECT_EQ(r.stdout_tail.rfind("sh -c ", 0), 0u) << r.stdout_tail;

  spec.env = {{"PATH", "/nonexistent"}};
  r = runner_->run(spec);
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.spawn_error, "no such file: sh");
}

TEST_F(BoostProcessRunnerTest, MissingBinaryDoesNotStart) {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/kiln-flash-tool", "--yes"};
  bool started_called = false;
  ProcessResult r = runner_->run(spec, nullptr, [&](int) { started_called = true; });
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.spawn_error, "no such file: /nonexistent/kiln-flash-tool");
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.pid, 0);
  EXPECT_FALSE(started_called);
}

TEST_F(BoostProcessRunnerTest, FailedExecIsReportedAndLeavesNoZombie) {
  // Executable bit but no valid format: passes our checks, then execve itself fails
  // (ENOEXEC) in the forked child. TearDown checks that child was reaped.
  const fs::path tool = dir_ / "not-a-program";
  std::ofstream(tool) << "\x01\x02garbage";
  fs::permissions(tool, fs::perms::owner_all);
  ProcessSpec spec;
  spec.argv = {tool.string()};
  bool started_called = false;
  ProcessResult r = runner_->run(spec, nullptr, [&](int) { started_called = true; });
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.spawn_error.find("cannot start"), std::string::npos) << r.spawn_error;
  EXPECT_FALSE(started_called);
}

TEST_F(BoostProcessRunnerTest, NonExecutableFileIsReported) {
  const fs::path file = dir_ / "data.txt";
  std::ofstream(file) << "x";
  ProcessSpec spec;
  spec.argv = {file.string()};
  ProcessResult r = runner_->run(spec);
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.spawn_error, "not executable: " + file.string());
}

TEST_F(BoostProcessRunnerTest, RunsInTheWorkingDirectory) {
  ProcessSpec spec = shell("pwd");
  spec.working_dir = dir_.string();
  ProcessResult r = runner_->run(spec);
  EXPECT_EQ(r.stdout_tail, dir_.string() + "\n");

  spec.working_dir = (dir_ / "missing").string();
  r = runner_->run(spec);
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.spawn_error, "no such directory: " + spec.working_dir);
}

TEST_F(BoostProcessRunnerTest, StdinDataIsWrittenAndClosed) {
  ProcessSpec spec = shell("cat; echo end");
  spec.stdin_data = "hello\n";
  ProcessResult r = runner_->run(spec);
  EXPECT_EQ(r.stdout_tail, "hello\nend\n");
}

TEST_F(BoostProcessRunnerTest, LargeStdinRoundTripsWhileOutputIsRead) {
  ProcessSpec spec = shell("cat");
  spec.stdin_data = std::string(3 * 1024 * 1024, 'k');
  ProcessResult r = runner_->run(spec);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout_bytes, spec.stdin_data.size());
}

TEST_F(BoostProcessRunnerTest, StepThatIgnoresItsStdinDoesNotKillTheAgentWithSigpipe) {
  ProcessSpec spec = shell("exit 0");
  spec.stdin_data = std::string(4 * 1024 * 1024, 'x');
  ProcessResult r = runner_->run(spec);
  EXPECT_TRUE(r.succeeded());
}

TEST_F(BoostProcessRunnerTest, CancelFromAnotherThreadKillsTheStep) {
  CancelToken token;
  std::promise<int> started;
  std::thread canceller([&] {
    started.get_future().wait();
    token.cancel();
  });
  ProcessSpec spec = shell("sleep 30 & sleep 30");
  spec.timeout = 20s;
  ProcessResult r = runner_->run(spec, &token, [&](int pid) { started.set_value(pid); });
  canceller.join();
  ASSERT_TRUE(r.started);
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_LT(r.duration, 5s);
  EXPECT_TRUE(groupGone(r.pid));
}

TEST_F(BoostProcessRunnerTest, CancelledTokenBeforeStartSpawnsNothing) {
  CancelToken token;
  token.cancel();
  bool started_called = false;
  ProcessResult r = runner_->run(shell("exit 0"), &token, [&](int) { started_called = true; });
  EXPECT_FALSE(r.started);
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(started_called);
}

TEST_F(BoostProcessRunnerTest, ParallelStepsKeepTheirOwnOutputAndPipes) {
  // One thread keeps spawning long steps while the other runs short ones. If a long step
  // inherited a short step's pipe, that short step would wait for it (or for the 500 ms
  // escaped-writer linger) instead of finishing in milliseconds.
  std::atomic<bool> long_done{false};
  std::vector<ProcessResult> long_results;
  std::thread long_runner([&] {
    for (int i = 0; i < 3; ++i) long_results.push_back(runner_->run(shell("sleep 0.7; echo long")));
    long_done = true;
  });
  int short_runs = 0;
  std::chrono::milliseconds slowest{0};
  while (!long_done || short_runs < 5) {
    ProcessResult r = runner_->run(shell("echo short " + std::to_string(short_runs)));
    ASSERT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.stdout_tail, "short " + std::to_string(short_runs) + "\n");
    slowest = std::max(slowest, r.duration);
    ++short_runs;
  }
  long_runner.join();
  EXPECT_LT(slowest, 450ms);
  for (const ProcessResult& r : long_results) {
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.stdout_tail, "long\n");
  }
}

}  // namespace
}  // namespace kiln::exec
