#pragma once
// /proc readings (CPU time, resident memory) and a child process with its output in a file,
// for kiln-bench-dispatch. Linux only. Not thread-safe: one thread drives a ChildProcess.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace kiln::bench {

// User + system CPU time of a process so far, in seconds; -1 when it cannot be read (gone).
double cpuSeconds(pid_t pid);
// VmRSS of a process in KiB; 0 when it cannot be read.
long rssKib(pid_t pid);
// Pids whose command line is exactly a program ending in `program` plus, somewhere, the
// consecutive arguments `arg` and `value` (e.g. "--host", "h1").
std::vector<pid_t> findProcesses(const std::string& program, const std::string& arg, const std::string& value);
// "1.23 0.98 0.77" from /proc/loadavg.
std::string loadAverage();

// A child (fork + execv) with stdout and stderr appended to `log_path`, in its own process
// group. It gets SIGKILL when this process dies (PR_SET_PDEATHSIG) and from the destructor.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // SIGTERM, then SIGKILL after `grace`; returns the exit status (128 + signal).
  int stop(std::chrono::milliseconds grace);

 private:
  pid_t pid_ = -1;
  bool alive_ = false;
  int status_ = -1;
};

}  // namespace kiln::bench
