#include "orchestrator/core/capacity.h"

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

// docs/FACTS.md worked example: 32,768 active GPUs -> 512 domains, x1.02 -> 523 racks = 37,656 GPUs,
// 13.0% above the active footprint, 11.1% of it slice geometry.
TEST(CapacityTest, ReproducesThePrometheusWorkedExampleOnClemente) {
  auto plan = planCapacity({32768, 0.02, Platform::kClemente});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->slices, 512);
  EXPECT_EQ(plan->pods, 523);
  EXPECT_EQ(plan->racks, 523);
  EXPECT_EQ(plan->gpus, 37656);
  EXPECT_EQ(plan->spare_gpus, 4888);
  EXPECT_NEAR(plan->overhead_fraction, 0.1298, 0.0005);
  EXPECT_NEAR(plan->geometry_fraction, 8.0 / 72.0, 1e-9);
  EXPECT_NEAR(plan->reserve_fraction, 0.1298 - 0.1111, 0.0005);
}

TEST(CapacityTest, CatalinaPodIsTwoRacks) {
  auto plan = planCapacity({32768, 0.02, Platform::kCatalina});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->pods, 523);
  EXPECT_EQ(plan->racks, 1046);
}

TEST(CapacityTest, RoundsPartialSlicesAndZeroReserveUp) {
  auto plan = planCapacity({65, 0.0, Platform::kClemente});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->slices, 2);
  EXPECT_EQ(plan->pods, 2);
  auto exact = planCapacity({64 * 100, 0.0, Platform::kClemente});
  EXPECT_EQ(exact->pods, 100);  // no floating-point creep to 101
}

TEST(CapacityTest, RejectsNonsense) {
  EXPECT_EQ(planCapacity({0, 0.02, Platform::kClemente}).error().code, ErrorCode::kInvalidContent);
  EXPECT_FALSE(planCapacity({100, -0.1, Platform::kClemente}).ok());
  EXPECT_FALSE(planCapacity({100, 1.5, Platform::kClemente}).ok());
}

}  // namespace
}  // namespace kiln::core
