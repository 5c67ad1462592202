#pragma once
// The virtual fleet: thousands of simulated hosts in one process, each speaking the real
// kiln-agent protocol (docs/agent-protocol.md) with its own agent token. Every host enrols,
// long-polls for work (or short-polls when the shared connections are taken, see
// poll_policy.h), runs each assignment in process on its simulated HostState (step.h) with the
// tool's scaled duration as a timer, and reports the result like kiln-agent: lease, exit code,
// capped output tails, the parsers' document, the inventory when asked; retried with backoff on
// network errors, dropped on 409, re-enrolled on 401. No thread per host: everything runs on
// the Loop's one thread, so a Fleet is not thread-safe and is used only from that thread.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/sim/faults.h"
#include "agents/sim/fleet/host_store.h"
#include "agents/sim/fleet/latency.h"
#include "agents/sim/fleet/loop.h"
#include "agents/sim/fleet/poll_policy.h"
#include "agents/sim/fleet/step.h"
#include "agents/sim/fleet/transport.h"
#include "agents/sim/host_state.h"
#include "common/agent_protocol.h"

namespace kiln::vfleet {

struct FleetSettings {
  PollPolicySettings poll;
  double time_scale = 1.0;                           // tool durations x this
  // Shape of the log-normal factor on each step's tool time (durationFactor, drawn from `seed`,
  // the host and the assignment id); 0: every step takes its nominal time.
  double duration_spread = 0;
  std::chrono::milliseconds ramp{1000};              // first enrolments/polls spread over this
  std::chrono::milliseconds hot_window{120000};      // a host with work this recently is hot
  std::chrono::milliseconds poll_request_slack{20000};  // request timeout = wait + this
  // A step's first running= poll after this long, as kiln-agent does (kRunningPollDelayMs).
  std::chrono::milliseconds running_poll_delay{protocol::kRunningPollDelayMs};
  // Registrations in flight at most: kilnd writes each one (token, inventory) to PostgreSQL, so
  // thousands at once would only queue there and hold connections polls need.
  int max_enrolling = 32;
  std::string enroll_token;
  std::uint64_t seed = 1;                            // jitter and spread; a run is reproducible on fakes
  // nvidia-smi's timestamp for a step that starts now.
  std::function<std::string()> timestamp = [] { return std::string("Mon Jun  2 10:00:00 2025"); };
  // Reads nvfwupd package manifests named in argv; nullopt when unreadable.
  std::function<std::optional<std::string>(const std::string&)> read_file;
};

struct FleetCounters {
  std::uint64_t hosts = 0;
  std::uint64_t enrolled = 0;        // hosts holding an agent token
  std::uint64_t rejected = 0;        // hosts kilnd refused to enrol (unknown host, bad token)
  std::uint64_t enrolments = 0;      // successful POST /agents/register
  std::uint64_t enrol_errors = 0;    // failed attempts (retried)
  std::uint64_t polls_in_flight = 0;
  std::uint64_t long_polls_in_flight = 0;
  std::uint64_t polls = 0;
  std::uint64_t poll_errors = 0;
  std::uint64_t assignments = 0;
  std::uint64_t cancels = 0;
  std::uint64_t running = 0;         // steps running now
  std::uint64_t steps_done = 0;      // steps ended (finished, timed out or cancelled)
  std::uint64_t reports_ok = 0;
  std::uint64_t reports_conflict = 0;  // 409: stale lease, dropped
  std::uint64_t report_errors = 0;     // failed attempts (retried)
  std::uint64_t reports_dropped = 0;   // refused with another 4xx
  std::uint64_t sibling_wakeups = 0;   // idle hosts polled early because their pod got work
};

enum class LogLevel { kDebug, kInfo, kWarn, kError };
using LogSink = std::function<void(LogLevel, const std::string&)>;

class Fleet {
 public:
  // `loop`, `transport` and `store` must outlive the Fleet.
  Fleet(Loop& loop, Transport& transport, HostStore& store, FleetSettings settings,
        LogSink log = {});
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Adds a simulated host. Pre-condition: before start(), its id not added yet. `pod` (may be
  // empty) groups hosts for wakeSiblings().
  void addHost(sim::HostState state, const std::string& pod = {});
  // Schedules every host's enrolment (or first poll, when the store holds its token) at a
  // random moment within settings.ramp.
  void start();
  // Stops polling; running steps are abandoned (kilnd re-leases them, as when an agent dies).
  // Reports not yet acknowledged get until `grace` to be answered. Then the state of every host
  // that ran a step or got a run-time fault goes to the store, and `done` runs once.
  void stop(SteadyClock::duration grace, std::function<void()> done);
  bool stopping() const { return stopping_; }

  const FleetCounters& counters() const { return counters_; }
  // Every poll: from queueing to its answer, the long poll's wait included.
  LatencyHistogram& pollLatency() { return poll_latency_; }
  // Polls answered before their wait (work, cancel, or wait=0): kilnd's response time.
  LatencyHistogram& quickPollLatency() { return quick_poll_latency_; }
  // Reports and enrolments.
  LatencyHistogram& requestLatency() { return request_latency_; }

  // nullptr when `host` is not in the fleet.
  const sim::HostState* hostState(const std::string& host) const;
  // Adds a fault to a host now (run-time injection). kNotFound, or the simulator's error.
  Status injectFault(const std::string& host, const sim::Fault& fault);
  // Removes a host's faults of `kind` (all when nullopt); how many. kNotFound.
  Result<int> clearFaults(const std::string& host, std::optional<sim::FaultKind> kind);

 private:
  struct Host;
  void enrol(Host& h);
  void enrolNext();
  void onEnrolled(Host& h, SteadyClock::time_point sent, Result<HttpResponse> r);
  void schedulePoll(Host& h, SteadyClock::duration delay);
  void poll(Host& h);
  void onPoll(Host& h, std::uint64_t gen, bool long_poll, std::chrono::milliseconds then,
              SteadyClock::time_point sent, Result<HttpResponse> r);
  void startStep(Host& h, const nlohmann::json& assignment);
  // The first work an idle host gets is, as a rule, one host's share of a run over its whole
  // pod: a real fleet's agents each hold a long poll and all see their work at once, but here
  // an idle host without a long-poll slot would see it only at its next short poll (up to
  // --idle-poll later). So the pod's other idle hosts are made hot (they may take any slot)
  // and poll now.
  void wakeSiblings(Host& h);
  void onStepEnd(Host& h);
  void cancelStep(Host& h);
  void queueReport(Host& h, const std::string& id, nlohmann::json body);
  void sendReport(Host& h);
  void onReport(Host& h, SteadyClock::time_point sent, Result<HttpResponse> r);
  // `next`: the assignment the report's answer handed out, if any.
  void afterReport(Host& h, const nlohmann::json* next = nullptr);
  void tokenRefused(Host& h);
  void maybeFinishStop();
  void log(LogLevel level, const std::string& msg) const;

  Loop& loop_;
  Transport& transport_;
  HostStore& store_;
  FleetSettings settings_;
  PollPolicy policy_;
  LogSink log_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::unordered_map<std::string, Host*> by_id_;
  std::unordered_map<std::string, std::vector<Host*>> pods_;
  std::deque<Host*> enrol_queue_;
  int enrolling_ = 0;
  FleetCounters counters_;
  LatencyHistogram poll_latency_, quick_poll_latency_, request_latency_;
  bool started_ = false;
  bool stopping_ = false;
  std::function<void()> stop_done_;
  Loop::TimerId stop_timer_ = 0;
  // Callbacks from the loop and the transport hold a weak reference: none runs after ~Fleet.
  std::shared_ptr<int> life_ = std::make_shared<int>(0);
};

// Percent-encodes a path segment or query value (the agent protocol's, common/agent_protocol.h).
using protocol::percentEncode;

}  // namespace kiln::vfleet
