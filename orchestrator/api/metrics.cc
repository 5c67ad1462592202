#include "orchestrator/api/metrics.h"

namespace kiln::api {

std::string promLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

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

}  // namespace kiln::api
