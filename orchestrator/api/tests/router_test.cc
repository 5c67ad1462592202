#include "orchestrator/api/router.h"

#include <gtest/gtest.h>

namespace kiln::api {
namespace {

Route route(const char* method, const char* pattern) {
  return {.method = method, .pattern = pattern, .role = core::Role::kViewer,
          .fn = [](RequestContext&) -> Result<http::Response> { return http::Response{}; }};
}

TEST(RouterTest, MatchesParametersAndPrefersLiteralOverPrefix) {
  Router r;
  r.add(route("GET", "/api/v1/pods/{id}"));
  r.add(route("GET", "/*"));
  auto m = r.match("GET", "/api/v1/pods/p1");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.route->pattern, "/api/v1/pods/{id}");
  EXPECT_EQ(m.params.at("id"), "p1");
  auto file = r.match("GET", "/app.js");
  ASSERT_NE(file.route, nullptr);
  EXPECT_EQ(file.route->pattern, "/*");
}

TEST(RouterTest, ReportsAllowedMethodsWhenOnlyTheMethodIsWrong) {
  Router r;
  r.add(route("GET", "/api/v1/tokens"));
  r.add(route("POST", "/api/v1/tokens"));
  auto m = r.match("PUT", "/api/v1/tokens");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.allowed_methods, (std::vector<std::string>{"GET", "POST"}));
  auto none = r.match("GET", "/api/v1/nothing");
  EXPECT_EQ(none.route, nullptr);
  EXPECT_TRUE(none.allowed_methods.empty());
}

TEST(RouterTest, WrongMethodOnAnApiRouteIsNotTakenByTheCatchAll) {
  Router r;
  r.add(route("POST", "/api/v1/fleet/import"));
  r.add(route("POST", "/api/v1/hosts/{id}/actions"));
  r.add(route("GET", "/*"));
  auto m = r.match("GET", "/api/v1/fleet/import");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.allowed_methods, (std::vector<std::string>{"POST"}));
  auto action = r.match("GET", "/api/v1/hosts/h1/actions");
  EXPECT_EQ(action.route, nullptr);
  EXPECT_FALSE(action.allowed_methods.empty());
  auto file = r.match("GET", "/index.html");
  ASSERT_NE(file.route, nullptr);
  EXPECT_EQ(file.route->pattern, "/*");
  // A path of no route but the catch-all: no route (404), not "Allow: GET".
  auto typo = r.match("POST", "/api/v1/hosts/h1/acttions");
  EXPECT_EQ(typo.route, nullptr);
  EXPECT_TRUE(typo.allowed_methods.empty());
}

TEST(RouterTest, PageParametersAreValidated) {
  http::Request req;
  req.query = {{"limit", "5x"}};
  RequestContext ctx{req, {}, {}, core::Role::kViewer, ""};
  EXPECT_EQ(ctx.page().error().code, ErrorCode::kInvalidArgument);
  req.query = {{"limit", "1001"}};
  EXPECT_FALSE(ctx.page().ok());
  req.query = {{"limit", "7"}, {"cursor", "abc"}};
  ASSERT_TRUE(ctx.page().ok());
  EXPECT_EQ(ctx.page()->limit, 7);
  EXPECT_EQ(ctx.page()->cursor, "abc");
  req.query = {{"colour", "red"}};
  EXPECT_FALSE(ctx.onlyQuery({"limit"}).ok());
}

}  // namespace
}  // namespace kiln::api
