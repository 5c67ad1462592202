#pragma once
// Request metrics in Prometheus text format. Thread-safe; recording is a short mutex hold.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace kiln::api {

class RequestMetrics {
 public:
  void record(const std::string& method, const std::string& route, int status, double seconds);
  // Appends kiln_http_requests_total and kiln_http_request_duration_seconds.
  void render(std::string& out) const;

  static constexpr std::array<double, 12> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1.0,  2.5,   10.0};

 private:
  struct Histogram {
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    std::uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;
  std::map<std::pair<std::string, std::string>, Histogram> latency_;
};

// Escapes a Prometheus label value.
std::string promLabel(const std::string& v);

}  // namespace kiln::api
