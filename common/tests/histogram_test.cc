#include "common/histogram.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(LatencyHistogramTest, RendersCumulativeBucketsSumAndCount) {
  LatencyHistogram h;
  for (double s : {0.0005, 0.003, 0.003, 0.2, 30.0}) h.record(s);
  std::string out;
  h.render(out, "x_seconds", "route=\"/r\"");
  EXPECT_NE(out.find("x_seconds_bucket{route=\"/r\",le=\"0.001\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{route=\"/r\",le=\"0.005\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{route=\"/r\",le=\"0.25\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{route=\"/r\",le=\"10\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{route=\"/r\",le=\"+Inf\"} 5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_sum{route=\"/r\"} 30.206500\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_count{route=\"/r\"} 5\n"), std::string::npos) << out;
  EXPECT_EQ(h.count(), 5u);
}

TEST(LatencyHistogramTest, SeveralSamplesAtOnceAndNoEmptyBracesWithoutLabels) {
  LatencyHistogram h;
  h.record(0.01, 3);  // a batch of three reports that each waited 10 ms
  std::string out;
  h.render(out, "y_seconds");
  EXPECT_NE(out.find("y_seconds_bucket{le=\"0.005\"} 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("y_seconds_bucket{le=\"0.01\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("y_seconds_sum 0.030000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("y_seconds_count 3\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("{}"), std::string::npos) << out;
}

TEST(HistogramTest, PodBucketsSpanMinutesToADayAndPrintWithoutExponents) {
  Histogram h(kPodBuckets);
  h.record(7200);    // a pod at the P90 target: 2 h (docs/FACTS.md)
  h.record(26000);   // over 7 h
  h.record(200000);  // stuck for days: only +Inf
  std::string out;
  h.render(out, "kiln_rollout_pod_duration_seconds", "rollout=\"ro-1\"");
  EXPECT_NE(out.find("_bucket{rollout=\"ro-1\",le=\"5400\"} 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("_bucket{rollout=\"ro-1\",le=\"7200\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("_bucket{rollout=\"ro-1\",le=\"28800\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("_bucket{rollout=\"ro-1\",le=\"86400\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("_bucket{rollout=\"ro-1\",le=\"+Inf\"} 3\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("e+"), std::string::npos) << "bounds must print as plain numbers: " << out;
  EXPECT_DOUBLE_EQ(h.sum(), 233200);
}

}  // namespace
}  // namespace kiln
