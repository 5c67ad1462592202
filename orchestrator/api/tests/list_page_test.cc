// Paging over a whole list (orchestrator/api/list_page.h): every item exactly once, in key
// order, whatever the page size; bad cursors and limits refused.

#include "orchestrator/api/list_page.h"

#include <gtest/gtest.h>

namespace kiln::api {
namespace {

using nlohmann::json;

json byId(const json& item) { return json::array({item["id"]}); }

json answer(std::vector<std::string> ids) {
  json items = json::array();
  for (const auto& id : ids) items.push_back({{"id", id}});
  return {{"items", items}, {"next_cursor", nullptr}, {"total", ids.size()}};
}

std::vector<std::string> ids(const json& page) {
  std::vector<std::string> out;
  for (const auto& i : page["items"]) out.push_back(i["id"].get<std::string>());
  return out;
}

TEST(ListPageTest, PagesReturnEveryItemOnceInKeyOrder) {
  const json whole = answer({"c", "a", "e", "b", "d"});
  for (int limit = 1; limit <= 6; ++limit) {
    std::vector<std::string> seen;
    std::string cursor;
    for (int pages = 0;; ++pages) {
      ASSERT_LT(pages, 10) << "no last page with limit " << limit;
      auto p = pageList(whole, std::to_string(limit), cursor, byId);
      ASSERT_TRUE(p.ok()) << p.error();
      EXPECT_LE((*p)["items"].size(), static_cast<std::size_t>(limit));
      EXPECT_EQ((*p)["total"], 5) << "other top-level fields are kept";
      for (auto& id : ids(*p)) seen.push_back(id);
      if ((*p)["next_cursor"].is_null()) break;
      cursor = (*p)["next_cursor"].get<std::string>();
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c", "d", "e"})) << "limit " << limit;
  }
}

TEST(ListPageTest, NextCursorIsNullOnlyOnTheLastPage) {
  auto exact = pageList(answer({"a", "b"}), "2", "", byId);
  ASSERT_TRUE(exact.ok());
  EXPECT_TRUE((*exact)["next_cursor"].is_null()) << "two items, limit 2: nothing follows";
  auto cut = pageList(answer({"a", "b", "c"}), "2", "", byId);
  ASSERT_TRUE(cut.ok());
  EXPECT_TRUE((*cut)["next_cursor"].is_string());
}

TEST(ListPageTest, WithoutLimitTheDefaultApplies) {
  std::vector<std::string> many;
  for (int i = 0; i < 1500; ++i) many.push_back("h" + std::to_string(10000 + i));
  auto all = pageList(answer(many), "", "", byId);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)["items"].size(), 1500u) << "no default: the whole list, as clients read it today";
  EXPECT_TRUE((*all)["next_cursor"].is_null());
  auto capped = pageList(answer(many), "", "", byId, 1000);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ((*capped)["items"].size(), 1000u);
  EXPECT_TRUE((*capped)["next_cursor"].is_string());
}

TEST(ListPageTest, ACursorOutlivesItsItem) {
  auto first = pageList(answer({"a", "b", "c", "d"}), "2", "", byId);
  ASSERT_TRUE(first.ok());
  // "b", the page's last item, is gone before the next page is read.
  auto second = pageList(answer({"a", "c", "d"}), "2", (*first)["next_cursor"].get<std::string>(), byId);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(ids(*second), (std::vector<std::string>{"c", "d"}));
}

TEST(ListPageTest, CompositeKeysOrderNumbersAsNumbers) {
  // Newest first by a number, then by id: the key [-created, id].
  json whole = {{"items", {{{"id", "x"}, {"n", 9}}, {{"id", "y"}, {"n", 10}}, {{"id", "w"}, {"n", 10}}}}};
  auto key = [](const json& i) { return json::array({-i["n"].get<int>(), i["id"]}); };
  auto p = pageList(whole, "1", "", key);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(ids(*p), std::vector<std::string>{"w"});
  auto q = pageList(whole, "5", (*p)["next_cursor"].get<std::string>(), key);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(ids(*q), (std::vector<std::string>{"y", "x"}));
}

TEST(ListPageTest, BadCursorsAndLimitsAreInvalidArguments) {
  for (const char* bad : {"zz", "abc", "h-9", "6b313a", "6b313a7b7d", "00"}) {
    auto p = pageList(answer({"a"}), "", bad, byId);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.error().code, ErrorCode::kInvalidArgument) << bad;
  }
  for (const char* bad : {"0", "1001", "x"}) EXPECT_FALSE(pageList(answer({"a"}), bad, "", byId).ok()) << bad;
  EXPECT_EQ(*decodeCursor(encodeCursor(json::array({"a", 1}))), json::array({"a", 1}));
}

}  // namespace
}  // namespace kiln::api
