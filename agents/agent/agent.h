#pragma once
// kiln-agent's core (docs/agent-protocol.md): enrol, long-poll kilnd for assignments, run each
// one through a ProcessRunner, journal it, report it until kilnd acknowledges it.
//
// Threads: run() is the executor (it runs steps, owns the journal and reports); it starts one
// poller thread that keeps long-polling kilnd (also while a step runs, with running=<id>, so a
// cancel arrives) and queues what it gets. Every collaborator is injected: tests drive the
// agent with a scripted Transport, a FakeProcessRunner, a fake HostProbe and a FakeClock.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/logger.h"
#include "common/agent_protocol.h"
#include "common/executable_allowlist.h"
#include "common/clock.h"
#include "agents/agent/artifacts.h"
#include "agents/agent/host_probe.h"
#include "agents/agent/journal.h"
#include "agents/agent/live_output.h"
#include "agents/agent/protocol.h"
#include "agents/agent/transport.h"
#include "common/exec/process_runner.h"
#include "common/result.h"

namespace kiln::agent {

struct AgentSettings {
  std::string host;
  std::filesystem::path state_dir;  // journal.jsonl and agent_token live here
  std::string enroll_token_file;    // read at each enrolment attempt; empty = none
  // The only executables a step may run here (--allowed-executables); none: any. A step whose
  // argv[0] the list refuses is reported not started, with the reason, and never spawned.
  std::optional<ExecutableAllowList> allowed_executables;
  int poll_wait_s = 25;             // 0..60
  // A step's first `running=` poll waits this long after the agent got the step (0: at once).
  std::chrono::milliseconds running_poll_delay{protocol::kRunningPollDelayMs};
  // The COMPLETE environment of every step and of the inventory command.
  std::map<std::string, std::string> step_env;
  // On stop, a running step may finish for this long before it is cancelled.
  std::chrono::milliseconds stop_grace{30000};
  // How often the boot id is read while a reboot step waits for it to change.
  std::chrono::milliseconds reboot_check_interval{2000};
  // Error backoff: doubles from initial to max, each wait drawn in [d/2, d] (jitter).
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{30000};
  // stdout kept whole for `parse` (the tail sent back is only output_cap).
  std::size_t parse_capture_cap = 16u << 20;
  // A running step's output sent while it runs (live_output.h): interval and per-stream cap.
  LiveOutputSettings live_output;
};

inline constexpr const char* kRestartedNote = "agent restarted while the step ran";
inline constexpr const char* kStopNote = "agent stopped: step killed after the stop grace";
inline constexpr const char* kTokenFileName = "agent_token";
// When the agent renews its token (wall ms), beside it; absent: the token does not expire.
inline constexpr const char* kRenewFileName = "agent_token_renew_at";

class Agent {
 public:
  // The collaborators must outlive the agent. `random01` draws jitter in [0, 1); default: a
  // seeded std::mt19937.
  Agent(AgentSettings settings, Transport& transport, exec::ProcessRunner& runner,
        HostProbe& probe, Clock& clock, std::shared_ptr<Logger> log,
        std::function<double()> random01 = {});
  ~Agent();  // requests a stop and joins the poller
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs until requestStop(). Returns ok after a clean stop (a step still running at the stop
  // was given stop_grace, then cancelled, and journaled; reports not yet acknowledged stay in
  // the journal for the next start). Errors, at start only: the state dir or journal is
  // unusable, or there is neither a stored agent token nor an enrolment token file.
  // Call once.
  Status run();

  // Thread-safe, returns at once (not async-signal-safe: call it from a normal thread).
  void requestStop();

  // Where steps' artifacts come from (artifacts.h); must outlive the agent. Set before run().
  // Without it a step that carries artifacts is reported not started.
  void useArtifacts(ArtifactFetcher& fetcher) { artifacts_ = &fetcher; }

 private:
  struct Running {
    std::string id;
    std::int64_t lease = 0;
    std::shared_ptr<exec::CancelToken> cancel;
    std::string note;  // why it was cancelled, when the agent cancelled it
  };
  class Backoff;

  // poller thread
  void pollLoop();
  void handlePollAnswer(const std::string& body);
  void cancelAfterStopGrace();

  // executor thread
  void process(const nlohmann::json& raw);
  void runStep(const Assignment& a);
  void runReboot(const Assignment& a);
  void runStage(const Assignment& a);
  // Fetches and checks the step's artifacts (artifacts.h): its argv with their local paths.
  Result<std::vector<std::string>> withArtifacts(const Assignment& a, const exec::CancelToken* cancel);
  void resume(const JournalEntry& entry);
  // nullopt: the agent is stopping (the reboot stays journaled as started).
  std::optional<StepReport> awaitReboot(const Assignment& a, const std::string& boot_before,
                                            std::int64_t started_at_ms, StepReport body,
                                            const std::shared_ptr<exec::CancelToken>& cancel);
  StepReport baseBody(const Assignment& a) const;
  void addProcessResult(StepReport& body, const Assignment& a,
                        const exec::ProcessResult& r) const;
  void addInventory(StepReport& body);
  void finish(const std::string& id, std::int64_t lease, nlohmann::json body);
  bool reportUntilDone(const std::string& id, std::int64_t lease, const nlohmann::json& body);
  // Queues the assignment a report's 200 answer handed out, if any.
  void queueHandedOut(const std::string& body);
  std::shared_ptr<exec::CancelToken> beginRunning(const Assignment& a);
  std::string endRunning();
  // Runs `work` (process or resume of assignment `id`) with held_ = id.
  void holding(const std::string& id, const std::function<void()>& work);
  // Starts the poller once: after the replay, or as soon as a replayed reboot waits (with
  // running_ set, so that its polls say what runs).
  void ensurePoller();
  nlohmann::json startedRecord(const Assignment& a, const std::string& boot_id,
                               std::int64_t started_at_ms) const;

  // either thread
  bool enrolLoop();
  Status enrolOnce();
  // Takes a new token (enrolment or renewal): stores it, and when to renew it (two thirds of its
  // life from now; none when it does not expire).
  Status adoptToken(const protocol::Enrolment& e);
  // Renews the agent token when its time has come (issue 31): POST renewPath with it. A refusal
  // is left to the next poll (a 401 there re-enrols); another failure is tried again a minute on.
  void renewIfDue();
  bool reEnrol(const std::string& refused_token);
  void waitBackoff(std::chrono::milliseconds d);
  bool stopping() const;
  void refreshBootId();
  std::string bootId() const;
  double random01();

  const AgentSettings settings_;
  Transport& transport_;
  exec::ProcessRunner& runner_;
  HostProbe& probe_;
  ArtifactFetcher* artifacts_ = nullptr;
  Clock& clock_;
  std::shared_ptr<Logger> log_;
  std::shared_ptr<Logger> live_log_;  // the live output senders' ("live_output")
  std::function<double()> random01_;
  std::mutex random_mu_;

  std::unique_ptr<Journal> journal_;  // executor thread only
  std::mutex enrol_mu_;               // one enrolment at a time

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::string token_;
  std::int64_t renew_at_ms_ = 0;  // 0: the token does not expire
  std::string boot_id_;
  std::deque<nlohmann::json> queue_;
  std::optional<Running> running_;
  // The assignment the agent holds from the moment it takes it (off the queue, or from the
  // journal at start) until its report is settled: what its polls name as running=. A poll
  // made while it held a step but said nothing would make kilnd hand the step out again as
  // undelivered (the e2e burn-in saw it between the queue's pop and the step's start).
  std::string held_;
  std::set<std::string> cancelled_ids_;  // cancels for assignments still queued
  std::thread poller_;  // started and joined by the executor thread only
};

// Reads the stored agent token (empty when there is none).
Result<std::string> readAgentToken(const std::filesystem::path& state_dir);
// Stores the agent token atomically, mode 0600.
Status writeAgentToken(const std::filesystem::path& state_dir, const std::string& token);

}  // namespace kiln::agent
