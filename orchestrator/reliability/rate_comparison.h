#pragma once
// Issue 34 (reliability-gated rollouts), the statistics, pure: do the pods a bundle upgraded
// interrupt jobs more often than the pods not yet upgraded (same platform), or is it too early
// to say? Not yet wired into the rollout controller (docs/notes/issue-34-*.md says what is left).
//
// The test: interruptions are a Poisson process in GPU-hours of service. With x1 interruptions
// in t1 GPU-hours (upgraded) and x2 in t2 (baseline), given n = x1 + x2 the upgraded count is
// Binomial(n, p) with p = R t1 / (R t1 + t2) when the upgraded rate is R times the baseline's.
// The one-sided exact conditional test of H0 "rate ratio <= max_ratio" against "worse" rejects
// when P(X >= x1 | n, p(max_ratio)) < alpha (the classical comparison of two Poisson rates,
// Przyborowski and Wilenski 1940). Exact, so it stays honest for the small counts a canary sees.
// No verdict before both sides have min_gpu_hours of exposure.

#include <cstdint>
#include <string>

namespace kiln::reliability {

struct Exposure {
  double gpu_hours = 0;
  std::int64_t interruptions = 0;
};

struct RateComparisonPolicy {
  double min_gpu_hours = 50000;  // on each side before any verdict
  double max_ratio = 1.0;        // how much worse than the baseline is tolerated (1: not worse)
  double alpha = 0.05;           // the test's significance level (one-sided)
};

enum class RateVerdict { kTooEarly, kNotWorse, kWorse };
const char* rateVerdictName(RateVerdict v);  // "too_early", "not_worse", "worse"

struct RateComparison {
  RateVerdict verdict = RateVerdict::kTooEarly;
  double upgraded_per_8k_gpus_per_day = 0, baseline_per_8k_gpus_per_day = 0;
  double p_value = 1;  // of the one-sided test (1 when too early)
  // One line for a halt reason or a pod's waiting reason: both rates with their interruptions
  // and exposure, the test's p-value against alpha, or what exposure is still missing.
  std::string reason;
};

RateComparison compareRates(const Exposure& upgraded, const Exposure& baseline, const RateComparisonPolicy& policy);

// P(X >= k) for X ~ Binomial(n, p), computed in log space (exact to double precision for the
// counts a fleet sees).
double binomialUpperTail(std::int64_t n, std::int64_t k, double p);

}  // namespace kiln::reliability
