// bundle create | list | show | compliance against a fake transport.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using testing::CliHarness;
using Query = std::vector<std::pair<std::string, std::string>>;

const char* kBundle = R"({"id": "b-3", "name": "gb200-fw", "version": "2026.03", "platforms": ["clemente"],
  "workflow": "firmware-upgrade", "used": false, "created_at_ms": 1767225600000, "created_by": "tok-ops",
  "components": [{"kind": "gpu_vbios", "version": "97.00.A1", "artifact": "s3://fw/vbios-97.00.A1.bin",
                  "sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
                 {"kind": "nic", "version": "28.39.1002", "artifact": "s3://fw/cx7.bin",
                  "sha256": "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"}],
  "prerequisites": [{"kind": "bmc", "min_version": "1.4"}]})";

TEST(BundleCreateTest, SendsYamlByExtensionAndSaysCreated) {
  CliHarness h;
  h.fs.files["fw.yaml"] = "name: gb200-fw\nversion: '2026.03'\n";
  h.transport.reply(201, kBundle);
  auto r = h.run({"bundle", "create", "fw.yaml"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const ApiRequest& req = h.transport.requests[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/api/v1/bundles");
  EXPECT_EQ(req.content_type, "application/yaml");
  EXPECT_EQ(req.body, "name: gb200-fw\nversion: '2026.03'\n");
  EXPECT_EQ(r.out, "b-3 gb200-fw@2026.03 created\n");
}

TEST(BundleCreateTest, SniffsJsonFromStandardInputAndSaysWhatTheServerDid) {
  CliHarness h;
  h.fs.stdin_text = "  {\"name\": \"gb200-fw\"}";
  json unchanged = json::parse(kBundle);
  unchanged["outcome"] = "unchanged";
  h.transport.reply(200, unchanged.dump());
  auto r = h.run({"bundle", "create", "-"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].content_type, "application/json");
  EXPECT_EQ(r.out, "b-3 gb200-fw@2026.03 unchanged\n");
  // An unused bundle corrected in place says so; an older server's 200 says only "stored".
  CliHarness u;
  u.fs.stdin_text = "{}";
  json updated = json::parse(kBundle);
  updated["outcome"] = "updated";
  u.transport.reply(200, updated.dump());
  EXPECT_EQ(u.run({"bundle", "create", "-"}).out, "b-3 gb200-fw@2026.03 updated\n");
  CliHarness old;
  old.fs.stdin_text = "{}";
  old.transport.reply(200, kBundle);
  EXPECT_EQ(old.run({"bundle", "create", "-"}).out, "b-3 gb200-fw@2026.03 stored\n");

  CliHarness j;
  j.fs.files["fw.json"] = "name: not-really-json";
  j.transport.reply(201, kBundle);
  ASSERT_EQ(j.run({"bundle", "create", "fw.json"}).code, kExitOk);
  EXPECT_EQ(j.transport.requests[0].content_type, "application/json");  // the extension wins
}

TEST(BundleCreateTest, AUsedBundleIsAFailedCallAndAMissingFileAUsageError) {
  CliHarness h;
  h.fs.files["fw.yaml"] = "name: x\n";
  h.transport.reply(409, R"({"error": {"code": "conflict", "message": "bundle gb200-fw@2026.03 was used by a rollout and cannot change: publish a new version", "details": {}}})");
  auto r = h.run({"bundle", "create", "fw.yaml"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kilnctl: bundle gb200-fw@2026.03 was used by a rollout and cannot change: publish a new version (HTTP 409 "
                   "conflict)\n");

  CliHarness m;
  auto missing = m.run({"bundle", "create", "nope.yaml"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_TRUE(m.transport.requests.empty());
  EXPECT_EQ(missing.err.rfind("kilnctl: cannot read nope.yaml", 0), 0u);
  auto none = m.run({"bundle", "create"});
  EXPECT_EQ(none.code, kExitUsage);
  EXPECT_EQ(none.err, "kilnctl: missing argument FILE\nRun 'kilnctl bundle create --help' for usage.\n");
}

TEST(BundleListTest, RendersATableWithComponentVersions) {
  CliHarness h;
  h.transport.reply(200, std::string(R"({"items": [)") + kBundle + R"(], "next_cursor": null})");
  auto r = h.run({"bundle", "list"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/bundles");
  EXPECT_EQ(r.out,
            "ID   NAME      VERSION  PLATFORMS  WORKFLOW          COMPONENTS                         USED  CREATED        "
            "       BY\n"
            "b-3  gb200-fw  2026.03  clemente   firmware-upgrade  gpu_vbios=97.00.A1 nic=28.39.1002  no    "
            "2026-01-01T00:00:00Z  tok-ops\n");
}

TEST(BundleShowTest, AcceptsNameAtVersionAndRendersComponentsAndPrerequisites) {
  CliHarness h;
  h.transport.reply(200, kBundle);
  auto r = h.run({"bundle", "show", "gb200-fw@2026.03"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/bundles/gb200-fw%402026.03");
  EXPECT_EQ(r.out,
            "id:         b-3\n"
            "name:       gb200-fw\n"
            "version:    2026.03\n"
            "platforms:  clemente\n"
            "workflow:   firmware-upgrade\n"
            "used:       no\n"
            "created:    2026-01-01T00:00:00Z\n"
            "\n"
            "Components:\n"
            "KIND       VERSION     ARTIFACT                    SHA256\n"
            "gpu_vbios  97.00.A1    s3://fw/vbios-97.00.A1.bin  0123456789ab\n"
            "nic        28.39.1002  s3://fw/cx7.bin             fedcba987654\n"
            "\n"
            "Prerequisites:\n"
            "KIND  MIN_VERSION\n"
            "bmc   1.4\n");
}

TEST(BundleComplianceTest, PassesFiltersAndRendersCountsAndAPodTable) {
  CliHarness h;
  h.transport.reply(200, R"({"bundle": "b-3", "counts": {"compliant": 1, "needs_upgrade": 1, "incompatible": 1},
    "host_counts": {"compliant": 19, "needs_upgrade": 18, "incompatible": 18},
    "pods": [{"pod": "prn-b01-p0001", "building": "b01", "platform": "clemente", "state": "compliant", "reasons": [],
              "hosts_compliant": 18, "hosts_needing_upgrade": 0, "hosts_incompatible": 0},
             {"pod": "prn-b01-p0002", "building": "b01", "platform": "clemente", "state": "needs_upgrade",
              "reasons": ["gpu_vbios 96.00.B2 -> 97.00.A1", "nic unknown -> 28.39.1002"],
              "hosts_compliant": 1, "hosts_needing_upgrade": 18, "hosts_incompatible": 0},
             {"pod": "prn-b01-p0003", "building": "b01", "platform": "catalina", "state": "incompatible",
              "reasons": ["platform catalina is not one of the bundle's"],
              "hosts_compliant": 0, "hosts_needing_upgrade": 0, "hosts_incompatible": 18}]})");
  auto r = h.run({"bundle", "compliance", "b-3", "--site", "prn", "--building", "b01"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/bundles/b-3/compliance");
  EXPECT_EQ(h.transport.requests[0].query, (Query{{"site", "prn"}, {"building", "b01"}}));
  EXPECT_EQ(r.out,
            "bundle b-3: 3 pods: 1 compliant, 1 need the upgrade, 1 incompatible\n"
            "hosts: 55: 19 compliant, 18 need the upgrade, 18 incompatible\n"
            "\n"
            "POD            BUILDING  PLATFORM  STATE          HOSTS OK/UPGRADE/INCOMPATIBLE  REASONS\n"
            "prn-b01-p0001  b01       clemente  compliant      18/0/0                         -\n"
            "prn-b01-p0002  b01       clemente  needs_upgrade  1/18/0                         gpu_vbios 96.00.B2 -> 97.00.A1; "
            "nic unknown -> 28.39.1002\n"
            "prn-b01-p0003  b01       catalina  incompatible   0/0/18                         platform catalina is not one of "
            "the bundle's\n");

  CliHarness j;
  j.transport.reply(200, R"({"bundle": "b-3", "counts": {}, "pods": []})");
  auto jr = j.run({"bundle", "compliance", "b-3", "--json", "--pod", "p1"});
  ASSERT_EQ(jr.code, kExitOk) << jr.err;
  EXPECT_EQ(j.transport.requests[0].query, (Query{{"pod", "p1"}}));
  EXPECT_EQ(json::parse(jr.out)["bundle"], "b-3");
}

}  // namespace
}  // namespace kiln::cli
