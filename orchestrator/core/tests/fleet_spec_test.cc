#include "orchestrator/core/fleet_spec.h"

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

TEST(FleetSpecTest, NameRules) {
  EXPECT_TRUE(isValidName("prn-b01-p0001"));
  EXPECT_FALSE(isValidName(""));
  EXPECT_FALSE(isValidName("-x"));
  EXPECT_FALSE(isValidName("Pod"));
  EXPECT_FALSE(isValidName("a/b"));
  EXPECT_FALSE(isValidName(std::string(64, 'a')));
}

}  // namespace
}  // namespace kiln::core
