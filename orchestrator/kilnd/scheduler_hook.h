#pragma once
// kilnd's job-scheduler hook (--scheduler-hook URL|PATH, deploy/OPERATIONS.md): the blocking
// HTTP call or command, and the adapter that runs such a call on an Executor, so the controller
// pass that asks never waits for the scheduler (a slow one held every rollout for up to 3 s per
// ask).

#include <chrono>
#include <functional>
#include <string>

#include "common/executor.h"
#include "orchestrator/rollouts/rollout_service.h"

namespace kiln::kilnd {

// Asks the scheduler; true when it took the request (2xx). Blocks. Called from one executor
// thread at a time per call, possibly several calls at once.
using BlockingReleaseCall = std::function<bool(const rollouts::ReleaseRequest&)>;

// A ReleaseHook that posts `call` to `executor` and returns at once; `done` gets its outcome
// (an exception from `call` counts as "not told"). `executor` must outlive the calls it runs:
// kilnd declares it before the RolloutService, so its destructor finishes them.
rollouts::ReleaseHook asyncReleaseHook(Executor& executor, BlockingReleaseCall call);

// POST {"action": "release", "rollout", "pod", "hosts"} to `url` (http:// or https://) with
// `timeout`; `warn` gets a line for a call that failed (transport error or a status >= 300).
BlockingReleaseCall httpReleaseCall(const std::string& url, std::chrono::milliseconds timeout,
                                    std::function<void(const std::string&)> warn);

// Runs the executable `path` (absolute; never through a shell) as
//   PATH release ROLLOUT POD HOST...
// with the HTTP call's JSON body on its stdin and kilnd's PATH, LANG, LC_ALL and TZ as its
// whole environment; true when it exits 0 within `timeout` (then its process group is killed). `warn`
// gets a line with the exit status and the last line of its stderr when it did not.
BlockingReleaseCall commandReleaseCall(const std::string& path, std::chrono::milliseconds timeout,
                                       std::function<void(const std::string&)> warn);

// --scheduler-hook's call: httpReleaseCall for an http:// or https:// `hook` (3 s timeout),
// commandReleaseCall otherwise (10 s: a command such as scontrol may take a few seconds).
BlockingReleaseCall releaseCall(const std::string& hook, std::function<void(const std::string&)> warn);

}  // namespace kiln::kilnd
