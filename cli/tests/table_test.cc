#include "cli/table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kiln::cli {
namespace {

TEST(RenderTableTest, AlignsColumnsTwoSpacesApartWithoutTrailingSpaces) {
  const std::string t = renderTable({"ID", "STATE", "REASON"}, {{"prn-b01-p0001-h01", "available", ""},
                                                                {"h2", "quarantine", "fan replaced"}});
  EXPECT_EQ(t,
            "ID                 STATE       REASON\n"
            "prn-b01-p0001-h01  available   -\n"
            "h2                 quarantine  fan replaced\n");
}

TEST(RenderTableTest, PadsShortRowsAndCountsUtf8CodePoints) {
  const std::string t = renderTable({"A", "B"}, {{"é", "x"}, {"ab"}});
  EXPECT_EQ(t,
            "A   B\n"
            "é   x\n"
            "ab  -\n");
}

TEST(RenderTableTest, HeaderOnlyWhenNoRows) { EXPECT_EQ(renderTable({"ID", "STATE"}, {}), "ID  STATE\n"); }

TEST(RenderKeyValuesTest, AlignsValues) {
  EXPECT_EQ(renderKeyValues({{"id", "p1"}, {"platform", "clemente"}, {"labels", ""}}),
            "id:        p1\n"
            "platform:  clemente\n"
            "labels:    -\n");
}

TEST(CellTextTest, RendersEveryJsonKind) {
  using nlohmann::json;
  EXPECT_EQ(cellText(json("x y")), "x y");
  EXPECT_EQ(cellText(json()), "");
  EXPECT_EQ(cellText(json(72)), "72");
  EXPECT_EQ(cellText(json(true)), "true");
  EXPECT_EQ(cellText(json{{"failed", 2}, {"available", 16}}), "available=16 failed=2");
  EXPECT_EQ(cellText(json::array({"a", "b"})), "a,b");
  EXPECT_EQ(field(json{{"id", "h1"}}, "id"), "h1");
  EXPECT_EQ(field(json{{"id", "h1"}}, "missing"), "");
  EXPECT_EQ(field(json::array(), "id"), "");
}

}  // namespace
}  // namespace kiln::cli
