// Issue 18, the audit feed against a real kilnd: GET /api/v1/audit newest first with actor,
// action (exact or prefix), target and time filters across keyset pages, actor_name from the
// token (system actors name themselves), no secret in any record, 4xx for bad filters, the role
// it needs; GET /api/v1/actors for viewers (no agent tokens).

#include <chrono>
#include <ctime>
#include <set>
#include <thread>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

const std::string kSha(64, 'a');
const std::string kHost = "t01-b01-p0001-h01";

class AuditApiTest : public ApiTest {
 protected:
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", KILN_WORKFLOWS_DIR}; }

  void SetUp() override {
    ApiTest::SetUp();
    if (HasFatalFailure()) return;
    importFleet(smallFleet(2));
    op_secret_ = createToken("operator", "sre-alice", &op_id_);
    op_ = client(op_secret_);
    viewer_ = client(createToken("viewer", "wallboard", &viewer_id_));
  }

  // The operator drains a host and publishes a bundle; then starts and aborts a rollout of it,
  // which the rollout controller (actor "system") finishes.
  void someHistory() {
    Reply d = call(*op_, "POST", "/api/v1/hosts/" + kHost + "/actions", json{{"action", "drain"}, {"reason", "bad DIMM"}}.dump());
    ASSERT_EQ(d.status, 200) << d.body;
    json component = {{"kind", "driver"}, {"version", "580.65.06"}, {"artifact", "/opt/kiln/d.run"}, {"sha256", kSha}};
    json b = {{"name", "gb200-driver"}, {"version", "2026.12"}, {"platforms", json::array({"catalina", "clemente"})},
              {"components", json::array({component})}};
    Reply br = call(*op_, "POST", "/api/v1/bundles", b.dump());
    ASSERT_EQ(br.status, 201) << br.body;
    Reply ro = call(*op_, "POST", "/api/v1/rollouts",
                    json{{"bundle", br.doc()["id"]}, {"selector", {{"pods", {"t01-b01-p0002"}}}}, {"start", true}}.dump());
    ASSERT_EQ(ro.status, 201) << ro.body;
    rollout_ = ro.doc()["id"].get<std::string>();
    ASSERT_EQ(call(*op_, "POST", "/api/v1/rollouts/" + rollout_ + "/abort").status, 200);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (call(*admin_, "GET", "/api/v1/rollouts/" + rollout_).doc().value("state", "") != "aborted") {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the rollout did not finish aborting";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  json get(const std::string& query, http::Client* as = nullptr) {
    Reply r = call(as ? *as : *op_, "GET", "/api/v1/audit" + query);
    EXPECT_EQ(r.status, 200) << query << ": " << r.body;
    return r.doc();
  }

  // Every record of `query`, page by page with `limit`.
  std::vector<json> walk(const std::string& query, int limit) {
    std::vector<json> out;
    std::string cursor;
    for (int pages = 0; pages < 200; ++pages) {
      std::string url = query + (query.empty() ? "?" : "&") + "limit=" + std::to_string(limit);
      if (!cursor.empty()) url += "&cursor=" + cursor;
      const json doc = get(url);
      if (!doc.is_object()) return out;
      EXPECT_LE(doc["items"].size(), static_cast<std::size_t>(limit));
      for (const auto& i : doc["items"]) out.push_back(i);
      if (doc["next_cursor"].is_null()) return out;
      EXPECT_EQ(doc["items"].size(), static_cast<std::size_t>(limit)) << "a page before the last is full";
      cursor = doc["next_cursor"].get<std::string>();
    }
    ADD_FAILURE() << query << ": no last page";
    return out;
  }

  std::string op_secret_, op_id_, viewer_id_, rollout_;
  std::unique_ptr<http::Client> op_, viewer_;
};

std::vector<std::string> actions(const std::vector<json>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(i["action"].get<std::string>());
  return out;
}

TEST_F(AuditApiTest, NewestFirstWithActorNamesAndNoSecrets) {
  someHistory();
  Reply r = call(*op_, "GET", "/api/v1/audit");
  ASSERT_EQ(r.status, 200) << r.body;
  const json doc = r.doc();
  const std::vector<json> items(doc["items"].begin(), doc["items"].end());
  ASSERT_GE(items.size(), 8u);
  for (std::size_t i = 1; i < items.size(); ++i)
    EXPECT_GT(items[i - 1]["id"].get<std::int64_t>(), items[i]["id"].get<std::int64_t>()) << "newest first";
  std::map<std::string, json> first;  // action -> its newest record
  for (const auto& i : items) first.emplace(i["action"].get<std::string>(), i);
  for (const char* a : {"host.drain", "bundle.create", "rollout.create", "token.create", "fleet.import"})
    ASSERT_TRUE(first.count(a)) << a << " in " << r.body.substr(0, 3000);
  EXPECT_EQ(first["host.drain"]["actor"], op_id_);
  EXPECT_EQ(first["host.drain"]["actor_name"], "sre-alice");
  EXPECT_EQ(first["host.drain"]["target"], kHost);
  EXPECT_EQ(first["host.drain"]["details"]["reason"], "bad DIMM");
  // Tokens are made by the bootstrap admin, which kilnd itself made: each names itself.
  EXPECT_EQ(first["token.create"]["actor_name"], "bootstrap admin");
  EXPECT_NE(first["token.create"]["actor"], "bootstrap admin") << "actor stays the token id";
  bool kilnd_made_admin = false, controller = false;
  for (const auto& i : items) {
    if (i["action"] == "token.create" && i["actor"] == "kilnd") kilnd_made_admin = i["actor_name"] == "kilnd";
    if (i["actor"] == "system" && i["target"] == rollout_) controller = i["actor_name"] == "system";
  }
  EXPECT_TRUE(kilnd_made_admin) << "kilnd's own record keeps its name";
  EXPECT_TRUE(controller) << "the rollout controller's record is by system";
  // No secret: neither a created token's bearer string nor its secret part.
  const std::string secret = op_secret_.substr(op_secret_.rfind('_') + 1);
  ASSERT_GE(secret.size(), 32u);
  EXPECT_EQ(r.body.find(secret), std::string::npos);
  EXPECT_EQ(r.body.find("kiln_"), std::string::npos);
}

TEST_F(AuditApiTest, FiltersByActorActionPrefixTargetAndTime) {
  someHistory();
  auto only = [&](const std::string& q) {
    const json doc = get(q);
    return std::vector<json>(doc["items"].begin(), doc["items"].end());
  };
  const auto rollouts = only("?action=rollout.");
  ASSERT_GE(rollouts.size(), 3u) << "create, running, aborting, aborted";
  for (const auto& i : rollouts) EXPECT_EQ(i["action"].get<std::string>().rfind("rollout.", 0), 0u) << i.dump();
  EXPECT_EQ(actions(only("?action=rollout.create")), std::vector<std::string>{"rollout.create"}) << "exact without a dot";
  EXPECT_TRUE(only("?action=rollout").empty()) << "no trailing dot: exact, and no action is just 'rollout'";
  EXPECT_TRUE(only("?action=rollout_").empty()) << "LIKE wildcards are literal";

  const auto mine = only("?actor=" + op_id_);
  ASSERT_GE(mine.size(), 4u);
  std::set<std::string> mine_actions;
  for (const auto& i : mine) {
    EXPECT_EQ(i["actor"], op_id_);
    EXPECT_EQ(i["actor_name"], "sre-alice");
    mine_actions.insert(i["action"].get<std::string>());
  }
  EXPECT_TRUE(mine_actions.count("host.drain") && mine_actions.count("bundle.create") && mine_actions.count("rollout.create"));
  EXPECT_FALSE(mine_actions.count("token.create")) << "the admin created the tokens";

  const auto on_host = only("?target=" + kHost);
  ASSERT_FALSE(on_host.empty());
  for (const auto& i : on_host) EXPECT_EQ(i["target"], kHost);
  EXPECT_EQ(on_host.back()["action"], "host.drain") << "the oldest record on the host is the operator's drain";
  EXPECT_EQ(actions(only("?target=" + kHost + "&actor=" + viewer_id_)), std::vector<std::string>{}) << "filters combine";

  const std::time_t now = std::time(nullptr);
  EXPECT_EQ(only("?since=" + isoUtc(now - 3600)).size(), get("").at("items").size());
  EXPECT_TRUE(only("?since=" + isoUtc(now + 3600)).empty());
  EXPECT_TRUE(only("?until=" + isoUtc(now - 3600)).empty());
  EXPECT_EQ(actions(only("?action=host.drain&since=" + isoUtc(now - 3600) + "&until=" + isoUtc(now + 3600))),
            std::vector<std::string>{"host.drain"});
  EXPECT_EQ(actions(only("?action=host.drain&since=2020-01-01T00:00:00.250Z")), std::vector<std::string>{"host.drain"})
      << "fractions of a second are accepted";
  for (const auto& i : only("?action=host.")) EXPECT_EQ(i["action"].get<std::string>().rfind("host.", 0), 0u);
}

TEST_F(AuditApiTest, PagesThroughEveryRecordOnceWithFiltersHeld) {
  someHistory();
  for (int n = 0; n < 5; ++n) createToken("viewer", "extra-" + std::to_string(n));
  const json whole = get("?limit=1000");
  ASSERT_TRUE(whole["next_cursor"].is_null());
  const std::vector<json> expected(whole["items"].begin(), whole["items"].end());
  ASSERT_GE(expected.size(), 12u);
  for (int limit : {1, 3, 7}) EXPECT_EQ(walk("", limit), expected) << "limit " << limit;
  const json tokens = get("?action=token.&limit=1000");
  const std::vector<json> token_records(tokens["items"].begin(), tokens["items"].end());
  ASSERT_GE(token_records.size(), 8u);
  EXPECT_EQ(walk("?action=token.", 2), token_records) << "the filter holds across pages";
  const json first = get("?limit=2");
  ASSERT_TRUE(first["next_cursor"].is_string());
  EXPECT_EQ(get("").at("items").size(), std::min<std::size_t>(expected.size(), 100)) << "default limit 100";
}

TEST_F(AuditApiTest, BadFiltersAnswer4xx) {
  for (const char* q : {"?action=rollout%25", "?action=.rollout", "?action=a%20b"}) {
    Reply r = call(*op_, "GET", std::string("/api/v1/audit") + q);
    EXPECT_TRUE(isError(r, 422, "invalid_content")) << q << ": " << r.body;
    EXPECT_EQ(r.doc()["error"]["details"]["fields"][0]["path"], "action") << q;
  }
  Reply range = call(*op_, "GET", "/api/v1/audit?since=2026-12-02T10:00:00Z&until=2026-12-02T09:00:00Z");
  EXPECT_TRUE(isError(range, 422, "invalid_content")) << range.body;
  EXPECT_EQ(range.doc()["error"]["details"]["fields"][0]["path"], "until");
  Reply long_actor = call(*op_, "GET", "/api/v1/audit?actor=" + std::string(300, 'x'));
  EXPECT_TRUE(isError(long_actor, 422, "invalid_content")) << long_actor.body;
  for (const char* q : {"?since=yesterday", "?until=2026-13-45T10:00:00Z", "?since=2026-12-02T10:00:00+02:00",
                        "?cursor=zz", "?cursor=6b313a5b2278225d" /* k1:["x"] */, "?limit=0", "?limit=1001",
                        "?who=me"}) {
    EXPECT_TRUE(isError(call(*op_, "GET", std::string("/api/v1/audit") + q), 400, "invalid_argument")) << q;
  }
}

TEST_F(AuditApiTest, FeedNeedsOperatorAndActorsAreForViewers) {
  EXPECT_TRUE(isError(call(*viewer_, "GET", "/api/v1/audit"), 403, "permission_denied"));
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/audit").status, 200);
  EXPECT_EQ(call(*op_, "GET", "/api/v1/audit").status, 200);

  Reply agent = call(*admin_, "POST", "/api/v1/tokens", json{{"role", "agent"}, {"name", "agent h01"}, {"host", kHost}}.dump());
  ASSERT_EQ(agent.status, 201) << agent.body;
  const std::string agent_id = agent.doc()["id"].get<std::string>();
  ASSERT_EQ(call(*admin_, "DELETE", "/api/v1/tokens/" + viewer_id_ + "x").status, 404);
  std::string gone_id;
  createToken("operator", "left-the-team", &gone_id);
  ASSERT_EQ(call(*admin_, "DELETE", "/api/v1/tokens/" + gone_id).status, 200);

  Reply r = call(*viewer_, "GET", "/api/v1/actors");
  ASSERT_EQ(r.status, 200) << r.body;
  std::map<std::string, std::string> names;
  const json doc = r.doc();
  for (const auto& i : doc["items"]) {
    EXPECT_EQ(i.size(), 2u) << "id and name only: " << i.dump();
    names[i["id"].get<std::string>()] = i["name"].get<std::string>();
  }
  EXPECT_EQ(names[op_id_], "sre-alice");
  EXPECT_EQ(names[viewer_id_], "wallboard");
  EXPECT_EQ(names[gone_id], "left-the-team") << "revoked tokens keep their names";
  EXPECT_FALSE(names.count(agent_id)) << "agent tokens are not listed";
  EXPECT_EQ(r.body.find("kiln_"), std::string::npos);
  // Pages like the other lists.
  Reply p1 = call(*viewer_, "GET", "/api/v1/actors?limit=1");
  ASSERT_EQ(p1.status, 200);
  ASSERT_TRUE(p1.doc()["next_cursor"].is_string());
  Reply p2 = call(*viewer_, "GET", "/api/v1/actors?limit=1&cursor=" + p1.doc()["next_cursor"].get<std::string>());
  ASSERT_EQ(p2.status, 200);
  EXPECT_LT(p1.doc()["items"][0]["id"].get<std::string>(), p2.doc()["items"][0]["id"].get<std::string>());
}

}  // namespace
}  // namespace kiln::apitest
