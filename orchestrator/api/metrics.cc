#include "orchestrator/api/metrics.h"

#include <cstdio>

namespace kiln::api {

std::string promLabel(const std::string& v) { return promLabelValue(v); }

void RequestMetrics::record(const std::string& method, const std::string& route, int status,
                            double seconds) {
  std::lock_guard lock(mu_);
  ++requests_[{method, route, status}];
  latency_[{method, route}].record(seconds);
}

void RequestMetrics::recordExecutorWait(double seconds) {
  std::lock_guard lock(wait_mu_);
  executor_wait_.record(seconds);
}

void RequestMetrics::render(std::string& out) const {
  std::lock_guard lock(mu_);
  out += "# HELP kiln_http_requests_total HTTP requests by route and status.\n";
  out += "# TYPE kiln_http_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    const auto& [method, route, status] = key;
    out += "kiln_http_requests_total{method=\"" + method + "\",route=\"" + promLabel(route) +
           "\",status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP kiln_http_request_duration_seconds HTTP request latency by route.\n";
  out += "# TYPE kiln_http_request_duration_seconds histogram\n";
  for (const auto& [key, h] : latency_)
    h.render(out, "kiln_http_request_duration_seconds",
             "method=\"" + key.first + "\",route=\"" + promLabel(key.second) + "\"");
  out += "# HELP kiln_http_executor_wait_seconds How long a request waited for a request executor thread.\n";
  out += "# TYPE kiln_http_executor_wait_seconds histogram\n";
  std::lock_guard wait_lock(wait_mu_);
  executor_wait_.render(out, "kiln_http_executor_wait_seconds");
}

void ControllerMetrics::setLeader(bool leader) {
  std::lock_guard lock(mu_);
  leader_ = leader;
  if (!leader) last_pass_unix_ = 0;
}

void ControllerMetrics::passDone(bool ok, double seconds, double unix_seconds) {
  std::lock_guard lock(mu_);
  ++(ok ? ok_ : errors_);
  last_pass_unix_ = unix_seconds;
  pass_seconds_.record(seconds);
}

void ControllerMetrics::render(std::string& out) const {
  std::lock_guard lock(mu_);
  out += "# HELP kiln_leader 1 on the replica that holds the controller lock and runs the controllers.\n"
         "# TYPE kiln_leader gauge\n";
  out += std::string("kiln_leader ") + (leader_ ? "1" : "0") + "\n";
  out += "# HELP kiln_controller_passes_total Controller passes of this replica by result (error: the pass threw).\n"
         "# TYPE kiln_controller_passes_total counter\n";
  out += "kiln_controller_passes_total{result=\"ok\"} " + std::to_string(ok_) + "\n";
  out += "kiln_controller_passes_total{result=\"error\"} " + std::to_string(errors_) + "\n";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", last_pass_unix_);
  out += "# HELP kiln_controller_last_pass_timestamp_seconds When this replica's last controller pass ended (Unix time; 0 when it is not the leader).\n"
         "# TYPE kiln_controller_last_pass_timestamp_seconds gauge\n";
  out += std::string("kiln_controller_last_pass_timestamp_seconds ") + buf + "\n";
  out += "# HELP kiln_controller_pass_duration_seconds How long a controller pass took.\n"
         "# TYPE kiln_controller_pass_duration_seconds histogram\n";
  pass_seconds_.render(out, "kiln_controller_pass_duration_seconds");
}

}  // namespace kiln::api
