#pragma once
// The Logger seam (common/logger.h) over spdlog: the one logger of kilnd and kiln-agent, with a
// named logger per component (kilnd.slurm, kilnd.api, kiln-agent.live_output, ...) sharing the
// process's sinks and format. The formats: `text` (the default, for people: a component's lines
// carry "[component]") and `json` (one object per line, for log shippers): {"ts", "level",
// "logger", "msg"} and the fields of the thread's LogScope (common/log_context.h), e.g.
// request_id, actor, route and the ids a request names.

#include <memory>
#include <string>

#include "common/logger.h"
#include "common/result.h"

namespace spdlog {
class formatter;
class logger;
}  // namespace spdlog

namespace kiln {

// One JSON object per line; strings that are not valid UTF-8 get U+FFFD for the bad bytes.
std::unique_ptr<spdlog::formatter> makeJsonFormatter();

// Sets `log`'s format (on its sinks, which its named loggers share): "text" or "json"
// (kInvalidArgument otherwise).
Status setLogFormat(spdlog::logger& log, const std::string& format);

// The Logger seam writing to `log` at the same levels; named(c) gives a logger "<log's name>.c"
// on the same sinks, at the same level. Set the format before naming components.
std::shared_ptr<Logger> makeSpdLogger(std::shared_ptr<spdlog::logger> log);

}  // namespace kiln
