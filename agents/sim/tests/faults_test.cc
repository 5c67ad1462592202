#include "agents/sim/faults.h"

#include <gtest/gtest.h>

namespace kiln::sim {
namespace {

// Test shorthand for a Fault with positional fields.
inline Fault mk(FaultKind kind, int gpu = -1, int link = -1, int remaining = -1,
                std::string tool = "", double factor = 1.0, int xid = 0) {
  Fault f;
  f.kind = kind;
  f.gpu = gpu;
  f.link = link;
  f.remaining = remaining;
  f.tool = std::move(tool);
  f.factor = factor;
  f.xid = xid;
  return f;
}

std::string host(int i) { return "cat-r" + std::to_string(i / 18) + "-t" + std::to_string(i % 18); }

TEST(FaultSeedTest, SameSeedAndHostAlwaysGiveTheSameAnswer) {
  Fault templ = mk(FaultKind::kWeakLinkPersistent);
  for (int i = 0; i < 200; ++i) {
    auto a = seededFault(42, host(i), 0.3, templ, 4, 18);
    auto b = seededFault(42, host(i), 0.3, templ, 4, 18);
    ASSERT_EQ(a.has_value(), b.has_value());
    if (a) {
      EXPECT_EQ(*a, *b);
    }
  }
}

TEST(FaultSeedTest, SelectsAboutRateOfTheFleet) {
  Fault templ = mk(FaultKind::kFlashFailure);
  int chosen = 0;
  for (int i = 0; i < 2000; ++i) chosen += seededFault(7, host(i), 0.1, templ, 4, 18) ? 1 : 0;
  EXPECT_GT(chosen, 150);
  EXPECT_LT(chosen, 250);
  int none = 0, all = 0;
  for (int i = 0; i < 100; ++i) {
    none += seededFault(7, host(i), 0.0, templ, 4, 18) ? 1 : 0;
    all += seededFault(7, host(i), 1.0, templ, 4, 18) ? 1 : 0;
  }
  EXPECT_EQ(none, 0);
  EXPECT_EQ(all, 100);
}

TEST(FaultSeedTest, DifferentSeedsPickDifferentHosts) {
  Fault templ = mk(FaultKind::kXid);
  templ.xid = 79;
  int differ = 0;
  for (int i = 0; i < 500; ++i) {
    differ += seededFault(1, host(i), 0.2, templ, 4, 18).has_value() !=
              seededFault(2, host(i), 0.2, templ, 4, 18).has_value();
  }
  EXPECT_GT(differ, 50);
}

TEST(FaultSeedTest, FillsGpuAndLinkWithinRangeAndKeepsGivenOnes) {
  Fault templ = mk(FaultKind::kWeakLinkTransient);
  templ.remaining = 2;
  bool saw_nonzero_link = false;
  for (int i = 0; i < 300; ++i) {
    auto f = seededFault(9, host(i), 1.0, templ, 4, 18);
    ASSERT_TRUE(f);
    EXPECT_GE(f->gpu, 0);
    EXPECT_LT(f->gpu, 4);
    EXPECT_GE(f->link, 0);
    EXPECT_LT(f->link, 18);
    EXPECT_EQ(f->remaining, 2);
    saw_nonzero_link |= f->link != 0;
  }
  EXPECT_TRUE(saw_nonzero_link);
  templ.gpu = 3;
  templ.link = 11;
  auto fixed = seededFault(9, host(0), 1.0, templ, 4, 18);
  EXPECT_EQ(fixed->gpu, 3);
  EXPECT_EQ(fixed->link, 11);
}

TEST(FaultTest, KindNamesRoundTripAndJsonToo) {
  for (auto k : {FaultKind::kFlashFailure, FaultKind::kHang, FaultKind::kSlow,
                 FaultKind::kWeakLinkTransient, FaultKind::kWeakLinkPersistent,
                 FaultKind::kRowRemapPending, FaultKind::kXid}) {
    EXPECT_EQ(parseFaultKind(faultKindName(k)), k);
  }
  EXPECT_FALSE(parseFaultKind("gremlins"));
  Fault f = mk(FaultKind::kHang, -1, -1, 2, "dcgmi", 1.0, 0);
  auto back = faultFromJson(toJson(f));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, f);
}

}  // namespace
}  // namespace kiln::sim
