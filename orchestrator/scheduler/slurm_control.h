#pragma once
// Slurm's command line as kilnd uses it: scontrol, run as a child process (argv, never a shell
// string), with a timeout, so a hung or down slurmctld delays only the driver's own pass.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "orchestrator/scheduler/slurm.h"

namespace kiln::exec {
class ProcessRunner;
}

namespace kiln::scheduler {

// What the driver asks of Slurm. Errors are kUnavailable with what scontrol said (its exit
// status and last stderr line, or "timed out after N ms"). Thread-safe.
class SlurmControl {
 public:
  virtual ~SlurmControl() = default;
  virtual Result<std::vector<SlurmNode>> nodes() = 0;
  virtual Result<std::vector<SlurmJob>> jobs() = 0;
  virtual Status drain(const std::string& node, const std::string& reason) = 0;
  virtual Status resume(const std::string& node) = 0;
  virtual Status requeue(const std::string& job) = 0;
};

struct ScontrolOptions {
  // Paths, or names looked up in env PATH. 22.05's scontrol has no --json: nodes come from
  // `sinfo --json`, jobs from `squeue --json`, changes from `scontrol update`.
  std::string scontrol = "scontrol", sinfo = "sinfo", squeue = "squeue";
  std::chrono::milliseconds timeout{10000};
  // The child's whole environment (kilnd's PATH, LANG, LC_ALL, TZ, SLURM_CONF by default).
  std::map<std::string, std::string> env;
};

// The argv of each call, for tests and for the log.
std::vector<std::string> drainArgv(const ScontrolOptions& o, const std::string& node, const std::string& reason);
std::vector<std::string> resumeArgv(const ScontrolOptions& o, const std::string& node);

// `runner` is shared (thread-safe). Node names and job ids that could be read as an option or
// a second key (a leading '-', '=', whitespace) are refused with kInvalidArgument before any
// process starts.
std::unique_ptr<SlurmControl> makeScontrol(ScontrolOptions options, std::shared_ptr<exec::ProcessRunner> runner);

}  // namespace kiln::scheduler
