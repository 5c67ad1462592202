#pragma once
// What kilnctl needs from the operating system, as functions so tests can fake them:
// environment variables, whole-file reads and writes, and for commands that follow a run
// (run watch, gate) a monotonic clock, a sleep and whether stdout is a terminal; the host name.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "common/result.h"

namespace kiln::cli {

struct System {
  // The value of an environment variable, or nullopt when unset.
  std::function<std::optional<std::string>(const std::string& name)> get_env;
  // A whole file; "-" is standard input. Errors: kNotFound / kInvalidArgument with a message
  // naming the file.
  std::function<Result<std::string>(const std::string& path)> read_file;
  // Replaces a file's content; "-" is standard output.
  std::function<Status(const std::string& path, const std::string& content)> write_file;
  std::function<bool(const std::string& path)> file_exists;
  // Monotonic time and a sleep: tests use a fake clock that the sleep moves forward.
  std::function<std::chrono::steady_clock::time_point()> now;
  std::function<void(std::chrono::milliseconds)> sleep_for;
  // True when standard output is a terminal (live progress bars are drawn only then).
  std::function<bool()> stdout_is_tty;
  // This machine's host name as gethostname(2) gives it (may be a full DNS name); "" when it
  // cannot be read. For `slurm health-check`, which checks the node it runs on.
  std::function<std::string()> host_name;
};

// The real process environment and file system.
System realSystem();

}  // namespace kiln::cli
