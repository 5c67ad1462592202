#pragma once
// The job-scheduler driver seam: what Kiln asks of the job scheduler that owns the hosts' jobs,
// whichever scheduler that is. kilnd holds one Driver (or none) and hands it to everything that
// needs the scheduler: the rollout controller (drain asks and the drain gate), the fleet
// service (a host that left or rejoined the job pool), the API (the node view, the pre-job
// check's node names). Two implementations:
//
//   - SlurmDriver (slurm_driver.h, --scheduler slurm): mirrors Kiln's host states into Slurm's
//     node states with scontrol, on its own thread;
//   - HookDriver (hook_driver.h, --scheduler-hook URL|PATH): tells a site's scheduler through an
//     HTTP POST or a command, asynchronously; no gate, no node view.
//
// docs/scheduler-drivers.md says how a third one (Kubernetes cordon/drain, a site's own
// scheduler) is added. Fakes: scheduler/testing/fake_driver.h.
//
// Every method is called from controller passes or request handlers and must not block on the
// scheduler: asks are answered later (requestDrain's `done`) or from the driver's own reading.
// Implementations are thread-safe.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/host_lifecycle.h"
#include "orchestrator/core/store.h"

namespace kiln::scheduler {

// An ask to take a pod's hosts away from the job scheduler (the rollout's release ask).
struct ReleaseRequest {
  std::string rollout, pod;
  std::vector<std::string> hosts;  // the pod's allocated hosts
  // What the scheduler should say about the drain: "kiln: ro-3 firmware-upgrade gb200-fw 2026.12".
  std::string reason;
};

// A node as the driver sees it (GET /api/v1/scheduler/nodes).
struct NodeStatus {
  std::string node, host;                     // host: "" when no Kiln host maps to the node
  std::optional<core::HostState> host_state;  // none when no host maps to the node
  std::string state;                          // the scheduler's words ("IDLE+DRAIN"); "" when it does not know the node
  std::string reason, reason_user;
  bool drained_by_kiln = false;
  std::vector<std::string> jobs;
  bool known = false;  // the scheduler knows the node
};

// What the driver knows of the scheduler (GET /api/v1/scheduler).
struct DriverStatus {
  std::optional<core::TimePoint> last_pass;  // the last reading of the scheduler
  std::string last_error;                    // empty when the last reading succeeded
  std::vector<NodeStatus> nodes;
};

class Driver {
 public:
  virtual ~Driver() = default;

  // "slurm", "hook": GET /api/v1/scheduler's kind.
  virtual std::string_view kind() const = 0;

  // Drain: asks the scheduler to release `request.hosts` (stop placing jobs there, let the
  // running ones end or requeue them). Returns at once; calls `done` exactly once, later and
  // from any thread, with told = the scheduler took the ask (false: it could not be told, the
  // caller asks again later). `done` may outlive the caller: it must hold what it touches.
  virtual void requestDrain(const ReleaseRequest& request, std::function<void(bool told)> done) = 0;

  // The drain gate: nullopt when `host`, draining in Kiln, may go to maintenance (the scheduler
  // will start no job on it and none runs there), else why it must wait. A driver that cannot
  // tell (the hook) answers nullopt: the scheduler's own release answer is the gate.
  virtual std::optional<std::string> heldBack(const core::HostSummary& host, const std::string& reason) = 0;

  // Resume, and drains Kiln made without a release ask: `hosts` moved in Kiln's lifecycle
  // into or out of the job pool (core::servesJobs). A driver that mirrors Kiln's states into
  // the scheduler (Slurm) drains or resumes their nodes soon; one that only forwards release
  // asks (the hook) ignores it.
  virtual void hostsMoved(const std::vector<std::string>& hosts) = 0;

  // The node view: nullopt when the driver keeps none (GET /scheduler/nodes then answers 404).
  virtual std::optional<DriverStatus> status() const = 0;

  // The pre-job check's naming: the Kiln host a scheduler node name stands for, "" when the
  // driver does not know (the caller then tries the name as a host id).
  virtual std::string hostOfNode(const std::string& node) const = 0;

  // A driver with work of its own runs it here, on a thread kilnd starts, until stop(); it does
  // that work only while `leader()` says this replica runs the controllers. The default has none
  // and returns at once.
  virtual void run(const std::function<bool()>& /*leader*/) {}
  // Do the driver's work now rather than at its next interval (leadership was just won).
  virtual void wake() {}
  // Ends run(). Safe to call more than once and before run().
  virtual void stop() {}
};

}  // namespace kiln::scheduler
