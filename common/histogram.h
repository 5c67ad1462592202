#pragma once
// A fixed-bucket latency histogram in Prometheus text format (seconds). Not synchronised: its
// owner records and renders under its own lock.

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kiln {

class LatencyHistogram {
 public:
  static constexpr std::array<double, 12> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1.0,  2.5,   10.0};

  // `times` samples of `seconds` each.
  void record(double seconds, std::uint64_t times = 1) {
    count_ += times;
    sum_ += seconds * static_cast<double>(times);
    for (std::size_t i = 0; i < kBuckets.size(); ++i)
      if (seconds <= kBuckets[i]) buckets_[i] += times;
  }
  std::uint64_t count() const { return count_; }

  // Appends `name`_bucket (cumulative, le="+Inf" last), `name`_sum and `name`_count, each with
  // `labels` (`a="x",b="y"`, may be empty).
  void render(std::string& out, const std::string& name, const std::string& labels = "") const {
    const std::string sep = labels.empty() ? "" : ",";
    char buf[64];
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%g", kBuckets[i]);
      out += name + "_bucket{" + labels + sep + "le=\"" + buf + "\"} " + std::to_string(buckets_[i]) + "\n";
    }
    out += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(count_) + "\n";
    std::snprintf(buf, sizeof buf, "%.6f", sum_);
    const std::string braces = labels.empty() ? "" : "{" + labels + "}";
    out += name + "_sum" + braces + " " + buf + "\n";
    out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
  }

 private:
  std::array<std::uint64_t, kBuckets.size()> buckets_{};
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace kiln
