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

Logger& nullLogger() {
  static NullLogger null;
  return null;
}

}  // namespace kiln
