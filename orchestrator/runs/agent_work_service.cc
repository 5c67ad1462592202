#include "orchestrator/runs/agent_work_service.h"

#include "orchestrator/runs/group_step.h"
#include "orchestrator/runs/report.h"

namespace kiln::runs {
namespace {

using nlohmann::json;

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
  if (r.parsed_output_cap >= 0) a.parsed_output_cap = static_cast<std::size_t>(r.parsed_output_cap);
  a.inventory_after = r.inventory_after;
  a.artifacts = r.artifacts;
  return a;
}

}  // namespace

AgentWorkService::AgentWorkService(WorkflowCatalog& catalog, AgentWorkStore& store, core::Clock& clock,
                                   AgentWorkOptions options, std::function<void(const std::string&)> on_work)
    : catalog_(catalog), store_(store), clock_(clock), options_(std::move(options)), on_work_(std::move(on_work)) {}

Result<std::optional<protocol::Assignment>> AgentWorkService::claimWork(const std::string& host) {
  auto a = store_.claimWork(host, options_.lease_grace_ms);
  if (!a.ok()) return a.error();
  if (!*a) return std::optional<protocol::Assignment>();
  return std::optional<protocol::Assignment>(assignmentOf(**a));
}

Result<std::map<std::string, HandedOut>> AgentWorkService::claimBatch(const std::vector<std::string>& hosts) {
  auto rows = store_.claimBatch(hosts, options_.lease_grace_ms);
  if (!rows.ok()) return rows.error();
  std::map<std::string, HandedOut> out;
  for (const auto& [host, row] : *rows) out.emplace(host, HandedOut{assignmentOf(row), row.group_key});
  return out;
}

std::vector<Result<ReportAnswer>> AgentWorkService::reportBatch(const std::vector<ReportRequest>& reports) {
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
    items.push_back({id, reports[i].host, decoded->lease, &body, reports[i].text.empty() ? nullptr : &reports[i].text,
                     engineStep(catalog_,
                                [id, result, out, label, now](const Engine& e, GroupState& g) -> Result<Effects> {
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
      notifyWork(on_work_, produced[i], reply->next ? reply->next->id : "");
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
      if (one.ok())
        apply(k, (*one)[0]);
      else
        answers[index[k]] = one.error();
    }
  }
  if (run_complete && options_.on_run_complete) options_.on_run_complete();
  return answers;
}

void AgentWorkService::recordStep(const std::string& workflow, const std::string& step, const StepResult& r) {
  const char* outcome = !r.started                          ? "not_started"
                        : r.timed_out                       ? "timed_out"
                        : r.cancelled                       ? "cancelled"
                        : r.exit_code == 0 && r.signal == 0 ? "succeeded"
                                                            : "failed";
  std::lock_guard lock(step_mu_);
  auto it = step_seconds_.try_emplace({workflow, step, outcome}, kStepBuckets).first;
  it->second.record(static_cast<double>(r.duration_ms) / 1000.0);
}

Priority AgentWorkService::runPriority(const std::string& run_id) {
  {
    std::lock_guard lock(priority_mu_);
    if (auto it = priority_of_.find(run_id); it != priority_of_.end()) return it->second;
  }
  if (!options_.run_purpose) return Priority::kMaintenance;
  auto purpose = options_.run_purpose(run_id);
  if (!purpose.ok()) return Priority::kMaintenance;
  const Priority p = purposePriority(*purpose);
  std::lock_guard lock(priority_mu_);
  if (priority_of_.size() >= 100000) priority_of_.clear();
  priority_of_[run_id] = p;
  return p;
}

std::string AgentWorkService::stepMetrics() const {
  std::string out =
      "# HELP kiln_step_duration_seconds Workflow steps whose reports this replica applied, by outcome, as long as the "
      "agents measured.\n"
      "# TYPE kiln_step_duration_seconds histogram\n";
  std::lock_guard lock(step_mu_);
  for (const auto& [key, h] : step_seconds_) {
    const auto& [workflow, step, outcome] = key;
    h.render(out, "kiln_step_duration_seconds",
             "workflow=\"" + promLabelValue(workflow) + "\",step=\"" + promLabelValue(step) + "\",outcome=\"" +
                 outcome + "\"");
  }
  return out;
}

}  // namespace kiln::runs
