// Issue 34: the statistics a reliability-gated rollout will read (not wired yet).

#include "orchestrator/reliability/rate_comparison.h"

#include <gtest/gtest.h>

namespace kiln::reliability {
namespace {

TEST(RateComparisonTest, TheBinomialTailIsExact) {
  EXPECT_NEAR(binomialUpperTail(10, 8, 0.5), 56.0 / 1024.0, 1e-12);  // C(10,8)+C(10,9)+C(10,10)
  EXPECT_NEAR(binomialUpperTail(5, 5, 0.5), 1.0 / 32.0, 1e-12);
  EXPECT_EQ(binomialUpperTail(5, 0, 0.3), 1.0);
  EXPECT_EQ(binomialUpperTail(5, 6, 0.3), 0.0);
  EXPECT_NEAR(binomialUpperTail(2000, 1000, 0.5), 0.5 + 0.5 * 0.01783, 1e-4);  // P(X=1000) ~ 0.01783
}

TEST(RateComparisonTest, ABundleThatDoublesTheInterruptionRateIsWorse) {
  const auto c = compareRates({1'000'000, 40}, {1'000'000, 20}, {});
  EXPECT_EQ(c.verdict, RateVerdict::kWorse);
  EXPECT_LT(c.p_value, 0.01);
  EXPECT_NEAR(c.upgraded_per_8k_gpus_per_day, 7.68, 1e-9);
  EXPECT_NEAR(c.baseline_per_8k_gpus_per_day, 3.84, 1e-9);
  // The reason names both rates, their exposure and the significance.
  EXPECT_NE(c.reason.find("upgraded 7.68 per 8K GPUs a day (40 in 1000000 GPU-hours)"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("not upgraded 3.84 per 8K GPUs a day (20 in 1000000 GPU-hours)"), std::string::npos);
  EXPECT_NE(c.reason.find(": worse (one-sided exact Poisson rate test"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("alpha 0.05"), std::string::npos);
}

TEST(RateComparisonTest, ANeutralBundleIsLetThroughWhateverTheExposureSplit) {
  auto c = compareRates({1'000'000, 21}, {1'000'000, 20}, {});
  EXPECT_EQ(c.verdict, RateVerdict::kNotWorse);
  EXPECT_GT(c.p_value, 0.3);
  EXPECT_NE(c.reason.find("not shown worse"), std::string::npos) << c.reason;
  // A canary of a few pods against the rest of the fleet at the same rate.
  c = compareRates({200'000, 8}, {1'800'000, 72}, {});
  EXPECT_EQ(c.verdict, RateVerdict::kNotWorse);
  // Better than the baseline is never worse.
  EXPECT_EQ(compareRates({1'000'000, 5}, {1'000'000, 40}, {}).verdict, RateVerdict::kNotWorse);
}

TEST(RateComparisonTest, NoVerdictBeforeEachSideHasItsExposure) {
  const auto c = compareRates({10'000, 9}, {1'000'000, 20}, {});
  EXPECT_EQ(c.verdict, RateVerdict::kTooEarly) << "nine interruptions in 10,000 GPU-hours is loud, but too early";
  EXPECT_EQ(c.p_value, 1.0);
  EXPECT_NE(c.reason.find("too early, each side needs 50000 GPU-hours"), std::string::npos) << c.reason;
  EXPECT_EQ(compareRates({1'000'000, 9}, {10'000, 0}, {}).verdict, RateVerdict::kTooEarly);
}

TEST(RateComparisonTest, AToleratedRatioAndAStricterAlphaMoveTheLine) {
  // Twice the rate is worse than "not worse", but within a tolerated ratio of 2.
  EXPECT_EQ(compareRates({1'000'000, 40}, {1'000'000, 20}, {.max_ratio = 2.0}).verdict, RateVerdict::kNotWorse);
  // 30 against 20: p ~ 0.1, worse only at a looser alpha.
  const auto loose = compareRates({1'000'000, 30}, {1'000'000, 20}, {.alpha = 0.2});
  const auto strict = compareRates({1'000'000, 30}, {1'000'000, 20}, {.alpha = 0.01});
  EXPECT_NEAR(loose.p_value, strict.p_value, 1e-12);
  EXPECT_EQ(loose.verdict, RateVerdict::kWorse);
  EXPECT_EQ(strict.verdict, RateVerdict::kNotWorse);
  // Interruptions only on the upgraded side: 5 of 5 at equal exposure is p = 1/32.
  const auto only = compareRates({1'000'000, 5}, {1'000'000, 0}, {});
  EXPECT_NEAR(only.p_value, 1.0 / 32.0, 1e-12);
  EXPECT_EQ(only.verdict, RateVerdict::kWorse);
}

// Under H0 (equal rates) the test is "worse" at most alpha of the time: the exact test is
// conservative. Summed over every outcome n = 60 can take, weighted by its probability.
TEST(RateComparisonTest, AtEqualRatesTheFalseAlarmRateIsAtMostAlpha) {
  const std::int64_t n = 60;
  double alarm = 0;
  for (std::int64_t x = 0; x <= n; ++x) {
    const double px = binomialUpperTail(n, x, 0.5) - binomialUpperTail(n, x + 1, 0.5);
    if (compareRates({1'000'000, x}, {1'000'000, n - x}, {}).verdict == RateVerdict::kWorse) alarm += px;
  }
  EXPECT_LE(alarm, 0.05);
  EXPECT_GT(alarm, 0.01) << "and not so conservative that it never halts";
}

}  // namespace
}  // namespace kiln::reliability
