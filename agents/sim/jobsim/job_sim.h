#pragma once
// kiln-jobsim: a simulated job scheduler for kilnd's --scheduler-hook. It "runs jobs" on some
// pods (allocates their available, non-spare hosts), and when kilnd asks it to release a pod
// it answers at once and lets the job checkpoint for `hold` before releasing the hosts.
//
// Everything here is pure: kilnd is reached through FleetApi (main.cc wires the HTTP client),
// time through core::Clock, logs through a LogFn. main.cc owns the threads and the server.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/http/server.h"

namespace kiln::jobsim {

// ---- command line

struct CliOptions {
  std::string url;         // kilnd, scheme://host:port
  std::string token_file;  // an operator token (allocate/release are operator actions)
  std::string listen_host = "127.0.0.1";
  int listen_port = 0;
  std::chrono::milliseconds hold{20000};  // how long a job takes to checkpoint and leave
  std::vector<std::string> allocate_pods;        // --allocate POD,...
  std::optional<double> allocate_fraction;       // --allocate-fraction F (0..1)
  std::uint64_t seed = 1;                        // picks the pods of --allocate-fraction
  std::string log_level = "info";
};

std::string usage();
// `args` without the program name. kInvalidArgument naming the bad flag; "help" for -h/--help.
Result<CliOptions> parseCli(const std::vector<std::string>& args);

// The pods of --allocate-fraction: round(fraction * pods), at least one when fraction > 0,
// drawn with `seed` (the same seed and pod list give the same pods). Sorted.
std::vector<std::string> pickPods(std::vector<std::string> pods, double fraction, std::uint64_t seed);

// ---- kilnd, as jobsim needs it

struct HostView {
  std::string id;
  std::string state;
  bool spare = false;
};

// kilnd's REST API (main.cc: over http::Client). Implementations are thread-safe.
class FleetApi {
 public:
  virtual ~FleetApi() = default;
  // Every pod id (GET /api/v1/pods, all pages).
  virtual Result<std::vector<std::string>> listPods() = 0;
  // The pod's hosts (GET /api/v1/pods/{id}); kNotFound for an unknown pod.
  virtual Result<std::vector<HostView>> podHosts(const std::string& pod) = 0;
  virtual Result<HostView> host(const std::string& id) = 0;
  // POST /api/v1/hosts/{id}/actions {action, reason}; kConflict when the state forbids it.
  virtual Status hostAction(const std::string& id, const std::string& action, const std::string& reason) = 0;
};

// {"id","state","spare"} of a host document; the pod document's "hosts".
Result<HostView> parseHost(const nlohmann::json& doc);
Result<std::vector<HostView>> parsePodHosts(const nlohmann::json& pod_doc);

using LogFn = std::function<void(const std::string& line)>;

// The job that runs on a pod ("job <name>" in the host's state reason).
std::string jobName(const std::string& pod);

struct AllocationSummary {
  int allocated = 0;
  int spares = 0;       // left alone: spares are not given to jobs
  int not_available = 0;
  int failed = 0;       // unknown pod or a refused/failed request
  bool operator==(const AllocationSummary&) const = default;
};

// Starts a job on each pod: allocates its available, non-spare hosts. Logs one line per pod
// (and per failure). Stops early only on kUnavailable (kilnd unreachable), returned as an error.
Result<AllocationSummary> startJobs(FleetApi& api, const std::vector<std::string>& pods, const LogFn& log);

// ---- release requests (the hook)

// kilnd's {"action": "release", "rollout", "pod", "hosts": [...]}. kInvalidArgument when the
// body is not JSON; kInvalidContent for a wrong action or a missing/ill-typed pod or hosts.
struct ReleaseRequest {
  std::string rollout;  // may be empty
  std::string pod;
  std::vector<std::string> hosts;
};
Result<ReleaseRequest> parseReleaseRequest(const std::string& body);

struct PendingRelease {
  std::string pod;
  std::string rollout;
  std::vector<std::string> hosts;  // sorted, unique
  core::TimePoint due;
};

struct Scheduled {
  bool duplicate = false;              // a release of the pod was already pending
  std::chrono::milliseconds release_in{0};
};

// The releases promised to kilnd, each due `hold` after the first request for its pod. A
// request for a pod whose release is still pending schedules nothing new (its hosts join the
// pending release, the due time stays); once a release was taken, a new request schedules a
// new one. Thread-safe.
class ReleaseBook {
 public:
  ReleaseBook(const core::Clock& clock, std::chrono::milliseconds hold) : clock_(clock), hold_(hold) {}

  Scheduled schedule(const ReleaseRequest& request);
  // Removes and returns the releases due now, earliest first.
  std::vector<PendingRelease> takeDue();
  // Still pending, earliest first.
  std::vector<PendingRelease> pending() const;

 private:
  const core::Clock& clock_;
  const std::chrono::milliseconds hold_;
  mutable std::mutex mu_;
  std::map<std::string, PendingRelease> by_pod_;
};

// The answer to one hook request: 202 {"accepted": true, "pod", "release_in_s", "duplicate"}
// for a release request; 405 for another method than POST; 400/422 with kilnd's error body
// {"error": {"code", "message", "details"}} for a bad body. Logs one line per request.
http::Response answerHook(ReleaseBook& book, const std::string& method, const std::string& body, const LogFn& log);

// The job checkpointed and left: releases each host of `release` that is still allocated
// (the others are left alone). Logs one line for the pod and one per failed request. Returns
// the number of hosts released.
int releaseHosts(FleetApi& api, const PendingRelease& release, const LogFn& log);

}  // namespace kiln::jobsim
