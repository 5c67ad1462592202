#pragma once
// /proc readings (CPU time, resident memory) for kiln-bench-dispatch, and its children
// (tests/support/child_process.h). Linux only.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/child_process.h"

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

// A child in its own process group, its output in a file (tests/support/child_process.h).
class ChildProcess : public kiln::testing::ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path)
      : kiln::testing::ChildProcess(argv, log_path, {std::nullopt, true}) {}
};

}  // namespace kiln::bench
