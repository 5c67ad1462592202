#pragma once
// kilnd's Slurm driver (--scheduler slurm): every `interval` the leader's driver thread reads
// Slurm's nodes and jobs (scontrol), Kiln's hosts and its drain ledger, and applies what
// scheduler::reconcile() decides: drains, resumes, allocate/release moves, requeues and
// interruptions, each written to the audit log. The rollout controller asks it two things
// without waiting for Slurm: drain these hosts for me (requestDrain, the release hook) and may
// this draining host go to maintenance yet (heldBack, the drain gate).
//
// Thread-safe: pass() on one thread, the rest from any.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/reliability/reliability_service.h"
#include "orchestrator/scheduler/drain_ledger.h"
#include "orchestrator/scheduler/slurm.h"
#include "orchestrator/scheduler/slurm_control.h"

namespace kiln::scheduler {

struct SlurmDriverOptions {
  NodeNaming naming;
  JobPolicy policy = JobPolicy::kWait;
  std::chrono::milliseconds interval{10000};
};

// A node as GET /api/v1/scheduler/nodes shows it.
struct NodeStatus {
  std::string node, host;
  std::optional<core::HostState> host_state;  // none when no host maps to the node
  std::string slurm_state;  // "IDLE+DRAIN"; empty when Slurm does not know the node
  std::string reason, reason_user;
  bool drained_by_kiln = false;
  std::vector<std::string> jobs;
  bool known = false;
};

struct DriverStatus {
  bool enabled = true;
  std::optional<TimePoint> last_pass;  // the last pass that read Slurm
  std::string last_error;              // empty when the last pass succeeded
  std::vector<NodeStatus> nodes;
};

class SlurmDriver {
 public:
  using Log = std::function<void(bool warning, const std::string& line)>;
  // `hosts`, `moves` and `audit` are parts of the fleet store (kilnd passes its core::Store for
  // all three): the driver reads every host, moves hosts Slurm took or gave back, and audits
  // notices and requeues.
  SlurmDriver(core::HostListing& hosts, core::HostMoves& moves, core::AuditLog& audit, DrainLedger& ledger,
              SlurmControl& slurm, reliability::ReliabilityStore* ledger_of_interruptions, core::Clock& clock,
              SlurmDriverOptions options, Log log);

  // One reconciliation; the number of changes it made (0 when Slurm could not be read: the
  // error is kept for status() and the gate, and logged once per distinct message).
  Result<int> pass();

  // Asks for the hosts' nodes to be drained with `reason` (the release hook): done by the next
  // pass, which wake() starts at once.
  void requestDrain(const std::vector<std::string>& hosts, const std::string& reason);
  // The drain gate: nullopt when `host` (draining in Kiln) may go to maintenance, else why not.
  // Records the ask like requestDrain.
  std::optional<std::string> heldBack(const core::HostSummary& host, const std::string& reason);

  DriverStatus status() const;
  const NodeNaming& naming() const { return options_.naming; }
  // The node a host id maps to, and the host of a node ("" when none), from the last pass.
  std::string hostOfNode(const std::string& node) const;

  // The driver thread: pass() every interval (sooner after wake()) while `leader()` says this
  // replica runs the controllers, until stop().
  void run(const std::function<bool()>& leader);
  void wake();
  void stop();

 private:
  void note(const Notice& n);

  core::HostListing& hosts_;
  core::HostMoves& moves_;
  core::AuditLog& audit_;
  DrainLedger& ledger_;
  SlurmControl& slurm_;
  reliability::ReliabilityStore* interruptions_;
  core::Clock& clock_;
  SlurmDriverOptions options_;
  Log log_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false, stopping_ = false;
  std::map<std::string, SlurmNode> observed_;  // by node; erased when Kiln resumes it
  std::set<std::string> known_;                // nodes Slurm knows
  std::map<std::string, std::vector<SlurmJob>> jobs_on_;
  std::map<std::string, DrainRequest> requests_;  // by host
  std::map<std::string, std::vector<SlurmJob>> running_before_;
  std::map<std::string, std::string> host_of_node_;
  std::map<std::string, core::HostState> host_state_;
  std::set<std::string> ours_;  // nodes in the drain ledger
  std::optional<TimePoint> last_pass_;
  std::string last_error_;
  bool read_once_ = false;
  // Said once: notices by host, requeued jobs, recorded interruptions.
  std::map<std::string, std::string> noticed_;
  std::set<std::string> requeued_, recorded_;
};

}  // namespace kiln::scheduler
