#include "orchestrator/runs/run_service.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "common/agent_protocol.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/runs/engine.h"
#include "orchestrator/runs/report.h"
#include "orchestrator/workflow/loader.h"

namespace kiln::runs {
namespace {

using nlohmann::json;

workflow::ParamValues paramsFrom(const json& j) {
  workflow::ParamValues out;
  for (const auto& [k, v] : j.items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
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

RunService::RunService(core::FleetReads& fleet, RunStore& store, core::Clock& clock, RunServiceOptions options,
                       std::function<void(const std::string&)> on_work)
    : fleet_(fleet), store_(store), clock_(clock), options_(options), on_work_(std::move(on_work)) {}

Result<std::vector<std::string>> RunService::loadWorkflowDir(const std::string& dir, const core::Actor& actor) {
  auto specs = workflow::loadWorkflowDir(dir);
  if (!specs.ok()) return specs.error();
  std::vector<std::string> names;
  for (const auto& s : *specs) {
    std::ifstream in(s.source_name);
    std::stringstream buf;
    buf << in.rdbuf();
    if (auto st = store_.putWorkflow({s.name, s.content_hash, s.source_name, buf.str(), {}}, actor, std::nullopt); !st.ok())
      return st.error();
    names.push_back(s.name);
  }
  return names;
}

Result<WorkflowPut> RunService::putWorkflow(const std::string& name, const std::string& yaml, const core::Actor& actor,
                                     const std::optional<core::IfMatch>& if_match) {
  auto spec = workflow::loadWorkflow(yaml, "request body");
  if (!spec.ok()) return spec.error();
  if (spec->name != name)
    return invalidContent("the document names workflow '" + spec->name + "' but the URL says '" + name + "'");
  auto before = store_.currentWorkflow(name);
  if (!before.ok()) return before.error();
  if (auto st = store_.putWorkflow({name, spec->content_hash, "api", yaml, {}}, actor, if_match); !st.ok())
    return st.error();
  const bool changed = !*before || (*before)->hash != spec->content_hash;
  return WorkflowPut{name, spec->content_hash, changed};
}

Result<std::vector<WorkflowInfo>> RunService::listWorkflows() {
  auto rows = store_.listWorkflows();
  if (!rows.ok()) return rows.error();
  std::vector<WorkflowInfo> out;
  out.reserve(rows->size());
  for (auto& w : *rows) {
    auto s = spec(w.name, w.hash);
    // A version that no longer loads is still listed, by name and hash.
    out.push_back({std::move(w), s.ok() ? specOf(*s) : nullptr});
  }
  return out;
}

Result<WorkflowInfo> RunService::getWorkflow(const std::string& name) {
  auto row = store_.currentWorkflow(name);
  if (!row.ok()) return row.error();
  if (!*row) return notFound("no workflow '" + name + "'");
  auto s = spec(name, (*row)->hash);
  if (!s.ok()) return s.error();
  return WorkflowInfo{std::move(**row), specOf(*s)};
}

std::shared_ptr<const workflow::WorkflowSpec> RunService::specOf(const std::shared_ptr<const LoadedSpec>& loaded) {
  // Shares the cached spec's ownership: no copy of the spec per answer.
  return {loaded, &loaded->spec};
}

Result<std::shared_ptr<const RunService::LoadedSpec>> RunService::spec(const std::string& name, const std::string& hash) {
  const std::string key = name + "@" + hash;
  {
    std::lock_guard lock(mu_);
    if (auto it = specs_.find(key); it != specs_.end()) return it->second;
  }
  auto row = store_.workflowVersion(name, hash);
  if (!row.ok()) return row.error();
  if (!*row) return notFound("no version " + hash + " of workflow '" + name + "'");
  auto loaded = workflow::loadWorkflow((*row)->yaml, (*row)->source);
  if (!loaded.ok()) return loaded.error();
  auto ptr = std::make_shared<const LoadedSpec>(LoadedSpec{std::move(*loaded)});
  std::lock_guard lock(mu_);
  specs_[key] = ptr;
  return ptr;
}

std::vector<core::HostTransition> RunService::transitionsFor(const RunRow& run, const GroupState& g,
                                                             const std::vector<std::string>& finished) const {
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
      out.push_back({h.host, passed ? core::HostAction::kBurnInPass : core::HostAction::kBurnInFail, std::nullopt, reason});
    else if (run.purpose == "quarantine")
      out.push_back({h.host, passed ? core::HostAction::kQuarantinePass : core::HostAction::kQuarantineFail, std::nullopt, reason});
    else if (run.purpose == "pre_job" && !passed)
      out.push_back({h.host, core::HostAction::kFail, std::nullopt, reason});
  }
  return out;
}

GroupFn RunService::engineFn(std::function<Result<Effects>(const Engine&, GroupState&)> event) {
  return [this, event](const RunRow& run, GroupState state) -> Result<GroupUpdate> {
    auto s = spec(run.workflow, run.workflow_hash);
    if (!s.ok()) return s.error();
    const workflow::ParamValues params = paramsFrom(run.params);
    Engine engine((*s)->spec, params);
    auto fx = event(engine, state);
    if (!fx.ok()) return fx.error();
    GroupUpdate u{std::move(state), std::move(*fx), {}};
    u.transitions = transitionsFor(run, u.state, u.effects.hosts_finished);
    return u;
  };
}

void RunService::notify(const Effects& fx, const std::string& delivered) {
  if (!on_work_) return;
  std::set<std::string> hosts;
  for (const auto& d : fx.dispatches)
    if (d.assignment_id != delivered) hosts.insert(d.host);
  for (const auto& id : fx.cancel_assignments) {
    // "<run>:<host>:<seq>"
    auto a = id.find(':'), b = id.rfind(':');
    if (a != std::string::npos && b > a) hosts.insert(id.substr(a + 1, b - a - 1));
  }
  for (const auto& h : hosts) on_work_(h);
}

Result<RunView> RunService::startRun(const StartRequest& req, const core::Actor& actor) {
  if (!req.owner.empty()) {
    auto existing = store_.runByOwner(req.owner);
    if (!existing.ok()) return existing.error();
    if (*existing) return runView(**existing);
  }
  auto row = store_.currentWorkflow(req.workflow);
  if (!row.ok()) return row.error();
  if (!*row) return Error(ErrorCode::kInvalidContent, "no workflow '" + req.workflow + "'").with("field", "workflow");
  auto s = spec(req.workflow, (*row)->hash);
  if (!s.ok()) return s.error();
  const workflow::WorkflowSpec& sp = (*s)->spec;

  Error bad = invalidContent("invalid workflow run");
  const std::string purpose = req.purpose.empty() ? defaultPurpose(req.workflow) : req.purpose;
  if (std::find(runPurposes().begin(), runPurposes().end(), purpose) == runPurposes().end())
    bad.fields.push_back({"purpose", "expected burn_in, quarantine, pre_job, maintenance, manual or rollout"});
  if (req.hosts.empty() && req.pods.empty()) bad.fields.push_back({"hosts", "give hosts or pods"});
  if (req.hosts.size() + req.pods.size() * 18 > options_.max_targets)
    bad.fields.push_back({"hosts", "at most " + std::to_string(options_.max_targets) + " hosts in one run"});
  if (sp.scope == workflow::Scope::kPod && !req.hosts.empty())
    bad.fields.push_back({"hosts", "workflow '" + req.workflow + "' runs on whole pods: give pods"});
  workflow::ParamValues given;
  if (!req.params.is_object()) bad.fields.push_back({"params", "expected an object"});
  else given = paramsFrom(req.params);
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
  for (const auto& id : req.hosts) {
    if (!seen.insert(id).second) continue;
    auto h = fleet_.getHost(id);
    if (!h.ok()) return h.error().code == ErrorCode::kNotFound ? Error(invalidContent("no host '" + id + "'")) : h.error();
    auto hosts = podHosts(h->host.pod);
    if (!hosts.ok()) return hosts.error();
    targets.push_back({id, {h->host}, *hosts});
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
  nr.run.workflow_hash = (*row)->hash;
  nr.run.scope = workflow::scopeName(sp.scope);
  nr.run.purpose = purpose;
  nr.run.params = json(*params);
  nr.run.owner = req.owner;
  nr.claim = req.claim;
  nr.start_transitions = std::move(start_transitions);
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
      ids.push_back(h.id);
    }
    GroupState g = engine.newGroup(nr.run.id, t.group, std::move(hosts));
    Effects fx = engine.start(g, now);
    for (const auto& d : fx.dispatches) all.dispatches.push_back(d);
    GroupUpdate u{std::move(g), std::move(fx), {}};
    u.transitions = transitionsFor(nr.run, u.state, u.effects.hosts_finished);
    nr.groups.push_back({t.group, std::move(u), std::move(ids)});
  }
  auto created = store_.createRun(nr, actor);
  if (!created.ok()) {
    if (!req.owner.empty() && created.error().code == ErrorCode::kConflict) {
      if (auto again = store_.runByOwner(req.owner); again.ok() && *again) return runView(**again);
    }
    return created.error();
  }
  notify(all);
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
  auto s = spec(run->workflow, run->workflow_hash);

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
      if (!isTerminal(h.status) && s.ok() && h.step_index < (*s)->spec.steps.size())
        hv.current_step = (*s)->spec.steps[h.step_index].id;
      hv.assignment = h.assignment_id;
      hv.waiting_until = h.not_before;
      hv.retest = std::move(h.retest);
      v.hosts.push_back(std::move(hv));
    }
  }
  if (s.ok()) {
    v.steps.emplace();
    for (const auto& st : (*s)->spec.steps) v.steps->push_back(st.id);
  }
  return v;
}

Result<core::Page<RunRow>> RunService::listRuns(const RunFilter& filter, const core::PageRequest& page) {
  return store_.listRuns(filter, page);
}

Result<RunView> RunService::cancelRun(const std::string& id, const core::Actor& actor) {
  Effects all;
  auto fn = engineFn([&](const Engine& e, GroupState& g) -> Result<Effects> {
    Effects fx = e.cancel(g, "cancelled by " + actor.token_id);
    all.cancel_assignments.insert(all.cancel_assignments.end(), fx.cancel_assignments.begin(), fx.cancel_assignments.end());
    return fx;
  });
  if (auto st = store_.cancelRun(id, fn, actor); !st.ok()) return st.error();
  notify(all);
  return runView(id);
}

Status RunService::stopRun(const std::string& id, const core::Actor& actor) {
  auto groups = store_.runGroups(id);
  if (!groups.ok()) return groups.error();
  for (const auto& g : *groups) {
    if (Engine::done(g)) continue;
    Effects produced;
    auto fn = [&](const RunRow& run, GroupState state, const std::set<std::string>& undispatched) {
      return engineFn([&](const Engine& e, GroupState& s) -> Result<Effects> {
        produced = e.stop(s, clock_.now(), undispatched);
        return produced;
      })(run, std::move(state));
    };
    if (auto st = store_.stopGroup(id, g.group, fn, actor); !st.ok()) return st;
    notify(produced);
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
  auto row = store_.currentWorkflow(name);
  if (!row.ok()) return row.error();
  if (!*row) return notFound("no workflow '" + name + "'");
  auto s = spec(name, (*row)->hash);
  if (!s.ok()) return s.error();
  std::vector<std::string> out;
  for (const auto& p : (*s)->spec.params) out.push_back(p.name);
  return out;
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

namespace {

// The assignment as the agents read it (common/agent_protocol.h): what kilnd decides beyond the
// stored row (the kill grace, the output cap) is set here, once.
protocol::Assignment assignmentOf(const AssignmentRow& r) {
  protocol::Assignment a;
  a.id = r.id;
  a.lease = r.lease;
  a.run_id = r.run_id;
  a.step_id = r.step_id;
  a.attempt = r.attempt;
  a.type = r.type;
  a.argv = r.argv;
  a.timeout_ms = r.timeout_ms;
  a.kill_grace_ms = 5000;
  a.parse = r.parse;
  a.output_cap = 65536;
  a.inventory_after = r.inventory_after;
  return a;
}

}  // namespace

Result<std::optional<protocol::Assignment>> RunService::claimWork(const std::string& host) {
  auto a = store_.claimWork(host, options_.lease_grace_ms);
  if (!a.ok()) return a.error();
  if (!*a) return std::optional<protocol::Assignment>();
  return std::optional<protocol::Assignment>(assignmentOf(**a));
}

Result<std::map<std::string, HandedOut>> RunService::claimBatch(const std::vector<std::string>& hosts) {
  auto rows = store_.claimBatch(hosts, options_.lease_grace_ms);
  if (!rows.ok()) return rows.error();
  std::map<std::string, HandedOut> out;
  for (const auto& [host, row] : *rows) out.emplace(host, HandedOut{assignmentOf(row), row.group_key});
  return out;
}

std::vector<Result<RunService::ReportAnswer>> RunService::reportBatch(const std::vector<ReportRequest>& reports) {
  std::vector<Result<ReportAnswer>> answers(reports.size(), Result<ReportAnswer>(ReportAnswer{}));
  std::vector<ReportItem> items;
  std::vector<std::size_t> index;  // items[k] answers reports[index[k]]
  std::vector<Effects> produced(reports.size());
  struct StepLabel {
    std::string workflow, step;
  };
  std::vector<StepLabel> labels(reports.size());  // set inside the transaction
  std::vector<std::shared_ptr<const StepResult>> results(reports.size());
  const auto now = clock_.now();
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const json& body = reports[i].body;
    auto decoded = decodeStepReport(body);
    if (!decoded.ok()) {
      answers[i] = decoded.error();
      continue;
    }
    const std::string id = reports[i].assignment_id;
    auto result = std::make_shared<const StepResult>(std::move(decoded->result));
    results[i] = result;
    Effects* out = &produced[i];
    StepLabel* label = &labels[i];
    items.push_back({id, reports[i].host, decoded->lease, &body,
                     reports[i].text.empty() ? nullptr : &reports[i].text,
                     engineFn([id, result, out, label, now](const Engine& e, GroupState& g) -> Result<Effects> {
                       for (const auto& h : g.hosts)
                         if (h.assignment_id == id && h.step_index < e.spec().steps.size())
                           *label = {e.spec().name, e.spec().steps[h.step_index].id};
                       auto fx = e.onResult(g, id, *result, now);
                       if (fx.ok()) *out = *fx;
                       return fx;
                     }),
                     decoded->ready});
    index.push_back(i);
  }
  bool run_complete = false;
  auto apply = [&](std::size_t k, const Result<ReportReply>& reply) {
    const std::size_t i = index[k];
    if (!reply.ok()) {
      answers[i] = reply.error();
      return;
    }
    ReportAnswer a{reply->outcome, std::nullopt, ""};
    if (reply->next) {
      a.next = assignmentOf(*reply->next);
      a.next_group = reply->next->group_key;
    }
    run_complete = run_complete || reply->run_complete;
    if (reply->outcome == ReportOutcome::kAccepted) {
      notify(produced[i], reply->next ? reply->next->id : "");
      if (!labels[i].workflow.empty()) recordStep(labels[i].workflow, labels[i].step, *results[i]);
    }
    answers[i] = std::move(a);
  };
  if (items.empty()) return answers;
  auto batch = store_.reportBatch(items, options_.lease_grace_ms);
  if (batch.ok()) {
    for (std::size_t k = 0; k < items.size(); ++k) apply(k, (*batch)[k]);
  } else {
    // The batch failed as a whole: each report alone, so that only a bad one fails.
    for (std::size_t k = 0; k < items.size(); ++k) {
      auto one = items.size() == 1 ? batch : store_.reportBatch({items[k]}, options_.lease_grace_ms);
      if (one.ok()) apply(k, (*one)[0]);
      else answers[index[k]] = one.error();
    }
  }
  if (run_complete && options_.on_run_complete) options_.on_run_complete();
  return answers;
}

void RunService::recordStep(const std::string& workflow, const std::string& step, const StepResult& r) {
  const char* outcome = !r.started ? "not_started"
                        : r.timed_out ? "timed_out"
                        : r.cancelled ? "cancelled"
                        : r.exit_code == 0 && r.signal == 0 ? "succeeded"
                                                            : "failed";
  std::lock_guard lock(step_mu_);
  auto it = step_seconds_.try_emplace({workflow, step, outcome}, kStepBuckets).first;
  it->second.record(static_cast<double>(r.duration_ms) / 1000.0);
}

std::string RunService::stepMetrics() const {
  std::string out =
      "# HELP kiln_step_duration_seconds Workflow steps whose reports this replica applied, by outcome, as long as the agents measured.\n"
      "# TYPE kiln_step_duration_seconds histogram\n";
  std::lock_guard lock(step_mu_);
  for (const auto& [key, h] : step_seconds_) {
    const auto& [workflow, step, outcome] = key;
    h.render(out, "kiln_step_duration_seconds",
             "workflow=\"" + promLabelValue(workflow) + "\",step=\"" + promLabelValue(step) + "\",outcome=\"" + outcome + "\"");
  }
  return out;
}

int RunService::tick() {
  int did = 0;
  const auto now = clock_.now();
  if (auto due = store_.dueGroups(now, 200); due.ok()) {
    for (const auto& [run, group] : *due) {
      Effects produced;
      auto fn = engineFn([&](const Engine& e, GroupState& g) -> Result<Effects> {
        produced = e.tick(g, now);
        return produced;
      });
      if (store_.updateGroup(run, group, fn, {"system", "kilnd"}).ok()) {
        notify(produced);
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
      auto fn = engineFn([&](const Engine& e, GroupState& g) -> Result<Effects> {
        auto fx = e.onResult(g, a.id, lost, now);
        if (!fx.ok()) return Effects{};  // the group moved on (cancelled): nothing to do
        produced = *fx;
        return fx;
      });
      if (auto r = store_.expireLease(a.id, a.lease, fn); r.ok() && *r) {
        notify(produced);
        // A poll parked with running=<this step> learns that its lease is gone.
        if (on_work_) on_work_(a.host);
        ++did;
      }
    }
  }
  if (auto done = store_.finalizeRuns(runVerdict); done.ok()) did += static_cast<int>(done->size());
  if (now - last_unreachable_scan_ > std::chrono::seconds(10)) {
    last_unreachable_scan_ = now;
    if (auto u = store_.markUnreachable(now - options_.unreachable_after); u.ok()) did += static_cast<int>(u->size());
  }
  return did;
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
        unhealthy.push_back({{"host", h.host}, {"pod", pod}, {"reasons", h.failures}});
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
