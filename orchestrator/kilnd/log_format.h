#pragma once
// kilnd's log formats: `text` (the default, for people) and `json` (one object per line, for log
// shippers): {"ts", "level", "logger", "msg"} and the fields of the thread's LogScope
// (common/log_context.h), e.g. request_id, actor, route and the ids a request names.

#include <memory>
#include <string>

#include "common/logger.h"
#include "common/result.h"

namespace spdlog {
class formatter;
class logger;
}  // namespace spdlog

namespace kiln::kilnd {

// One JSON object per line; strings that are not valid UTF-8 get U+FFFD for the bad bytes.
std::unique_ptr<spdlog::formatter> makeJsonFormatter();

// Sets `log`'s format: "text" or "json" (kInvalidArgument otherwise).
Status setLogFormat(spdlog::logger& log, const std::string& format);

// The core's Logger seam (common/logger.h) writing to `log` at the same levels.
std::unique_ptr<Logger> makeSpdLogger(std::shared_ptr<spdlog::logger> log);

}  // namespace kiln::kilnd
