#include "orchestrator/runs/run_timers.h"

#include "common/runner_key.h"
#include "orchestrator/runs/group_step.h"
#include "orchestrator/runs/run_service.h"

namespace kiln::runs {

RunTimers::RunTimers(WorkflowCatalog& catalog, RunTimerStore& store, core::Clock& clock,
                     std::chrono::seconds unreachable_after, std::function<void(const std::string&)> on_work)
    : catalog_(catalog),
      store_(store),
      clock_(clock),
      unreachable_after_(unreachable_after),
      on_work_(std::move(on_work)) {}

int RunTimers::tick() {
  int did = 0;
  const auto now = clock_.now();
  if (auto due = store_.dueGroups(now, 200); due.ok()) {
    for (const auto& [run, group] : *due) {
      Effects produced;
      auto fn = engineStep(catalog_, [&](const Engine& e, GroupState& g) -> Result<Effects> {
        if (auto held = heldAtDrainGate(g); !held.empty()) {
          // No gate any more (kilnd restarted without a scheduler driver): nothing holds them.
          const bool gated = drain_gate_ && fleet_ != nullptr;
          auto hosts = gated ? fleet_->hostsById(held) : Result<std::map<std::string, core::HostSummary>>(std::map<std::string, core::HostSummary>{});
          holdAtDrainGate(g, now, false, [&](const std::string& host) -> std::optional<std::string> {
            if (!gated) return std::nullopt;
            if (!hosts.ok()) return "cannot read the host to ask the job scheduler's drain gate: " + hosts.error().message;
            auto it = hosts->find(host);
            if (it == hosts->end()) return std::nullopt;  // the host is gone: its step fails on its own
            return drain_gate_(it->second, g.run_id);
          });
        }
        produced = e.tick(g, now);
        return produced;
      });
      if (store_.updateGroup(run, group, fn, {"system", "kilnd"}).ok()) {
        notifyWork(on_work_, produced);
        ++did;
      }
    }
  }
  if (auto expired = store_.expiredLeases(now, 200); expired.ok()) {
    for (const auto& a : *expired) {
      Effects produced;
      StepResult lost;
      lost.lost = true;
      lost.started = false;
      auto fn = engineStep(catalog_, [&](const Engine& e, GroupState& g) -> Result<Effects> {
        auto fx = e.onResult(g, a.id, lost, now);
        if (!fx.ok()) return Effects{};  // the group moved on (cancelled): nothing to do
        produced = *fx;
        return fx;
      });
      if (auto r = store_.expireLease(a.id, a.lease, fn); r.ok() && *r) {
        notifyWork(on_work_, produced);
        // A poll parked with running=<this step> learns that its lease is gone.
        if (on_work_) on_work_(workerKey(a.host, a.runner));
        ++did;
      }
    }
  }
  if (auto done = store_.finalizeRuns(runVerdict); done.ok()) did += static_cast<int>(done->size());
  bool scan = false;
  {
    std::lock_guard lock(mu_);
    if (now - last_unreachable_scan_ > std::chrono::seconds(10)) {
      last_unreachable_scan_ = now;
      scan = true;
    }
  }
  if (scan)
    if (auto u = store_.markUnreachable(now - unreachable_after_); u.ok()) did += static_cast<int>(u->size());
  return did;
}

}  // namespace kiln::runs
