#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/tests/test_support.h"
#include "common/yaml_json.h"
#include "orchestrator/api/fleet_document.h"
#include "orchestrator/core/fleet_generator.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using testing::CliHarness;

TEST(FleetGenerateCommandTest, MillionGpusGiveAValidFleetOf13889Pods) {
  CliHarness h;
  auto r = h.run({"fleet", "generate", "--gpus", "1000000"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const json doc = json::parse(r.out);
  auto spec = api::parseFleetSpec(doc);
  ASSERT_TRUE(spec.ok()) << spec.error();
  // docs/FACTS.md: a 1,000,000-GPU fleet is 13,889 pods (1,000,008 GPUs).
  EXPECT_EQ(spec->pods.size(), 13889u);
  EXPECT_EQ(spec->buildings.size(), 49u);  // 288 pods (20,736 GPUs) per building
  EXPECT_TRUE(h.transport.requests.empty());
}

TEST(FleetGenerateCommandTest, WritesToAFileAndSaysWhatItWrote) {
  CliHarness h;
  auto r = h.run({"fleet", "generate", "--gpus", "1000000", "-o", "fleet.json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "wrote fleet.json: 13,889 pods, 1,000,008 GPUs\n");
  ASSERT_TRUE(h.fs.written.count("fleet.json"));
  EXPECT_EQ(json::parse(h.fs.written["fleet.json"]), core::generateFleet({.gpus = 1000000}));
}

TEST(FleetGenerateCommandTest, YamlOutputParsesToTheSameFleet) {
  CliHarness h;
  auto r = h.run({"fleet", "generate", "--gpus", "5000", "--yaml"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("sites:\n  - name: site01\n", 0), 0u) << r.out.substr(0, 200);
  auto back = yamlToJson(r.out);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, core::generateFleet({.gpus = 5000}));
  EXPECT_TRUE(api::parseFleetSpec(*back).ok());
}

TEST(FleetGenerateCommandTest, ClementeShareSetsThePlatformMix) {
  auto platforms = [](const std::string& share) {
    CliHarness h;
    auto r = h.run({"fleet", "generate", "--gpus", "720", "--clemente-share", share});
    EXPECT_EQ(r.code, kExitOk) << r.err;
    auto spec = api::parseFleetSpec(json::parse(r.out));
    std::map<core::Platform, int> count;
    for (const auto& p : spec->pods) ++count[p.platform];
    return count;
  };
  EXPECT_EQ(platforms("0"), (std::map<core::Platform, int>{{core::Platform::kCatalina, 10}}));
  EXPECT_EQ(platforms("1"), (std::map<core::Platform, int>{{core::Platform::kClemente, 10}}));
  EXPECT_EQ(platforms("0.5"), (std::map<core::Platform, int>{{core::Platform::kCatalina, 5}, {core::Platform::kClemente, 5}}));
}

}  // namespace
}  // namespace kiln::cli
