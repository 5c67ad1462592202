#include "common/spd_log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "common/log_context.h"

namespace kiln {
namespace {

// %& is ComponentFlag: "[slurm] " on kilnd.slurm's lines, nothing on the process's own.
constexpr const char* kTextPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %&%v";

class ComponentFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string_view name(msg.logger_name.data(), msg.logger_name.size());
    const auto dot = name.find('.');
    if (dot == std::string_view::npos) return;
    dest.push_back('[');
    dest.append(name.data() + dot + 1, name.data() + name.size());
    dest.push_back(']');
    dest.push_back(' ');
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<ComponentFlag>(); }
};

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    const auto since = msg.time.time_since_epoch();
    const std::time_t secs = duration_cast<seconds>(since).count();
    const auto millis = duration_cast<milliseconds>(since).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char ts[96];
    std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
    // Ordered keys: the fixed ones first, then the scope's fields as they were added.
    nlohmann::ordered_json j;
    j["ts"] = ts;
    const auto level = spdlog::level::to_string_view(msg.level);
    j["level"] = std::string(level.data(), level.size());
    j["logger"] = std::string(msg.logger_name.data(), msg.logger_name.size());
    j["msg"] = std::string(msg.payload.data(), msg.payload.size());
    for (const auto& [key, value] : LogScope::current())
      if (key != "ts" && key != "level" && key != "logger" && key != "msg") j[key] = value;
    const std::string line = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    dest.append(line.data(), line.data() + line.size());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

spdlog::level::level_enum spdLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

class SpdLogger final : public Logger {
 public:
  explicit SpdLogger(std::shared_ptr<spdlog::logger> log) : log_(std::move(log)) {}
  void log(LogLevel level, std::string_view message) override { log_->log(spdLevel(level), "{}", message); }
  bool enabled(LogLevel level) const override { return log_->should_log(spdLevel(level)); }
  std::shared_ptr<Logger> named(std::string_view component) override {
    auto child = std::make_shared<spdlog::logger>(log_->name() + "." + std::string(component), log_->sinks().begin(),
                                                  log_->sinks().end());
    child->set_level(log_->level());
    child->flush_on(log_->flush_level());
    return std::make_shared<SpdLogger>(std::move(child));
  }

 private:
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace

std::unique_ptr<spdlog::formatter> makeJsonFormatter() {
  return std::make_unique<JsonFormatter>();
}

Status setLogFormat(spdlog::logger& log, const std::string& format) {
  if (format == "json") {
    log.set_formatter(makeJsonFormatter());
    return Ok{};
  }
  if (format == "text") {
    auto text = std::make_unique<spdlog::pattern_formatter>();
    text->add_flag<ComponentFlag>('&').set_pattern(kTextPattern);
    log.set_formatter(std::move(text));
    return Ok{};
  }
  return invalidArgument("--log-format must be text or json, got '" + format + "'");
}

std::shared_ptr<Logger> makeSpdLogger(std::shared_ptr<spdlog::logger> log) {
  return std::make_shared<SpdLogger>(std::move(log));
}

}  // namespace kiln
