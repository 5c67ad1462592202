// Slurm hostlist expansion: the syntax as SLURM_JOB_NODELIST writes it, zero padding, several
// bracket groups, and every malformed shape an error (never a crash or a huge allocation).

#include <gtest/gtest.h>

#include "common/hostlist.h"

namespace kiln {
namespace {

using Names = std::vector<std::string>;

Names expand(std::string_view list) {
  auto r = expandHostlist(list);
  EXPECT_TRUE(r.ok()) << list << ": " << r.error().message;
  return r.ok() ? *r : Names{};
}

std::string errorOf(std::string_view list, std::size_t limit = kMaxHostlistNames) {
  auto r = expandHostlist(list, limit);
  EXPECT_FALSE(r.ok()) << list << " expanded to " << (r.ok() ? r->size() : 0) << " names";
  if (r.ok()) return "";
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  return r.error().message;
}

TEST(HostlistTest, PlainNamesAndCommas) {
  EXPECT_EQ(expand("n1"), (Names{"n1"}));
  EXPECT_EQ(expand("login1,gpu-a.b_c"), (Names{"login1", "gpu-a.b_c"}));
  EXPECT_EQ(expand("  n1,n2\n"), (Names{"n1", "n2"}));  // surrounding whitespace ignored
}

TEST(HostlistTest, RangesListsAndSuffixes) {
  EXPECT_EQ(expand("a[1-3,5],b07,c[01-02]-x"), (Names{"a1", "a2", "a3", "a5", "b07", "c01-x", "c02-x"}));
  EXPECT_EQ(expand("n[3]"), (Names{"n3"}));
  EXPECT_EQ(expand("n[5-5]"), (Names{"n5"}));
  EXPECT_EQ(expand("[1-2]x"), (Names{"1x", "2x"}));
  EXPECT_EQ(expand("n[2,1]"), (Names{"n2", "n1"}));  // written order kept
}

TEST(HostlistTest, ZeroPaddingFollowsTheLowEnd) {
  EXPECT_EQ(expand("n[08-10]"), (Names{"n08", "n09", "n10"}));
  EXPECT_EQ(expand("n[8-10]"), (Names{"n8", "n9", "n10"}));
  EXPECT_EQ(expand("n[098-101]"), (Names{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand("n[98-101]"), (Names{"n98", "n99", "n100", "n101"}));
  EXPECT_EQ(expand("n[007,7]"), (Names{"n007", "n7"}));  // single numbers as written
  EXPECT_EQ(expand("n[0-1]"), (Names{"n0", "n1"}));
}

TEST(HostlistTest, SeveralGroupsExpandToEveryCombinationFirstSlowest) {
  EXPECT_EQ(expand("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand("r[1-2]n[08,10]-g[1]"), (Names{"r1n08-g1", "r1n10-g1", "r2n08-g1", "r2n10-g1"}));
  EXPECT_EQ(expand("a[1-2],r[1-2]n[1-2],z"),
            (Names{"a1", "a2", "r1n1", "r1n2", "r2n1", "r2n2", "z"}));
}

TEST(HostlistTest, DuplicatesAreKept) { EXPECT_EQ(expand("n1,n[1-2]"), (Names{"n1", "n1", "n2"})); }

TEST(HostlistTest, UnbalancedAndNestedBracketsAreErrors) {
  EXPECT_NE(errorOf("a[1-3").find("'[1-3' is never closed"), std::string::npos);
  EXPECT_NE(errorOf("a[1-3,b2").find("is never closed"), std::string::npos);
  EXPECT_NE(errorOf("a1-3]").find("']' without a '['"), std::string::npos);
  EXPECT_NE(errorOf("a[1]]").find("']' without a '['"), std::string::npos);
  EXPECT_NE(errorOf("a[[1]]").find("brackets cannot nest"), std::string::npos);
  EXPECT_NE(errorOf("a[1]b[").find("never closed"), std::string::npos);
}

TEST(HostlistTest, ReversedRangesAreErrors) {
  EXPECT_EQ(errorOf("n[3-1]"), "hostlist name 'n[3-1]': range 3-1 is reversed");
  EXPECT_NE(errorOf("n[1-2,10-09]").find("range 10-09 is reversed"), std::string::npos);
}

TEST(HostlistTest, EmptyNamesGroupsAndItemsAreErrors) {
  EXPECT_EQ(errorOf(""), "the hostlist is empty");
  EXPECT_EQ(errorOf("  "), "the hostlist is empty");
  for (const char* list : {"a,,b", ",a", "a,", ","})
    EXPECT_NE(errorOf(list).find("has an empty name"), std::string::npos) << list;
  EXPECT_NE(errorOf("a[]").find("empty bracket group"), std::string::npos);
  EXPECT_NE(errorOf("a[1,,2]").find("empty item"), std::string::npos);
  EXPECT_NE(errorOf("a[1,]").find("empty item"), std::string::npos);
  EXPECT_NE(errorOf("a[1-]").find("a number on each side"), std::string::npos);
  EXPECT_NE(errorOf("a[-3]").find("a number on each side"), std::string::npos);
}

TEST(HostlistTest, WhatIsNotANumberOrARangeIsAnError) {
  EXPECT_NE(errorOf("a[x]").find("'x' is not a number"), std::string::npos);
  EXPECT_NE(errorOf("a[1-x]").find("'x' is not a number"), std::string::npos);
  EXPECT_NE(errorOf("a[1-2-3]").find("'1-2-3' is not a range"), std::string::npos);
  EXPECT_NE(errorOf("a[1:2]").find("not a number"), std::string::npos);
  EXPECT_NE(errorOf("a[ 1]").find("whitespace"), std::string::npos);
  EXPECT_NE(errorOf("a b").find("whitespace"), std::string::npos);
  EXPECT_NE(errorOf("a,\tb").find("whitespace"), std::string::npos);
  EXPECT_NE(errorOf(std::string_view("a\0b", 3)).find("control character"), std::string::npos);
  EXPECT_NE(errorOf("n[1-1234567890123456789]").find("more than 18 digits"), std::string::npos);
}

TEST(HostlistTest, TheCapStopsHugeExpansionsBeforeBuildingThem) {
  auto at_cap = expandHostlist("n[1-100000]");
  ASSERT_TRUE(at_cap.ok());
  EXPECT_EQ(at_cap->size(), kMaxHostlistNames);
  EXPECT_EQ(at_cap->back(), "n100000");
  EXPECT_EQ(errorOf("n[1-100001]"), "hostlist 'n[1-100001]' expands to more than 100000 names");
  // Each would take far more memory than the test has if it were built before the check.
  EXPECT_NE(errorOf("n[0-999999999999999999]").find("more than 100000 names"), std::string::npos);
  EXPECT_NE(errorOf("a[1-1000]b[1-1000]c[1-1000]d[1-1000]e[1-1000]f[1-1000]g[1-1000]").find("more than"),
            std::string::npos);
  EXPECT_NE(errorOf("a[1-60000],b[1-60000]").find("more than 100000 names"), std::string::npos);
  EXPECT_NE(errorOf("n[0-999999999999999999,0-999999999999999999]").find("more than"), std::string::npos);
  // The limit is a parameter.
  EXPECT_EQ(expandHostlist("n[1-3]", 3)->size(), 3u);
  EXPECT_EQ(errorOf("n[1-3],m", 3), "hostlist 'n[1-3],m' expands to more than 3 names");
}

TEST(HostlistTest, LongBadListsAreShortenedInTheMessage) {
  const std::string list = std::string(5000, 'a') + "[3-1]";
  EXPECT_LT(errorOf(list).size(), 500u);
}

}  // namespace
}  // namespace kiln
