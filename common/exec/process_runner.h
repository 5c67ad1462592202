#pragma once
// Runs one workflow step as a real child process (argv, never a shell string) and reports
// how it ended. The agent talks to the ProcessRunner interface; makeBoostProcessRunner() is the
// real implementation and FakeProcessRunner (fake_process_runner.h) the scripted one for tests.
//
// This header is deliberately light: Boost.Process lives only in boost_process_runner.cc.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::exec {

struct ProcessSpec {
  // argv[0] is looked up in env's PATH when it has no '/'; a relative path with a '/' is
  // relative to working_dir. Never run through a shell. Must not be empty.
  std::vector<std::string> argv;
  // The COMPLETE environment of the child (nothing is inherited from the agent); see
  // allowListedEnvironment().
  std::map<std::string, std::string> env;
  std::string working_dir;  // empty = inherit the agent's
  std::chrono::milliseconds timeout{60000};
  // On timeout or cancel: SIGTERM to the whole process group, SIGKILL after this.
  std::chrono::milliseconds kill_grace{5000};
  std::size_t output_cap = 64 * 1024;  // per stream; the TAIL is kept
  // When > 0, ProcessResult::stdout_full also keeps the FIRST parse_capture_cap bytes of
  // stdout, for parsers that need the whole output (the agent's `parse`). 0 = off.
  std::size_t parse_capture_cap = 0;
  std::string stdin_data;  // written to the child's stdin, then closed; empty = /dev/null
  // When set, called with each piece of output as it is read (is_stderr: which stream), on the
  // thread that called run(), while the step runs (the agent's live output). Must return
  // quickly: the step's pipes are not read meanwhile.
  std::function<void(bool is_stderr, const char* data, std::size_t n)> on_output;
};

struct ProcessResult {
  bool started = false;
  // Why the step did not start, e.g. "no such file: foo". Also set, with started=true, in
  // the one case where the exit status could not be collected ("exit status lost: ...").
  std::string spawn_error;
  int exit_code = -1;   // -1 when killed by a signal or not started
  int term_signal = 0;  // signal that ended it, 0 if it exited
  bool timed_out = false;
  bool cancelled = false;
  std::string stdout_tail, stderr_tail;              // last output_cap bytes of each stream
  std::uint64_t stdout_bytes = 0, stderr_bytes = 0;  // total produced
  // The first spec.parse_capture_cap bytes of stdout: all of it when stdout_bytes <= the cap.
  // Empty when parse_capture_cap is 0.
  std::string stdout_full;
  std::chrono::milliseconds duration{0};
  int pid = 0;  // also the process group id of the step

  // True when the step ran and exited with status 0 on its own.
  bool succeeded() const { return started && !timed_out && !cancelled && exit_code == 0; }
};

// Cancels a running step from another thread (workflow cancel): the runner notices within
// ~50 ms and kills the step's process group (SIGTERM, then SIGKILL after kill_grace).
// A token cancelled before run() makes run() return at once with started=false, cancelled=true.
// Thread-safe. One token may serve several runs; it never un-cancels.
class CancelToken {
 public:
  void cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> cancelled_{false};
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Runs spec to completion on the calling thread. on_started(pid) is called once, on the
  // calling thread, as soon as the child has exec'ed (the agent journals the pid); it is not
  // called when the step could not start. Thread-safe: several threads may run at once.
  //
  // The step owns its process group: when the main process ends, whatever it left running in
  // its group is terminated too (SIGTERM, SIGKILL after kill_grace), so no process of a
  // finished step survives. A process that leaves the group (setsid) escapes this; if it
  // keeps the step's stdout/stderr open, the runner stops reading them ~0.5 s after the group
  // is gone. Members still present max(kill_grace, 1 s) after SIGKILL (unreaped zombies
  // without becomeSubreaper(), or stuck in D state) are given up on; the main process itself
  // is always waited for.
  virtual ProcessResult run(const ProcessSpec& spec, const CancelToken* cancel = nullptr,
                            std::function<void(int pid)> on_started = {}) = 0;
};

// The real runner (Boost.Process). For killed grandchildren to be reaped, main() must call
// becomeSubreaper() first; without it they stay <defunct> under a PID 1 that does not reap.
// Pre-conditions: nothing else in the process waits for arbitrary children (waitpid(-1)) and
// SIGCHLD is not ignored (run() reports a spawn_error if it is).
std::unique_ptr<ProcessRunner> makeBoostProcessRunner();

// Makes this process the reaper of its orphaned descendants (prctl PR_SET_CHILD_SUBREAPER) and
// restores SIGCHLD to its default if it was ignored. Call once from main(), before any thread
// starts steps; later calls do nothing. Returns false if the kernel refused.
bool becomeSubreaper();

// Why a run that did not succeed failed, in one line for a log: "did not start: ...",
// "timed out after N ms", "killed by signal N" or "exited N", then ": " and the last line of
// its stderr when there is one. Pre-condition: !r.succeeded().
std::string describeFailure(const ProcessResult& r, std::chrono::milliseconds timeout);

// Builds a child environment from the parent's (a NULL-terminated "NAME=value" array, e.g.
// environ; may be null): only names in allow_list (exact, or a prefix when the entry ends in
// '*', e.g. "KILN_HWSIM_*"), then `extra` on top (extra wins).
std::map<std::string, std::string> allowListedEnvironment(
    char** parent_env, const std::vector<std::string>& allow_list,
    const std::map<std::string, std::string>& extra);

// Default allow list: PATH, HOME, LANG, LC_ALL, TZ, KILN_HWSIM_*.
const std::vector<std::string>& defaultEnvAllowList();

}  // namespace kiln::exec
