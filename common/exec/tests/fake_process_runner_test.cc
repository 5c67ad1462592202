#include "common/exec/fake_process_runner.h"

#include <gtest/gtest.h>

#include <thread>

namespace kiln::exec {
namespace {

ProcessSpec specFor(std::vector<std::string> argv) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  return spec;
}

TEST(FakeProcessRunnerTest, AnswersByProgramAndCallsOnStarted) {
  FakeProcessRunner fake;
  fake.script("nvidia-smi", FakeProcessRunner::exited(0, "<nvidia_smi_log/>"));
  int started_pid = 0;
  ProcessResult r =
      fake.run(specFor({"nvidia-smi", "-q", "-x"}), nullptr, [&](int pid) { started_pid = pid; });
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.succeeded());
  EXPECT_EQ(r.stdout_tail, "<nvidia_smi_log/>");
  EXPECT_NE(r.pid, 0);
  EXPECT_EQ(started_pid, r.pid);
}

TEST(FakeProcessRunnerTest, ParseCaptureGivesTheUncappedStdoutLikeTheRealRunner) {
  FakeProcessRunner fake;
  fake.script("nvidia-smi", FakeProcessRunner::exited(0, "0123456789"));
  ProcessSpec spec = specFor({"nvidia-smi"});
  spec.output_cap = 4;
  EXPECT_EQ(fake.run(spec).stdout_full, "");
  spec.parse_capture_cap = 8;
  ProcessResult r = fake.run(spec);
  EXPECT_EQ(r.stdout_full, "01234567");
  EXPECT_EQ(r.stdout_tail, "6789");
}

TEST(FakeProcessRunnerTest, FullArgvTakesPrecedenceOverProgram) {
  FakeProcessRunner fake;
  fake.script("dcgmi", FakeProcessRunner::exited(0));
  fake.scriptArgv({"dcgmi", "diag", "-r", "3", "-j"}, FakeProcessRunner::exited(226));
  EXPECT_EQ(fake.run(specFor({"dcgmi", "diag", "-r", "3", "-j"})).exit_code, 226);
  EXPECT_EQ(fake.run(specFor({"dcgmi", "diag", "-r", "1", "-j"})).exit_code, 0);
}

TEST(FakeProcessRunnerTest, UnscriptedProgramFailsLikeAMissingBinary) {
  FakeProcessRunner fake;
  int calls = 0;
  ProcessResult r = fake.run(specFor({"flint"}), nullptr, [&](int) { ++calls; });
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.spawn_error, "no such file: flint");
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(fake.runCount(), 1u);
}

TEST(FakeProcessRunnerTest, SequenceIsConsumedThenLastRepeats) {
  FakeProcessRunner fake;
  fake.scriptSequence("nvfwupd", {FakeProcessRunner::exited(1), FakeProcessRunner::exited(0)});
  EXPECT_EQ(fake.run(specFor({"nvfwupd"})).exit_code, 1);
  EXPECT_EQ(fake.run(specFor({"nvfwupd"})).exit_code, 0);
  EXPECT_EQ(fake.run(specFor({"nvfwupd"})).exit_code, 0);
}

TEST(FakeProcessRunnerTest, RecordsEverySpecInOrder) {
  FakeProcessRunner fake;
  fake.script("a", FakeProcessRunner::exited(0));
  ProcessSpec spec = specFor({"a", "1"});
  spec.env = {{"PATH", "/bin"}};
  spec.working_dir = "/tmp";
  (void)fake.run(spec);
  (void)fake.run(specFor({"b"}));
  ASSERT_EQ(fake.specs().size(), 2u);
  EXPECT_EQ(fake.specs()[0].env, spec.env);
  EXPECT_EQ(fake.specs()[0].working_dir, "/tmp");
  EXPECT_EQ(fake.argvs(), (std::vector<std::vector<std::string>>{{"a", "1"}, {"b"}}));
}

TEST(FakeProcessRunnerTest, CancelledTokenBeforeRunDoesNotStart) {
  FakeProcessRunner fake;
  fake.script("a", FakeProcessRunner::exited(0));
  CancelToken token;
  token.cancel();
  ProcessResult r = fake.run(specFor({"a"}), &token);
  EXPECT_FALSE(r.started);
  EXPECT_TRUE(r.cancelled);
}

TEST(FakeProcessRunnerTest, TailsAreCappedLikeTheRealRunner) {
  FakeProcessRunner fake;
  fake.script("a", FakeProcessRunner::exited(0, "0123456789"));
  ProcessSpec spec = specFor({"a"});
  spec.output_cap = 4;
  ProcessResult r = fake.run(spec);
  EXPECT_EQ(r.stdout_tail, "6789");
  EXPECT_EQ(r.stdout_bytes, 10u);
}

TEST(FakeProcessRunnerTest, HandlerCanBlockUntilCancelled) {
  FakeProcessRunner fake;
  fake.scriptHandler("burn-in", [](const ProcessSpec&, const CancelToken* cancel) {
    while (!cancel->cancelled()) std::this_thread::yield();
    ProcessResult r;
    r.started = true;
    r.cancelled = true;
    r.term_signal = 15;
    return r;
  });
  CancelToken token;
  ProcessResult r = fake.run(specFor({"burn-in"}), &token, [&](int) { token.cancel(); });
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.succeeded());
  EXPECT_NE(r.pid, 0);
}

}  // namespace
}  // namespace kiln::exec
