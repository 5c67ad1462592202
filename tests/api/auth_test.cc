// Authentication and roles over HTTP, and the token lifecycle.

#include <set>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

class AuthTest : public ApiTest {};

TEST_F(AuthTest, RequestsWithoutAValidTokenGet401WithTheErrorBody) {
  const std::string path = "/api/v1/pods";
  auto none = client("");
  Reply r = call(*none, "GET", path);
  EXPECT_TRUE(isError(r, 401, "unauthenticated"));
  EXPECT_EQ(r.headers["www-authenticate"], "Bearer");

  // Not "Bearer <token>" at all.
  auto raw = rawCall(kilnd_->port(), "GET " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Basic dXNlcjpwdw==\r\n"
                                     "Connection: close\r\n\r\n");
  EXPECT_TRUE(isError(raw, 401, "unauthenticated"));

  for (const std::string& bad :
       std::vector<std::string>{"garbage", "kiln_", "kiln_zz_zz", "kiln_0123456789ab_" + std::string(48, '0')}) {
    auto c = client(bad);
    EXPECT_TRUE(isError(call(*c, "GET", path), 401, "unauthenticated")) << "token " << bad;
  }
  // A well-formed token of a real id with the wrong secret.
  std::string id;
  const std::string good = createToken("viewer", "v", &id);
  auto wrong = client("kiln_" + id + "_" + std::string(48, 'a'));
  EXPECT_TRUE(isError(call(*wrong, "GET", path), 401, "unauthenticated"));
  auto right = client(good);
  EXPECT_EQ(call(*right, "GET", path).status, 200);
}

TEST_F(AuthTest, RevokedTokenStopsWorkingAtOnceThroughTheSameKilnd) {
  std::string id;
  const std::string secret = createToken("operator", "ci", &id);
  auto c = client(secret);
  ASSERT_EQ(call(*c, "GET", "/api/v1/pods").status, 200);  // now cached in kilnd

  Reply revoked = call(*admin_, "DELETE", "/api/v1/tokens/" + id);
  ASSERT_EQ(revoked.status, 200) << revoked.body;
  EXPECT_EQ(revoked.doc()["revoked"], true);

  EXPECT_TRUE(isError(call(*c, "GET", "/api/v1/pods"), 401, "unauthenticated"));
  // Revoking twice is a conflict or a no-op, never a 5xx; an unknown id is 404.
  EXPECT_LT(call(*admin_, "DELETE", "/api/v1/tokens/" + id).status, 500);
  EXPECT_TRUE(isError(call(*admin_, "DELETE", "/api/v1/tokens/000000000000"), 404, "not_found"));
}

TEST_F(AuthTest, ViewerReadsButCannotActOrImport) {
  importFleet(smallFleet(1));
  auto viewer = client(createToken("viewer", "dashboard"));
  EXPECT_EQ(call(*viewer, "GET", "/api/v1/hosts").status, 200);
  EXPECT_EQ(call(*viewer, "GET", "/api/v1/hosts/t01-b01-p0001-h01").status, 200);
  EXPECT_TRUE(isError(call(*viewer, "POST", "/api/v1/hosts/t01-b01-p0001-h01/actions",
                           R"({"action":"drain","reason":"x"})"),
                      403, "permission_denied"));
  EXPECT_TRUE(isError(call(*viewer, "POST", "/api/v1/fleet/import", smallFleet(2).dump()), 403,
                      "permission_denied"));
  EXPECT_TRUE(isError(call(*viewer, "GET", "/api/v1/tokens"), 403, "permission_denied"));
  // Nothing changed.
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/hosts/t01-b01-p0001-h01").doc()["state"], "available");
  EXPECT_EQ(db_->query("SELECT count(*) FROM pods"), "1");
}

TEST_F(AuthTest, OperatorActsOnHostsButCannotCreateTokensOrImport) {
  importFleet(smallFleet(1));
  auto op = client(createToken("operator", "sre"));
  Reply drained = call(*op, "POST", "/api/v1/hosts/t01-b01-p0001-h01/actions", R"({"action":"drain","reason":"x"})");
  EXPECT_EQ(drained.status, 200) << drained.body;
  EXPECT_TRUE(isError(call(*op, "POST", "/api/v1/tokens", R"({"role":"admin","name":"escalate"})"), 403,
                      "permission_denied"));
  EXPECT_TRUE(isError(call(*op, "GET", "/api/v1/tokens"), 403, "permission_denied"));
  EXPECT_TRUE(isError(call(*op, "POST", "/api/v1/fleet/import", smallFleet(2).dump()), 403, "permission_denied"));
  EXPECT_EQ(db_->query("SELECT count(*) FROM pods"), "1");
  EXPECT_EQ(db_->query("SELECT count(*) FROM tokens WHERE role = 'admin'"), "1");
}

TEST_F(AuthTest, AdminCreatesTokensAndImports) {
  EXPECT_EQ(call(*admin_, "POST", "/api/v1/fleet/import", smallFleet(1).dump()).status, 201);
  auto admin2 = client(createToken("admin", "second admin"));
  EXPECT_EQ(call(*admin2, "GET", "/api/v1/tokens").status, 200);
  EXPECT_EQ(call(*admin2, "POST", "/api/v1/fleet/import", smallFleet(2).dump()).status, 201);
}

TEST_F(AuthTest, OverrideNeedsAdminAndAReason) {
  importFleet(smallFleet(1));
  const std::string host = "/api/v1/hosts/t01-b01-p0001-h02/actions";
  auto op = client(createToken("operator", "sre"));
  EXPECT_TRUE(isError(call(*op, "POST", host, R"({"action":"override","to":"failed","reason":"bad tray"})"), 403,
                      "permission_denied"));
  Reply no_reason = call(*admin_, "POST", host, R"({"action":"override","to":"failed"})");
  ASSERT_TRUE(isError(no_reason, 422, "invalid_content"));
  bool reason_flagged = false;
  const json f_list = no_reason.doc()["error"]["details"]["fields"];
  for (const auto& f : f_list) reason_flagged |= f["path"] == "reason";
  EXPECT_TRUE(reason_flagged) << no_reason.body;
  EXPECT_EQ(call(*admin_, "GET", "/api/v1/hosts/t01-b01-p0001-h02").doc()["state"], "available");

  Reply ok = call(*admin_, "POST", host, R"({"action":"override","to":"failed","reason":"bad tray"})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.doc()["state"], "failed");
}

TEST_F(AuthTest, HealthzNeedsNoTokenAndMetricsNeedsOne) {
  auto none = client("");
  EXPECT_EQ(call(*none, "GET", "/healthz").status, 200);
  EXPECT_EQ(call(*none, "GET", "/api/v1/healthz").status, 200);
  EXPECT_TRUE(isError(call(*none, "GET", "/metrics"), 401, "unauthenticated"));
  EXPECT_TRUE(isError(call(*none, "GET", "/api/v1/metrics"), 401, "unauthenticated"));
  auto viewer = client(createToken("viewer", "prometheus"));
  EXPECT_EQ(call(*viewer, "GET", "/metrics").status, 200);
}

TEST_F(AuthTest, TokensAreListedWithoutSecrets) {
  EXPECT_TRUE(isError(call(*admin_, "POST", "/api/v1/tokens", R"({"role":"agent","name":"no host"})"), 422,
                      "invalid_content"));  // an agent token needs a host
  importFleet(smallFleet(1));
  std::string id;
  Reply agent = call(*admin_, "POST", "/api/v1/tokens",
                     json{{"role", "agent"}, {"name", "agent h01"}, {"host", "t01-b01-p0001-h01"}}.dump());
  ASSERT_EQ(agent.status, 201) << agent.body;
  EXPECT_EQ(agent.doc()["host"], "t01-b01-p0001-h01");
  const std::string viewer_secret = createToken("viewer", "listed", &id);

  Reply list = call(*admin_, "GET", "/api/v1/tokens");
  ASSERT_EQ(list.status, 200);
  bool found = false;
  const json t_list = list.doc()["items"];
  for (const auto& t : t_list) {
    EXPECT_FALSE(t.contains("token"));
    EXPECT_FALSE(t.contains("secret_hash"));
    if (t["id"] == id) {
      found = true;
      EXPECT_EQ(t["role"], "viewer");
      EXPECT_EQ(t["name"], "listed");
      EXPECT_TRUE(t["revoked_at"].is_null());
    }
  }
  EXPECT_TRUE(found) << list.body;
  EXPECT_EQ(list.body.find(viewer_secret.substr(18)), std::string::npos);  // the secret part

  ASSERT_EQ(call(*admin_, "DELETE", "/api/v1/tokens/" + id).status, 200);
  const json after_list = call(*admin_, "GET", "/api/v1/tokens").doc()["items"];
  for (const auto& t : after_list)
    if (t["id"] == id) {
      EXPECT_TRUE(t["revoked_at"].is_string());
    }
}

TEST_F(AuthTest, TokenRequestsAreValidated) {
  Reply r = call(*admin_, "POST", "/api/v1/tokens", R"({"role":"root","name":"","extra":1})");
  ASSERT_TRUE(isError(r, 422, "invalid_content"));
  std::set<std::string> paths;
  const json f_list = r.doc()["error"]["details"]["fields"];
  for (const auto& f : f_list) paths.insert(f["path"].get<std::string>());
  EXPECT_EQ(paths, (std::set<std::string>{"role", "name", "extra"})) << r.body;
}

}  // namespace
}  // namespace kiln::apitest
