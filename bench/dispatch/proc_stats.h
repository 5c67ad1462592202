#pragma once
// /proc readings (CPU time, resident memory) for kiln-bench-dispatch, and its children
// (tests/support/child_process.h). The readers live in tests/support/proc_stats.h, shared with
// kiln-bench-rollout. Linux only.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/proc_stats.h"

namespace kiln::bench {

using kiln::testing::cpuSeconds;
using kiln::testing::findProcesses;
using kiln::testing::loadAverage;
using kiln::testing::rssKib;

// A child in its own process group, its output in a file (tests/support/child_process.h).
class ChildProcess : public kiln::testing::ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path)
      : kiln::testing::ChildProcess(argv, log_path, {std::nullopt, true}) {}
};

}  // namespace kiln::bench
