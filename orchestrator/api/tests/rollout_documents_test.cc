#include "orchestrator/api/rollout_documents.h"

#include <set>

#include <gtest/gtest.h>

namespace kiln::api {
namespace {

using nlohmann::json;
using rollouts::Policy;
using rollouts::Selector;
const std::string kSha(64, 'a');

json bundleDoc() {
  return {{"name", "gb200-fw"},
          {"version", "1.4.0"},
          {"platforms", {"catalina"}},
          {"components",
           {{{"kind", "driver"}, {"version", "580.65.06"}, {"artifact", "https://a/d.run"}, {"sha256", kSha}},
            {{"kind", "nvswitch"}, {"version", "1.4.0"}, {"artifact", "https://a/s.bin"}, {"sha256", kSha}}}},
          {"prerequisites", {{{"kind", "bmc"}, {"min_version", "25.04-1"}}}}};
}

TEST(BundleDocumentTest, ValidatesEveryField) {
  json doc = bundleDoc();
  doc["components"][0]["sha256"] = "xyz";
  doc["components"][1]["kind"] = "driver";
  doc["platforms"] = {"dgx"};
  doc["colour"] = "red";
  auto b = parseBundle(doc);
  ASSERT_FALSE(b.ok());
  std::set<std::string> paths;
  for (const auto& f : b.error().fields) paths.insert(f.path);
  EXPECT_EQ(paths, (std::set<std::string>{"colour", "platforms[0]", "components[0].sha256", "components[1].kind"}));
  ASSERT_TRUE(parseBundle(bundleDoc()).ok());
  EXPECT_EQ(parseBundle(bundleDoc())->workflow, "firmware-upgrade");
}

TEST(BundleDocumentTest, ReadsEveryPartAndLowersTheDigest) {
  json doc = bundleDoc();
  doc["components"][0]["sha256"] = std::string(64, 'A');
  doc["version"] = 7;  // a whole number is its digits
  auto b = parseBundle(doc);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->version, "7");
  EXPECT_EQ(b->components[0].sha256, kSha);
  EXPECT_EQ(b->prerequisites, (std::vector<rollouts::Prerequisite>{{"bmc", "25.04-1"}}));
  doc["version"] = 1.10;
  ASSERT_FALSE(parseBundle(doc).ok());
  EXPECT_EQ(parseBundle(doc).error().fields[0].path, "version");
}

TEST(BundleDocumentTest, AnArtifactIsAnHttpUrlOrAnAbsolutePath) {
  json doc = bundleDoc();
  doc["components"][1]["artifact"] = "/opt/kiln/fw/s.bin";
  ASSERT_TRUE(parseBundle(doc).ok()) << parseBundle(doc).error();
  for (const char* bad : {"s3://fw/s.bin", "fw/s.bin", "https://", "/opt/kiln/fw/", "/opt/a b.bin", "https://h/x#y"}) {
    doc["components"][1]["artifact"] = bad;
    auto b = parseBundle(doc);
    ASSERT_FALSE(b.ok()) << bad;
    ASSERT_EQ(b.error().fields.size(), 1u) << bad << ": " << b.error();
    EXPECT_EQ(b.error().fields[0].path, "components[1].artifact") << bad;
  }
  // A bad sha256 is named once, on its own field.
  doc["components"][1]["artifact"] = "https://a/s.bin";
  doc["components"][1]["sha256"] = "abc";
  auto b = parseBundle(doc);
  ASSERT_FALSE(b.ok());
  ASSERT_EQ(b.error().fields.size(), 1u) << b.error();
  EXPECT_EQ(b.error().fields[0].path, "components[1].sha256");
}

TEST(BundleDocumentTest, ChecksumsAndSignatureAreOptionalStrings) {
  json doc = bundleDoc();
  auto unsigned_bundle = parseBundle(doc);
  ASSERT_TRUE(unsigned_bundle.ok());
  EXPECT_EQ(unsigned_bundle->checksums, "");
  EXPECT_EQ(unsigned_bundle->signature, "");
  doc["checksums"] = kSha + "  d.run\n";
  doc["signature"] = "-----BEGIN PGP SIGNATURE-----\n";
  auto b = parseBundle(doc);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->checksums, kSha + "  d.run\n");
  EXPECT_EQ(b->signature, "-----BEGIN PGP SIGNATURE-----\n");
  doc["checksums"] = 5;
  doc["signature"] = json::array();
  auto bad = parseBundle(doc);
  ASSERT_FALSE(bad.ok());
  std::set<std::string> paths;
  for (const auto& f : bad.error().fields) paths.insert(f.path);
  EXPECT_EQ(paths, (std::set<std::string>{"checksums", "signature"}));
}

TEST(PolicyDocumentTest, ParsesAndRejectsBadFields) {
  auto p = parsePolicy(json::parse(R"({"canary_pods": 2, "waves": ["20%", 50], "soak": "30m",
      "max_concurrent_pods": 4, "capacity_floor": {"max_pods_down": 2}, "allocated": "skip",
      "failure_budget": {"percent": 5}, "max_rebooting_pods_per_building": 1, "order": "name"})"));
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->soak, std::chrono::minutes(30));
  EXPECT_FALSE(p->waves[1].percent);
  EXPECT_TRUE(p->skip_allocated);
  auto bad = parsePolicy(json::parse(R"({"max_concurrent_pods": 0, "waves": ["150%"], "soak": "soon", "oops": 1})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().fields.size(), 4u);
  auto windows = parsePolicy(json::parse(R"({"windows": ["sat,sun 00:00-24:00", "mon-fri 25:00-06:00", 7]})"));
  ASSERT_FALSE(windows.ok());
  ASSERT_EQ(windows.error().fields.size(), 2u);
  EXPECT_EQ(windows.error().fields[0].path, "policy.windows[1]");
  EXPECT_EQ(windows.error().fields[1].path, "policy.windows[2]");
  EXPECT_FALSE(parsePolicy(json::parse(R"({"windows": "mon-fri 22:00-06:00"})")).ok());
  // What toJson answers parses back to the same policy.
  auto with = parsePolicy(json::parse(R"({"windows": ["mon-fri 22:00-06:00"]})"));
  ASSERT_TRUE(with.ok()) << with.error();
  EXPECT_EQ(toJson(*with)["windows"], json::array({"mon-fri 22:00-06:00"}));
  EXPECT_EQ(*parsePolicy(toJson(*with)), *with);
  EXPECT_EQ(*parsePolicy(toJson(Policy{})), Policy{});
}

TEST(SelectorDocumentTest, ReadsListsAndLabelsAndNamesBadFields) {
  auto s = parseSelector(json::parse(R"({"buildings": ["b1"], "labels": {"row": "a", "rack": 3}})"));
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->buildings, (std::vector<std::string>{"b1"}));
  EXPECT_EQ(s->labels, (std::map<std::string, std::string>{{"row", "a"}, {"rack", "3"}}));
  EXPECT_EQ(*parseSelector(toJson(*s)), *s);
  EXPECT_EQ(*parseSelector(json()), Selector{});
  auto bad = parseSelector(json::parse(R"({"pods": "p1", "zones": [], "labels": []})"));
  ASSERT_FALSE(bad.ok());
  std::set<std::string> paths;
  for (const auto& f : bad.error().fields) paths.insert(f.path);
  EXPECT_EQ(paths, (std::set<std::string>{"selector.pods", "selector.zones", "selector.labels"}));
  EXPECT_FALSE(parseSelector(json::array()).ok());
}

}  // namespace
}  // namespace kiln::api
