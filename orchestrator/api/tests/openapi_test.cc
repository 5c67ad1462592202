// api/openapi.yaml is the written contract: this test fails when the server's routes and the
// document disagree (a route missing from either side, or a method that differs).

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "orchestrator/api/api.h"

namespace kiln::api {
namespace {

TEST(OpenApiTest, DocumentAndServerHaveTheSameRoutes) {
  Services services;  // not called: only the route table is read
  Router router = buildRouter(services);
  std::set<std::string> served;
  for (const auto& r : router.routes())
    if (r.pattern != "/*") served.insert(r.method + " " + r.pattern);

  YAML::Node doc = YAML::LoadFile(KILN_OPENAPI);
  std::set<std::string> documented;
  for (const auto& path : doc["paths"]) {
    for (const auto& op : path.second) {
      std::string method = op.first.as<std::string>();
      if (method == "parameters") continue;
      for (auto& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      documented.insert(method + " " + path.first.as<std::string>());
    }
  }
  std::set<std::string> undocumented, unserved;
  for (const auto& s : served)
    if (!documented.count(s)) undocumented.insert(s);
  for (const auto& d : documented)
    if (!served.count(d)) unserved.insert(d);
  std::string msg;
  for (const auto& s : undocumented) msg += "served but not in openapi.yaml: " + s + "\n";
  for (const auto& s : unserved) msg += "in openapi.yaml but not served: " + s + "\n";
  EXPECT_TRUE(msg.empty()) << msg;
  EXPECT_EQ(doc["openapi"].as<std::string>().substr(0, 2), "3.");
}

}  // namespace
}  // namespace kiln::api
