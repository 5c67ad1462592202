// The rollout store's documents without a database: the selector, policy and bundle spec columns
// keep the form the REST edge answers (no migration), and a stored document that the core could
// not run with fails its read.

#include "orchestrator/db/rollout_codecs.h"

#include <gtest/gtest.h>

namespace kiln::db {
namespace {

using nlohmann::json;

rollouts::Policy everyField() {
  rollouts::Policy p;
  p.canary_pods = 2;
  p.waves = {{20, true}, {50, false}, {100, true}};
  p.soak = std::chrono::minutes(30);
  p.max_concurrent_pods = 4;
  p.max_pods_down_per_building = 2;
  p.max_fraction_down_per_building.reset();
  p.skip_allocated = true;
  p.failure_budget_pods.reset();
  p.failure_budget_percent = 5;
  p.max_rebooting_pods_per_building = 1;
  p.order = "name";
  p.windows = {rollouts::parseWindow("mon-fri 22:00-06:00").value()};
  p.validation_workflow = "nvlink-domain-validation";
  return p;
}

TEST(RolloutCodecsTest, APolicyIsKeptInTheFormTheApiAnswers) {
  EXPECT_EQ(storedPolicy(everyField()), json::parse(R"({"canary_pods": 2, "waves": ["20%", 50, "100%"],
      "soak": "30m", "max_concurrent_pods": 4, "capacity_floor": {"max_pods_down": 2}, "allocated": "skip",
      "failure_budget": {"percent": 5.0}, "max_rebooting_pods_per_building": 1, "order": "name",
      "windows": ["mon-fri 22:00-06:00"], "validation_workflow": "nvlink-domain-validation"})"));
  EXPECT_EQ(*policyFromStored(storedPolicy(everyField())), everyField());
  EXPECT_EQ(*policyFromStored(storedPolicy(rollouts::Policy{})), rollouts::Policy{});
}

TEST(RolloutCodecsTest, AbsentPolicyFieldsTakeTheirDefaults) {
  // A row written before a field existed; unknown fields are not the store's to refuse.
  auto p = policyFromStored(json::parse(R"({"max_concurrent_pods": 3, "retired_field": 1})"));
  ASSERT_TRUE(p.ok()) << p.error();
  rollouts::Policy expected;
  expected.max_concurrent_pods = 3;
  EXPECT_EQ(*p, expected);
  EXPECT_EQ(*policyFromStored(json()), rollouts::Policy{});
}

TEST(RolloutCodecsTest, AStoredPolicyTheCoreCouldNotRunWithFailsItsRead) {
  for (const char* bad :
       {R"({"max_concurrent_pods": 0})", R"({"max_concurrent_pods": "3"})", R"({"waves": []})", R"({"waves": [0]})",
        R"({"waves": ["150%"]})", R"({"soak": "soon"})", R"({"capacity_floor": 5})",
        R"({"failure_budget": {"percent": 101}})", R"({"allocated": "maybe"})", R"({"order": "random"})",
        R"({"windows": ["25:00-06:00"]})", R"({"windows": "mon 01:00-02:00"})"}) {
    auto p = policyFromStored(json::parse(bad));
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.error().code, ErrorCode::kInvalidContent) << bad;
    EXPECT_NE(p.error().message.find("invalid stored policy: "), std::string::npos) << p.error().message;
  }
  EXPECT_NE(policyFromStored(json::parse(R"({"order": "random"})")).error().message.find("order"), std::string::npos);
}

TEST(RolloutCodecsTest, ASelectorRoundTripsAndAWrongTypeFails) {
  rollouts::Selector s;
  s.buildings = {"b1", "b2"};
  s.labels = {{"row", "a"}};
  EXPECT_EQ(storedSelector(s), json::parse(R"({"sites": [], "buildings": ["b1", "b2"], "platforms": [], "pods": [],
      "labels": {"row": "a"}})"));
  EXPECT_EQ(*selectorFromStored(storedSelector(s)), s);
  EXPECT_EQ(selectorFromStored(json::parse(R"({"pods": ["p1"]})"))->pods, std::vector<std::string>{"p1"});
  EXPECT_EQ(*selectorFromStored(json()), rollouts::Selector{});
  EXPECT_FALSE(selectorFromStored(json::parse(R"({"pods": "p1"})")).ok());
  EXPECT_FALSE(selectorFromStored(json::parse(R"({"labels": {"rack": 3}})")).ok());
}

TEST(RolloutCodecsTest, ABundleSpecIsItsDocumentLessTheIdAndReadsBack) {
  rollouts::Bundle b;
  b.id = "b-7";
  b.name = "fw";
  b.version = "2";
  b.platforms = {"catalina"};
  b.components = {{"driver", "580.1", "https://a/d.run", std::string(64, 'a')}};
  b.prerequisites = {{"bmc", "25.04-1"}};
  const json spec = storedBundle(b);
  EXPECT_FALSE(spec.contains("id"));
  json with_id = spec;
  with_id["id"] = "b-7";
  EXPECT_EQ(with_id, rollouts::toJson(b));  // what the ETag hashes
  auto back = bundleFromStored(spec);
  ASSERT_TRUE(back.ok()) << back.error();
  back->id = b.id;
  EXPECT_EQ(*back, b);
  json broken = spec;
  broken["components"][0].erase("sha256");
  EXPECT_FALSE(bundleFromStored(broken).ok());
  EXPECT_FALSE(bundleFromStored(json::array()).ok());
}

TEST(RolloutCodecsTest, ASignedBundleKeepsItsChecksumsAndSignatureAndAnUnsignedOneHasNeither) {
  rollouts::Bundle b;
  b.name = "fw";
  b.version = "3";
  b.platforms = {"catalina"};
  b.components = {{"driver", "580.1", "https://a/d.run", std::string(64, 'a')}};
  EXPECT_FALSE(storedBundle(b).contains("checksums")) << "an unsigned bundle's document (and ETag) did not change";
  EXPECT_FALSE(storedBundle(b).contains("signature"));
  b.checksums = std::string(64, 'a') + "  d.run\n";
  b.signature = "-----BEGIN PGP SIGNATURE-----\nx\n-----END PGP SIGNATURE-----\n";
  const json spec = storedBundle(b);
  EXPECT_EQ(spec["checksums"], b.checksums);
  EXPECT_EQ(spec["signature"], b.signature);
  auto back = bundleFromStored(spec);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, b);
}

}  // namespace
}  // namespace kiln::db
