#pragma once
// What `run` and `gate` share: the POST /workflow-runs request built from flags, and following
// a run live until it ends.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "common/result.h"

namespace kiln::cli {

// "/api/v1/workflow-runs/ID" with ID percent-encoded.
std::string runPath(const std::string& id);

// --hosts H1,H2, --pods P1,P2, --param K=V (repeated), --purpose P: the flags a command that
// starts runs offers.
std::vector<FlagSpec> runTargetFlags();

// POST /api/v1/workflow-runs for `workflow` from the runTargetFlags of `cmd`. Errors
// (kInvalidArgument, a message for a usage error): neither --hosts nor --pods, an empty name in
// a list, a --param key given twice.
Result<ApiRequest> startRunRequest(const ParsedCommand& cmd, const std::string& workflow);

struct FollowOptions {
  std::chrono::milliseconds poll_interval{10000};
  std::optional<std::chrono::milliseconds> timeout;  // none: until the run ends
  // Polls may fail (kilnd restarting, a 5xx) for this long in a row before following gives up.
  std::chrono::milliseconds max_outage{std::chrono::minutes(5)};
  // Where the run is read (empty: GET /workflow-runs/{id}); the prolog reads its check at
  // /scheduler/checks/{id}, all its narrow token may read.
  std::string path;
};

enum class FollowEnd {
  kFinished,  // the run is passed, failed or cancelled
  kTimedOut,  // options.timeout passed first; the run goes on
  kLost,      // polling failed: a 4xx answer, or failures for longer than max_outage
};

struct FollowResult {
  FollowEnd end = FollowEnd::kFinished;
  nlohmann::json run;  // the newest document seen
};

// Follows `run` (a GET /workflow-runs/{id} document) until it ends: sleeps poll_interval
// (ctx.system.sleep_for, bounded by what is left of the timeout), GETs the run again, and prints
// a timestamped progressLine whenever it changes and a line per host that failed or was
// cancelled; on a terminal (ctx.system.stdout_is_tty) a progress bar redrawn in place. Progress
// goes to ctx.out, or ctx.err with --json. Poll errors are printed to ctx.err.
// Pre-condition: ctx.transport is set.
FollowResult followRun(CommandContext& ctx, nlohmann::json run, const FollowOptions& options);

// A duration flag's value, or nullopt when the flag was not given; an invalid one is an Error
// whose message names the flag.
Result<std::optional<std::chrono::milliseconds>> durationFlag(const ParsedCommand& cmd, const std::string& flag);

}  // namespace kiln::cli
