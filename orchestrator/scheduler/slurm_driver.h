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

#include "common/logger.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/reliability/reliability_service.h"
#include "orchestrator/scheduler/drain_ledger.h"
#include "orchestrator/scheduler/driver.h"
#include "orchestrator/scheduler/slurm.h"
#include "orchestrator/scheduler/slurm_control.h"

namespace kiln::scheduler {

struct SlurmDriverOptions {
  NodeNaming naming;
  JobPolicy policy = JobPolicy::kWait;
  std::chrono::milliseconds interval{10000};
};

class SlurmDriver final : public Driver {
 public:
  // `hosts`, `moves` and `audit` are parts of the fleet store (kilnd passes its core::Store for
  // all three): the driver reads every host, moves hosts Slurm took or gave back, and audits
  // notices and requeues.
  SlurmDriver(core::HostListing& hosts, core::HostMoves& moves, core::AuditLog& audit, DrainLedger& ledger,
              SlurmControl& slurm, reliability::ReliabilityStore* ledger_of_interruptions, core::Clock& clock,
              SlurmDriverOptions options, Logger& log);

  // One reconciliation; the number of changes it made (0 when Slurm could not be read: the
  // error is kept for status() and the gate, and logged once per distinct message).
  Result<int> pass();
  // A reading that changes nothing (a follower replica's): Slurm's nodes and jobs, Kiln's hosts
  // and the drain ledger, for status() and hostOfNode(); 0, or the error as pass() keeps it.
  Result<int> observe();

  std::string_view kind() const override { return "slurm"; }
  // Asks for the hosts' nodes to be drained with the request's reason (the release ask): done
  // by the next pass, which wake() starts at once. `done(true)` at once: the ask is Kiln's own
  // record, the gate (heldBack) follows Slurm.
  void requestDrain(const ReleaseRequest& request, std::function<void(bool told)> done) override;
  // The drain gate: nullopt when `host` (draining in Kiln) may go to maintenance, else why not.
  // Records the ask like requestDrain.
  std::optional<std::string> heldBack(const core::HostSummary& host, const std::string& reason) override;
  // Kiln moved these hosts in or out of the job pool: the next pass (started now) drains or
  // resumes their nodes.
  void hostsMoved(const std::vector<std::string>& hosts) override;

  std::optional<DriverStatus> status() const override;
  const NodeNaming& naming() const { return options_.naming; }
  // The host of a node ("" when none), from the last pass.
  std::string hostOfNode(const std::string& node) const override;

  // The driver thread: pass() every interval (sooner after wake()) while `leader()` says this
  // replica runs the controllers, observe() while it does not (so that the node view and the
  // pre-job check's naming answer on every replica), until stop().
  void run(const std::function<bool()>& leader) override;
  void wake() override;
  void stop() override;

 private:
  void note(const Notice& n);
  Result<int> reading(bool act);
  // What a reading saw, for status(), hostOfNode() and the gate.
  void remember(TimePoint began, const std::vector<core::HostSummary>& hosts, const std::vector<SlurmNode>& nodes,
                const std::vector<SlurmJob>& jobs, const std::set<std::string>& resumed, std::set<std::string> ours, bool acted);

  core::HostListing& hosts_;
  core::HostMoves& moves_;
  core::AuditLog& audit_;
  DrainLedger& ledger_;
  SlurmControl& slurm_;
  reliability::ReliabilityStore* interruptions_;
  core::Clock& clock_;
  SlurmDriverOptions options_;
  Logger& log_;

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
  bool acted_ = false;  // the last reading was pass()'s, not observe()'s
  // Said once: notices by host, requeued jobs, recorded interruptions.
  std::map<std::string, std::string> noticed_;
  std::set<std::string> requeued_, recorded_;
};

}  // namespace kiln::scheduler
