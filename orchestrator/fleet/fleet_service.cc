#include "orchestrator/fleet/fleet_service.h"

namespace kiln::fleet {

FleetService::FleetService(core::HostLifecycle& hosts, runs::RunStarter* runs, Logger& log)
    : hosts_(hosts), runs_(runs), log_(log) {}

Result<Moved> FleetService::move(const core::HostTransition& t, const core::Actor& actor) {
  auto host = hosts_.transitionHost(t, actor);
  if (!host.ok()) return host.error();
  auto done = followUp({t}, {host->state}, actor);
  Moved m;
  m.host = std::move(*host);
  if (auto r = done.quarantine_runs.find(t.host); r != done.quarantine_runs.end()) m.quarantine_run = r->second;
  if (auto e = done.quarantine_errors.find(t.host); e != done.quarantine_errors.end())
    m.quarantine_run_error = e->second;
  return m;
}

Result<std::vector<Result<core::HostState>>> FleetService::transitionHosts(
    const std::vector<core::HostTransition>& transitions, const core::Actor& actor) {
  auto applied = hosts_.transitionHosts(transitions, actor);
  if (!applied.ok()) return applied;
  std::vector<std::optional<core::HostState>> to(transitions.size());
  for (std::size_t i = 0; i < transitions.size() && i < applied->size(); ++i)
    if ((*applied)[i].ok()) to[i] = *(*applied)[i];
  (void)followUp(transitions, to, actor);  // said in the log; the batch's callers look at states only
  return applied;
}

FleetService::FollowUpOutcome FleetService::followUp(const std::vector<core::HostTransition>& moves,
                                                     const std::vector<std::optional<core::HostState>>& to,
                                                     const core::Actor& actor) {
  FollowUpOutcome out;
  std::vector<std::string> for_scheduler;
  for (std::size_t i = 0; i < moves.size(); ++i) {
    if (!to[i]) continue;
    const core::HostTransition& t = moves[i];
    const core::FollowUps f = core::followUps(t.action, *to[i]);
    if (f.scheduler) for_scheduler.push_back(t.host);
    if (!f.quarantine_validation) continue;
    if (runs_ == nullptr) {
      out.quarantine_errors[t.host] = "kilnd runs no workflows here";
      continue;
    }
    runs::StartRequest q;
    q.workflow = "quarantine-validation";
    q.hosts = {t.host};
    q.purpose = "quarantine";
    auto run = runs_->startRun(q, actor);
    if (run.ok()) {
      out.quarantine_runs[t.host] = run->row.id;
    } else {
      out.quarantine_errors[t.host] = run.error().message;
      log_.warn("host " + t.host +
                " entered quarantine but its quarantine validation did not start: " + run.error().message);
    }
  }
  if (scheduler_ != nullptr && !for_scheduler.empty()) scheduler_->hostsMoved(for_scheduler);
  return out;
}

}  // namespace kiln::fleet
