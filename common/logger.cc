#include "common/logger.h"

namespace kiln {

std::string_view logLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

namespace {

// Logger::named's default: the parent's lines, each after "[component] ".
class ComponentLogger final : public Logger {
 public:
  ComponentLogger(Logger& parent, std::string_view component)
      : parent_(parent), prefix_("[" + std::string(component) + "] ") {}
  void log(LogLevel level, std::string_view message) override {
    parent_.log(level, prefix_ + std::string(message));
  }
  bool enabled(LogLevel level) const override { return parent_.enabled(level); }

 private:
  Logger& parent_;
  std::string prefix_;
};

}  // namespace

std::shared_ptr<Logger> Logger::named(std::string_view component) {
  return std::make_shared<ComponentLogger>(*this, component);
}

Logger& nullLogger() {
  static NullLogger null;
  return null;
}

}  // namespace kiln
