#include "orchestrator/core/roles.h"

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

TEST(RolesTest, HierarchyAndAgentApart) {
  EXPECT_TRUE(roleAllows(Role::kAdmin, Role::kOperator));
  EXPECT_TRUE(roleAllows(Role::kOperator, Role::kViewer));
  EXPECT_FALSE(roleAllows(Role::kViewer, Role::kOperator));
  EXPECT_FALSE(roleAllows(Role::kAgent, Role::kViewer));
  EXPECT_FALSE(roleAllows(Role::kAdmin, Role::kAgent));
  EXPECT_TRUE(roleAllows(Role::kAgent, Role::kAgent));
  EXPECT_FALSE(roleAllows(Role::kEnroll, Role::kAgent));
  EXPECT_FALSE(roleAllows(Role::kEnroll, Role::kViewer));
  EXPECT_TRUE(roleAllows(Role::kEnroll, Role::kEnroll));
  EXPECT_EQ(parseRole("operator"), Role::kOperator);
  EXPECT_FALSE(parseRole("root").has_value());
}

}  // namespace
}  // namespace kiln::core
