// HTTP features scripts and browsers rely on beyond the routes themselves: HEAD and OPTIONS on
// every route, gzip for large answers, ETag/If-Match on what operators edit, and
// Idempotency-Key on creates (issue 19).

#include "orchestrator/api/compress.h"
#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

class ProtocolTest : public ApiTest {
 protected:
  std::string bearer() const { return "Authorization: Bearer " + kilnd_->adminToken() + "\r\n"; }
};

TEST_F(ProtocolTest, HeadAnswersTheGetHeadWithoutABody) {
  importFleet(smallFleet(3));
  Reply get = call(*admin_, "GET", "/api/v1/pods");
  ASSERT_EQ(get.status, 200);
  Reply head = rawCall(kilnd_->port(), "HEAD /api/v1/pods HTTP/1.1\r\nHost: x\r\n" + bearer() + "Connection: close\r\n\r\n");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty()) << head.body;
  EXPECT_EQ(head.headers["content-length"], std::to_string(get.body.size()));
  EXPECT_EQ(head.content_type, "application/json");
  // Authenticated like the GET, and a HEAD of an unknown record is the GET's 404.
  Reply anonymous = rawCall(kilnd_->port(), "HEAD /api/v1/pods HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_TRUE(anonymous.body.empty());
  Reply missing = rawCall(kilnd_->port(), "HEAD /api/v1/pods/nope HTTP/1.1\r\nHost: x\r\n" + bearer() + "Connection: close\r\n\r\n");
  EXPECT_EQ(missing.status, 404);
  // HEAD where there is no GET is a 405 that lists what the path allows.
  Reply post_only = rawCall(kilnd_->port(), "HEAD /api/v1/fleet/import HTTP/1.1\r\nHost: x\r\n" + bearer() + "Connection: close\r\n\r\n");
  EXPECT_EQ(post_only.status, 405);
  EXPECT_EQ(post_only.headers["allow"], "POST, OPTIONS");
}

TEST_F(ProtocolTest, OptionsListsTheMethodsOfThePath) {
  importFleet(smallFleet(1));
  Reply r = call(*admin_, "OPTIONS", "/api/v1/workflows/l11-burn-in");
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.headers["allow"], "GET, PUT, HEAD, OPTIONS");
  EXPECT_TRUE(r.body.empty());
  Reply tokens = call(*admin_, "OPTIONS", "/api/v1/tokens");
  EXPECT_EQ(tokens.headers["allow"], "POST, GET, HEAD, OPTIONS");  // in the order of the routes
  // Needs a token like the path's routes; /healthz does not.
  Reply anonymous = rawCall(kilnd_->port(), "OPTIONS /api/v1/tokens HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(isError(anonymous, 401, "unauthenticated"));
  Reply health = rawCall(kilnd_->port(), "OPTIONS /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(health.status, 204);
  EXPECT_EQ(health.headers["allow"], "GET, HEAD, OPTIONS");
  EXPECT_TRUE(isError(call(*admin_, "OPTIONS", "/api/v1/no-such-thing"), 404, "not_found"));
  // A 405 says HEAD and OPTIONS too.
  Reply wrong = call(*admin_, "DELETE", "/api/v1/pods");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.headers["allow"], "GET, HEAD, OPTIONS");
}

TEST_F(ProtocolTest, LargeAnswersAreGzippedForClientsThatAskAndOnlyThen) {
  importFleet(smallFleet(4));  // 4 pods, 72 hosts: a hosts page of ~20 KB
  Reply plain = call(*admin_, "GET", "/api/v1/hosts?limit=1000");
  ASSERT_EQ(plain.status, 200);
  ASSERT_GT(plain.body.size(), 10000u);
  EXPECT_EQ(plain.headers.count("content-encoding"), 0u);
  EXPECT_EQ(plain.headers["vary"], "Accept-Encoding");
  const std::string ask = "GET /api/v1/hosts?limit=1000 HTTP/1.1\r\nHost: x\r\n" + bearer() +
                          "Accept-Encoding: br, gzip;q=0.8\r\nConnection: close\r\n\r\n";
  Reply packed = rawCall(kilnd_->port(), ask);
  ASSERT_EQ(packed.status, 200);
  EXPECT_EQ(packed.headers["content-encoding"], "gzip");
  EXPECT_LT(packed.body.size() * 4, plain.body.size());
  auto body = api::gunzip(packed.body);
  ASSERT_TRUE(body.has_value());
  EXPECT_EQ(json::parse(*body), plain.doc());
  // q=0 refuses gzip; small answers and errors are never compressed.
  Reply refused = rawCall(kilnd_->port(), "GET /api/v1/hosts?limit=1000 HTTP/1.1\r\nHost: x\r\n" + bearer() +
                                              "Accept-Encoding: gzip;q=0\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(refused.headers.count("content-encoding"), 0u);
  EXPECT_EQ(refused.body, plain.body);
  Reply small = rawCall(kilnd_->port(), "GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\n" + bearer() +
                                            "Accept-Encoding: gzip\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(small.status, 200);
  EXPECT_EQ(small.headers.count("content-encoding"), 0u);
  EXPECT_TRUE(small.doc().is_object());
}

// Writes against the shipped workflows (a rollout's bundle needs firmware-upgrade).
class WritesTest : public ProtocolTest {
 protected:
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", KILN_WORKFLOWS_DIR}; }
};

json driverBundle(const std::string& driver = "580.65.06") {
  return {{"name", "gb200-driver"},
          {"version", "2026.12"},
          {"platforms", json::array({"catalina"})},
          {"components", json::array({json{{"kind", "driver"},
                                           {"version", driver},
                                           {"artifact", "/opt/kiln/drivers/NVIDIA-Linux-aarch64-" + driver + ".run"},
                                           {"sha256", std::string(64, 'b')}}})}};
}

TEST_F(WritesTest, WorkflowEtagGuardsAgainstALostUpdate) {
  Reply got = call(*admin_, "GET", "/api/v1/workflows/pre-job-health");
  ASSERT_EQ(got.status, 200);
  const std::string etag = got.headers["etag"];
  EXPECT_EQ(etag, "\"" + got.doc()["hash"].get<std::string>() + "\"");
  std::string yaml = got.doc()["yaml"].get<std::string>();
  const std::string marker = "description: Fast host health gate";
  ASSERT_NE(yaml.find(marker), std::string::npos);
  const std::string mine = std::string(yaml).replace(yaml.find(marker), marker.size(), "description: Mine - fast host health gate");
  const std::string theirs = std::string(yaml).replace(yaml.find(marker), marker.size(), "description: Theirs - fast host health gate");
  const auto put = [&](const std::string& body, const std::string& if_match) {
    std::map<std::string, std::string> h;
    if (!if_match.empty()) h["If-Match"] = if_match;
    return call(*admin_, "PUT", "/api/v1/workflows/pre-job-health", body, "application/yaml", h);
  };
  // Two operators read the same version; the first write wins, the second is told (412).
  Reply first = put(mine, etag);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_NE(first.headers["etag"], etag);
  EXPECT_EQ(first.headers["etag"], "\"" + first.doc()["hash"].get<std::string>() + "\"");
  Reply second = put(theirs, etag);
  EXPECT_TRUE(isError(second, 412, "precondition_failed"));
  EXPECT_EQ(second.doc()["error"]["details"]["etag"], first.headers["etag"]);
  Reply now = call(*admin_, "GET", "/api/v1/workflows/pre-job-health");
  EXPECT_NE(now.doc()["yaml"].get<std::string>().find("Mine - fast"), std::string::npos) << "the stale write changed it";
  // With the new ETag (or *, or none: the old behaviour) it goes through.
  EXPECT_EQ(put(theirs, first.headers["etag"] + ", \"other\"").status, 200);
  EXPECT_EQ(put(mine, "*").status, 200);
  EXPECT_EQ(put(theirs, "").status, 200);
  // * on a workflow that does not exist, and malformed tags.
  Reply absent = call(*admin_, "PUT", "/api/v1/workflows/brand-new",
                      std::string(theirs).replace(theirs.find("name: pre-job-health"), 20, "name: brand-new"),
                      "application/yaml", {{"If-Match", "*"}});
  EXPECT_TRUE(isError(absent, 412, "precondition_failed")) << absent.body;
  EXPECT_TRUE(isError(put(mine, "no-quotes"), 400, "invalid_argument"));
  EXPECT_TRUE(isError(put(mine, "W/" + etag), 400, "invalid_argument"));
}

TEST_F(WritesTest, BundleEtagGuardsItsUpdates) {
  Reply created = call(*admin_, "POST", "/api/v1/bundles", driverBundle().dump());
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string etag = created.headers["etag"];
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(created.doc()["etag"], etag);
  Reply got = call(*admin_, "GET", "/api/v1/bundles/gb200-driver@2026.12");
  EXPECT_EQ(got.headers["etag"], etag);
  // Republishing changed content over a stale ETag is refused and changes nothing.
  Reply updated = call(*admin_, "POST", "/api/v1/bundles", driverBundle("580.65.07").dump(), "application/json",
                       {{"If-Match", etag}});
  ASSERT_EQ(updated.status, 200) << updated.body;
  EXPECT_EQ(updated.doc()["outcome"], "updated");
  EXPECT_NE(updated.headers["etag"], etag);
  Reply stale = call(*admin_, "POST", "/api/v1/bundles", driverBundle("580.65.08").dump(), "application/json",
                     {{"If-Match", etag}});
  EXPECT_TRUE(isError(stale, 412, "precondition_failed"));
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/bundles/gb200-driver@2026.12").doc()["components"][0]["version"], "580.65.07");
  // If-Match on a bundle that does not exist yet is a 412, not a create.
  json other = driverBundle();
  other["version"] = "2027.01";
  EXPECT_TRUE(isError(call(*admin_, "POST", "/api/v1/bundles", other.dump(), "application/json", {{"If-Match", "*"}}),
                      412, "precondition_failed"));
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/bundles/gb200-driver@2027.01").status, 404);
}

TEST_F(WritesTest, ARetriedCreateWithTheSameIdempotencyKeyMakesOneRollout) {
  importFleet(smallFleet(3));  // p0001 and p0003 are catalina, on driver 570.133.20
  ASSERT_EQ(call(*admin_, "POST", "/api/v1/bundles", driverBundle().dump()).status, 201);
  const std::string body =
      json{{"bundle", "gb200-driver@2026.12"}, {"selector", {{"pods", {"t01-b01-p0001", "t01-b01-p0003"}}}}}.dump();
  const std::map<std::string, std::string> key = {{"Idempotency-Key", "0b6f1e9c-5d2a-4c1e-9a51-rollout-1"}};
  Reply first = call(*admin_, "POST", "/api/v1/rollouts", body, "application/json", key);
  ASSERT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(first.headers.count("idempotent-replayed"), 0u);
  // The answer was lost; the script sends the same request again, possibly to another replica.
  Reply retry = call(*admin_, "POST", "/api/v1/rollouts", body, "application/json", key);
  EXPECT_EQ(retry.status, 200) << retry.body;
  EXPECT_EQ(retry.headers["idempotent-replayed"], "true");
  EXPECT_EQ(retry.doc()["id"], first.doc()["id"]);
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/rollouts").doc()["items"].size(), 1u);
  // The same key with another request is a client bug: 422 naming the header, nothing made.
  const std::string other =
      json{{"bundle", "gb200-driver@2026.12"}, {"selector", {{"pods", {"t01-b01-p0001"}}}}, {"start", true}}.dump();
  Reply reuse = call(*admin_, "POST", "/api/v1/rollouts", other, "application/json", key);
  EXPECT_TRUE(isError(reuse, 422, "invalid_content"));
  EXPECT_EQ(reuse.doc()["error"]["details"]["fields"][0]["path"], "Idempotency-Key") << reuse.body;
  // Without a key the same retry is a second create, which the pods' lock refuses (409): the
  // key is what makes the retry answer the first rollout.
  EXPECT_TRUE(isError(call(*admin_, "POST", "/api/v1/rollouts", body), 409, "conflict"));
  EXPECT_TRUE(isError(call(*admin_, "POST", "/api/v1/rollouts", body, "application/json",
                           {{"Idempotency-Key", std::string(201, 'k')}}),
                      400, "invalid_argument"));
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/rollouts").doc()["items"].size(), 1u);
}

TEST_F(WritesTest, ARetryThroughAnotherReplicaAnswersTheSameRollout) {
  importFleet(smallFleet(1));
  ASSERT_EQ(call(*admin_, "POST", "/api/v1/bundles", driverBundle().dump()).status, 201);
  // A second kilnd on the same database, as behind a balancer.
  testing::KilndProcess other(testing::KilndOptions{.database_url = db_->url(),
                                                    .extra_args = extraKilndArgs(),
                                                    .admin_token_file = kilnd_->adminTokenFile()});
  auto started = other.start();
  ASSERT_TRUE(started.ok()) << started.error().message;
  http::Client via_other(http::ClientOptions{.base_url = other.url(), .token = kilnd_->adminToken()});
  const std::string body = json{{"bundle", "gb200-driver@2026.12"}, {"selector", {{"pods", {"t01-b01-p0001"}}}}}.dump();
  const std::map<std::string, std::string> key = {{"Idempotency-Key", "replica-retry-1"}};
  Reply first = call(*admin_, "POST", "/api/v1/rollouts", body, "application/json", key);
  ASSERT_EQ(first.status, 201) << first.body;
  Reply retry = call(via_other, "POST", "/api/v1/rollouts", body, "application/json", key);
  EXPECT_EQ(retry.status, 200) << retry.body;
  EXPECT_EQ(retry.headers["idempotent-replayed"], "true");
  EXPECT_EQ(retry.doc()["id"], first.doc()["id"]);
  EXPECT_EQ(call(via_other, "GET", "/api/v1/rollouts").doc()["items"].size(), 1u);
}

TEST_F(WritesTest, ARetriedRunStartWithTheSameIdempotencyKeyMakesOneRun) {
  importFleet(smallFleet(1));
  const std::string body = json{{"workflow", "pre-job-health"}, {"hosts", {"t01-b01-p0001-h01"}}}.dump();
  const std::map<std::string, std::string> key = {{"Idempotency-Key", "run-key-1"}};
  Reply first = call(*admin_, "POST", "/api/v1/workflow-runs", body, "application/json", key);
  ASSERT_EQ(first.status, 201) << first.body;
  Reply retry = call(*admin_, "POST", "/api/v1/workflow-runs", body, "application/json", key);
  EXPECT_EQ(retry.status, 200) << retry.body;
  EXPECT_EQ(retry.headers["idempotent-replayed"], "true");
  EXPECT_EQ(retry.doc()["id"], first.doc()["id"]);
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/workflow-runs").doc()["items"].size(), 1u);
  // A key is scoped to what it created: the rollout route does not replay a run.
  Reply cross = call(*admin_, "POST", "/api/v1/rollouts", json{{"bundle", "x"}}.dump(), "application/json", key);
  EXPECT_TRUE(isError(cross, 422, "invalid_content")) << cross.body;
}

}  // namespace
}  // namespace kiln::apitest
