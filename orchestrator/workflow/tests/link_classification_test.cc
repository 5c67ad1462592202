#include "orchestrator/workflow/link_classification.h"

#include <gtest/gtest.h>

namespace kiln::workflow {
namespace {

TEST(LinkClassificationTest, PassingInitialTestIsHealthy) {
  EXPECT_EQ(classifyLink({true}), LinkClass::kHealthy);
}

TEST(LinkClassificationTest, FailThenTwoPassingRetestsIsTransient) {
  EXPECT_EQ(classifyLink({false, true, true}), LinkClass::kTransient);
}

TEST(LinkClassificationTest, FailingAnyRetestIsPersistent) {
  EXPECT_EQ(classifyLink({false, false}), LinkClass::kPersistent);
  EXPECT_EQ(classifyLink({false, true, false}), LinkClass::kPersistent);
}

TEST(LinkClassificationTest, TooFewRetestsIsUndecided) {
  EXPECT_EQ(classifyLink({false}), LinkClass::kUndecided);
  EXPECT_EQ(classifyLink({false, true}), LinkClass::kUndecided);
  EXPECT_EQ(retestsNeeded({false}), 2);
  EXPECT_EQ(retestsNeeded({false, true}), 1);
  EXPECT_EQ(retestsNeeded({false, true, true}), 0);
  EXPECT_EQ(retestsNeeded({true}), 0);
}

TEST(LinkClassificationTest, RequiredRetestPassesIsConfigurable) {
  EXPECT_EQ(classifyLink({false, true}, 1), LinkClass::kTransient);
  EXPECT_EQ(classifyLink({false, true, true}, 3), LinkClass::kUndecided);
}

TEST(LinkClassificationTest, HostPassesWithTransientLinksRecorded) {
  auto v = classifyHostLinks({{"gpu 0 link 1", {true}}, {"gpu 2 link 7", {false, true, true}}});
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.transient, std::vector<std::string>{"gpu 2 link 7"});
  EXPECT_TRUE(v.persistent.empty());
  EXPECT_NE(v.message.find("transient NVLink faults (recorded): gpu 2 link 7"), std::string::npos)
      << v.message;
}

TEST(LinkClassificationTest, HostFailsAndNamesPersistentLinks) {
  auto v = classifyHostLinks({{"gpu 2 link 7", {false, true, false}},
                              {"gpu 3 link 0", {false, true, true}},
                              {"gpu 1 link 4", {false, false}}});
  EXPECT_FALSE(v.passed);
  EXPECT_TRUE(v.decided);
  EXPECT_EQ(v.persistent, (std::vector<std::string>{"gpu 2 link 7", "gpu 1 link 4"}));
  EXPECT_NE(v.message.find("persistent NVLink faults: gpu 2 link 7, gpu 1 link 4"),
            std::string::npos)
      << v.message;
}

TEST(LinkClassificationTest, UndecidedLinkKeepsHostUndecided) {
  auto v = classifyHostLinks({{"gpu 0 link 3", {false, true}}});
  EXPECT_FALSE(v.passed);
  EXPECT_FALSE(v.decided);
  EXPECT_EQ(v.undecided, std::vector<std::string>{"gpu 0 link 3"});
}

}  // namespace
}  // namespace kiln::workflow
