#pragma once
// A scripted ProcessRunner for core and agent unit tests: no process is started. Results are
// chosen by the full argv first, then by argv[0]; every spec received is recorded.

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/exec/process_runner.h"

namespace kiln::exec {

class FakeProcessRunner final : public ProcessRunner {
 public:
  // Computes a result from the spec; may block on the cancel token (which may be null) to
  // model a long step.
  using Handler = std::function<ProcessResult(const ProcessSpec&, const CancelToken*)>;

  // Runs whose argv[0] is `program` get `result`. A later call for the same key replaces it.
  void script(const std::string& program, ProcessResult result);
  // Runs with exactly this argv get `result`; takes precedence over script(program).
  void scriptArgv(const std::vector<std::string>& argv, ProcessResult result);
  // Queues results for `program`, consumed one per run; the last one then repeats. Takes
  // precedence over script(program), not over scriptArgv.
  void scriptSequence(const std::string& program, std::vector<ProcessResult> results);
  // Runs whose argv[0] is `program` are answered by `handler` (takes precedence over all).
  void scriptHandler(const std::string& program, Handler handler);

  // Unscripted programs fail to start like a missing binary: started=false,
  // spawn_error "no such file: <argv[0]>".
  //
  // Fills in what the real runner would: pid (fake, increasing from 1000) when started, and
  // on_started(pid) is called. A token cancelled before the run gives started=false,
  // cancelled=true, like the real runner.
  ProcessResult run(const ProcessSpec& spec, const CancelToken* cancel = nullptr,
                    std::function<void(int pid)> on_started = {}) override;

  // Every spec received, in call order (including those cancelled before start).
  std::vector<ProcessSpec> specs() const;
  std::size_t runCount() const;
  // argv of every run, in order: convenient for EXPECT_EQ.
  std::vector<std::vector<std::string>> argvs() const;

  // Convenience builders for scripted results.
  static ProcessResult exited(int exit_code, std::string stdout_text = "",
                              std::string stderr_text = "");
  static ProcessResult timedOut();

 private:
  mutable std::mutex mutex_;
  std::map<std::vector<std::string>, ProcessResult> by_argv_;
  std::map<std::string, ProcessResult> by_program_;
  std::map<std::string, std::vector<ProcessResult>> sequences_;
  std::map<std::string, Handler> handlers_;
  std::vector<ProcessSpec> specs_;
  int next_pid_ = 1000;
};

}  // namespace kiln::exec
