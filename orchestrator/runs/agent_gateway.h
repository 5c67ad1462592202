#pragma once
// The agents' side of kilnd: long polls parked in memory (no thread and no database work per
// waiting agent), woken when a commit gives the host work; batched liveness writes. A poll
// touches PostgreSQL only when the host has work (or a running step to check), so 100,000
// agents polling every 30 s cost nothing but their sockets (docs/DEPENDENCIES.md).
//
// Time comes from the Clock it is given: monotonic() for deadlines and timers, waitFor() for
// its two threads' waits. Their turns are public (expireDue, writerTurn), so that a test on a
// FakeClock drives them by hand, moving time itself, with no thread and no sleep. What it would
// otherwise drop (a failed heartbeat write or work refresh) goes to its Logger, once a minute
// per kind of failure (FailureLog). It asks for work only through AgentWork, and is told of new
// work as a WorkListener (agent_work.h).

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/executor.h"
#include "common/failure_log.h"
#include "common/histogram.h"
#include "common/logger.h"
#include "orchestrator/runs/agent_work.h"
#include "orchestrator/runs/run_priority.h"
#include "orchestrator/runs/run_store.h"

namespace kiln::runs {

struct AgentGatewayOptions {
  int max_wait_s = 60;
  std::chrono::milliseconds scan_interval{100};          // parked-poll deadline checks
  std::chrono::milliseconds heartbeat_flush{5000};       // one batched UPDATE per interval
  std::chrono::milliseconds pending_refresh{5000};       // re-read hosts with work (other replicas)
  // Reports waiting together go to the database in one transaction: at most this many, or
  // about this many bytes of report bodies, each; at most report_drains transactions at once
  // (4 since the report transaction got cheaper, issue 15's fourth session: with 2 a 100-pod
  // rollout's reports waited ~20 ms for one; bench/rollout/README.md has both).
  // The drains run on the gateway's own report_drains threads, not on the request executor: a
  // drain waits on PostgreSQL for its whole transaction, and on the shared executor four of them
  // held every request thread during a validation burst, so the next reports waited ~19 ms for a
  // thread just to be parsed and queued (issue 15's fifth session).
  std::size_t report_batch = 64;
  std::size_t report_batch_bytes = 8u << 20;
  int report_drains = 4;
  // Priority by purpose (run_priority.h, issue 35): queued reports are taken class by class,
  // pre-job checks first, and a pre-job report that finds every drain busy starts the express
  // drain (one more transaction, of pre-job reports only). Starvation bound: a report of a lower
  // class that has waited this long is taken before the newer reports of every class.
  // by_priority = false: arrival order, no express drain (the benchmark's baseline).
  bool by_priority = true;
  std::chrono::milliseconds starvation_bound{2000};
  // Idle polls of hosts with work claim together too (one transaction for many hosts).
  std::size_t claim_batch = 256;
  int claim_drains = 1;
};

class AgentGateway final : public WorkListener {
 public:
  // nullopt = 204 (nothing to do); otherwise the 200 body.
  using PollReply = std::function<void(Result<std::optional<nlohmann::json>>)>;

  AgentGateway(AgentWork& work, AgentLinkStore& store, Executor& executor, Clock& clock, Logger& log,
               AgentGatewayOptions options);
  ~AgentGateway() override;

  // Reads the hosts with open work, then starts the two threads (deadlines; database writes).
  void start();
  // Answers every parked poll with 204 and stops the background threads.
  void stop();

  // The deadline thread's turn: answers (204) the parked polls whose deadline has passed.
  // Returns how many.
  std::size_t expireDue();
  // The writer thread's turn: the batched heartbeats if their flush is due, the hosts with work
  // (other replicas') if their refresh is due. Returns how long until the next is due.
  std::chrono::milliseconds writerTurn();

  // One poll of `host`'s agent: records its heartbeat, then answers with work, a cancellation
  // of the running step, or parks until work arrives or `wait_s` passes. Thread-safe.
  void poll(const std::string& host, const std::string& boot_id, int wait_s, const std::string& running,
            PollReply reply);
  // The host has new work or a cancelled step (after the commit). Thread-safe.
  void notify(const std::string& host) override;
  // An agent's report (`text`: its body as sent, stored as is). Queued, and applied with the reports
  // that arrived meanwhile in one transaction (AgentWork::reportBatch) on a report thread; then
  // `reply` gets the answer, a poll of the host with running=<this assignment>, parked or still
  // on its way, is answered at once (the step is over), and the first poll with running=<the
  // assignment handed out with the answer> parks without a database read unless the host was
  // notified since. Thread-safe.
  using ReportReply = std::function<void(Result<ReportAnswer>)>;
  void report(const std::string& host, const std::string& assignment_id, nlohmann::json body, std::string text,
              ReportReply reply);

  std::size_t parkedCount() const;
  // kiln_agent_polls_total by how each poll was answered or parked, kiln_agent_reports_total,
  // kiln_agent_polls_parked (Prometheus text).
  std::string metrics() const;

 private:
  struct Parked {
    PollReply reply;
    MonoTime deadline;
    std::string running;
    std::uint64_t seq = 0;  // which parking of the host its deadline entry is for
  };
  struct Deadline {
    MonoTime at;
    std::string host;
    std::uint64_t seq;
    bool operator>(const Deadline& o) const { return at > o.at; }
  };
  void check(const std::string& host, Parked parked);  // on the executor
  // On report_executor_; `express`: the pre-job class's own drain, which takes only its reports.
  void drainReports(bool express);
  void drainClaims();                                  // on the executor
  struct QueuedReport {
    AgentReport request;
    std::size_t bytes = 0;
    ReportReply reply;
    MonoTime queued_at;
    Priority priority = Priority::kMaintenance;
  };
  void park(const std::string& host, Parked parked);
  void loop();        // parked polls' deadlines
  void writerLoop();  // batched heartbeats, hosts with work from other replicas

  AgentWork& runs_;
  AgentLinkStore& store_;
  Executor& executor_;
  Clock& clock_;
  FailureLog failures_;
  AgentGatewayOptions options_;
  MonoTime next_flush_, next_refresh_;  // the writer's (one thread at a time)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::unordered_map<std::string, Parked> parked_;
  // Parked polls by deadline (an entry whose poll was answered or replaced is skipped): the
  // scan touches only the polls that are due, not every parked one.
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
  std::uint64_t park_seq_ = 0;
  std::unordered_set<std::string> pending_;
  std::unordered_map<std::string, Heartbeat> beats_;
  // The last poll this replica served of each out-of-band runner (common/runner_key.h), for
  // kiln_runner_last_poll_timestamp_seconds: a runner has no host row to hold its liveness.
  std::map<std::string, core::TimePoint> runner_polls_;
  // Counts notify() per host, so that what the gateway learnt about a host can be dated.
  std::unordered_map<std::string, std::uint64_t> epoch_;
  // What the gateway itself saw of a host's steps: `done` (its last report) is over for good;
  // `handed_out` (with that report's answer, or to an idle poll), at `epoch`, is still
  // dispatched to the host while the epoch has not moved.
  struct Known {
    std::string done, handed_out;
    std::uint64_t epoch = 0;
    std::string lane;  // of handed_out: laneOf
  };
  // The lane of a report: "<run>/<group>" of the step this gateway handed the host, else the
  // host's own (kilnd restarted, or another replica handed it out). Under mu_.
  std::string laneOf(const AgentReport& r) const;
  std::set<std::string> busy_lanes_;  // of the reports in a drain's transaction now
  std::unordered_map<std::string, Known> known_;
  struct QueuedClaim {
    std::string host;
    Parked poll;
    std::uint64_t epoch = 0;
  };
  std::deque<QueuedClaim> claim_queue_;
  int claim_drains_ = 0;
  // Queued reports by class (Priority), each in arrival order.
  std::array<std::deque<QueuedReport>, kPriorities> report_queues_;
  int drains_ = 0;  // drainReports(false) tasks posted or running
  bool express_ = false;  // drainReports(true) posted or running


  // Polls by what answered them: parked without a read, a read of the running step, a claim.
  std::atomic<std::uint64_t> polls_parked_{0}, polls_step_read_{0}, polls_claim_{0};
  std::atomic<std::uint64_t> reports_{0}, reports_handed_out_{0}, report_batches_{0}, reports_deferred_{0};
  std::array<std::atomic<std::uint64_t>, kPriorities> reports_by_priority_{};
  std::atomic<std::uint64_t> reports_aged_{0};  // taken ahead of their class by the starvation bound
  // Where a report's time goes before its answer: queued until a transaction takes it, then
  // that transaction (every report of the batch waits for all of it).
  mutable std::mutex latency_mu_;
  LatencyHistogram report_queue_seconds_, report_apply_seconds_;
  LatencyHistogram prejob_queue_seconds_;  // the pre-job class's share of report_queue_seconds_
  std::thread thread_, writer_;
  // Runs drainReports(); last, so that it is destroyed (its queued drains finished) first.
  std::unique_ptr<Executor> report_executor_;
};

}  // namespace kiln::runs
