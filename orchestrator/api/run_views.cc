#include "orchestrator/api/run_views.h"

#include <chrono>

#include "orchestrator/core/iso_time.h"
#include "orchestrator/runs/engine.h"

namespace kiln::api {
namespace {

using nlohmann::json;

// The rollout that started the run: {id, pod, phase, attempt}, or null.
json rolloutJson(const runs::RunRow& run) {
  auto r = runs::rolloutOf(run);
  if (!r) return json();
  return {{"id", r->id}, {"pod", r->pod}, {"phase", r->phase}, {"attempt", r->attempt ? json(*r->attempt) : json()}};
}

// RunStep. `finished_at_ms` (deprecated) is 0 for an attempt that never finished, which has no
// `finished_at`.
json stepJson(const runs::StepView& s) {
  const runs::StepRecord& r = s.record;
  json j = {{"step", r.step_id}, {"pass", r.pass}, {"attempt", r.attempt}, {"retest_round", r.retest_round},
            {"outcome", r.outcome}, {"message", r.message}, {"exit_code", r.exit_code},
            {"duration_ms", r.duration_ms}, {"assignment", r.assignment_id}, {"checks", r.checks}};
  j["finished_at_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(r.finished_at.time_since_epoch()).count();
  if (r.finished_at != core::TimePoint{}) j["finished_at"] = core::isoTime(r.finished_at);
  if (s.output) {
    j["stdout_tail"] = s.output->stdout_tail;
    j["stderr_tail"] = s.output->stderr_tail;
  }
  return j;
}

json hostJson(const runs::HostView& h) {
  json steps = json::array();
  for (const auto& s : h.steps) steps.push_back(stepJson(s));
  json j = {{"host", h.host},         {"group", h.group},       {"status", runs::hostStatusName(h.status)},
            {"pass", h.pass},         {"current_step", h.current_step}, {"attempt", h.attempt},
            {"failures", h.failures}, {"warnings", h.warnings}, {"steps", std::move(steps)},
            {"parsed", h.parsed}};
  const auto healthy = h.healthy();
  j["healthy"] = healthy ? json(*healthy) : json();
  // The step handed to the host's agent now: its live output is GET /assignments/{id}/output.
  j["assignment"] = h.assignment.empty() ? json() : json(h.assignment);
  core::putTime(j, "waiting_until", h.waiting_until);
  // Why the first step has not started: the job scheduler's drain gate (a job may still run there).
  j["waiting_for"] = h.waiting_for.empty() ? json() : json(h.waiting_for);
  if (h.retest) j["retest"] = {{"round", h.retest->round}, {"elements", h.retest->elements}};
  return j;
}

}  // namespace

json toJson(const runs::WorkflowPut& p) { return json{{"name", p.name}, {"hash", p.hash}, {"changed", p.changed}}; }

json workflowJson(const runs::WorkflowInfo& w) {
  json j = w.spec ? workflow::toJson(*w.spec) : json::object();
  j["hash"] = w.row.hash;
  j["yaml"] = w.row.yaml;
  j["source"] = w.row.source;
  return j;
}

json workflowVersionsJson(const std::string& name, const std::vector<runs::WorkflowVersionInfo>& versions) {
  json items = json::array();
  for (const auto& v : versions)
    items.push_back({{"hash", v.hash},
                     {"source", v.source},
                     {"created_at", core::isoTime(v.created_at)},
                     {"created_by", v.created_by},
                     {"current", v.current},
                     {"file_loaded", v.file_loaded}});
  return {{"name", name}, {"items", std::move(items)}, {"next_cursor", nullptr}};
}

json workflowListJson(const std::vector<runs::WorkflowInfo>& ws) {
  json items = json::array();
  for (const auto& w : ws) {
    json item = {{"name", w.row.name}, {"hash", w.row.hash}, {"source", w.row.source}};
    if (w.spec) {
      item["version"] = w.spec->version;
      item["description"] = w.spec->description;
      item["scope"] = workflow::scopeName(w.spec->scope);
      item["steps"] = w.spec->steps.size();
    }
    items.push_back(std::move(item));
  }
  return json{{"items", std::move(items)}, {"next_cursor", nullptr}};
}

json toJson(const runs::RunView& v) {
  json hosts = json::array();
  for (const auto& h : v.hosts) hosts.push_back(hostJson(h));
  const runs::RunRow& run = v.row;
  const runs::RunProgress& p = v.progress;
  json j = {{"id", run.id},
            {"workflow", run.workflow},
            {"workflow_hash", run.workflow_hash},
            {"scope", run.scope},
            {"purpose", run.purpose},
            {"state", run.state},
            {"params", run.params},
            {"created_by", run.created_by},
            {"summary", run.summary},
            {"progress", {{"hosts", p.hosts()}, {"passed", p.passed}, {"failed", p.failed},
                          {"running", p.running}, {"cancelled", p.cancelled}}},
            {"hosts", std::move(hosts)},
            {"rollout", rolloutJson(run)}};
  core::putTime(j, "created_at", run.created_at);
  core::putTime(j, "finished_at", run.finished_at);
  if (v.steps) j["steps"] = *v.steps;
  return j;
}

json runStateJson(const runs::RunRow& r) {
  json j = {{"id", r.id},           {"workflow", r.workflow}, {"purpose", r.purpose},
            {"scope", r.scope},     {"state", r.state},       {"created_by", r.created_by},
            {"summary", r.summary}, {"pods", r.pods},         {"rollout", rolloutJson(r)}};
  core::putTime(j, "created_at", r.created_at);
  core::putTime(j, "finished_at", r.finished_at);
  return j;
}

json runListJson(const core::Page<runs::RunRow>& page) {
  json items = json::array();
  for (const auto& r : page.items) items.push_back(runStateJson(r));
  return json{{"items", std::move(items)}, {"next_cursor", page.next_cursor ? json(*page.next_cursor) : json()}};
}

json quarantineJson(const std::vector<runs::QuarantineEntry>& entries) {
  json items = json::array();
  for (const auto& e : entries) {
    const runs::QuarantineRow& q = e.row;
    json j = {{"host", q.host.id},
              {"pod", q.host.pod},
              {"building", q.host.building},
              {"seconds_in_quarantine", e.seconds_in_quarantine},
              {"repairs", q.repairs},
              {"repeat_offender", e.repeat_offender},
              {"last_failure", q.last_failure},
              {"validation_run", q.run_id.empty() ? json() : json(q.run_id)},
              {"validation_state", q.run_state.empty() ? json() : json(q.run_state)},
              {"progress", q.progress}};
    core::putTime(j, "since", q.host.state_since);
    items.push_back(std::move(j));
  }
  return json{{"items", std::move(items)}, {"next_cursor", nullptr}};
}

}  // namespace kiln::api
