#pragma once
// The job-scheduler hook as a scheduler::Driver (--scheduler-hook URL|PATH, deploy/OPERATIONS.md):
// a release ask is a blocking call (an HTTP POST or a command, kilnd/scheduler_hook.h) run on an
// Executor, so the controller pass that asks never waits for the scheduler (a slow one held
// every rollout for up to 3 s per ask). The hook has no gate and no node view: the site's
// scheduler answers a release with POST /hosts/{id}/actions {"action": "release"}.
//
// Thread-safe.

#include <functional>
#include <memory>

#include "common/executor.h"
#include "orchestrator/scheduler/driver.h"

namespace kiln::scheduler {

// Asks the scheduler; true when it took the request. Blocks. Called from the executor's threads,
// possibly several calls at once.
using BlockingReleaseCall = std::function<bool(const ReleaseRequest&)>;

class HookDriver final : public Driver {
 public:
  // `executor` must outlive the calls it runs: kilnd declares it before the services that
  // ask, so its destructor finishes them.
  HookDriver(Executor& executor, BlockingReleaseCall call);

  std::string_view kind() const override { return "hook"; }
  // Posts the call and returns at once; `done` gets its outcome (an exception from the call
  // counts as "not told").
  void requestDrain(const ReleaseRequest& request, std::function<void(bool told)> done) override;
  std::optional<std::string> heldBack(const core::HostSummary&, const std::string&) override { return std::nullopt; }
  void hostsMoved(const std::vector<std::string>&) override {}
  std::optional<DriverStatus> status() const override { return std::nullopt; }
  std::string hostOfNode(const std::string&) const override { return ""; }

 private:
  Executor& executor_;
  std::shared_ptr<BlockingReleaseCall> call_;
};

}  // namespace kiln::scheduler
