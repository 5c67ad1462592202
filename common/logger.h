#pragma once
// The logging seam of the core (docs/STYLE.md: core code takes its collaborators, never reaches for
// a global). Services that would otherwise drop a failed Result say so through a Logger; kilnd
// hands them one that writes to its spdlog logger (kilnd/log_format.h), tests a RecordingLogger.
// Thread-safe: implementations may be called from any thread.

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

std::string_view logLevelName(LogLevel level);

class Logger {
 public:
  virtual ~Logger() = default;
  virtual void log(LogLevel level, std::string_view message) = 0;

  void debug(std::string_view m) { log(LogLevel::kDebug, m); }
  void info(std::string_view m) { log(LogLevel::kInfo, m); }
  void warn(std::string_view m) { log(LogLevel::kWarn, m); }
  void error(std::string_view m) { log(LogLevel::kError, m); }
};

// Says nothing: the default where a caller has no log (tools, most tests).
class NullLogger final : public Logger {
 public:
  void log(LogLevel, std::string_view) override {}
};

// The process-wide NullLogger, for defaults of reference members.
Logger& nullLogger();

// Keeps every line, for tests that check what was said.
class RecordingLogger final : public Logger {
 public:
  void log(LogLevel level, std::string_view message) override {
    std::lock_guard lock(mu_);
    lines_.emplace_back(level, std::string(message));
  }
  std::vector<std::pair<LogLevel, std::string>> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  // How many lines at `level` contain `needle`.
  int count(LogLevel level, std::string_view needle) const {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& [l, m] : lines_)
      if (l == level && m.find(needle) != std::string::npos) ++n;
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<LogLevel, std::string>> lines_;
};

}  // namespace kiln
