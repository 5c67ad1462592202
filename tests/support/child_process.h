#pragma once
// A child process for tests and benchmarks (fork + execve, no PATH search): stdout and stderr
// appended to a log file, stdin from /dev/null, signals unblocked. It gets SIGKILL when this
// process dies (PR_SET_PDEATHSIG) and from the destructor. The one copy the e2e tier, the
// virtual fleet's kilnd test and the benchmarks use. Not thread-safe: one thread drives it.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::testing {

struct ChildOptions {
  // The child's whole environment; nullopt: this process's.
  std::optional<std::map<std::string, std::string>> env;
  // In a process group of its own (a benchmark's children stay out of the terminal's signals).
  bool own_group = false;
};

class ChildProcess {
 public:
  // argv[0] is a path. Throws std::runtime_error when the log cannot be opened or fork fails.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path, ChildOptions options = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void signal(int sig);
  // The exit status (128 + signal when a signal ended it), or -1 when still running after
  // `timeout`.
  int waitExit(std::chrono::milliseconds timeout);
  // SIGTERM, then SIGKILL after `grace`; the exit status.
  int stop(std::chrono::milliseconds grace);

 private:
  pid_t pid_ = -1;
  bool alive_ = false;
  int status_ = -1;
};

}  // namespace kiln::testing
