// A live version of the OpenAPI contract test: every operation in api/openapi.yaml is served
// by a running kilnd (answers neither 404 nor 405, nor a 5xx), with path parameters filled
// with real records.

#include <yaml-cpp/yaml.h>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

class ContractTest : public ApiTest {};

bool isMethod(const std::string& key) {
  return key == "get" || key == "post" || key == "put" || key == "delete" || key == "patch";
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The router's own 404 (no route for the path) as opposed to a handler's (no such record).
bool noRoute(const Reply& r) {
  if (r.status != 404) return false;
  const json doc = r.doc();
  return doc.is_object() && doc["error"]["message"].is_string() &&
         doc["error"]["message"].get<std::string>().rfind("no route for", 0) == 0;
}

TEST_F(ContractTest, EveryDocumentedOperationIsServed) {
  const YAML::Node doc = YAML::LoadFile(KILN_OPENAPI);
  ASSERT_TRUE(doc["paths"].IsMap());
  importFleet(smallFleet(1));

  int operations = 0;
  for (const auto& entry : doc["paths"]) {
    const std::string pattern = entry.first.as<std::string>();
    for (const auto& op : entry.second) {
      const std::string key = op.first.as<std::string>();
      if (!isMethod(key)) continue;  // path-level parameters, summary, ...
      const std::string method = upper(key);
      // Real records where we have them, so a handler's 404 cannot hide a missing route.
      std::string path = pattern;
      for (auto at = path.find('{'); at != std::string::npos; at = path.find('{')) {
        const auto end = path.find('}', at);
        ASSERT_NE(end, std::string::npos) << pattern;
        std::string id = "x";
        if (path.rfind("/api/v1/pods/", 0) == 0) id = "t01-b01-p0001";
        else if (path.rfind("/api/v1/hosts/", 0) == 0 || path.rfind("/api/v1/agents/", 0) == 0)
          id = "t01-b01-p0001-h01";
        else if (path.rfind("/api/v1/tokens/", 0) == 0) createToken("viewer", "contract " + method, &id);
        path.replace(at, end - at + 1, id);
      }
      const bool has_body = method == "POST" || method == "PUT" || method == "PATCH";
      Reply r = call(*admin_, method, path, has_body ? "{}" : "");
      ++operations;
      EXPECT_FALSE(noRoute(r)) << method << " " << path << ": " << r.body;
      EXPECT_NE(r.status, 405) << method << " " << path << ": " << r.body;
      EXPECT_LT(r.status, 500) << method << " " << path << ": " << r.body;
      EXPECT_GT(r.status, 0) << method << " " << path;
    }
  }
  EXPECT_GE(operations, 15);
}

TEST_F(ContractTest, EverySecuredOperationRefusesAnonymousCalls) {
  const YAML::Node doc = YAML::LoadFile(KILN_OPENAPI);
  auto anonymous = client("");
  for (const auto& entry : doc["paths"]) {
    const std::string pattern = entry.first.as<std::string>();
    for (const auto& op : entry.second) {
      if (!isMethod(op.first.as<std::string>())) continue;
      const std::string method = upper(op.first.as<std::string>());
      std::string path = pattern;
      for (auto at = path.find('{'); at != std::string::npos; at = path.find('{'))
        path.replace(at, path.find('}', at) - at + 1, "x");
      const bool open = op.second["security"] && op.second["security"].size() == 0;
      Reply r = call(*anonymous, method, path, method == "POST" || method == "PUT" ? "{}" : "");
      if (open) {
        EXPECT_LT(r.status, 400) << method << " " << path << ": " << r.body;
      } else {
        EXPECT_TRUE(isError(r, 401, "unauthenticated")) << method << " " << path;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::apitest
