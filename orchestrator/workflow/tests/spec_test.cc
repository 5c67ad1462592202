#include "orchestrator/workflow/spec.h"

#include <gtest/gtest.h>

namespace kiln::workflow {
namespace {

using std::chrono::milliseconds;

TEST(DurationTest, ParsesUnitsAndCombinations) {
  EXPECT_EQ(parseDuration("90s")->value, milliseconds(90'000));
  EXPECT_EQ(parseDuration("15m")->value, milliseconds(900'000));
  EXPECT_EQ(parseDuration("2h")->value, milliseconds(7'200'000));
  EXPECT_EQ(parseDuration("1h30m")->value, milliseconds(5'400'000));
  EXPECT_EQ(parseDuration("500ms")->value, milliseconds(500));
  EXPECT_EQ(parseDuration("0s")->value, milliseconds(0));
}

TEST(DurationTest, RejectsNonsense) {
  for (const char* bad : {"", "fast", "15", "m", "-5s", "1.5h", "30m1h", "5 s", "10d", "1s1s"}) {
    EXPECT_FALSE(parseDuration(bad).has_value()) << bad;
  }
}

TEST(DurationTest, FormatsCanonically) {
  EXPECT_EQ(formatDuration(Duration{milliseconds(5'400'000)}), "1h30m");
  EXPECT_EQ(formatDuration(Duration{milliseconds(0)}), "0s");
  EXPECT_EQ(formatDuration(Duration{milliseconds(1'500)}), "1s500ms");
}

WorkflowSpec specWithParams() {
  WorkflowSpec s;
  s.name = "w";
  s.params = {{"passes", ParamType::kInt, "2", ""},
              {"soak", ParamType::kDuration, "30m", ""},
              {"target", ParamType::kString, std::nullopt, ""}};
  return s;
}

TEST(ResolveParamsTest, FillsDefaultsAndKeepsGivenValues) {
  auto r = resolveParams(specWithParams(), {{"target", "1.2"}, {"passes", "3"}});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->at("passes"), "3");
  EXPECT_EQ(r->at("soak"), "30m");
  EXPECT_EQ(r->at("target"), "1.2");
}

TEST(ResolveParamsTest, ReportsEveryBadParameter) {
  auto r = resolveParams(specWithParams(), {{"passes", "two"}, {"bogus", "1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  ASSERT_EQ(r.error().fields.size(), 3u) << r.error();  // bad int, unknown, missing required
}

TEST(ResolveParamsTest, ResolvesParamBackedFields) {
  ParamValues p = {{"passes", "2"}, {"soak", "30m"}};
  EXPECT_EQ(*resolveInt(IntValue{0, "passes"}, p), 2);
  EXPECT_EQ(resolveDuration(DurationValue{{}, "soak"}, p)->value, milliseconds(1'800'000));
  EXPECT_EQ(*resolveInt(IntValue{5, ""}, p), 5);
  EXPECT_FALSE(resolveInt(IntValue{0, "missing"}, p).ok());
}

}  // namespace
}  // namespace kiln::workflow
