#pragma once
// A latency histogram with logarithmic buckets (5% apart, 0.1 ms .. ~30 min): constant memory,
// O(1) record, quantiles within 5%. Not thread-safe (the fleet's loop owns it).

#include <array>
#include <chrono>
#include <cstdint>

namespace kiln::vfleet {

class LatencyHistogram {
 public:
  void record(std::chrono::nanoseconds d);
  // The q-quantile (0..1) in seconds; 0 when empty.
  double quantileSeconds(double q) const;
  std::uint64_t count() const { return count_; }
  void reset();

 private:
  static constexpr int kBuckets = 340;
  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
};

}  // namespace kiln::vfleet
