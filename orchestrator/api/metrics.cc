#include "orchestrator/api/metrics.h"

#include <cstdio>

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
  auto& h = latency_[{method, route}];
  ++h.count;
  h.sum += seconds;
  for (std::size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) ++h.buckets[i];
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
  char buf[64];
  for (const auto& [key, h] : latency_) {
    const std::string labels =
        "method=\"" + key.first + "\",route=\"" + promLabel(key.second) + "\"";
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%g", kBuckets[i]);
      out += "kiln_http_request_duration_seconds_bucket{" + labels + ",le=\"" + buf + "\"} " +
             std::to_string(h.buckets[i]) + "\n";
    }
    out += "kiln_http_request_duration_seconds_bucket{" + labels + ",le=\"+Inf\"} " +
           std::to_string(h.count) + "\n";
    std::snprintf(buf, sizeof buf, "%.6f", h.sum);
    out += "kiln_http_request_duration_seconds_sum{" + labels + "} " + buf + "\n";
    out += "kiln_http_request_duration_seconds_count{" + labels + "} " + std::to_string(h.count) + "\n";
  }
}

}  // namespace kiln::api
