#pragma once
// Request metrics in Prometheus text format. Thread-safe; recording is a short mutex hold.

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "common/histogram.h"

namespace kiln::api {

class RequestMetrics {
 public:
  void record(const std::string& method, const std::string& route, int status, double seconds);
  // How long a request waited for an executor thread (those not served on the network thread).
  void recordExecutorWait(double seconds);
  // Appends kiln_http_requests_total, kiln_http_request_duration_seconds and
  // kiln_http_executor_wait_seconds.
  void render(std::string& out) const;

 private:
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;
  std::map<std::pair<std::string, std::string>, LatencyHistogram> latency_;
  // Its own lock: recorded on every executor-served request, besides record().
  mutable std::mutex wait_mu_;
  LatencyHistogram executor_wait_;
};

// What the controller loop tells /metrics: whether this replica holds the controller lock, and
// its passes. Thread-safe.
class ControllerMetrics {
 public:
  // Losing the lock forgets the last pass (kiln_controller_last_pass_timestamp_seconds 0), so
  // a follower never looks like a lagging leader.
  void setLeader(bool leader);
  // A pass of the leader ended at `unix_seconds` (wall clock), took `seconds`; `ok` false when
  // it threw.
  void passDone(bool ok, double seconds, double unix_seconds);
  // Appends kiln_leader, kiln_controller_passes_total, kiln_controller_last_pass_timestamp_seconds
  // and kiln_controller_pass_duration_seconds.
  void render(std::string& out) const;

 private:
  mutable std::mutex mu_;
  bool leader_ = false;
  std::uint64_t ok_ = 0, errors_ = 0;
  double last_pass_unix_ = 0;
  LatencyHistogram pass_seconds_;
};

// Escapes a Prometheus label value.
std::string promLabel(const std::string& v);

}  // namespace kiln::api
