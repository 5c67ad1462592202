// Issue 19, the REST contract of lists and validation against a real kilnd: every list takes
// `limit` and `cursor` and a client paging through gets every item exactly once; enum-valued
// query parameters answer 422 with details.fields; a 422 lists every bad field; runs, rollouts
// and bundles carry ISO-8601 times beside their deprecated *_at_ms numbers.

#include <ctime>
#include <set>

#include <chrono>
#include <thread>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

const std::string kSha(64, 'a');

// The ISO-8601 form (milliseconds, UTC) of epoch milliseconds, as kilnd renders times.
std::string isoMillis(std::int64_t ms) {
  char buf[32];
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

// Every path a 422 lists in details.fields.
std::vector<std::string> fieldPaths(const Reply& r) {
  std::vector<std::string> out;
  const json doc = r.doc();
  if (!doc.is_object() || !doc.contains("error")) return out;
  for (const auto& f : doc["error"]["details"].value("fields", json::array())) out.push_back(f.value("path", "?"));
  return out;
}

json bundle(const std::string& version) {
  json component = {{"kind", "driver"},
                    {"version", "580.65." + version},
                    {"artifact", "/opt/kiln/drivers/NVIDIA-Linux-aarch64-580.65." + version + ".run"},
                    {"sha256", kSha}};
  return {{"name", "gb200-driver"},
          {"version", "2026." + version},
          {"platforms", json::array({"catalina"})},
          {"components", json::array({component})}};
}

class ListsApiTest : public ApiTest {
 protected:
  // The shipped workflows: a bundle is installed by firmware-upgrade, which must exist.
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", KILN_WORKFLOWS_DIR}; }

  void SetUp() override {
    ApiTest::SetUp();
    if (HasFatalFailure()) return;
    op_ = client(createToken("operator", "sre"));
  }

  // Three sites of one building with two catalina pods each, on an old driver.
  void threeSites() {
    json sites = json::array();
    for (const std::string s : {"s01", "s02", "s03"}) {
      json pods = json::array({json{{"name", s + "-b01-p0001"}, {"platform", "catalina"}},
                               json{{"name", s + "-b01-p0002"}, {"platform", "catalina"}}});
      sites.push_back({{"name", s}, {"buildings", json::array({json{{"name", s + "-b01"}, {"pods", pods}}})}});
    }
    importFleet({{"versions", {{"driver", "570.133.20"}}}, {"sites", sites}});
  }

  std::string window() const {
    const std::time_t now = std::time(nullptr);
    return "from=" + isoUtc(now - 30 * 86400) + "&to=" + isoUtc(now + 3600);
  }

  // Pages through `path` with `limit`, asserting that next_cursor is null only on the last page;
  // the items in the order they came.
  std::vector<json> walk(const std::string& path, int limit) {
    std::vector<json> out;
    std::string cursor;
    const char sep = path.find('?') == std::string::npos ? '?' : '&';
    for (int pages = 0; pages < 100; ++pages) {
      std::string url = path + sep + "limit=" + std::to_string(limit);
      if (!cursor.empty()) url += "&cursor=" + cursor;
      Reply r = call(*admin_, "GET", url);
      EXPECT_EQ(r.status, 200) << url << ": " << r.body;
      if (r.status != 200) return out;
      const json doc = r.doc();
      EXPECT_LE(doc["items"].size(), static_cast<std::size_t>(limit)) << url;
      for (const auto& i : doc["items"]) out.push_back(i);
      if (doc["next_cursor"].is_null()) return out;
      EXPECT_EQ(doc["items"].size(), static_cast<std::size_t>(limit)) << url << ": a page before the last is full";
      cursor = doc["next_cursor"].get<std::string>();
    }
    ADD_FAILURE() << path << ": no last page";
    return out;
  }

  std::unique_ptr<http::Client> op_;
};

TEST_F(ListsApiTest, InterruptionsPageThroughEveryItemOnce) {
  importFleet(smallFleet(1));
  const std::time_t now = std::time(nullptr);
  // Two at the same second: the keyset must not drop or repeat either at a page boundary.
  for (const auto& [id, at] : std::vector<std::pair<std::string, std::time_t>>{
           {"int-a", now - 7200}, {"int-b", now - 3600}, {"int-c", now - 3600}, {"int-d", now - 60}}) {
    json body = {{"id", id}, {"at", isoUtc(at)}, {"job", "train-7"}, {"pod", "t01-b01-p0001"}, {"cause", "hbm"}};
    Reply r = call(*op_, "POST", "/api/v1/interruptions", body.dump());
    ASSERT_EQ(r.status, 201) << r.body;
  }
  Reply whole = call(*admin_, "GET", "/api/v1/interruptions?" + window());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json doc = whole.doc();
  std::vector<std::string> expected;
  for (const auto& i : doc["items"]) expected.push_back(i["id"].get<std::string>());
  EXPECT_EQ(expected, (std::vector<std::string>{"int-d", "int-b", "int-c", "int-a"})) << "newest first, then by id";
  EXPECT_TRUE(doc["next_cursor"].is_null());
  for (int limit : {1, 2, 3, 4, 5}) {
    std::vector<std::string> seen;
    for (const auto& i : walk("/api/v1/interruptions?" + window(), limit)) seen.push_back(i["id"].get<std::string>());
    EXPECT_EQ(seen, expected) << "limit " << limit;
  }
  std::vector<std::string> hbm;
  for (const auto& i : walk("/api/v1/interruptions?" + window() + "&cause=hbm", 1)) hbm.push_back(i["id"].get<std::string>());
  EXPECT_EQ(hbm, expected) << "filters hold across pages";
  for (const char* bad : {"bogus", "123", ".int-a", "12x.int-a"})
    EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/interruptions?" + window() + "&cursor=" + bad), 400, "invalid_argument"))
        << bad;
}

TEST_F(ListsApiTest, EverySmallListPagesWithLimitAndCursor) {
  threeSites();
  createToken("viewer", "dashboard");
  createToken("viewer", "grafana");
  std::string bundle_id;
  for (const std::string v : {"11", "12", "13"}) {
    Reply b = call(*op_, "POST", "/api/v1/bundles", bundle(v).dump());
    ASSERT_EQ(b.status, 201) << b.body;
    bundle_id = b.doc()["id"].get<std::string>();
  }
  json body = {{"bundle", bundle_id},
               {"selector", {{"pods", {"s01-b01-p0001", "s01-b01-p0002", "s02-b01-p0001", "s03-b01-p0002"}}}},
               {"start", true}};
  Reply ro = call(*op_, "POST", "/api/v1/rollouts", body.dump());
  ASSERT_EQ(ro.status, 201) << ro.body;
  const std::string rollout = ro.doc()["id"].get<std::string>();
  Reply abort = call(*op_, "POST", "/api/v1/rollouts/" + rollout + "/abort");  // one more event
  ASSERT_EQ(abort.status, 200) << abort.body;
  // The controller finishes the abort (and writes its event) on its own: the lists must hold
  // still while they are read whole and then page by page.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (call(*admin_, "GET", "/api/v1/rollouts/" + rollout).doc().value("state", "") != "aborted") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the rollout did not finish aborting";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  for (const std::string& path : std::vector<std::string>{
           "/api/v1/sites", "/api/v1/tokens", "/api/v1/workflows", "/api/v1/quarantine", "/api/v1/bundles",
           "/api/v1/rollouts/" + rollout + "/pods", "/api/v1/rollouts/" + rollout + "/events"}) {
    Reply whole = call(*admin_, "GET", path);
    ASSERT_EQ(whole.status, 200) << path << ": " << whole.body;
    const json doc = whole.doc();
    EXPECT_TRUE(doc["next_cursor"].is_null()) << path << ": without limit the whole (small) list, as before";
    const std::vector<json> expected(doc["items"].begin(), doc["items"].end());
    if (path.find("quarantine") == std::string::npos) {
      EXPECT_GE(expected.size(), 2u) << path << ": the test needs several items to page";
    }
    for (int limit : {1, 2, 1000}) EXPECT_EQ(walk(path, limit), expected) << path << " limit " << limit;
    EXPECT_TRUE(isError(call(*admin_, "GET", path + "?cursor=not-a-cursor"), 400, "invalid_argument")) << path;
    EXPECT_TRUE(isError(call(*admin_, "GET", path + "?limit=0"), 400, "invalid_argument")) << path;
    EXPECT_TRUE(isError(call(*admin_, "GET", path + "?limit=1001"), 400, "invalid_argument")) << path;
  }
}

TEST_F(ListsApiTest, EnumQueryParametersAnswer422NamingTheParameter) {
  importFleet(smallFleet(1));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"/api/v1/workflow-runs?state=bogus", "state"},   {"/api/v1/workflow-runs?purpose=bogus", "purpose"},
      {"/api/v1/rollouts?state=bogus", "state"},        {"/api/v1/interruptions?cause=bogus", "cause"},
      {"/api/v1/hosts?state=sleeping", "state"},        {"/api/v1/pods?state=bogus", "state"},
      {"/api/v1/pods?platform=hopper", "platform"}};
  for (const auto& [path, param] : bad) {
    Reply r = call(*admin_, "GET", path);
    EXPECT_TRUE(isError(r, 422, "invalid_content")) << path << ": " << r.body;
    EXPECT_EQ(fieldPaths(r), std::vector<std::string>{param}) << path << ": " << r.body;
  }
  // What kilnd itself writes is accepted as a filter: runs a rollout starts carry purpose rollout.
  for (const char* ok : {"/api/v1/workflow-runs?purpose=rollout", "/api/v1/workflow-runs?purpose=quarantine",
                         "/api/v1/workflow-runs?state=cancelled", "/api/v1/rollouts?state=aborting",
                         "/api/v1/rollouts?state=completed", "/api/v1/interruptions?cause=host_maintenance",
                         "/api/v1/hosts?state=repair", "/api/v1/pods?state=down"})
    EXPECT_EQ(call(*admin_, "GET", ok).status, 200) << ok;
}

TEST_F(ListsApiTest, A422ListsEveryBadField) {
  importFleet(smallFleet(1));
  const std::string host = "t01-b01-p0001-h01";
  Reply run = call(*op_, "POST", "/api/v1/workflow-runs", R"({"hostz": [], "hosts": [1], "pods": "p", "purpose": 3})");
  ASSERT_TRUE(isError(run, 422, "invalid_content")) << run.body;
  EXPECT_EQ(fieldPaths(run), (std::vector<std::string>{"hostz", "workflow", "hosts", "pods", "purpose"})) << run.body;
  EXPECT_FALSE(run.doc()["error"]["details"].contains("field")) << "the alias only names a lone bad field";
  Reply one = call(*op_, "POST", "/api/v1/workflow-runs", R"({"workflow": "two-steps", "hosts": [1]})");
  ASSERT_TRUE(isError(one, 422, "invalid_content")) << one.body;
  EXPECT_EQ(one.doc()["error"]["details"]["field"], "hosts") << "details.field stays as a deprecated alias";
  Reply not_object = call(*op_, "POST", "/api/v1/workflow-runs", "[1]");
  ASSERT_TRUE(isError(not_object, 422, "invalid_content")) << not_object.body;
  EXPECT_EQ(fieldPaths(not_object), std::vector<std::string>{""}) << "the whole body";

  auto enroller = client(createToken("enroll", "enrolment"));
  Reply reg = call(*enroller, "POST", "/api/v1/agents/register", R"({"hostname": "x", "boot_id": 5, "inventory": [1]})");
  ASSERT_TRUE(isError(reg, 422, "invalid_content")) << reg.body;
  EXPECT_EQ(fieldPaths(reg), (std::vector<std::string>{"hostname", "host", "boot_id", "inventory"})) << reg.body;
  Reply unknown = call(*enroller, "POST", "/api/v1/agents/register", json{{"host", host}, {"colour", "blue"}}.dump());
  ASSERT_TRUE(isError(unknown, 422, "invalid_content")) << unknown.body;
  EXPECT_EQ(fieldPaths(unknown), std::vector<std::string>{"colour"});
  EXPECT_EQ(unknown.doc()["error"]["details"]["field"], "colour");
  Reply enrolled = call(*enroller, "POST", "/api/v1/agents/register", json{{"host", host}, {"boot_id", "b1"}}.dump());
  ASSERT_EQ(enrolled.status, 200) << enrolled.body;

  auto agent = client(enrolled.doc()["token"].get<std::string>());
  Reply report = call(*agent, "POST", "/api/v1/assignments/a-1/result", R"({"lease": "1", "exit_code": "0", "signal": 300})");
  ASSERT_TRUE(isError(report, 422, "invalid_content")) << report.body;
  EXPECT_EQ(fieldPaths(report), (std::vector<std::string>{"lease", "exit_code", "signal"})) << report.body;

  // A 422 made without field errors still names what is wrong (here the query parameter).
  Reply plan = call(*admin_, "GET", "/api/v1/capacity/plan?active_gpus=0");
  ASSERT_TRUE(isError(plan, 422, "invalid_content")) << plan.body;
  EXPECT_EQ(fieldPaths(plan).size(), 1u) << plan.body;
}

TEST_F(ListsApiTest, RunsRolloutsAndBundlesCarryIsoTimesBesideMilliseconds) {
  threeSites();
  Reply put = call(*admin_, "PUT", "/api/v1/workflows/two-steps", kTwoStepsWorkflow, "application/yaml");
  ASSERT_TRUE(put.status == 200 || put.status == 201) << put.body;
  Reply started = call(*op_, "POST", "/api/v1/workflow-runs",
                       json{{"workflow", "two-steps"}, {"hosts", {"s01-b01-p0001-h01"}}}.dump());
  ASSERT_EQ(started.status, 201) << started.body;
  const std::string run = started.doc()["id"].get<std::string>();
  Reply b = call(*op_, "POST", "/api/v1/bundles", bundle("11").dump());
  ASSERT_EQ(b.status, 201) << b.body;
  const std::string bundle_id = b.doc()["id"].get<std::string>();
  Reply ro = call(*op_, "POST", "/api/v1/rollouts",
                  json{{"bundle", bundle_id}, {"selector", {{"pods", {"s02-b01-p0001"}}}}, {"start", true}}.dump());
  ASSERT_EQ(ro.status, 201) << ro.body;
  const std::string rollout = ro.doc()["id"].get<std::string>();

  // Each time field: both forms, the same instant (or both null).
  auto same = [](const json& j, const std::string& name, const std::string& where) {
    ASSERT_TRUE(j.contains(name) && j.contains(name + "_ms")) << where << ": " << name << " in " << j.dump();
    if (j[name + "_ms"].is_null()) {
      EXPECT_TRUE(j[name].is_null()) << where << ": " << name;
      return;
    }
    EXPECT_EQ(j[name], isoMillis(j[name + "_ms"].get<std::int64_t>())) << where << ": " << name;
  };
  const json runs = call(*admin_, "GET", "/api/v1/workflow-runs").doc();
  ASSERT_FALSE(runs["items"].empty());
  for (const char* f : {"created_at", "finished_at"}) same(runs["items"][0], f, "run list");
  const json run_view = call(*admin_, "GET", "/api/v1/workflow-runs/" + run).doc();
  for (const char* f : {"created_at", "finished_at"}) same(run_view, f, "run");
  EXPECT_TRUE(run_view["created_at"].is_string());
  ASSERT_FALSE(run_view["hosts"].empty());
  same(run_view["hosts"][0], "waiting_until", "run host");

  const json bundles = call(*admin_, "GET", "/api/v1/bundles").doc();
  same(bundles["items"][0], "created_at", "bundle list");
  same(call(*admin_, "GET", "/api/v1/bundles/" + bundle_id).doc(), "created_at", "bundle");

  const json rollouts = call(*admin_, "GET", "/api/v1/rollouts").doc();
  for (const char* f : {"created_at", "started_at", "finished_at"}) same(rollouts["items"][0], f, "rollout list");
  const json view = call(*admin_, "GET", "/api/v1/rollouts/" + rollout).doc();
  for (const char* f : {"created_at", "started_at", "finished_at"}) same(view, f, "rollout");
  EXPECT_TRUE(view["started_at"].is_string()) << "started with the create";
  const json pods = call(*admin_, "GET", "/api/v1/rollouts/" + rollout + "/pods").doc();
  ASSERT_FALSE(pods["items"].empty());
  for (const char* f : {"started_at", "finished_at"}) same(pods["items"][0], f, "rollout pod");
  const json events = call(*admin_, "GET", "/api/v1/rollouts/" + rollout + "/events").doc();
  ASSERT_FALSE(events["items"].empty());
  same(events["items"][0], "at", "rollout event");
}

}  // namespace
}  // namespace kiln::apitest
