#pragma once
// Fixed-bucket histograms in Prometheus text format (seconds). Not synchronised: the owner
// records and renders under its own lock.

#include <array>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Escapes a Prometheus label value (backslash, double quote, newline).
inline std::string promLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

// Bucket bounds, upper inclusive, ascending; "+Inf" is implied.
// Requests and transactions: a millisecond to ten seconds.
inline constexpr std::array<double, 12> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                           0.1,   0.25,   0.5,   1.0,  2.5,   10.0};
// Workflow steps: a `nvidia-smi -q` of a fraction of a second to a level-4 `dcgmi diag` or an
// L11 soak of hours (docs/FACTS.md: level 3 takes ~15 min, an nvfwupd push 2-3 min).
inline constexpr std::array<double, 15> kStepBuckets = {0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
                                                        600, 1800, 3600, 7200, 14400};
// A pod's upgrade (drain, install, validation): minutes to hours (docs/FACTS.md: P90 per pod went
// from over 7 h to 2 h); the top buckets keep a stuck pod visible.
inline constexpr std::array<double, 17> kPodBuckets = {30,   60,   120,  300,   600,   900,   1800,  2700, 3600,
                                                       5400, 7200, 10800, 14400, 21600, 28800, 43200, 86400};

class Histogram {
 public:
  explicit Histogram(std::span<const double> bounds) : bounds_(bounds.begin(), bounds.end()), buckets_(bounds.size()) {}

  // `times` samples of `seconds` each.
  void record(double seconds, std::uint64_t times = 1) {
    count_ += times;
    sum_ += seconds * static_cast<double>(times);
    for (std::size_t i = 0; i < bounds_.size(); ++i)
      if (seconds <= bounds_[i]) buckets_[i] += times;
  }
  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }

  // Appends `name`_bucket (cumulative, le="+Inf" last), `name`_sum and `name`_count, each with
  // `labels` (`a="x",b="y"`, may be empty).
  void render(std::string& out, const std::string& name, const std::string& labels = "") const {
    const std::string sep = labels.empty() ? "" : ",";
    char buf[64];
    for (std::size_t i = 0; i < bounds_.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%g", bounds_[i]);
      out += name + "_bucket{" + labels + sep + "le=\"" + buf + "\"} " + std::to_string(buckets_[i]) + "\n";
    }
    out += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(count_) + "\n";
    std::snprintf(buf, sizeof buf, "%.6f", sum_);
    const std::string braces = labels.empty() ? "" : "{" + labels + "}";
    out += name + "_sum" + braces + " " + buf + "\n";
    out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
  }

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

// Request and transaction latencies.
class LatencyHistogram : public Histogram {
 public:
  LatencyHistogram() : Histogram(kLatencyBuckets) {}
};

}  // namespace kiln
