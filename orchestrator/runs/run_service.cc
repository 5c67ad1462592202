#include "orchestrator/runs/run_service.h"

#include <algorithm>
#include <set>

#include "common/agent_protocol.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/runs/engine.h"
#include "orchestrator/runs/group_step.h"
#include "orchestrator/runs/lost_lease.h"
#include "orchestrator/runs/report.h"
#include "orchestrator/workflow/loader.h"

namespace kiln::runs {
using nlohmann::json;

namespace {

// Whether a workflow reaches its hosts' BMCs (issue 32): a step about the BMC, a reboot it may
// recover with a power cycle, or a template naming host.bmc*, host.runner, pod.switch_bmcs or
// pod.bmc_credential.
bool reachesBmcs(const workflow::WorkflowSpec& sp) {
  auto names = [](const std::string& text) {
    return text.find("host.bmc") != std::string::npos || text.find("host.runner") != std::string::npos ||
           text.find("pod.switch_bmcs") != std::string::npos || text.find("pod.bmc_credential") != std::string::npos;
  };
  for (const auto& st : sp.steps) {
    if (st.target != workflow::Target::kHost || st.recover || names(st.when)) return true;
    for (const auto& a : st.run)
      if (names(a)) return true;
  }
  return false;
}

// The pod's NVLink switch trays and their BMCs, as kiln-oob's device list ("p1-s1=ADDR:PORT,..."),
// from the pod's layout (the trays the fleet import made); empty when the block names no
// switch_bmc template.
std::string switchBmcList(const core::ManagementSpec& m, const core::HostSummary& h) {
  if (m.switch_bmc.empty()) return "";
  auto platform = core::parsePlatform(h.platform);
  if (!platform) return "";
  std::string out;
  for (const auto& s : core::expandPod(h.pod, *platform).switch_trays)
    if (auto bmc = core::switchBmcOf(m, s.id, h.pod, s.rack_id, s.tray))
      out += (out.empty() ? "" : ",") + s.id + "=" + core::bmcArgument(*bmc);
  return out;
}

}  // namespace

const std::vector<std::string>& runStates() {
  static const std::vector<std::string> all = {"running", "passed", "failed", "cancelled"};  // workflow_runs CHECK
  return all;
}

// "rollout": the runs a rollout starts on its pods.
const std::vector<std::string>& runPurposes() {
  static const std::vector<std::string> all = {"burn_in", "quarantine", "pre_job", "maintenance", "manual", "rollout"};
  return all;
}

std::string RunService::defaultPurpose(const std::string& workflow) {
  if (workflow == "l11-burn-in") return "burn_in";
  if (workflow == "quarantine-validation") return "quarantine";
  if (workflow == "pre-job-health") return "pre_job";
  if (workflow == "firmware-upgrade") return "maintenance";
  return "manual";
}

RunService::RunService(core::FleetReads& fleet, WorkflowCatalog& catalog, RunRecordStore& store, core::Clock& clock,
                       RunServiceOptions options, std::function<void(const std::string&)> on_work)
    : fleet_(fleet),
      catalog_(catalog),
      store_(store),
      clock_(clock),
      options_(std::move(options)),
      on_work_(std::move(on_work)) {}

Result<RunView> RunService::startRun(const StartRequest& req, const core::Actor& actor) {
  if (!req.owner.empty()) {
    auto existing = store_.runByOwner(req.owner);
    if (!existing.ok()) return existing.error();
    if (*existing) return runView(**existing);
  }
  auto current = catalog_.current(req.workflow);
  if (!current.ok()) return current.error();
  if (!*current)
    return Error(ErrorCode::kInvalidContent, "no workflow '" + req.workflow + "'").with("field", "workflow");
  const workflow::WorkflowSpec& sp = *(*current)->spec;
  // A version stored before kilnd's executable allow-list was set (or widened) starts nothing
  // the list refuses.
  if (auto ok = catalog_.allowed(sp); !ok.ok()) return ok.error();

  Error bad = invalidContent("invalid workflow run");
  const std::string purpose = req.purpose.empty() ? defaultPurpose(req.workflow) : req.purpose;
  if (std::find(runPurposes().begin(), runPurposes().end(), purpose) == runPurposes().end())
    bad.fields.push_back({"purpose", "expected burn_in, quarantine, pre_job, maintenance, manual or rollout"});
  if (req.hosts.empty() && req.pods.empty()) bad.fields.push_back({"hosts", "give hosts or pods"});
  if (req.hosts.size() + req.pods.size() * 18 > options_.max_targets)
    bad.fields.push_back({"hosts", "at most " + std::to_string(options_.max_targets) + " hosts in one run"});
  // A rollout's validation may run a pod-scope workflow on a pod's upgraded hosts (issue 32).
  if (sp.scope == workflow::Scope::kPod && !req.hosts.empty() && purpose != "rollout")
    bad.fields.push_back({"hosts", "workflow '" + req.workflow + "' runs on whole pods: give pods"});
  workflow::ParamValues given;
  if (!req.params.is_object()) bad.fields.push_back({"params", "expected an object"});
  else
    given = runParams(req.params);
  auto params = workflow::resolveParams(sp, given);
  if (!params.ok())
    for (const auto& f : params.error().fields)
      bad.fields.push_back({f.path.rfind("params.", 0) == 0 ? f.path : "params." + f.path, f.message});
  if (!params.ok() && params.error().fields.empty()) bad.fields.push_back({"params", params.error().message});
  if (!bad.fields.empty()) {
    bad.message = "invalid workflow run: " + bad.fields[0].path + ": " + bad.fields[0].message;
    return bad;
  }

  // Targets -> groups of hosts with their context fields.
  struct Target {
    std::string group;
    std::vector<core::HostSummary> hosts;
    std::vector<core::HostSummary> pod_hosts;
  };
  std::vector<Target> targets;
  std::set<std::string> seen;
  // Read once per pod, not once per host; the pods asked for in one query (a 10,000-host run
  // spent a second on one getPod per pod).
  std::map<std::string, std::vector<core::HostSummary>> pod_hosts;
  if (!req.pods.empty()) {
    auto found = fleet_.hostsOfPods(req.pods);
    if (!found.ok()) return found.error();
    pod_hosts = std::move(*found);
  }
  auto podHosts = [&](const std::string& pod) -> Result<std::vector<core::HostSummary>> {
    if (auto it = pod_hosts.find(pod); it != pod_hosts.end()) return it->second;
    auto found = fleet_.hostsOfPods({pod});
    if (!found.ok()) return found.error();
    if (!found->count(pod)) return Error(invalidContent("no pod '" + pod + "'"));
    return pod_hosts[pod] = (*found)[pod];
  };
  for (const auto& pod : req.pods) {
    auto hosts = podHosts(pod);
    if (!hosts.ok()) return hosts.error();
    if (sp.scope == workflow::Scope::kPod) {
      if (!seen.insert(pod).second) continue;
      targets.push_back({pod, *hosts, *hosts});
    } else {
      for (const auto& h : *hosts)
        if (seen.insert(h.id).second) targets.push_back({h.id, {h}, *hosts});
    }
  }
  // The hosts asked for, and then their pods, each in one query (a 8,192-host pre-job check
  // read them one getHost at a time: ~25 s).
  std::map<std::string, core::HostSummary> by_id;
  if (!req.hosts.empty()) {
    auto found = fleet_.hostsById(req.hosts);
    if (!found.ok()) return found.error();
    by_id = std::move(*found);
    std::vector<std::string> pods;
    std::set<std::string> listed;
    for (const auto& [_, h] : by_id)
      if (!pod_hosts.count(h.pod) && listed.insert(h.pod).second) pods.push_back(h.pod);
    if (!pods.empty()) {
      auto more = fleet_.hostsOfPods(pods);
      if (!more.ok()) return more.error();
      for (auto& [pod, hosts] : *more) pod_hosts[pod] = std::move(hosts);
    }
  }
  for (const auto& id : req.hosts) {
    if (!seen.insert(id).second) continue;
    auto h = by_id.find(id);
    if (h == by_id.end()) return Error(invalidContent("no host '" + id + "'"));
    if (sp.scope == workflow::Scope::kPod) {
      // The hosts given of one pod are its group, together (pod.hosts lists them): a rollout
      // validates the pod's upgraded hosts as one NVLink domain.
      auto t = std::find_if(targets.begin(), targets.end(), [&](const Target& x) { return x.group == h->second.pod; });
      if (t == targets.end()) {
        targets.push_back({h->second.pod, {h->second}, {h->second}});
      } else {
        t->hosts.push_back(h->second);
        t->pod_hosts.push_back(h->second);
      }
      continue;
    }
    auto hosts = podHosts(h->second.pod);
    if (!hosts.ok()) return hosts.error();
    targets.push_back({id, {h->second}, *hosts});
  }

  // Lifecycle pre-conditions: burn-in takes new hardware, quarantine validation quarantined hosts.
  std::vector<core::HostTransition> start_transitions;
  for (const auto& t : targets)
    for (const auto& h : t.hosts) {
      const std::string state(core::hostStateName(h.state));
      if (purpose == "burn_in") {
        if (h.state == core::HostState::kIncoming)
          start_transitions.push_back({h.id, core::HostAction::kStartBurnIn, std::nullopt, "burn-in run"});
        else if (h.state != core::HostState::kBurnIn)
          return conflict("host " + h.id + " is " + state + ": burn-in takes incoming hardware").with("host", h.id);
      }
      if (purpose == "quarantine" && h.state != core::HostState::kQuarantine)
        return conflict("host " + h.id + " is " + state + ": quarantine validation takes quarantined hosts").with("host", h.id);
    }

  auto run_id = store_.nextRunId();
  if (!run_id.ok()) return run_id.error();
  NewRun nr;
  nr.run.id = *run_id;
  nr.run.workflow = req.workflow;
  nr.run.workflow_hash = (*current)->row.hash;
  nr.run.scope = workflow::scopeName(sp.scope);
  nr.run.purpose = purpose;
  nr.run.params = json(*params);
  nr.run.owner = req.owner;
  nr.claim = req.claim;
  nr.start_transitions = std::move(start_transitions);
  // The hosts' BMCs, for a workflow that reaches them (issue 32): one read for every pod.
  std::map<std::string, core::ManagementSpec> management;
  const bool reaches_bmcs = reachesBmcs(sp);
  if (reaches_bmcs) {
    std::vector<std::string> pods;
    for (const auto& t : targets)
      if (!t.hosts.empty() && (pods.empty() || pods.back() != t.hosts.front().pod)) pods.push_back(t.hosts.front().pod);
    auto found = fleet_.podManagement(pods);
    if (!found.ok()) return found.error();
    management = std::move(*found);
  }
  std::map<std::string, std::string> switch_lists;  // pod -> pod.switch_bmcs
  Engine engine(sp, *params);
  const auto now = clock_.now();
  Effects all;
  for (const auto& t : targets) {
    std::string pod_list;
    for (const auto& h : t.pod_hosts) pod_list += (pod_list.empty() ? "" : ",") + h.id;
    std::vector<std::pair<std::string, workflow::ContextFields>> hosts;
    std::vector<std::string> ids;
    for (const auto& h : t.hosts) {
      hosts.push_back({h.id,
                       {{"host.id", h.id}, {"host.name", h.id}, {"host.pod", h.pod}, {"host.rack", h.rack},
                        {"host.tray", std::to_string(h.tray)}, {"host.platform", h.platform}, {"pod.id", h.pod},
                        {"pod.name", h.pod}, {"pod.hosts", pod_list}}});
      if (reaches_bmcs) {
        // Empty when the pod names none: a step about the BMC then fails saying so.
        auto& fields = hosts.back().second;
        for (const char* f : {"host.runner", "host.bmc", "host.bmc_protocol", "host.bmc_credential", "pod.switch_bmcs",
                              "pod.bmc_credential"})
          fields[f] = "";
      }
      if (auto m = management.find(h.pod); m != management.end()) {
        auto& fields = hosts.back().second;
        fields["host.runner"] = core::runnerFor(m->second, h.id);  // one of several: spread by tray
        if (auto bmc = core::trayBmcOf(m->second, h.id, h.pod, h.rack, h.tray)) {
          fields["host.bmc"] = core::bmcArgument(*bmc);
          fields["host.bmc_protocol"] = bmc->protocol;
          fields["host.bmc_credential"] = bmc->credential;
        }
        // Once per pod, not per tray: every tray of the pod gets the same list.
        auto list = switch_lists.find(h.pod);
        if (list == switch_lists.end()) list = switch_lists.emplace(h.pod, switchBmcList(m->second, h)).first;
        fields["pod.switch_bmcs"] = list->second;
        fields["pod.bmc_credential"] = m->second.credential;
      }
      ids.push_back(h.id);
    }
    GroupState g = engine.newGroup(nr.run.id, t.group, std::move(hosts));
    // A run that takes hosts out of service starts none of them under a job (drain_gate.h).
    if (drain_gate_ && waitsForDrainGate(purpose))
      holdAtDrainGate(g, now, true, [&](const std::string& host) -> std::optional<std::string> {
        for (const auto& h : t.hosts)
          if (h.id == host) return drain_gate_(h, nr.run.id);
        return std::nullopt;  // not a host of the target: never
      });
    Effects fx = engine.start(g, now);
    for (const auto& d : fx.dispatches) all.dispatches.push_back(d);
    GroupUpdate u{std::move(g), std::move(fx), {}};
    u.transitions = verdictTransitions(nr.run, u.state, u.effects.hosts_finished);
    nr.groups.push_back({t.group, std::move(u), std::move(ids)});
  }
  auto created = store_.createRun(nr, actor);
  if (!created.ok()) {
    if (!req.owner.empty() && created.error().code == ErrorCode::kConflict) {
      if (auto again = store_.runByOwner(req.owner); again.ok() && *again) return runView(**again);
    }
    return created.error();
  }
  notifyWork(on_work_, all);
  return runView(created->id);
}

Result<RunView> RunService::runView(const std::string& id) {
  auto run = store_.getRun(id);
  if (!run.ok()) return run.error();
  auto groups = store_.runGroups(id);
  if (!groups.ok()) return groups.error();
  auto assignments = store_.runAssignments(id);
  if (!assignments.ok()) return assignments.error();
  std::map<std::string, const AssignmentRow*> by_id;
  for (const auto& a : *assignments) by_id[a.id] = &a;
  auto s = catalog_.spec(run->workflow, run->workflow_hash);

  RunView v;
  v.row = std::move(*run);
  for (auto& g : *groups) {
    for (auto& h : g.hosts) {
      switch (h.status) {
        case HostStatus::kPassed: ++v.progress.passed; break;
        case HostStatus::kFailed: ++v.progress.failed; break;
        case HostStatus::kCancelled: ++v.progress.cancelled; break;
        default: ++v.progress.running;
      }
      HostView hv;
      hv.host = h.host;
      hv.group = g.group;
      hv.status = h.status;
      hv.pass = h.pass;
      hv.attempt = h.attempt;
      hv.failures = std::move(h.failures);
      hv.warnings = std::move(h.warnings);
      // The newest parsed output of each step: the group state keeps only delta baselines, the
      // assignments' results keep them all (what the engine read, by the engine's own rule).
      hv.parsed = std::move(h.parsed);
      for (auto& r : h.history) {
        StepView sv{std::move(r), std::nullopt};
        if (auto it = by_id.find(sv.record.assignment_id); it != by_id.end() && it->second->result.is_object()) {
          StepResult sr = storedStepResult(it->second->result);
          sv.output = StepView::Tails{std::move(sr.stdout_tail), std::move(sr.stderr_tail)};
          if (hasParsedOutput(sr)) hv.parsed[sv.record.step_id] = std::move(sr.parsed);
        }
        hv.steps.push_back(std::move(sv));
      }
      if (!isTerminal(h.status) && s.ok() && h.step_index < (*s)->steps.size())
        hv.current_step = (*s)->steps[h.step_index].id;
      hv.assignment = h.assignment_id;
      hv.waiting_until = h.not_before;
      hv.waiting_for = std::move(h.waiting_for);
      hv.retest = std::move(h.retest);
      v.hosts.push_back(std::move(hv));
    }
  }
  if (s.ok()) {
    v.steps.emplace();
    for (const auto& st : (*s)->steps) v.steps->push_back(st.id);
  }
  return v;
}

Result<core::Page<RunRow>> RunService::listRuns(const RunFilter& filter, const core::PageRequest& page) {
  return store_.listRuns(filter, page);
}

Result<RunView> RunService::cancelRun(const std::string& id, const core::Actor& actor) {
  Effects all;
  auto fn = engineStep(catalog_, [&](const Engine& e, GroupState& g) -> Result<Effects> {
    Effects fx = e.cancel(g, "cancelled by " + actor.token_id);
    all.cancel_assignments.insert(all.cancel_assignments.end(), fx.cancel_assignments.begin(), fx.cancel_assignments.end());
    return fx;
  });
  if (auto st = store_.cancelRun(id, fn, actor); !st.ok()) return st.error();
  notifyWork(on_work_, all);
  return runView(id);
}

Status RunService::stopRun(const std::string& id, const core::Actor& actor) {
  auto groups = store_.runGroups(id);
  if (!groups.ok()) return groups.error();
  for (const auto& g : *groups) {
    if (Engine::done(g)) continue;
    Effects produced;
    auto fn = [&](const RunRow& run, GroupState state, const std::set<std::string>& undispatched) {
      return engineStep(catalog_, [&](const Engine& e, GroupState& s) -> Result<Effects> {
        produced = e.stop(s, clock_.now(), undispatched);
        return produced;
      })(run, std::move(state));
    };
    if (auto st = store_.stopGroup(id, g.group, fn, actor); !st.ok()) return st;
    notifyWork(on_work_, produced);
  }
  return Ok{};
}

Result<RunStatus> RunService::runStatus(const std::string& id) {
  auto run = store_.getRun(id);
  if (!run.ok()) return run.error();
  auto groups = store_.runGroups(id);
  if (!groups.ok()) return groups.error();
  RunStatus out;
  out.state = run->state;
  for (const auto& g : *groups)
    for (const auto& h : g.hosts) {
      out.hosts[h.host] = h.status;
      if (!h.failures.empty()) out.reasons[h.host] = h.failures.front();
    }
  return out;
}

Result<std::map<std::string, std::string>> RunService::runStates(const std::vector<std::string>& ids) {
  return store_.runStates(ids);
}

Result<std::vector<std::string>> RunService::workflowParams(const std::string& name) {
  return catalog_.workflowParams(name);
}

Result<std::vector<QuarantineEntry>> RunService::quarantineView() {
  auto rows = store_.quarantine();
  if (!rows.ok()) return rows.error();
  std::vector<QuarantineEntry> out;
  out.reserve(rows->size());
  const auto now = clock_.now();
  for (auto& q : *rows) {
    const auto in_quarantine = std::chrono::duration_cast<std::chrono::seconds>(now - q.host.state_since).count();
    const bool repeat_offender = q.repairs >= 3;
    out.push_back({std::move(q), in_quarantine, repeat_offender});
  }
  return out;
}

std::pair<std::string, json> runVerdict(const RunRow& run, const std::vector<GroupState>& groups) {
  json unhealthy = json::array();
  json pods = json::object();
  int passed = 0, failed = 0, cancelled = 0;
  for (const auto& g : groups) {
    for (const auto& h : g.hosts) {
      const auto pod_it = h.fields.find("pod.id");
      const std::string pod = pod_it == h.fields.end() ? "" : pod_it->second;
      auto& p = pods[pod];
      if (p.is_null()) p = {{"pod", pod}, {"hosts", 0}, {"healthy_hosts", 0}, {"failed_hosts", json::array()}};
      p["hosts"] = p["hosts"].get<int>() + 1;
      if (h.status == HostStatus::kPassed) {
        ++passed;
        p["healthy_hosts"] = p["healthy_hosts"].get<int>() + 1;
      } else if (h.status == HostStatus::kCancelled) {
        ++cancelled;
      } else {
        ++failed;
        p["failed_hosts"].push_back(h.host);
        // lost: no report came within its lease (lost_lease.h), which says nothing of its health.
        unhealthy.push_back({{"host", h.host}, {"pod", pod}, {"reasons", h.failures}, {"lost", onlyLostLeases(h.failures)}});
      }
    }
  }
  json pod_list = json::array();
  for (auto& [_, p] : pods.items()) {
    // A pod runs a 64-GPU slice while 16 of its 18 trays are healthy (docs/FACTS.md sparing).
    const int healthy_gpus = p["healthy_hosts"].get<int>() * 4;
    p["healthy_gpus"] = healthy_gpus;
    p["spares_cover"] = p["hosts"].get<int>() == 18 ? json(healthy_gpus >= 64) : json();
    pod_list.push_back(p);
  }
  const std::string state = cancelled > 0 && failed == 0 && passed == 0 ? "cancelled" : failed > 0 || cancelled > 0 ? "failed" : "passed";
  (void)run;
  return {state, json{{"hosts", passed + failed + cancelled}, {"healthy", passed}, {"unhealthy", unhealthy},
                      {"cancelled", cancelled}, {"pods", pod_list}}};
}

}  // namespace kiln::runs
