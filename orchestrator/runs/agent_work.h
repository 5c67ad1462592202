#pragma once
// What the agent gateway and the run service need of each other, as two narrow seams, so that
// each is constructed (and unit-tested) alone:
//
//   RunService --on_work(host)--> WorkListener      "this host has new or cancelled work"
//   AgentGateway --claimBatch / reportBatch--> AgentWork   "hand out work, apply reports"
//
// RunService implements AgentWork and knows nothing of the gateway: it calls the std::function
// on_work it was given (a test passes a lambda that records hosts). AgentGateway implements
// WorkListener and knows only AgentWork (a test passes a fake that hands out canned work), never
// RunService itself.
//
// At run time the two call each other, so one side must be bound after both exist. kilnd
// does it with a WorkRelay: RunService's on_work notifies the relay, the relay forwards to the
// gateway once attached (and to nothing before, or after detach at shutdown). The relay is
// the only "set after construction" link, and it is thread-safe (the database notifier's
// thread and the executor's call it).

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/result.h"
#include "orchestrator/runs/run_priority.h"
#include "orchestrator/runs/run_store.h"

namespace kiln::runs {

// An agent's report of one step, as the gateway queued it.
struct AgentReport {
  std::string assignment_id, host;
  nlohmann::json body;
  std::string text;  // the body as the agent sent it, if known: stored as is (no second dump)
};

// A step handed out to a host, with the key of its run's group (RunStore: a pod-scope run's
// pod, a host-scope run's host). The gateway does not apply the reports of one group in two
// transactions at once: the second would only wait for the first's lock on the group's row.
struct HandedOut {
  protocol::Assignment assignment;
  std::string group;
};

// What a report got: its outcome, and the host's next assignment when the body said "ready"
// (encoded where the answer is sent, protocol::toJson) with its group.
struct ReportAnswer {
  ReportOutcome outcome = ReportOutcome::kStale;
  std::optional<protocol::Assignment> next;
  std::string next_group;
};

// The work side of the agents' protocol (RunService in kilnd). Thread-safe.
class AgentWork {
 public:
  virtual ~AgentWork() = default;
  // At most one assignment for each of `hosts`, in one transaction: the hosts that got one.
  virtual Result<std::map<std::string, HandedOut>> claimBatch(const std::vector<std::string>& hosts) = 0;
  // The reports applied together; one answer per report, in order.
  virtual std::vector<Result<ReportAnswer>> reportBatch(const std::vector<AgentReport>& reports) = 0;
  // The class of run `run_id`'s work (run_priority.h), by which the gateway orders queued
  // reports. Cheap after the first call for a run. The default: maintenance.
  virtual Priority runPriority(const std::string& run_id) {
    (void)run_id;
    return Priority::kMaintenance;
  }
};

// Told after a commit that a host has new work or cancelled work (AgentGateway in kilnd).
// Thread-safe.
class WorkListener {
 public:
  virtual ~WorkListener() = default;
  virtual void notify(const std::string& host) = 0;
};

// Forwards notify() to the listener attached, if any (see above). Thread-safe.
class WorkRelay final : public WorkListener {
 public:
  void attach(WorkListener* listener) { listener_.store(listener); }
  void notify(const std::string& host) override {
    if (auto* l = listener_.load()) l->notify(host);
  }

 private:
  std::atomic<WorkListener*> listener_{nullptr};
};

}  // namespace kiln::runs
