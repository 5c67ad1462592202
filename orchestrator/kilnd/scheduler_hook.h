#pragma once
// kilnd's job-scheduler hook (--scheduler-hook URL|PATH, deploy/OPERATIONS.md): the blocking
// HTTP call or command that scheduler::HookDriver (scheduler/hook_driver.h) runs on an
// executor, so the controller pass that asks never waits for the scheduler.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/logger.h"
#include "orchestrator/scheduler/hook_driver.h"

namespace kiln::kilnd {

using scheduler::BlockingReleaseCall;

// POST {"action": "release", "rollout", "pod", "hosts"} to `url` (http:// or https://) with
// `timeout`; `log` gets a warning for a call that failed (transport error or a status >= 300).
BlockingReleaseCall httpReleaseCall(const std::string& url, std::chrono::milliseconds timeout,
                                    std::shared_ptr<Logger> log);

// Runs the executable `path` (absolute; never through a shell) as
//   PATH release ROLLOUT POD HOST...
// with the HTTP call's JSON body on its stdin and kilnd's PATH, LANG, LC_ALL and TZ as its
// whole environment; true when it exits 0 within `timeout` (then its process group is killed). `log`
// gets a line with the exit status and the last line of its stderr when it did not.
BlockingReleaseCall commandReleaseCall(const std::string& path, std::chrono::milliseconds timeout,
                                       std::shared_ptr<Logger> log);

// --scheduler-hook's call: httpReleaseCall for an http:// or https:// `hook` (3 s timeout),
// commandReleaseCall otherwise (10 s: a command such as scontrol may take a few seconds).
BlockingReleaseCall releaseCall(const std::string& hook, std::shared_ptr<Logger> log);

}  // namespace kiln::kilnd
