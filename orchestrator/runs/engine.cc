#include "orchestrator/runs/engine.h"

#include <algorithm>
#include <set>

#include "common/artifact_ref.h"
#include "orchestrator/runs/lost_lease.h"
#include "orchestrator/workflow/checks.h"
#include "orchestrator/workflow/link_classification.h"
#include "orchestrator/workflow/substitute.h"

namespace kiln::runs {
namespace {

using nlohmann::json;
using workflow::OnFailure;
using workflow::RunOn;
using workflow::StepType;

std::string lastLine(const std::string& text) {
  auto end = text.find_last_not_of(" \r\n\t");
  if (end == std::string::npos) return {};
  auto start = text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  std::string line = text.substr(start, end - start + 1);
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

std::string joinList(const std::vector<int>& v) {
  std::string out;
  for (int i : v) out += (out.empty() ? "" : ", ") + std::to_string(i);
  return out;
}

// The values argv sees: every non-empty artifact param replaced by its placeholder, so a tool is
// never handed a URL (the agent swaps the placeholder for the verified local path); nullopt when
// the workflow has no artifact param (argv sees `params` as they are, no copy on the dispatch
// path). `refs`: the artifacts `argv` names, one per sha256, in the order the workflow declares them.
Result<std::optional<workflow::ParamValues>> argvParams(const workflow::WorkflowSpec& spec,
                                                        const workflow::ParamValues& params,
                                                        const std::vector<std::string>& argv,
                                                        std::vector<protocol::ArtifactRef>& refs) {
  if (std::none_of(spec.params.begin(), spec.params.end(),
                   [](const workflow::ParamSpec& p) { return p.type == workflow::ParamType::kArtifact; }))
    return std::optional<workflow::ParamValues>();
  std::set<std::string> named;
  for (const auto& element : argv) {
    auto names = workflow::templateNames(element);
    if (!names.ok()) return names.error();
    named.insert(names->begin(), names->end());
  }
  auto text = [&](const char* name) {
    auto it = params.find(name);
    return spec.findParam(name) != nullptr && it != params.end() ? it->second : std::string();
  };
  workflow::ParamValues out = params;
  std::set<std::string> seen;
  for (const auto& p : spec.params) {
    if (p.type != workflow::ParamType::kArtifact) continue;
    auto it = out.find(p.name);
    if (it == out.end() || it->second.empty()) continue;
    auto a = parseArtifactValue(it->second);
    if (!a.ok()) return invalidArgument("parameter " + p.name + ": " + a.error().message);
    it->second = artifactPlaceholder(a->sha256);
    if (!named.contains(p.name) || !seen.insert(a->sha256).second) continue;
    refs.push_back({a->location, a->sha256, text("artifact_checksums"), text("artifact_signature")});
  }
  return std::optional<workflow::ParamValues>(std::move(out));
}

// A host's context field (host.runner, host.bmc, ...), "" when it has none.
std::string fieldOf(const HostRun& host, const char* name) {
  auto it = host.fields.find(name);
  return it == host.fields.end() ? std::string() : it->second;
}

// Where a host keeps the values a barrier's `agree` compares of step `step_id`'s output.
std::string agreedKey(const std::string& step_id) { return "agree/" + step_id; }

std::string joinPaths(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// Why each host of `arrived` (indexes into `hosts`) disagrees with its pod on `agree`'s paths;
// absent: it agrees. Per path, the value most hosts hold is the pod's; with no such value (a tie)
// every host fails, for a split domain has no side that is right.
std::map<std::size_t, std::string> disagreements(const std::vector<HostRun>& hosts, const std::vector<std::size_t>& arrived,
                                                 const workflow::Agree& agree) {
  std::map<std::size_t, std::string> out;
  auto note = [&](std::size_t i, const std::string& why) { out[i] += (out[i].empty() ? "" : "; ") + why; };
  for (const auto& path : agree.paths) {
    std::map<std::string, std::vector<std::size_t>> by_value;
    for (std::size_t i : arrived) {
      const auto kept = hosts[i].parsed.find(agreedKey(agree.step));
      if (kept == hosts[i].parsed.end() || !kept->second.contains(path)) {
        by_value["(no output of step " + agree.step + ")"].push_back(i);
        continue;
      }
      const auto values = kept->second[path].get<std::vector<std::string>>();
      if (values.size() > 1) {
        std::string list;
        for (const auto& v : values) list += (list.empty() ? "" : ", ") + v;
        note(i, path + ": this host's own GPUs disagree (" + list + ")");
        continue;
      }
      by_value[values.empty() ? std::string("(none)") : values[0]].push_back(i);
    }
    std::size_t most = 0, holders = 0;
    std::string pods;
    for (const auto& [value, who] : by_value) {
      if (who.size() > most) {
        most = who.size();
        holders = 1;
        pods = value;
      } else if (who.size() == most) {
        ++holders;
      }
    }
    if (holders > 1) {
      std::string split;
      for (const auto& [value, who] : by_value) split += (split.empty() ? "" : ", ") + value + " on " + std::to_string(who.size());
      for (const auto& [value, who] : by_value)
        for (std::size_t i : who) note(i, path + ": no value is held by most hosts of the pod (" + split + ")");
      continue;
    }
    for (const auto& [value, who] : by_value) {
      if (value == pods) continue;
      for (std::size_t i : who)
        note(i, path + " is " + value + " here, " + pods + " on " + std::to_string(most) + " other hosts of the pod");
    }
  }
  return out;
}

// A record of the host's current attempt at `step_id`, for `assignment_id`, with what `r` (if
// any) reported of the process.
StepRecord newRecord(const HostRun& host, const std::string& step_id, TimePoint now, const std::string& assignment_id,
                     const StepResult* r = nullptr) {
  StepRecord rec;
  rec.step_id = step_id;
  rec.pass = host.pass;
  rec.attempt = host.attempt;
  rec.retest_round = host.retest ? host.retest->round : 0;
  if (r) {
    rec.exit_code = r->exit_code;
    rec.duration_ms = r->duration_ms;
  }
  rec.finished_at = now;
  rec.assignment_id = assignment_id;
  return rec;
}

// "<run>:<host>:<seq>", and "@<runner>" after it for a step an out-of-band runner holds (so
// that whoever withdraws it knows whom to tell: notifyWork).
std::string assignmentId(GroupState& g, const std::string& host, const std::string& runner) {
  return g.run_id + ":" + host + ":" + std::to_string(g.next_seq++) + (runner.empty() ? "" : "@" + runner);
}

}  // namespace

const char* hostStatusName(HostStatus s) {
  switch (s) {
    case HostStatus::kPending: return "pending";
    case HostStatus::kRunning: return "running";
    case HostStatus::kPassed: return "passed";
    case HostStatus::kFailed: return "failed";
    case HostStatus::kCancelled: return "cancelled";
  }
  return "unknown";
}

bool isTerminal(HostStatus s) {
  return s == HostStatus::kPassed || s == HostStatus::kFailed || s == HostStatus::kCancelled;
}

Engine::Engine(const workflow::WorkflowSpec& spec, const workflow::ParamValues& params)
    : spec_(spec), params_(params) {}

GroupState Engine::newGroup(const std::string& run_id, const std::string& group,
                            std::vector<std::pair<std::string, workflow::ContextFields>> hosts) const {
  GroupState g;
  g.run_id = run_id;
  g.group = group;
  for (auto& [id, fields] : hosts) {
    HostRun h;
    h.host = id;
    h.fields = std::move(fields);
    g.hosts.push_back(std::move(h));
  }
  return g;
}

int Engine::repeatCount() const {
  auto n = workflow::resolveInt(spec_.repeat, params_);
  return n.ok() ? static_cast<int>(std::max<std::int64_t>(1, *n)) : 1;
}

workflow::Duration Engine::soak() const {
  auto d = workflow::resolveDuration(spec_.soak_between, params_);
  return d.ok() ? *d : workflow::Duration{};
}

bool Engine::done(const GroupState& g) {
  return std::all_of(g.hosts.begin(), g.hosts.end(), [](const HostRun& h) { return isTerminal(h.status); });
}

std::vector<bool> Engine::terminalMask(const GroupState& g) {
  std::vector<bool> out;
  for (const auto& h : g.hosts) out.push_back(isTerminal(h.status));
  return out;
}

Effects Engine::start(GroupState& g, TimePoint now) const { return advance(g, now, terminalMask(g)); }

Effects Engine::tick(GroupState& g, TimePoint now) const { return advance(g, now, terminalMask(g)); }

Effects Engine::cancel(GroupState& g, const std::string& reason) const {
  Effects fx;
  g.cancelled = true;
  for (auto& h : g.hosts) {
    if (isTerminal(h.status)) continue;
    if (!h.assignment_id.empty()) fx.cancel_assignments.push_back(h.assignment_id);
    if (!h.recovery_assignment.empty()) fx.cancel_assignments.push_back(h.recovery_assignment);
    h.assignment_id.clear();
    h.recovery_assignment.clear();
    h.status = HostStatus::kCancelled;
    h.failures.push_back(reason);
    h.waiting_for.clear();  // no longer waits for the drain gate: it is over
    fx.hosts_finished.push_back(h.host);
  }
  return fx;
}

Effects Engine::stop(GroupState& g, TimePoint now, const std::set<std::string>& undispatched) const {
  g.stopping = true;
  const auto before = terminalMask(g);
  std::vector<std::string> withdrawn;
  for (auto& h : g.hosts) {
    if (isTerminal(h.status) || h.assignment_id.empty() || !undispatched.count(h.assignment_id)) continue;
    withdrawn.push_back(h.assignment_id);
    h.assignment_id.clear();
  }
  Effects fx = advance(g, now, before);
  fx.cancel_assignments.insert(fx.cancel_assignments.end(), withdrawn.begin(), withdrawn.end());
  return fx;
}

Effects Engine::advance(GroupState& g, TimePoint now, const std::vector<bool>& before) const {
  Effects fx;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < g.hosts.size(); ++i) changed |= advanceHost(g, i, now, fx);
  }
  for (std::size_t i = 0; i < g.hosts.size(); ++i) {
    const HostRun& h = g.hosts[i];
    if (isTerminal(h.status) && !before[i]) fx.hosts_finished.push_back(h.host);
    if (!isTerminal(h.status) && h.assignment_id.empty() && h.not_before &&
        (!fx.next_wakeup || *h.not_before < *fx.next_wakeup))
      fx.next_wakeup = h.not_before;
  }
  return fx;
}

std::optional<std::size_t> Engine::leaderOf(const GroupState& g) const {
  for (std::size_t i = 0; i < g.hosts.size(); ++i)
    if (!isTerminal(g.hosts[i].status)) return i;
  return std::nullopt;
}

bool Engine::inRetestRange(const HostRun& host) const {
  return host.retest && host.step_index >= host.retest->from_index &&
         host.step_index <= host.retest->step_index;
}

void Engine::failHost(HostRun& host, const std::string& reason) const {
  host.status = HostStatus::kFailed;
  host.failures.push_back(reason);
  host.not_before.reset();
}

bool Engine::advanceHost(GroupState& g, std::size_t h, TimePoint now, Effects& fx) const {
  HostRun& host = g.hosts[h];
  // A power cycle still out (its outcome decides the reboot's) holds the host too.
  if (isTerminal(host.status) || !host.assignment_id.empty() || !host.recovery_assignment.empty()) return false;
  if (g.stopping) {
    host.status = HostStatus::kCancelled;
    host.failures.push_back("stopped at a safe point before step " +
                            (host.step_index < spec_.steps.size() ? stepAt(host.step_index).id : std::string("end")));
    host.not_before.reset();
    host.waiting_for.clear();
    return true;
  }
  if (host.not_before && *host.not_before > now) return false;
  // Held at the scheduler's drain gate (drain_gate.h): only the gate lets it go, not the time.
  if (!host.waiting_for.empty()) return false;
  host.not_before.reset();
  host.status = HostStatus::kRunning;

  if (host.step_index >= spec_.steps.size()) {
    if (host.pass < repeatCount() && !host.soft_failed) {
      ++host.pass;
      host.step_index = 0;
      host.attempt = 1;
      host.not_before = now + soak().value;
      return true;
    }
    host.status = host.soft_failed || !host.failures.empty() ? HostStatus::kFailed : HostStatus::kPassed;
    return true;
  }

  const auto& step = stepAt(host.step_index);
  const bool retesting = inRetestRange(host);
  auto skip = [&](const std::string& why) {
    StepRecord rec;
    rec.step_id = step.id;
    rec.pass = host.pass;
    rec.retest_round = host.retest ? host.retest->round : 0;
    rec.outcome = "skipped";
    rec.message = why;
    rec.finished_at = now;
    host.history.push_back(std::move(rec));
    noteLeaderOutcome(host, host.history.size() - 1);
    ++host.step_index;
    host.attempt = 1;
    return true;
  };

  auto when = workflow::evaluateWhen(step.when, params_, host.fields);
  if (!when.ok()) {
    failHost(host, step.id + ": " + when.error().message);
    return true;
  }
  if (!*when) return skip("condition is false");

  if (step.type == StepType::kBarrier) {
    if (retesting) return skip("barrier skipped during a retest");
    // Release when every host still running waits here (same pass, same step, idle).
    for (const auto& other : g.hosts) {
      if (isTerminal(other.status)) continue;
      if (other.pass != host.pass || other.step_index != host.step_index || !other.assignment_id.empty() ||
          (other.not_before && *other.not_before > now))
        return false;
    }
    std::vector<std::size_t> arrived;
    for (std::size_t i = 0; i < g.hosts.size(); ++i)
      if (!isTerminal(g.hosts[i].status)) arrived.push_back(i);
    const auto disagree = step.agree ? disagreements(g.hosts, arrived, *step.agree) : std::map<std::size_t, std::string>{};
    for (std::size_t i : arrived) {
      HostRun& other = g.hosts[i];
      StepRecord rec;
      rec.step_id = step.id;
      rec.pass = other.pass;
      rec.finished_at = now;
      if (auto d = disagree.find(i); d != disagree.end()) {
        rec.outcome = "failed";
        rec.message = d->second;
        other.history.push_back(std::move(rec));
        applyOnFailure(other, step, d->second);
        continue;
      }
      rec.outcome = "passed";
      rec.message = step.agree ? "every host of the pod arrived, and " +
                                     std::to_string(arrived.size() - disagree.size()) + " agree on " +
                                     joinPaths(step.agree->paths)
                               : std::string("every host of the pod arrived");
      other.history.push_back(std::move(rec));
      ++other.step_index;
      other.attempt = 1;
    }
    return true;
  }

  if (step.run_on == RunOn::kLeader && spec_.scope == workflow::Scope::kPod && !retesting) {
    // The host that ran it already, also one the step ended (the workflow's last step, or a
    // failure that stops it): the step ran once for the pod, nobody runs it again.
    std::optional<std::size_t> leader;
    for (std::size_t i = 0; i < g.hosts.size() && !leader; ++i)
      if (i != h && g.hosts[i].leader_outcomes.count(leaderKey(step.id, host.pass))) leader = i;
    const bool ran = leader.has_value();
    if (!leader) leader = leaderOf(g);
    if (leader && *leader != h) {
      const HostRun& l = g.hosts[*leader];
      const bool leader_done = ran || l.pass > host.pass || (l.pass == host.pass && l.step_index > host.step_index);
      if (!leader_done) return false;
      const auto it = l.leader_outcomes.find(leaderKey(step.id, host.pass));
      const SharedOutcome* last = it == l.leader_outcomes.end() ? nullptr : &it->second;
      StepRecord rec;
      rec.step_id = step.id;
      rec.pass = host.pass;
      rec.outcome = "shared";
      rec.finished_at = now;
      rec.message = "run by " + l.host + ": " + (last ? last->outcome : std::string("skipped")) +
                    (last && !last->message.empty() ? " (" + last->message + ")" : "");
      const bool failed = last && last->outcome == "failed";
      // A pod-wide step that must pass (on_failure: fail) and failed fails every host of the pod;
      // otherwise the others go on with a warning.
      if (failed && step.on_failure == OnFailure::kFail) {
        host.history.push_back(std::move(rec));
        noteLeaderOutcome(host, host.history.size() - 1);
        failHost(host,
                 step.id + ": pod-wide step failed on " + l.host + (last->message.empty() ? "" : ": " + last->message));
        return true;
      }
      if (failed) host.warnings.push_back(step.id + ": pod-wide step failed on " + l.host);
      host.history.push_back(std::move(rec));
      noteLeaderOutcome(host, host.history.size() - 1);
      ++host.step_index;
      host.attempt = 1;
      return true;
    }
  }

  // run, reboot or stage: dispatch to the host's agent.
  std::vector<std::string> argv = step.run;
  if (step.type == StepType::kReboot && argv.empty()) argv = {"kiln-reboot"};
  // A stage step names its artifact params instead of an argv: the same references.
  if (step.type == StepType::kStage)
    for (const auto& name : step.artifacts) argv.push_back("{{" + name + "}}");
  std::vector<protocol::ArtifactRef> artifacts;
  auto argv_params = argvParams(spec_, params_, argv, artifacts);
  if (!argv_params.ok()) {
    failHost(host, step.id + ": " + argv_params.error().message);
    return true;
  }
  auto sub = workflow::substituteArgv(argv, *argv_params ? **argv_params : params_, host.fields);
  if (!sub.ok()) {
    failHost(host, step.id + ": " + sub.error().message);
    return true;
  }
  if (step.type == StepType::kStage) {
    if (artifacts.empty()) return skip("no artifact to stage");
    sub->clear();
  }
  auto timeout = workflow::resolveDuration(step.timeout, params_);
  if (!timeout.ok()) {
    failHost(host, step.id + ": " + timeout.error().message);
    return true;
  }
  Dispatch d;
  if (step.target == workflow::Target::kBmc) {
    // About the host's BMC: the pod's out-of-band runner runs it, never the host's agent.
    d.runner = fieldOf(host, "host.runner");
    if (d.runner.empty() || fieldOf(host, "host.bmc").empty()) {
      failHost(host, step.id + ": targets the host's BMC, but pod " + fieldOf(host, "host.pod") + "'s management block names " +
                         (d.runner.empty() ? "no out-of-band runner (management.runner)" : "no BMC address for it (management.tray_bmc)"));
      return true;
    }
  } else if (step.target == workflow::Target::kSwitchTrays) {
    // About the pod's NVLink switch trays (once per pod: the leader's): the pod's runner runs it.
    d.runner = fieldOf(host, "host.runner");
    if (d.runner.empty() || fieldOf(host, "pod.switch_bmcs").empty()) {
      failHost(host, step.id + ": targets the pod's switch trays, but pod " + fieldOf(host, "host.pod") +
                         "'s management block names " +
                         (d.runner.empty() ? "no out-of-band runner (management.runner)"
                                           : "no BMC address for them (management.switch_bmc)"));
      return true;
    }
  }
  d.assignment_id = assignmentId(g, host.host, d.runner);
  d.host = host.host;
  d.step_id = step.id;
  d.attempt = host.attempt;
  d.type = step.type == StepType::kReboot ? "reboot" : step.type == StepType::kStage ? "stage" : "run";
  d.argv = std::move(*sub);
  d.timeout_ms = timeout->value.count();
  d.parse = step.parse;
  d.parsed_output_cap = step.stdout_when_parsed.value_or(-1);
  d.inventory_after = step.type == StepType::kReboot;
  d.artifacts = std::move(artifacts);
  host.assignment_id = d.assignment_id;
  host.dispatched_at = now;
  host.power_cycles = 0;
  fx.dispatches.push_back(std::move(d));
  return true;
}

bool Engine::startRecovery(GroupState& g, std::size_t h, const std::string& assignment_id, TimePoint now, Effects& fx,
                           std::string& why_not) const {
  HostRun& host = g.hosts[h];
  const auto& step = stepAt(host.step_index);
  if (step.type != StepType::kReboot || !step.recover || g.cancelled || g.stopping) return false;
  const auto field = [&](const char* name) { return fieldOf(host, name); };
  const int allowed = step.recover->power_cycles;
  if (!host.recovery_assignment.empty()) {
    // The power cycle itself never answered (its runner is gone): no second one over it.
    fx.cancel_assignments.push_back(host.recovery_assignment);
    host.recovery_assignment.clear();
    why_not = "the power cycle through its BMC did not report either";
    return false;
  }
  if (host.power_cycles >= allowed) {
    why_not = "did not come back after " + std::to_string(host.power_cycles) + " power cycle" +
              (host.power_cycles == 1 ? "" : "s") + " through its BMC";
    return false;
  }
  const std::string runner = field("host.runner"), bmc = field("host.bmc");
  if (runner.empty() || bmc.empty()) {
    why_not = std::string("no power cycle: pod ") + field("host.pod") + "'s management block names " +
              (runner.empty() ? "no out-of-band runner" : "no BMC address for the host");
    return false;
  }
  auto step_timeout = workflow::resolveDuration(step.timeout, params_);
  const auto cycle = step.recover->timeout.value;
  const auto cycle_s = std::chrono::duration_cast<std::chrono::seconds>(cycle).count();
  Dispatch d;
  d.assignment_id = assignmentId(g, host.host, runner);
  d.host = host.host;
  d.runner = runner;
  d.step_id = step.id;
  d.attempt = host.attempt;
  d.type = "run";
  // kiln-oob waits for the BMC to report the tray on again, within the cycle's bound less the
  // time to read the event log back; the BMC's newest entries go into the step's output.
  d.argv = {"kiln-oob", "power", "cycle", "--bmc", bmc, "--credential", field("host.bmc_credential"),
            "--protocol", field("host.bmc_protocol").empty() ? std::string("redfish") : field("host.bmc_protocol"),
            "--wait", std::to_string(std::max<std::int64_t>(1, cycle_s - 10)), "--log", "20"};
  d.timeout_ms = std::chrono::duration_cast<std::chrono::milliseconds>(cycle).count();
  d.parse = "json";
  ++host.power_cycles;
  host.recovery_assignment = d.assignment_id;
  host.recovery_step = host.step_index;
  host.assignment_id = assignment_id;  // still open: the agent's report of its new boot is taken
  fx.extend_leases.push_back({assignment_id, now + cycle + (step_timeout.ok() ? step_timeout->value : cycle)});
  fx.dispatches.push_back(std::move(d));
  return true;
}

Result<Effects> Engine::onRecoveryResult(GroupState& g, std::size_t h, const StepResult& r, TimePoint now) const {
  const auto before = terminalMask(g);
  HostRun& host = g.hosts[h];
  // The reboot it is for: the host is still at it, or past it when its report came first.
  const auto& step = stepAt(std::min(host.recovery_step, spec_.steps.size() - 1));
  const int allowed = step.recover ? step.recover->power_cycles : 1;
  StepRecord rec = newRecord(host, step.id, now, host.recovery_assignment, &r);
  host.recovery_assignment.clear();
  std::string why;
  if (r.lost) why = "the out-of-band runner did not report the power cycle within its lease";
  else if (!r.started) why = "could not start kiln-oob: " + r.spawn_error;
  else if (r.cancelled) why = "cancelled";
  else if (r.timed_out) why = "timed out after " + std::to_string(r.duration_ms) + " ms";
  else if (r.exit_code != 0) why = "exit code " + std::to_string(r.exit_code) + (lastLine(r.stderr_tail).empty() ? "" : ": " + lastLine(r.stderr_tail));
  else if (!r.parsed.is_object() || r.parsed.value("power", std::string()) != "on")
    why = "the BMC does not report the tray on after the cycle";
  const std::string cycle_text = "power cycle " + std::to_string(host.power_cycles) + " of " + std::to_string(allowed);
  if (why.empty()) {
    rec.outcome = "warned";
    rec.message = "no report within the lease: " + cycle_text + " through the BMC done; waiting for the host to boot";
    host.warnings.push_back(step.id + ": did not come back from the reboot within its lease; " + cycle_text +
                            " through its BMC");
    host.history.push_back(std::move(rec));
    return advance(g, now, before);  // the reboot's assignment is still open, or it reported meanwhile
  }
  rec.outcome = "failed";
  rec.message = cycle_text + " through the BMC failed: " + why;
  host.history.push_back(std::move(rec));
  if (host.assignment_id.empty()) return advance(g, now, before);  // the reboot reported meanwhile: its record decides
  // The reboot fails, and its assignment is withdrawn: the host was silent for its lease and
  // could not be power-cycled.
  const std::string reboot = host.assignment_id;
  host.assignment_id.clear();
  finishStep(g, h, newRecord(host, step.id, now, reboot), false,
             "did not come back from the reboot within its lease, and " + cycle_text + " through its BMC failed: " + why,
             {}, false, now);
  Effects fx = advance(g, now, before);
  fx.cancel_assignments.insert(fx.cancel_assignments.begin(), reboot);
  return fx;
}

Result<Effects> Engine::onResult(GroupState& g, const std::string& assignment_id, const StepResult& r,
                                 TimePoint now) const {
  std::size_t h = g.hosts.size();
  for (std::size_t i = 0; i < g.hosts.size(); ++i) {
    if (isTerminal(g.hosts[i].status)) continue;
    if (g.hosts[i].assignment_id == assignment_id) h = i;
    if (!assignment_id.empty() && g.hosts[i].recovery_assignment == assignment_id) return onRecoveryResult(g, i, r, now);
  }
  if (h == g.hosts.size()) return notFound("no host of this run waits for assignment " + assignment_id);
  const auto before = terminalMask(g);
  HostRun& host = g.hosts[h];
  host.assignment_id.clear();
  const auto& step = stepAt(host.step_index);
  std::string no_recovery;
  Effects recovery;
  if (r.lost && step.type == StepType::kReboot && step.recover &&
      startRecovery(g, h, assignment_id, now, recovery, no_recovery))
    return recovery;
  // No (more) power cycles: the reboot's result as any step's, saying why there was none, with
  // the cancellation startRecovery may have asked for.
  auto rest = onResultAfterRecovery(g, h, assignment_id, r, now, before, no_recovery);
  if (rest.ok())
    rest->cancel_assignments.insert(rest->cancel_assignments.begin(), recovery.cancel_assignments.begin(),
                                    recovery.cancel_assignments.end());
  return rest;
}

Result<Effects> Engine::onResultAfterRecovery(GroupState& g, std::size_t h, const std::string& assignment_id,
                                              const StepResult& r, TimePoint now, const std::vector<bool>& before,
                                              const std::string& no_recovery) const {
  HostRun& host = g.hosts[h];
  const auto& step = stepAt(host.step_index);

  StepRecord rec = newRecord(host, step.id, now, assignment_id, &r);

  std::vector<std::string> reasons;
  std::vector<std::string> failed_at;
  bool check_failure = false;
  bool ran = true;
  if (r.lost && !no_recovery.empty()) {
    // A reboot that asked for recovery: what the power cycles did is the reason, which is not
    // a plain lost lease (the host is silent after its BMC cycled it: it is not healthy).
    reasons.push_back(no_recovery + " (" + std::string(kLostLeaseReason) + ")");
    ran = false;
  } else if (r.lost) {
    reasons.push_back(std::string(kLostLeaseReason) + (r.note.empty() ? "" : ": " + r.note));
    ran = false;
  } else if (!r.started) {
    reasons.push_back("could not start: " + r.spawn_error);
    ran = false;
  } else if (r.cancelled) {
    reasons.push_back("cancelled");
    ran = false;
  } else if (r.timed_out) {
    reasons.push_back("timed out after " + std::to_string(r.duration_ms) + " ms");
    ran = false;
  } else if (std::find(step.expect_exit.begin(), step.expect_exit.end(), r.exit_code) == step.expect_exit.end()) {
    std::string why = r.signal ? "killed by signal " + std::to_string(r.signal)
                               : "exit code " + std::to_string(r.exit_code) + " (expected " + joinList(step.expect_exit) + ")";
    if (auto line = lastLine(r.stderr_tail); !line.empty()) why += ": " + line;
    reasons.push_back(why);
  }
  if (!r.note.empty() && !r.lost) rec.message = r.note;
  // Checks run on whatever parsed, also after an unexpected exit code: a failed diagnostic
  // exits non-zero, and its parsed output says which tests failed.
  ReadBack read_back;
  if (ran && !step.parse.empty()) {
    if (!hasParsedOutput(r)) {
      reasons.push_back("cannot read the output as " + step.parse +
                        (r.parse_error.empty() ? "" : ": " + r.parse_error));
    } else {
      // A read-back: the versions the devices reported of themselves, kept even when the step
      // fails (compliance then shows which devices are done); what it lacks fails the step.
      read_back = readBack(step, host.host, fieldOf(host, "pod.switch_bmcs"), r.parsed);
      if (!read_back.error.empty()) reasons.push_back(read_back.error);
      auto outcomes = workflow::evaluateChecks(step, r.parsed, host.parsed, params_);
      // Only a delta check's baseline stays in the group state, which is rewritten with every
      // report of the group; every parsed output stays with its assignment's result, where
      // the run view reads it.
      if (spec_.isDeltaBaseline(step.id)) host.parsed[step.id] = r.parsed;
      // What a barrier's `agree` compares later: only the values at its paths.
      if (auto paths = spec_.agreedPaths(step.id); !paths.empty()) {
        json kept = json::object();
        for (const auto& path : paths) kept[path] = workflow::distinctValues(r.parsed, path);
        host.parsed[agreedKey(step.id)] = std::move(kept);
      }
      for (const auto& o : outcomes) {
        rec.checks.push_back({{"name", o.name}, {"passed", o.passed}, {"skipped", o.skipped}, {"message", o.message}});
        if (!o.passed) {
          check_failure = true;
          reasons.push_back(o.name + ": " + o.message);
          failed_at.insert(failed_at.end(), o.failed_at.begin(), o.failed_at.end());
        }
      }
    }
  }
  std::string why;
  for (const auto& s : reasons) why += (why.empty() ? "" : "; ") + s;
  // The agent's note explains a failure it reports ("agent restarted while the step ran"):
  // keep it in the record and the host's failure reason, not only on passed steps.
  if (!why.empty() && !r.note.empty() && !r.lost) why = r.note + ": " + why;
  // Retests apply only when the checks alone failed (the step itself ran fine).
  std::size_t failed_checks = 0;
  for (const auto& c : rec.checks) failed_checks += !c["passed"].get<bool>();
  const bool only_checks = check_failure && reasons.size() == failed_checks;
  const std::size_t index = host.history.size();
  finishStep(g, h, std::move(rec), reasons.empty(), why, failed_at, only_checks, now);
  noteLeaderOutcome(g.hosts[h], index);  // as finishStep left it (warned, retesting)
  Effects fx = advance(g, now, before);
  fx.device_versions = std::move(read_back.versions);
  // The host is over while a power cycle is still out: withdraw it.
  if (HostRun& over = g.hosts[h]; isTerminal(over.status) && !over.recovery_assignment.empty()) {
    fx.cancel_assignments.push_back(over.recovery_assignment);
    over.recovery_assignment.clear();
  }
  return fx;
}

void Engine::noteLeaderOutcome(HostRun& host, std::size_t index) const {
  if (spec_.scope != workflow::Scope::kPod || index >= host.history.size()) return;
  const StepRecord& r = host.history[index];
  if (r.retest_round != 0) return;
  for (const auto& st : spec_.steps)
    if (st.id == r.step_id && st.run_on == RunOn::kLeader) host.leader_outcomes[leaderKey(r.step_id, r.pass)] = {r.outcome, r.message};
}

void Engine::applyOnFailure(HostRun& host, const workflow::StepSpec& step, const std::string& why) const {
  switch (step.on_failure) {
    case OnFailure::kFail:
      failHost(host, step.id + ": " + why);
      return;
    case OnFailure::kContinue:
      host.soft_failed = true;
      host.failures.push_back(step.id + ": " + why);
      break;
    case OnFailure::kWarn:
      host.warnings.push_back(step.id + ": " + why);
      if (!host.history.empty()) host.history.back().outcome = "warned";
      break;
  }
  ++host.step_index;
  host.attempt = 1;
}

void Engine::finishStep(GroupState& g, std::size_t h, StepRecord rec, bool ok, const std::string& why,
                        const std::vector<std::string>& failed_at, bool check_failure, TimePoint now) const {
  HostRun& host = g.hosts[h];
  const auto& step = stepAt(host.step_index);
  rec.outcome = ok ? "passed" : "failed";
  rec.message = why.empty() ? rec.message : why;
  host.history.push_back(std::move(rec));

  // A retest round reached the step that started it: record each element's result.
  if (host.retest && host.retest->step_index == host.step_index) {
    RetestState& rt = *host.retest;
    std::set<std::string> failed(failed_at.begin(), failed_at.end());
    for (auto& [label, results] : rt.elements) results.push_back(!failed.count(label));
    for (const auto& label : failed)
      if (!rt.elements.count(label)) rt.elements[label] = {false};  // new: cannot be cleared now
    if (!ok && !check_failure) {
      // The retest itself broke (exit code, timeout): no verdict on the links; plain failure.
      host.retest.reset();
      if (host.attempt <= step.retries.count && !g.cancelled) {
        ++host.attempt;
        host.not_before = now + step.retries.backoff.value;
        return;
      }
      applyOnFailure(host, step, why);
      return;
    }
    if (--rt.rounds_left > 0) {
      ++rt.round;
      host.step_index = rt.from_index;
      host.attempt = 1;
      return;
    }
    std::vector<workflow::LinkHistory> links;
    for (const auto& [label, results] : rt.elements) links.push_back({label, results});
    const int times = step.retest ? step.retest->times : 2;
    auto verdict = workflow::classifyHostLinks(links, times);
    host.retest.reset();
    if (verdict.passed) {
      host.warnings.push_back(step.id + ": " + verdict.message);
      ++host.step_index;
      host.attempt = 1;
      return;
    }
    applyOnFailure(host, step, verdict.message);
    return;
  }

  if (!ok && check_failure && step.retest && !host.retest && !failed_at.empty() && !g.cancelled) {
    RetestState rt;
    rt.step_index = host.step_index;
    for (std::size_t i = 0; i < spec_.steps.size(); ++i)
      if (spec_.steps[i].id == step.retest->from) rt.from_index = i;
    rt.rounds_left = step.retest->times;
    rt.round = 1;
    for (const auto& label : failed_at) rt.elements[label] = {false};
    host.retest = rt;
    host.history.back().message += " (retesting " + std::to_string(step.retest->times) + " times)";
    host.step_index = rt.from_index;
    host.attempt = 1;
    return;
  }

  if (!ok) {
    if (host.attempt <= step.retries.count && !g.cancelled) {
      ++host.attempt;
      host.not_before = now + step.retries.backoff.value;
      return;
    }
    applyOnFailure(host, step, why);
    return;
  }
  ++host.step_index;
  host.attempt = 1;
}

bool hasParsedOutput(const StepResult& r) {
  return !r.lost && r.started && !r.cancelled && !r.timed_out && r.parse_error.empty() && !r.parsed.is_null();
}

}  // namespace kiln::runs
