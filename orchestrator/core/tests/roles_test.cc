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

// The scheduler's prolog holds a prejob token: the pre-job check's calls and nothing else;
// operators and admins may make those calls too, viewers, agents and enrolment tokens may not.
TEST(RolesTest, PreJobIsNarrow) {
  for (Role need : {Role::kViewer, Role::kOperator, Role::kAdmin, Role::kAgent, Role::kEnroll})
    EXPECT_FALSE(roleAllows(Role::kPreJob, need)) << roleName(need);
  EXPECT_TRUE(roleAllows(Role::kPreJob, Role::kPreJob));
  EXPECT_TRUE(roleAllows(Role::kOperator, Role::kPreJob));
  EXPECT_TRUE(roleAllows(Role::kAdmin, Role::kPreJob));
  for (Role have : {Role::kViewer, Role::kAgent, Role::kEnroll})
    EXPECT_FALSE(roleAllows(have, Role::kPreJob)) << roleName(have);
  EXPECT_EQ(parseRole("prejob"), Role::kPreJob);
  EXPECT_EQ(roleName(Role::kPreJob), "prejob");
}

}  // namespace
}  // namespace kiln::core
