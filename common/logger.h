#pragma once
// The one logging interface of kilnd and kiln-agent (docs/STYLE.md: code takes its collaborators,
// never reaches for a global). Each component gets its own named logger from the process's
// (named("slurm"): its lines say which component wrote them); the composition roots build the
// process's over spdlog (common/spd_log.h), tests use a RecordingLogger.
// Thread-safe: implementations may be called from any thread.

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/core.h>

namespace kiln {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

std::string_view logLevelName(LogLevel level);

class Logger {
 public:
  virtual ~Logger() = default;
  // `message` is written as it is (never a format string).
  virtual void log(LogLevel level, std::string_view message) = 0;
  // Whether a line at `level` would be written: a caller may skip building a costly line.
  virtual bool enabled(LogLevel /*level*/) const { return true; }
  // The logger of one component of the process, whose lines carry its name. The default
  // writes through this one with "[component] " before each message. May outlive nothing it
  // was named from: the composition root keeps the process's logger for its whole life.
  virtual std::shared_ptr<Logger> named(std::string_view component);

  void debug(std::string_view m) { log(LogLevel::kDebug, m); }
  void info(std::string_view m) { log(LogLevel::kInfo, m); }
  void warn(std::string_view m) { log(LogLevel::kWarn, m); }
  void error(std::string_view m) { log(LogLevel::kError, m); }
  // fmt-style lines, "assignment {}: exit {}" (checked at compile time); formatted only when
  // the level is enabled.
  template <typename... Args>
  void debug(fmt::format_string<Args...> f, Args&&... args) {
    logf(LogLevel::kDebug, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void info(fmt::format_string<Args...> f, Args&&... args) {
    logf(LogLevel::kInfo, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) {
    logf(LogLevel::kWarn, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void error(fmt::format_string<Args...> f, Args&&... args) {
    logf(LogLevel::kError, f, std::forward<Args>(args)...);
  }

 private:
  template <typename... Args>
  void logf(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
    if (enabled(level)) log(level, fmt::format(f, std::forward<Args>(args)...));
  }
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
