#include "agents/sim/fleet/latency.h"

#include <algorithm>
#include <cmath>

namespace kiln::vfleet {
namespace {
constexpr double kFirst = 1e-4;  // seconds: upper bound of bucket 0
constexpr double kGrowth = 1.05;
}  // namespace

void LatencyHistogram::record(std::chrono::nanoseconds d) {
  const double s = std::chrono::duration<double>(d).count();
  int i = s <= kFirst ? 0 : static_cast<int>(std::ceil(std::log(s / kFirst) / std::log(kGrowth)));
  buckets_[static_cast<size_t>(std::clamp(i, 0, kBuckets - 1))]++;
  ++count_;
}

double LatencyHistogram::quantileSeconds(double q) const {
  if (count_ == 0) return 0;
  const auto want = static_cast<std::uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * count_));
  std::uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[static_cast<size_t>(i)];
    if (seen >= std::max<std::uint64_t>(want, 1)) return kFirst * std::pow(kGrowth, i);
  }
  return kFirst * std::pow(kGrowth, kBuckets - 1);
}

void LatencyHistogram::reset() {
  buckets_.fill(0);
  count_ = 0;
}

}  // namespace kiln::vfleet
