#include "orchestrator/runs/group_step.h"

#include <algorithm>
#include <set>

#include "common/runner_key.h"
#include "orchestrator/runs/lost_lease.h"

namespace kiln::runs {

workflow::ParamValues runParams(const nlohmann::json& params) {
  workflow::ParamValues out;
  for (const auto& [k, v] : params.items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  return out;
}

std::vector<core::HostTransition> verdictTransitions(const RunRow& run, const GroupState& g,
                                                     const std::vector<std::string>& finished) {
  std::vector<core::HostTransition> out;
  for (const auto& h : g.hosts) {
    if (std::find(finished.begin(), finished.end(), h.host) == finished.end()) continue;
    if (h.status == HostStatus::kCancelled) continue;
    const bool passed = h.status == HostStatus::kPassed;
    std::string reason = run.workflow + " " + run.id + (passed ? " passed" : " failed");
    // Every failure, not only the first: a step that failed softly (on_failure: continue) and the
    // one that failed the host both belong in what an SRE reads on the host.
    for (std::size_t i = 0; !passed && i < h.failures.size(); ++i) reason += (i == 0 ? ": " : "; ") + h.failures[i];
    if (reason.size() > 900) reason = reason.substr(0, 900) + "...";
    if (run.purpose == "burn_in")
      out.push_back(
          {h.host, passed ? core::HostAction::kBurnInPass : core::HostAction::kBurnInFail, std::nullopt, reason});
    else if (run.purpose == "quarantine")
      out.push_back({h.host, passed ? core::HostAction::kQuarantinePass : core::HostAction::kQuarantineFail,
                     std::nullopt, reason});
    // A host whose check only lost its reports (lost_lease.h) is not known to be unhealthy:
    // it stays in the pool (an overloaded kilnd must not drain healthy nodes).
    else if (run.purpose == "pre_job" && !passed && !onlyLostLeases(h.failures))
      out.push_back({h.host, core::HostAction::kFail, std::nullopt, reason});
  }
  return out;
}

GroupFn engineStep(WorkflowCatalog& catalog, EngineEvent event) {
  return [&catalog, event = std::move(event)](const RunRow& run, GroupState state) -> Result<GroupUpdate> {
    auto s = catalog.spec(run.workflow, run.workflow_hash);
    if (!s.ok()) return s.error();
    const workflow::ParamValues params = runParams(run.params);
    Engine engine(**s, params);
    auto fx = event(engine, state);
    if (!fx.ok()) return fx.error();
    GroupUpdate u{std::move(state), std::move(*fx), {}};
    u.transitions = verdictTransitions(run, u.state, u.effects.hosts_finished);
    return u;
  };
}

void notifyWork(const std::function<void(const std::string&)>& on_work, const Effects& fx,
                const std::string& delivered) {
  if (!on_work) return;
  std::set<std::string> hosts;
  for (const auto& d : fx.dispatches)
    if (d.assignment_id != delivered) hosts.insert(workerKey(d.host, d.runner));
  for (const auto& id : fx.cancel_assignments) {
    // "<run>:<host>:<seq>", or "<run>:<host>:<seq>@<runner>" for a step its runner holds.
    const auto at = id.find('@');
    if (at != std::string::npos) {
      hosts.insert(runnerKey(id.substr(at + 1)));
      continue;
    }
    auto a = id.find(':'), b = id.rfind(':');
    if (a != std::string::npos && b > a) hosts.insert(id.substr(a + 1, b - a - 1));
  }
  for (const auto& h : hosts) on_work(h);
}

}  // namespace kiln::runs
