// GET /hosts for the console's hosts view (issue 18): the label, reason and id_prefix filters,
// sorting with keyset pages, and GET /hosts/counts for the header shortcuts.

#include <set>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

class HostsViewApiTest : public ApiTest {
 protected:
  // Every item of `path` page by page (`limit` each); fails the test on a non-200 page or a
  // cursor served twice.
  std::vector<json> walkItems(const std::string& path, int limit) {
    std::vector<json> items;
    std::string cursor;
    std::set<std::string> cursors;
    const char sep = path.find('?') == std::string::npos ? '?' : '&';
    for (int pages = 0; pages < 10000; ++pages) {
      std::string q = path + sep + "limit=" + std::to_string(limit);
      if (!cursor.empty()) q += "&cursor=" + http::urlEncode(cursor);
      Reply r = call(*admin_, "GET", q);
      if (r.status != 200) {
        ADD_FAILURE() << q << ": " << r.status << " " << r.body;
        break;
      }
      const json doc = r.doc();
      for (const auto& item : doc["items"]) items.push_back(item);
      if (doc["next_cursor"].is_null()) break;
      cursor = doc["next_cursor"].get<std::string>();
      if (!cursors.insert(cursor).second) {
        ADD_FAILURE() << "cursor served twice: " << cursor;
        break;
      }
    }
    return items;
  }
  std::vector<std::string> walk(const std::string& path, int limit) {
    std::vector<std::string> ids;
    for (const auto& i : walkItems(path, limit)) ids.push_back(i["id"].get<std::string>());
    return ids;
  }
  void act(const std::string& host, const std::string& action, const std::string& reason) {
    Reply r = call(*admin_, "POST", "/api/v1/hosts/" + host + "/actions",
                   json{{"action", action}, {"reason", reason}}.dump());
    ASSERT_EQ(r.status, 200) << host << " " << action << ": " << r.body;
  }
};

constexpr const char* kP1 = "t01-b01-p0001";
constexpr const char* kP2 = "t01-b01-p0002";

TEST_F(HostsViewApiTest, FiltersByPodLabelReasonInAnyCaseAndIdPrefix) {
  importFleet(smallFleet(4));  // p0001, p0003: row=a; p0002, p0004: row=b
  act(std::string(kP1) + "-h03", "fail", "XID 79 on GPU 2, ticket OPS-1");
  act(std::string(kP2) + "-h05", "fail", "xid 48 (double-bit ECC)");
  act("t01-b01-p0003-h01", "drain", "fw prep 100%");

  const auto row_a = walk("/api/v1/hosts?label=row%3Da", 7);
  ASSERT_EQ(row_a.size(), 2u * 18);
  for (const auto& h : row_a)
    EXPECT_TRUE(h.rfind("t01-b01-p0001-", 0) == 0 || h.rfind("t01-b01-p0003-", 0) == 0) << h;
  EXPECT_TRUE(walk("/api/v1/hosts?label=row%3Dz", 7).empty());

  // Contained in the reason, in any case; '%' is a plain character, not a wildcard.
  EXPECT_EQ(walk("/api/v1/hosts?reason=XID", 1),
            (std::vector<std::string>{std::string(kP1) + "-h03", std::string(kP2) + "-h05"}));
  EXPECT_EQ(walk("/api/v1/hosts?reason=double-BIT", 5), std::vector<std::string>{std::string(kP2) + "-h05"});
  EXPECT_EQ(walk("/api/v1/hosts?reason=%25", 5), std::vector<std::string>{"t01-b01-p0003-h01"});
  EXPECT_EQ(walk("/api/v1/hosts?reason=xid&label=row%3Db&state=failed", 5),
            std::vector<std::string>{std::string(kP2) + "-h05"});
  EXPECT_TRUE(walk("/api/v1/hosts?reason=xid&state=draining", 5).empty());

  // The start of the id, in any case; '_' is a plain character.
  const auto h0 = walk("/api/v1/hosts?id_prefix=T01-B01-P0002-H0", 4);
  ASSERT_EQ(h0.size(), 9u);
  EXPECT_EQ(h0.front(), std::string(kP2) + "-h01");
  EXPECT_EQ(h0.back(), std::string(kP2) + "-h09");
  EXPECT_EQ(walk("/api/v1/hosts?id_prefix=t01-b01-p0002-h1", 100).size(), 9u);
  EXPECT_EQ(walk("/api/v1/hosts?id_prefix=t01-b01-p000", 100).size(), 4u * 18);
  EXPECT_TRUE(walk("/api/v1/hosts?id_prefix=t01_b01", 100).empty());
  EXPECT_TRUE(walk("/api/v1/hosts?id_prefix=b01", 100).empty()) << "a prefix, not a substring";

  // Without the new parameters the answer is as before: id order, the cursor a host id.
  Reply first = call(*admin_, "GET", "/api/v1/hosts?limit=3");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.doc()["next_cursor"], std::string(kP1) + "-h03");
  EXPECT_EQ(first.doc()["items"][0]["id"], std::string(kP1) + "-h01");
}

TEST_F(HostsViewApiTest, BadFilterValuesAreRefusedWithAJsonError) {
  importFleet(smallFleet(1));
  EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/hosts?label=row"), 400, "invalid_argument"));
  EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/hosts?sort=name"), 422, "invalid_content"));
  EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/hosts?sort=--state"), 422, "invalid_content"));
  Reply bad_sort = call(*admin_, "GET", "/api/v1/hosts?sort=colour");
  ASSERT_EQ(bad_sort.status, 422);
  EXPECT_EQ(bad_sort.doc()["error"]["details"]["fields"][0]["path"], "sort") << bad_sort.body;
  EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/hosts?sort=state&cursor=t01-b01-p0001-h01"), 400,
                      "invalid_argument"));
  EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/hosts?sort=state&cursor=%5B1%2C2%5D"), 400, "invalid_argument"));
  EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/hosts?reasons=x"), 400, "invalid_argument"));
  EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/hosts/counts?state=failed"), 400, "invalid_argument"));
}

TEST_F(HostsViewApiTest, SortedPagesServeEveryHostOnceInTheOrderOfOnePage) {
  importFleet(smallFleet(3));  // 54 hosts
  // Different states, reasons and times.
  act(std::string(kP1) + "-h07", "fail", "b: link down");
  act(std::string(kP2) + "-h02", "drain", "a: firmware");
  act(std::string(kP2) + "-h11", "fail", "c: xid 79");
  act(std::string(kP2) + "-h11", "repair", "d: rma");
  const auto all = walk("/api/v1/hosts", 1000);
  ASSERT_EQ(all.size(), 54u);
  const std::set<std::string> everyone(all.begin(), all.end());

  for (const char* sort : {"id", "-id", "pod", "-pod", "state", "-state", "state_since", "-state_since", "reason",
                           "-reason"}) {
    const std::string base = std::string("/api/v1/hosts?sort=") + sort;
    const auto whole = walk(base, 1000);
    const auto paged = walk(base, 5);
    EXPECT_EQ(paged, whole) << sort << ": pages of 5 differ from one page";
    EXPECT_EQ(std::set<std::string>(paged.begin(), paged.end()), everyone) << sort;
    EXPECT_EQ(paged.size(), 54u) << sort;
  }
  // The orders themselves: the last changed host first by -state_since; states and pods grouped.
  const auto since = walkItems("/api/v1/hosts?sort=-state_since", 7);
  ASSERT_EQ(since.size(), 54u);
  EXPECT_EQ(since[0]["id"], std::string(kP2) + "-h11");
  EXPECT_EQ(since[1]["id"], std::string(kP2) + "-h02");
  EXPECT_EQ(since[2]["id"], std::string(kP1) + "-h07");
  for (std::size_t i = 1; i < since.size(); ++i)
    EXPECT_GE(since[i - 1]["state_since"].get<std::string>(), since[i]["state_since"].get<std::string>()) << i;
  const auto by_pod = walkItems("/api/v1/hosts?sort=-pod", 4);
  for (std::size_t i = 1; i < by_pod.size(); ++i)
    EXPECT_GE(by_pod[i - 1]["pod"].get<std::string>(), by_pod[i]["pod"].get<std::string>()) << i;
  EXPECT_EQ(by_pod.front()["id"], "t01-b01-p0003-h18");
  const auto by_state = walk("/api/v1/hosts?sort=state&state=failed", 1);
  EXPECT_EQ(by_state, std::vector<std::string>{std::string(kP1) + "-h07"});
  // Sort and filters together: the reasons that contain ':' (the four changed hosts), by reason.
  const auto reasons = walkItems("/api/v1/hosts?sort=-reason&reason=%3A", 1);
  ASSERT_EQ(reasons.size(), 3u) << "the repaired host's reason replaced its failure's";
  EXPECT_EQ(reasons[0]["state_reason"], "d: rma");
  EXPECT_EQ(reasons[1]["state_reason"], "b: link down");
  EXPECT_EQ(reasons[2]["state_reason"], "a: firmware");
}

TEST_F(HostsViewApiTest, CountsGiveEveryStateInOneAnswer) {
  importFleet(smallFleet(2));  // 36 hosts
  act(std::string(kP1) + "-h01", "fail", "x");
  act(std::string(kP1) + "-h02", "fail", "x");
  act(std::string(kP1) + "-h02", "repair", "x");
  act(std::string(kP2) + "-h03", "drain", "x");
  act(std::string(kP2) + "-h04", "quarantine", "lemon");
  Reply r = call(*client(createToken("viewer", "console")), "GET", "/api/v1/hosts/counts");
  ASSERT_EQ(r.status, 200) << r.body;
  const json doc = r.doc();
  EXPECT_EQ(doc["total"], 36);
  EXPECT_EQ(doc["out_of_service"], 4);
  const json& by = doc["by_state"];
  EXPECT_EQ(by.size(), 11u) << "every state, zeros included";
  EXPECT_EQ(by["failed"], 1);
  EXPECT_EQ(by["repair"], 1);
  EXPECT_EQ(by["draining"], 1);
  EXPECT_EQ(by["quarantine"], 1);
  EXPECT_EQ(by["available"], 32);
  EXPECT_EQ(by["retired"], 0);
  // As the list filtered by state says.
  for (const auto& [state, n] : by.items())
    EXPECT_EQ(walk("/api/v1/hosts?state=" + state, 1000).size(), n.get<std::size_t>()) << state;
}

}  // namespace
}  // namespace kiln::apitest
