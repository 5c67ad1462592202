#include "orchestrator/workflow/substitute.h"

#include <gtest/gtest.h>

namespace kiln::workflow {
namespace {

const ParamValues kParams = {{"level", "3"}, {"image", "fw 1.2.bin"}, {"empty", ""}};
const ContextFields kFields = {{"host.name", "pod7-h03"}, {"pod.hosts", "h1,h2,h3"}};

TEST(SubstituteTest, ReplacesInsideOneElementWithoutSplitting) {
  auto r = substituteArgv({"mlxfwmanager", "-i", "{{image}}", "--tag={{host.name}}-{{level}}"},
                          kParams, kFields);
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->size(), 4u);  // "fw 1.2.bin" stays one argument despite the space
  EXPECT_EQ((*r)[2], "fw 1.2.bin");
  EXPECT_EQ((*r)[3], "--tag=pod7-h03-3");
}

TEST(SubstituteTest, EmptyValueKeepsTheElement) {
  auto r = substituteArgv({"tool", "{{empty}}", "x"}, kParams, kFields);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::string>{"tool", "", "x"}));
}

TEST(SubstituteTest, CommaJoinedPodHostsIsOneElement) {
  auto r = substituteArgv({"dcgmi", "mndiag", "--hostList", "{{pod.hosts}}"}, kParams, kFields);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[3], "h1,h2,h3");
}

TEST(SubstituteTest, AllowsSpacesInsideBraces) {
  auto r = substitute("-r {{ level }}", kParams, kFields);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "-r 3");
}

TEST(SubstituteTest, UnknownParamIsAnErrorNamingIt) {
  auto r = substituteArgv({"a", "{{nope}}"}, kParams, kFields);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("argv[1]"), std::string::npos) << r.error();
  EXPECT_NE(r.error().message.find("nope"), std::string::npos) << r.error();
}

TEST(SubstituteTest, UnknownHostFieldIsAnError) {
  auto r = substitute("{{host.rack}}", kParams, kFields);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("host.rack"), std::string::npos);
}

TEST(SubstituteTest, UnclosedBracesAreAnError) {
  EXPECT_FALSE(substitute("{{level", kParams, kFields).ok());
  EXPECT_FALSE(templateNames("x {{ }} y").ok());
  EXPECT_FALSE(templateNames("{{a b}}").ok());
}

TEST(SubstituteTest, TemplateNamesListsReferencesInOrder) {
  auto r = templateNames("{{a}}-{{host.id}}{{b}}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::string>{"a", "host.id", "b"}));
}

TEST(SubstituteTest, WhenIsFalseForEmptyFalseAndZero) {
  ParamValues p = {{"e", ""}, {"f", "false"}, {"z", "0"}, {"v", "570.1"}};
  EXPECT_FALSE(*evaluateWhen("{{e}}", p, {}));
  EXPECT_FALSE(*evaluateWhen("{{f}}", p, {}));
  EXPECT_FALSE(*evaluateWhen("{{z}}", p, {}));
  EXPECT_TRUE(*evaluateWhen("{{v}}", p, {}));
  EXPECT_TRUE(*evaluateWhen("", p, {}));
  EXPECT_FALSE(evaluateWhen("{{missing}}", p, {}).ok());
}

TEST(SubstituteTest, SoleReferenceOnlyForAWholeTemplate) {
  EXPECT_EQ(soleReference("{{soak}}"), "soak");
  EXPECT_EQ(soleReference("{{ soak }}"), "soak");
  EXPECT_EQ(soleReference("x{{soak}}"), "");
  EXPECT_EQ(soleReference("{{a}}{{b}}"), "");
  EXPECT_EQ(soleReference("30m"), "");
}

}  // namespace
}  // namespace kiln::workflow
