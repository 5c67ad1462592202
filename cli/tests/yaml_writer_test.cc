#include "cli/yaml_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/yaml_json.h"
#include "orchestrator/core/fleet_generator.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

TEST(YamlWriterTest, WritesBlockStyleWithNameFirst) {
  json doc = {{"versions", {{"driver", "570.133.20"}}},
              {"sites", json::array({{{"name", "prn"},
                                      {"buildings", json::array({{{"pods", json::array({{{"platform", "clemente"},
                                                                                           {"name", "prn-b01-p0001"},
                                                                                           {"labels", {{"row", "a"}}}}})},
                                                                  {"name", "prn-b01"}}})}}})}};
  EXPECT_EQ(toYaml(doc),
            "sites:\n"
            "  - name: prn\n"
            "    buildings:\n"
            "      - name: prn-b01\n"
            "        pods:\n"
            "          - name: prn-b01-p0001\n"
            "            labels:\n"
            "              row: a\n"
            "            platform: clemente\n"
            "versions:\n"
            "  driver: \"570.133.20\"\n");
}

TEST(YamlWriterTest, QuotesStringsYamlWouldReadAsSomethingElse) {
  json doc = {{"strings", json::array({"97.00", "123", "true", "yes", "No", "null", "~", "", "a: b", "-x", "#c",
                                       "line\nbreak", "quote\"d", "nan", "ok-name_1.2/x"})},
              {"numbers", json::array({1, 2.5, -3})},
              {"flags", json::array({true, false, nullptr})},
              {"empty_map", json::object()},
              {"empty_list", json::array()},
              {"nested", json::array({json::array({1, 2}), json::array({json{{"k", "v"}}})})},
              {"key with: colon", "v"}};
  const std::string yaml = toYaml(doc);
  auto back = yamlToJson(yaml);
  ASSERT_TRUE(back.ok()) << back.error() << "\n" << yaml;
  EXPECT_EQ(*back, doc) << yaml;
  EXPECT_NE(yaml.find("- ok-name_1.2/x\n"), std::string::npos) << yaml;  // safe strings stay plain
}

TEST(YamlWriterTest, GeneratedFleetRoundTrips) {
  const json fleet = core::generateFleet({.gpus = 72 * 300});
  auto back = yamlToJson(toYaml(fleet));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(*back, fleet);
}

TEST(YamlWriterTest, ScalarDocument) {
  EXPECT_EQ(toYaml(json("x")), "x\n");
  EXPECT_EQ(toYaml(json::object()), "{}\n");
}

}  // namespace
}  // namespace kiln::cli
