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

TEST(ParamTypeTest, ArtifactValuesAreEmptyOrLocationWithSha256) {
  const std::string sha(64, 'b');
  EXPECT_STREQ(paramTypeName(ParamType::kArtifact), "artifact");
  EXPECT_TRUE(isValidParamValue(ParamType::kArtifact, ""));
  EXPECT_TRUE(isValidParamValue(ParamType::kArtifact, "https://m.example/x.fwpkg#sha256=" + sha));
  EXPECT_TRUE(isValidParamValue(ParamType::kArtifact, "/srv/fw/x.bin#sha256=" + sha));
  EXPECT_FALSE(isValidParamValue(ParamType::kArtifact, "https://m.example/x.fwpkg"));
  EXPECT_FALSE(isValidParamValue(ParamType::kArtifact, "x.bin#sha256=" + sha));
  EXPECT_FALSE(isValidParamValue(ParamType::kArtifact, "/srv/x.bin#sha256=abc"));

  WorkflowSpec s;
  s.name = "w";
  s.params = {{"pkg", ParamType::kArtifact, "", ""}};
  auto r = resolveParams(s, {{"pkg", "ftp://m/x#sha256=" + sha}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("expected an artifact"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace kiln::workflow
