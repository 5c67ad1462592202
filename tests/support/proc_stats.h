#pragma once
// /proc readings for the benchmarks: CPU time and resident memory of a process (a child of
// tests/support/child_process.h, a kilnd, a PostgreSQL backend), the machine's CPU time, the
// load average. Linux only; thread-compatible (every call reads /proc afresh).

#include <sys/types.h>

#include <string>
#include <vector>

namespace kiln::testing {

// User + system CPU time of a process so far, in seconds; -1 when it cannot be read (gone).
double cpuSeconds(pid_t pid);
// VmRSS of a process in KiB; 0 when it cannot be read.
long rssKib(pid_t pid);
// Pids whose command line is exactly a program ending in `program` plus, somewhere, the
// consecutive arguments `arg` and `value` (e.g. "--host", "h1").
std::vector<pid_t> findProcesses(const std::string& program, const std::string& arg, const std::string& value);
// "1.23 0.98 0.77" from /proc/loadavg.
std::string loadAverage();

// CPU time of the whole machine so far (the "cpu" line of /proc/stat), in seconds summed over
// its CPUs: `total` every state, `busy` all but idle and iowait. The difference of two
// readings over a wall-clock interval x cpus is the machine's share in use.
struct MachineCpu {
  double busy_s = 0, total_s = 0;
  int cpus = 0;  // online CPUs
};
MachineCpu machineCpu();

}  // namespace kiln::testing
