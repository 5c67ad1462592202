#include "orchestrator/reliability/rate_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kiln::reliability {
namespace {

constexpr double kHoursPerDay = 24.0;
constexpr double kRateGpus = 8000.0;

double per8kPerDay(const Exposure& e) {
  return e.gpu_hours > 0 ? static_cast<double>(e.interruptions) / e.gpu_hours * kRateGpus * kHoursPerDay : 0.0;
}

std::string side(const char* name, const Exposure& e) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s %.2f per 8K GPUs a day (%lld in %.0f GPU-hours)", name, per8kPerDay(e),
                static_cast<long long>(e.interruptions), e.gpu_hours);
  return buf;
}

}  // namespace

const char* rateVerdictName(RateVerdict v) {
  switch (v) {
    case RateVerdict::kTooEarly:
      return "too_early";
    case RateVerdict::kNotWorse:
      return "not_worse";
    case RateVerdict::kWorse:
      return "worse";
  }
  return "?";
}

double binomialUpperTail(std::int64_t n, std::int64_t k, double p) {
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  if (p <= 0) return 0.0;
  if (p >= 1) return 1.0;
  const double lp = std::log(p), lq = std::log1p(-p);
  const double lnf = std::lgamma(static_cast<double>(n) + 1);
  double sum = 0;
  for (std::int64_t i = k; i <= n; ++i) {
    const double li = lnf - std::lgamma(static_cast<double>(i) + 1) - std::lgamma(static_cast<double>(n - i) + 1) +
                      static_cast<double>(i) * lp + static_cast<double>(n - i) * lq;
    sum += std::exp(li);
  }
  return std::min(1.0, sum);
}

RateComparison compareRates(const Exposure& upgraded, const Exposure& baseline, const RateComparisonPolicy& policy) {
  RateComparison out;
  out.upgraded_per_8k_gpus_per_day = per8kPerDay(upgraded);
  out.baseline_per_8k_gpus_per_day = per8kPerDay(baseline);
  const std::string both = side("upgraded", upgraded) + " against " + side("not upgraded", baseline);
  if (upgraded.gpu_hours < policy.min_gpu_hours || baseline.gpu_hours < policy.min_gpu_hours) {
    char buf[160];
    std::snprintf(buf, sizeof buf, ": too early, each side needs %.0f GPU-hours", policy.min_gpu_hours);
    out.reason = both + buf;
    return out;
  }
  const std::int64_t n = upgraded.interruptions + baseline.interruptions;
  const double r = policy.max_ratio * upgraded.gpu_hours;
  const double p = r / (r + baseline.gpu_hours);
  out.p_value = binomialUpperTail(n, upgraded.interruptions, p);
  out.verdict = out.p_value < policy.alpha ? RateVerdict::kWorse : RateVerdict::kNotWorse;
  char buf[200];
  std::snprintf(
      buf, sizeof buf, ": %s (one-sided exact Poisson rate test against a ratio of %.2f, p = %.4f, alpha %.2f)",
      out.verdict == RateVerdict::kWorse ? "worse" : "not shown worse", policy.max_ratio, out.p_value, policy.alpha);
  out.reason = both + buf;
  return out;
}

}  // namespace kiln::reliability
