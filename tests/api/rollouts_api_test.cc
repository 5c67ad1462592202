// Bundles and rollouts over HTTP against a real kilnd: validation that names every bad field and
// stores nothing, bundle immutability once a rollout used it, compliance counts over a fleet whose
// versions the test sets, the dry-run plan with every excluded pod's reason (writing nothing),
// the verbs' state checks, roles, and the events and audit records of each decision. No agent
// runs: a started rollout's pods wait in their upgrade, which is all the state checks need.

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

const std::string kSha(64, 'a');
constexpr const char* kOldDriver = "570.133.20";
constexpr const char* kNewDriver = "580.65.06";

// A catalina driver bundle that needs bmc >= 25.04-1.
json driverBundle(const std::string& version = "2026.11", const std::string& driver = kNewDriver) {
  json component = {{"kind", "driver"},
                    {"version", driver},
                    {"artifact", "/opt/kiln/drivers/NVIDIA-Linux-aarch64-" + driver + ".run"},
                    {"sha256", kSha}};
  return {{"name", "gb200-driver"},
          {"version", version},
          {"platforms", json::array({"catalina"})},
          {"components", json::array({component})},
          {"prerequisites", json::array({json{{"kind", "bmc"}, {"min_version", "25.04-1"}}})}};
}

// Every path a 422 names: details.fields[].path, and details.field where one field is named alone.
std::set<std::string> fieldPaths(const Reply& r) {
  std::set<std::string> out;
  const json doc = r.doc();
  if (!doc.is_object() || !doc.contains("error") || !doc["error"].contains("details")) return out;
  const json& d = doc["error"]["details"];
  if (d.contains("fields") && d["fields"].is_array())
    for (const auto& f : d["fields"]) out.insert(f.value("path", ""));
  if (d.contains("field") && d["field"].is_string()) out.insert(d["field"].get<std::string>());
  return out;
}

class RolloutsApiTest : public ApiTest {
 protected:
  // The shipped workflows: a bundle is installed by firmware-upgrade, which must exist.
  std::vector<std::string> extraKilndArgs() const override { return {"--workflows-dir", KILN_WORKFLOWS_DIR}; }

  void SetUp() override {
    ApiTest::SetUp();
    if (HasFatalFailure()) return;
    op_ = client(createToken("operator", "sre", &op_id_));
  }

  // Building t01-b01: p0001, p0002 need the driver; p0003 has it (compliant); p0004 is clemente
  // (incompatible platform); p0005 has bmc 24.10-1 (below the prerequisite); p0006 is new
  // hardware (incoming: not in service). Building t01-b02: p0001, p0002 need the driver.
  json mixedFleet() {
    auto pod = [](const std::string& name, const std::string& platform, const json& extra = json::object()) {
      json p = {{"name", name}, {"platform", platform}};
      p.update(extra);
      return p;
    };
    json b01 = json::array({pod("t01-b01-p0001", "catalina"), pod("t01-b01-p0002", "catalina"),
                            pod("t01-b01-p0003", "catalina", {{"versions", {{"driver", kNewDriver}}}}),
                            pod("t01-b01-p0004", "clemente"),
                            pod("t01-b01-p0005", "catalina", {{"versions", {{"bmc", "24.10-1"}}}}),
                            pod("t01-b01-p0006", "catalina", {{"state", "incoming"}})});
    json b02 = json::array({pod("t01-b02-p0001", "catalina"), pod("t01-b02-p0002", "catalina")});
    json buildings = json::array({json{{"name", "t01-b01"}, {"pods", b01}}, json{{"name", "t01-b02"}, {"pods", b02}}});
    return {{"versions", {{"driver", kOldDriver}, {"bmc", "25.04-2"}}},
            {"sites", json::array({json{{"name", "t01"}, {"buildings", buildings}}})}};
  }

  // Imports the mixed fleet and posts driverBundle(); returns the bundle's id.
  std::string mixedFleetAndBundle() {
    importFleet(mixedFleet());
    Reply b = call(*op_, "POST", "/api/v1/bundles", driverBundle().dump());
    EXPECT_EQ(b.status, 201) << b.body;
    return b.doc().value("id", "");
  }

  // A rollout in state created over `pods`; its id.
  std::string createRollout(const std::string& bundle, const std::vector<std::string>& pods, bool start = false) {
    json body = {{"bundle", bundle}, {"selector", {{"pods", pods}}}};
    if (start) body["start"] = true;
    Reply r = call(*op_, "POST", "/api/v1/rollouts", body.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return r.doc().value("id", "");
  }

  std::string state(const std::string& id) {
    Reply r = call(*admin_, "GET", "/api/v1/rollouts/" + id);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.doc().value("state", "?");
  }

  // The rollout's own decisions (events not about one pod), newest first.
  std::vector<json> decisions(const std::string& id) {
    Reply r = call(*admin_, "GET", "/api/v1/rollouts/" + id + "/events");
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<json> out;
    const json doc = r.doc();
    for (const auto& e : doc["items"])
      if (e.value("pod", "") == "") out.push_back(e);
    return out;
  }

  // Every GET of bundles and rollouts, on `bundle` and rollout `id`.
  static std::vector<std::string> readPaths(const std::string& bundle, const std::string& id) {
    return {"/api/v1/bundles",         "/api/v1/bundles/" + bundle, "/api/v1/bundles/" + bundle + "/compliance",
            "/api/v1/rollouts",        "/api/v1/rollouts/" + id,    "/api/v1/rollouts/" + id + "/pods",
            "/api/v1/rollouts/" + id + "/events"};
  }

  std::string auditCount(const std::string& where) {
    return db_->query("SELECT count(*) FROM audit_log WHERE " + where);
  }

  // What a refused or read-only call must not change.
  std::string writtenRows() {
    return db_->query(
        "SELECT (SELECT count(*) FROM bundles) || '/' || (SELECT count(*) FROM rollouts) || '/' ||"
        " (SELECT count(*) FROM rollout_pods) || '/' || (SELECT count(*) FROM rollout_events) || '/' ||"
        " (SELECT count(*) FROM audit_log) || '/' || (SELECT count(*) FROM host_events) || '/' ||"
        " (SELECT count(*) FROM workflow_runs)");
  }

  static bool waitFor(const std::function<bool()>& done, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
  }

  std::unique_ptr<http::Client> op_;
  std::string op_id_;
};

// ---- bundles ----

TEST_F(RolloutsApiTest, ABundleWithSeveralBadFieldsIs422NamingEveryOneAndNothingIsStored) {
  json bad = driverBundle();
  bad.erase("version");
  bad["platforms"] = json::array({"catalina", "hopper"});
  bad["colour"] = "red";
  bad["components"][0]["sha256"] = "not-a-sha";
  bad["components"].push_back({{"kind", "gpu_firmware"}, {"version", "1"}, {"artifact", "x"}, {"sha256", kSha}});
  bad["components"].push_back({{"kind", "nic"}, {"artifact", "x"}, {"sha256", std::string(63, 'b')}});
  bad["prerequisites"] = json::array({json{{"kind", "flux_capacitor"}}});
  const std::string before = writtenRows();
  Reply r = call(*op_, "POST", "/api/v1/bundles", bad.dump());
  ASSERT_TRUE(isError(r, 422, "invalid_content"));
  // An artifact that is neither an http(s) URL nor an absolute path ("x") is named too.
  EXPECT_EQ(fieldPaths(r), (std::set<std::string>{"version", "platforms[1]", "colour", "components[0].sha256",
                                                  "components[1].kind", "components[1].artifact",
                                                  "components[2].version", "components[2].artifact",
                                                  "components[2].sha256", "prerequisites[0].kind",
                                                  "prerequisites[0].min_version"}))
      << r.body;
  const json fields = r.doc()["error"]["details"]["fields"];
  for (const auto& f : fields)
    EXPECT_FALSE(f.value("message", "").empty()) << f.dump();
  EXPECT_EQ(call(*op_, "GET", "/api/v1/bundles").doc()["items"], json::array());
  EXPECT_EQ(writtenRows(), before);

  // Not an object at all; a bundle naming a workflow that does not exist.
  EXPECT_TRUE(isError(call(*op_, "POST", "/api/v1/bundles", "[1, 2]"), 422, "invalid_content"));
  json no_workflow = driverBundle();
  no_workflow["workflow"] = "no-such-workflow";
  Reply wf = call(*op_, "POST", "/api/v1/bundles", no_workflow.dump());
  ASSERT_TRUE(isError(wf, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(wf), std::set<std::string>{"workflow"}) << wf.body;
  EXPECT_EQ(writtenRows(), before);
}

TEST_F(RolloutsApiTest, ABundleWithAnUnknownWorkflowAndOtherBadFieldsNamesThemAll) {
  json bad = driverBundle();
  bad["workflow"] = "no-such-workflow";
  bad["components"][0]["sha256"] = "not-a-sha";
  Reply r = call(*op_, "POST", "/api/v1/bundles", bad.dump());
  ASSERT_TRUE(isError(r, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(r), (std::set<std::string>{"workflow", "components[0].sha256"})) << r.body;
}

// Issue 32: a bundle names the workflow that validates its pods; one that does not exist is a
// 422 naming the field, and one that does is kept in the bundle's document.
TEST_F(RolloutsApiTest, ABundleNamesItsValidationWorkflowWhichMustExist) {
  json b = driverBundle();
  b["validation_workflow"] = "no-such-workflow";
  Reply r = call(*op_, "POST", "/api/v1/bundles", b.dump());
  ASSERT_TRUE(isError(r, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(r), std::set<std::string>{"validation_workflow"}) << r.body;
  b["validation_workflow"] = "nvlink-domain-validation";  // shipped
  Reply ok = call(*op_, "POST", "/api/v1/bundles", b.dump());
  ASSERT_TRUE(ok.status == 200 || ok.status == 201) << ok.body;
  EXPECT_EQ(ok.doc().value("validation_workflow", ""), b["validation_workflow"].get<std::string>()) << ok.body;
}

// A rollout chooses its own validation workflow (before its bundle's); it must exist too, and
// the rollout's answer shows the choice.
TEST_F(RolloutsApiTest, ARolloutNamesItsValidationWorkflowWhichMustExist) {
  const std::string bundle = mixedFleetAndBundle();
  json req = {{"bundle", bundle},
              {"selector", {{"pods", {"t01-b01-p0001"}}}},
              {"policy", {{"validation_workflow", "no-such-workflow"}}},
              {"dry_run", true}};
  Reply r = call(*op_, "POST", "/api/v1/rollouts", req.dump());
  ASSERT_TRUE(isError(r, 422, "invalid_content")) << r.body;
  EXPECT_EQ(fieldPaths(r), std::set<std::string>{"policy.validation_workflow"}) << r.body;
  req["policy"]["validation_workflow"] = "nvlink-domain-validation";  // shipped
  req.erase("dry_run");
  Reply ok = call(*op_, "POST", "/api/v1/rollouts", req.dump());
  ASSERT_EQ(ok.status, 201) << ok.body;
  EXPECT_EQ(ok.doc()["policy"].value("validation_workflow", ""), "nvlink-domain-validation") << ok.body;
  Reply got = call(*op_, "GET", "/api/v1/rollouts/" + ok.doc().value("id", ""));
  EXPECT_EQ(got.doc()["policy"].value("validation_workflow", ""), "nvlink-domain-validation") << got.body;
}

TEST_F(RolloutsApiTest, ABundleIsAcceptedAsYamlAndAYamlSyntaxErrorIs400SayingWhere) {
  const std::string yaml = "name: gb200-driver\n"
                           "version: \"2026.11\"\n"
                           "platforms: [catalina]\n"
                           "components:\n"
                           "  - {kind: driver, version: \"580.65.06\", artifact: /opt/kiln/drivers/x.run, sha256: " +
                           kSha + "}\n"
                           "prerequisites:\n"
                           "  - {kind: bmc, min_version: \"25.04-1\"}\n";
  Reply r = call(*op_, "POST", "/api/v1/bundles", yaml, "application/yaml");
  ASSERT_EQ(r.status, 201) << r.body;
  Reply got = call(*op_, "GET", "/api/v1/bundles/gb200-driver@2026.11");
  ASSERT_EQ(got.status, 200) << got.body;
  const json b = got.doc();
  EXPECT_EQ(b["id"], r.doc()["id"]);
  EXPECT_EQ(b["platforms"], json::array({"catalina"}));
  EXPECT_EQ(b["workflow"], "firmware-upgrade");
  ASSERT_EQ(b["components"].size(), 1u) << got.body;
  EXPECT_EQ(b["components"][0]["version"], kNewDriver);
  EXPECT_EQ(b["components"][0]["sha256"], kSha);
  EXPECT_EQ(b["prerequisites"], json::array({json{{"kind", "bmc"}, {"min_version", "25.04-1"}}}));
  // The same document as JSON is the same bundle.
  Reply as_json = call(*op_, "POST", "/api/v1/bundles",
                       json{{"name", "gb200-driver"}, {"version", "2026.11"}, {"platforms", b["platforms"]},
                            {"components", b["components"]}, {"prerequisites", b["prerequisites"]}}
                           .dump());
  EXPECT_EQ(as_json.status, 200) << as_json.body;
  EXPECT_EQ(as_json.doc()["id"], b["id"]);

  // A flow mapping left open on line 4 (the parser finds out at line 5): a 400 that says where,
  // and nothing stored.
  const std::string broken = "name: gb200-driver\n"
                             "version: \"2026.12\"\n"
                             "platforms: [catalina]\n"
                             "components: [{kind: driver, version: \"580.65.06\"\n"
                             "prerequisites: []\n";
  Reply bad = call(*op_, "POST", "/api/v1/bundles", broken, "application/yaml");
  ASSERT_TRUE(isError(bad, 400, "invalid_argument"));
  const std::string message = bad.doc()["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("YAML"), std::string::npos) << message;
  EXPECT_NE(message.find("line 5, column 1"), std::string::npos) << message;
  EXPECT_EQ(call(*op_, "GET", "/api/v1/bundles").doc()["items"].size(), 1u);
  // Well-formed YAML with bad content is the 422 of the JSON form.
  Reply invalid = call(*op_, "POST", "/api/v1/bundles", "name: x\nversion: \"1\"\nplatforms: [hopper]\n", "application/yaml");
  ASSERT_TRUE(isError(invalid, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(invalid), (std::set<std::string>{"platforms[0]", "components"})) << invalid.body;
}

TEST_F(RolloutsApiTest, AnUnquotedYamlBundleVersionKeepsItsDigits) {
  const std::string yaml = "name: gb200-driver\nversion: 1.10\nplatforms: [catalina]\ncomponents:\n"
                           "  - {kind: driver, version: \"580.65.06\", artifact: /opt/x.run, sha256: " + kSha + "}\n";
  Reply r = call(*op_, "POST", "/api/v1/bundles", yaml, "application/yaml");
  if (r.status == 422) {
    EXPECT_EQ(fieldPaths(r), std::set<std::string>{"version"}) << r.body;
  } else {
    ASSERT_EQ(r.status, 201) << r.body;
    EXPECT_EQ(r.doc()["version"], "1.10") << r.body;
  }
}

TEST_F(RolloutsApiTest, ABundleUsedByARolloutIsImmutableAndAChangeIsANewVersion) {
  importFleet(mixedFleet());
  Reply first = call(*op_, "POST", "/api/v1/bundles", driverBundle().dump());
  ASSERT_EQ(first.status, 201) << first.body;
  const std::string id = first.doc()["id"].get<std::string>();
  EXPECT_EQ(first.doc()["used"], false);
  EXPECT_EQ(first.doc()["outcome"], "created");
  // Identical content again: the same bundle, not a second one.
  Reply again = call(*op_, "POST", "/api/v1/bundles", driverBundle().dump());
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.doc()["id"], id);
  EXPECT_EQ(again.doc()["outcome"], "unchanged");
  // Unused, it may still be corrected in place (documented: "an unused one updated").
  Reply corrected = call(*op_, "POST", "/api/v1/bundles", driverBundle("2026.11", "580.65.07").dump());
  EXPECT_EQ(corrected.status, 200) << corrected.body;
  EXPECT_EQ(corrected.doc()["id"], id);
  EXPECT_EQ(corrected.doc()["outcome"], "updated");
  EXPECT_EQ(corrected.doc()["components"][0]["version"], "580.65.07");
  EXPECT_EQ(auditCount("action = 'bundle.update' AND target = '" + id + "'"), "1");

  const std::string ro = createRollout(id, {"t01-b01-p0001"});
  ASSERT_FALSE(ro.empty());
  EXPECT_EQ(call(*op_, "GET", "/api/v1/bundles/" + id).doc()["used"], true);
  // Used: a change is refused and the stored bundle is untouched...
  const std::string before = writtenRows();
  Reply changed = call(*op_, "POST", "/api/v1/bundles", driverBundle("2026.11", "580.65.08").dump());
  ASSERT_TRUE(isError(changed, 409, "conflict"));
  EXPECT_EQ(changed.doc()["error"]["details"]["bundle"], id) << changed.body;
  EXPECT_NE(changed.doc()["error"]["message"].get<std::string>().find("new version"), std::string::npos) << changed.body;
  Reply stored = call(*op_, "GET", "/api/v1/bundles/gb200-driver@2026.11");
  EXPECT_EQ(stored.doc()["components"][0]["version"], "580.65.07") << stored.body;
  EXPECT_EQ(writtenRows(), before);
  // ...the identical content is still a harmless repeat...
  Reply repeat = call(*op_, "POST", "/api/v1/bundles", driverBundle("2026.11", "580.65.07").dump());
  EXPECT_EQ(repeat.status, 200) << repeat.body;
  EXPECT_EQ(repeat.doc()["id"], id);
  EXPECT_EQ(writtenRows(), before);
  // ...and the change goes out as a new version: a new, unused bundle.
  Reply next = call(*op_, "POST", "/api/v1/bundles", driverBundle("2026.12", "580.65.08").dump());
  ASSERT_EQ(next.status, 201) << next.body;
  EXPECT_NE(next.doc()["id"], id);
  EXPECT_EQ(next.doc()["used"], false);
  const json items = call(*op_, "GET", "/api/v1/bundles").doc()["items"];
  ASSERT_EQ(items.size(), 2u);
  std::set<std::string> versions;
  for (const auto& b : items) versions.insert(b["version"].get<std::string>());
  EXPECT_EQ(versions, (std::set<std::string>{"2026.11", "2026.12"}));
  EXPECT_EQ(auditCount("action = 'bundle.create' AND actor = '" + op_id_ + "'"), "2");
}

TEST_F(RolloutsApiTest, ComplianceCountsCompliantNeedsUpgradeAndIncompatiblePodsOfTheFleet) {
  const std::string id = mixedFleetAndBundle();
  Reply r = call(*op_, "GET", "/api/v1/bundles/" + id + "/compliance");
  ASSERT_EQ(r.status, 200) << r.body;
  const json doc = r.doc();
  EXPECT_EQ(doc["counts"], (json{{"compliant", 1}, {"needs_upgrade", 5}, {"needs_downgrade", 0}, {"incompatible", 2}})) << r.body;
  // 18 compute hosts a pod (the wrong platform's hosts: see the skipped test below).
  EXPECT_EQ(doc["host_counts"]["compliant"], 18) << r.body;
  EXPECT_EQ(doc["host_counts"]["needs_upgrade"], 5 * 18) << r.body;
  std::map<std::string, json> by_pod;
  for (const auto& p : doc["pods"]) by_pod[p["pod"].get<std::string>()] = p;
  ASSERT_EQ(by_pod.size(), 8u) << r.body;
  EXPECT_EQ(by_pod["t01-b01-p0001"]["state"], "needs_upgrade");
  const std::string why = by_pod["t01-b01-p0001"]["reasons"].dump();
  EXPECT_NE(why.find(std::string("driver ") + kOldDriver + " -> " + kNewDriver), std::string::npos) << why;
  EXPECT_EQ(by_pod["t01-b01-p0003"]["state"], "compliant");
  EXPECT_EQ(by_pod["t01-b01-p0003"]["reasons"], json::array());
  EXPECT_EQ(by_pod["t01-b01-p0004"]["state"], "incompatible");
  EXPECT_NE(by_pod["t01-b01-p0004"]["reasons"].dump().find("platform clemente"), std::string::npos)
      << by_pod["t01-b01-p0004"].dump();
  EXPECT_EQ(by_pod["t01-b01-p0005"]["state"], "incompatible");
  const std::string prereq = by_pod["t01-b01-p0005"]["reasons"].dump();
  EXPECT_NE(prereq.find("bmc 24.10-1"), std::string::npos) << prereq;
  EXPECT_NE(prereq.find("25.04-1"), std::string::npos) << prereq;
  EXPECT_EQ(by_pod["t01-b01-p0005"]["hosts_incompatible"], 18);
  EXPECT_EQ(by_pod["t01-b02-p0002"]["state"], "needs_upgrade");
  EXPECT_EQ(by_pod["t01-b02-p0002"]["hosts_needing_upgrade"], 18);

  // The filters narrow the pods counted.
  Reply b02 = call(*op_, "GET", "/api/v1/bundles/" + id + "/compliance?building=t01-b02");
  ASSERT_EQ(b02.status, 200) << b02.body;
  EXPECT_EQ(b02.doc()["counts"], (json{{"compliant", 0}, {"needs_upgrade", 2}, {"needs_downgrade", 0}, {"incompatible", 0}}));
  Reply clemente = call(*op_, "GET", "/api/v1/bundles/gb200-driver@2026.11/compliance?platform=clemente");
  ASSERT_EQ(clemente.status, 200) << clemente.body;
  EXPECT_EQ(clemente.doc()["counts"], (json{{"compliant", 0}, {"needs_upgrade", 0}, {"needs_downgrade", 0}, {"incompatible", 1}}));
  Reply one = call(*op_, "GET", "/api/v1/bundles/" + id + "/compliance?pod=t01-b01-p0003");
  ASSERT_EQ(one.doc()["pods"].size(), 1u) << one.body;
  EXPECT_EQ(one.doc()["counts"]["compliant"], 1);

  EXPECT_TRUE(isError(call(*op_, "GET", "/api/v1/bundles/b-999/compliance"), 404, "not_found"));
  EXPECT_TRUE(isError(call(*op_, "GET", "/api/v1/bundles/" + id + "/compliance?rack=x"), 400, "invalid_argument"));
  EXPECT_TRUE(isError(call(*op_, "GET", "/api/v1/bundles/nope@1"), 404, "not_found"));
}

TEST_F(RolloutsApiTest, ComplianceCountsTheHostsOfAPodOnTheWrongPlatformAsIncompatible) {
  const std::string id = mixedFleetAndBundle();
  Reply r = call(*op_, "GET", "/api/v1/bundles/" + id + "/compliance");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.doc()["host_counts"], (json{{"compliant", 18}, {"needs_upgrade", 5 * 18}, {"needs_downgrade", 0}, {"incompatible", 2 * 18}}));
  Reply clemente = call(*op_, "GET", "/api/v1/bundles/" + id + "/compliance?pod=t01-b01-p0004");
  ASSERT_EQ(clemente.doc()["pods"].size(), 1u) << clemente.body;
  EXPECT_EQ(clemente.doc()["pods"][0]["hosts_incompatible"], 18) << clemente.body;
}

// ---- planning and creating ----

// Issue 18: after the fleet moved on, an older bundle is a downgrade, named as one in the
// compliance, warned about in the dry run, and refused unless allowed with a reason (audited).
TEST_F(RolloutsApiTest, ADowngradeIsNamedAsOneAndRefusedUnlessAllowedWithAReason) {
  importFleet(mixedFleet());
  Reply older = call(*op_, "POST", "/api/v1/bundles", driverBundle("2026.01", "560.35.03").dump());
  ASSERT_EQ(older.status, 201) << older.body;
  const std::string bundle = older.doc()["id"];

  const json c = call(*op_, "GET", "/api/v1/bundles/" + bundle + "/compliance").doc();
  EXPECT_EQ(c["counts"]["needs_upgrade"], 0) << c.dump();
  EXPECT_EQ(c["counts"]["needs_downgrade"], 6) << c.dump();  // 5 on 570 (p0006 incoming too), 1 on 580; p0004/5 incompatible
  EXPECT_EQ(c["host_counts"]["needs_downgrade"], 6 * 18);
  json p3;
  for (const auto& p : c["pods"])
    if (p["pod"] == "t01-b01-p0003") p3 = p;
  ASSERT_TRUE(p3.is_object()) << c.dump();
  EXPECT_EQ(p3["state"], "needs_downgrade");
  EXPECT_EQ(p3["reasons"][0], "driver 580.65.06 -> 560.35.03 (older)");
  EXPECT_EQ(p3["components"][0]["kind"], "driver");
  EXPECT_EQ(p3["components"][0]["current"][0], (json{{"version", "580.65.06"}, {"targets", 18}, {"bundle_is", "older"}}));

  const json selector = {{"pods", {"t01-b01-p0001", "t01-b01-p0003"}}};
  Reply dry = call(*op_, "POST", "/api/v1/rollouts", json{{"bundle", bundle}, {"selector", selector}, {"dry_run", true}}.dump());
  ASSERT_EQ(dry.status, 200) << dry.body;
  ASSERT_TRUE(dry.doc()["warnings"].is_array()) << dry.body;
  EXPECT_NE(dry.doc()["warnings"][0].get<std::string>().find("2 pods would move to older versions"), std::string::npos);
  EXPECT_EQ(dry.doc()["plan"]["downgrades"].size(), 2u);

  const std::string before = writtenRows();
  Reply refused = call(*op_, "POST", "/api/v1/rollouts", json{{"bundle", bundle}, {"selector", selector}}.dump());
  EXPECT_TRUE(isError(refused, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(refused), (std::set<std::string>{"allow_downgrade"})) << refused.body;
  EXPECT_NE(refused.doc()["error"]["message"].get<std::string>().find("downgrade, not an upgrade"), std::string::npos);
  Reply no_reason = call(*op_, "POST", "/api/v1/rollouts",
                         json{{"bundle", bundle}, {"selector", selector}, {"allow_downgrade", true}, {"reason", " "}}.dump());
  EXPECT_TRUE(isError(no_reason, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(no_reason), (std::set<std::string>{"reason"})) << no_reason.body;
  EXPECT_EQ(writtenRows(), before) << "a refused downgrade wrote something";

  const std::string why = "580.65.06 hangs NCCL all-reduce on this fabric (INC-4411)";
  Reply allowed = call(*op_, "POST", "/api/v1/rollouts",
                       json{{"bundle", bundle}, {"selector", selector}, {"allow_downgrade", true}, {"reason", why}}.dump());
  ASSERT_EQ(allowed.status, 201) << allowed.body;
  const std::string id = allowed.doc()["id"];
  EXPECT_EQ(auditCount("action = 'rollout.create' AND target = '" + id + "' AND details->>'reason' = '" + why + "'"), "1");
  bool said = false;
  for (const auto& e : decisions(id))
    if (e["kind"] == "created" && e["message"].get<std::string>().find("a downgrade allowed because: " + why) != std::string::npos)
      said = true;
  EXPECT_TRUE(said) << "the created event does not say it is an allowed downgrade";
}

TEST_F(RolloutsApiTest, ADryRunReturnsTheWavesAndEveryExcludedPodWithItsReasonAndWritesNothing) {
  const std::string bundle = mixedFleetAndBundle();
  const json policy = {{"canary_pods", 1}, {"waves", {"50%", "100%"}}, {"order", "spread"}};
  auto dryRun = [&] {
    Reply r = call(*op_, "POST", "/api/v1/rollouts",
                   json{{"bundle", bundle}, {"policy", policy}, {"dry_run", true}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.doc();
  };
  auto waves = [](const json& plan) {
    std::vector<std::vector<std::string>> out;
    for (const auto& w : plan["waves"]) out.push_back(w["pods"].get<std::vector<std::string>>());
    return out;
  };
  auto excluded = [](const json& plan) {
    std::map<std::string, std::string> out;
    for (const auto& e : plan["excluded"]) out[e["pod"].get<std::string>()] = e["reason"].get<std::string>();
    return out;
  };
  const std::string empty = writtenRows();
  json first = dryRun();
  EXPECT_EQ(first["dry_run"], true);
  EXPECT_EQ(first["bundle"]["id"], bundle);
  EXPECT_EQ(first["policy"]["waves"], json::array({"50%", "100%"}));
  // Canary, then half, then the rest; spread alternates the buildings.
  EXPECT_EQ(waves(first["plan"]), (std::vector<std::vector<std::string>>{
                                      {"t01-b01-p0001"}, {"t01-b02-p0001"}, {"t01-b01-p0002", "t01-b02-p0002"}}))
      << first["plan"].dump();
  EXPECT_EQ(first["plan"]["eligible"], 4);
  auto out = excluded(first["plan"]);
  ASSERT_EQ(out.size(), 4u) << first["plan"].dump();
  EXPECT_EQ(out["t01-b01-p0003"], "compliant");
  EXPECT_EQ(out["t01-b01-p0004"].rfind("incompatible", 0), 0u) << out["t01-b01-p0004"];
  EXPECT_NE(out["t01-b01-p0004"].find("platform clemente"), std::string::npos) << out["t01-b01-p0004"];
  EXPECT_EQ(out["t01-b01-p0005"].rfind("incompatible", 0), 0u) << out["t01-b01-p0005"];
  EXPECT_NE(out["t01-b01-p0005"].find("bmc 24.10-1"), std::string::npos) << out["t01-b01-p0005"];
  EXPECT_EQ(out["t01-b01-p0006"], "not in service (pod is incoming)");
  // Nothing written: no rollout, no event, no audit record, the bundle still unused.
  EXPECT_EQ(call(*op_, "GET", "/api/v1/rollouts").doc()["items"], json::array());
  EXPECT_EQ(writtenRows(), empty);
  EXPECT_EQ(call(*op_, "GET", "/api/v1/bundles/" + bundle).doc()["used"], false);

  // A pod another rollout holds (created, not started) is left out with that rollout's id.
  const std::string other = createRollout(bundle, {"t01-b02-p0002"});
  ASSERT_FALSE(other.empty());
  const std::string with_other = writtenRows();
  json second = dryRun();
  EXPECT_EQ(waves(second["plan"]), (std::vector<std::vector<std::string>>{
                                       {"t01-b01-p0001"}, {"t01-b02-p0001"}, {"t01-b01-p0002"}}))
      << second["plan"].dump();
  out = excluded(second["plan"]);
  EXPECT_EQ(out.size(), 5u) << second["plan"].dump();
  EXPECT_EQ(out["t01-b02-p0002"], "in rollout " + other);
  EXPECT_EQ(call(*op_, "GET", "/api/v1/rollouts").doc()["items"].size(), 1u);
  EXPECT_EQ(decisions(other).size(), 1u);
  EXPECT_EQ(writtenRows(), with_other);
}

TEST_F(RolloutsApiTest, ARolloutWithNothingToUpgradeIs409AndWritesNothing) {
  const std::string bundle = mixedFleetAndBundle();
  const std::string before = writtenRows();
  Reply r = call(*op_, "POST", "/api/v1/rollouts",
                 json{{"bundle", bundle}, {"selector", {{"pods", {"t01-b01-p0003", "t01-b01-p0004"}}}}}.dump());
  ASSERT_TRUE(isError(r, 409, "conflict"));
  EXPECT_EQ(r.doc()["error"]["details"]["excluded"], "2") << r.body;
  EXPECT_EQ(writtenRows(), before);
}

TEST_F(RolloutsApiTest, ARolloutWithSeveralBadPolicyFieldsIs422NamingEachAndWritesNothing) {
  const std::string bundle = mixedFleetAndBundle();
  const json policy = {{"canary_pods", -1},
                       {"waves", {"50%", "abc", 0}},
                       {"soak", "forever"},
                       {"max_concurrent_pods", 0},
                       {"order", "random"},
                       {"allocated", "evict"},
                       {"failure_budget", json::object()},
                       {"capacity_floor", {{"max_percent_down", 150}}},
                       {"colour", "red"}};
  const std::string before = writtenRows();
  for (bool dry_run : {true, false}) {
    Reply r = call(*op_, "POST", "/api/v1/rollouts",
                   json{{"bundle", bundle}, {"policy", policy}, {"dry_run", dry_run}}.dump());
    ASSERT_TRUE(isError(r, 422, "invalid_content")) << "dry_run " << dry_run;
    EXPECT_EQ(fieldPaths(r), (std::set<std::string>{"policy.canary_pods", "policy.waves[1]", "policy.waves[2]",
                                                    "policy.soak", "policy.max_concurrent_pods", "policy.order",
                                                    "policy.allocated", "policy.failure_budget",
                                                    "policy.capacity_floor.max_percent_down", "policy.colour"}))
        << r.body;
  }
  // A bad selector is named the same way.
  Reply sel = call(*op_, "POST", "/api/v1/rollouts",
                   json{{"bundle", bundle}, {"selector", {{"pods", "t01-b01-p0001"}, {"racks", {"x"}}}}}.dump());
  ASSERT_TRUE(isError(sel, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(sel), (std::set<std::string>{"selector.pods", "selector.racks"})) << sel.body;
  EXPECT_EQ(call(*op_, "GET", "/api/v1/rollouts").doc()["items"], json::array());
  EXPECT_EQ(writtenRows(), before);
}

TEST_F(RolloutsApiTest, ARolloutOfAnUnknownOrMissingBundleIs422AndWritesNothing) {
  mixedFleetAndBundle();
  const std::string before = writtenRows();
  for (const std::string ref : {"b-999", "gb200-driver@0.0.1"}) {
    Reply r = call(*op_, "POST", "/api/v1/rollouts", json{{"bundle", ref}, {"dry_run", true}}.dump());
    ASSERT_TRUE(isError(r, 422, "invalid_content")) << ref;
    EXPECT_NE(r.doc()["error"]["message"].get<std::string>().find(ref), std::string::npos) << r.body;
  }
  Reply missing = call(*op_, "POST", "/api/v1/rollouts", json{{"selector", json::object()}}.dump());
  ASSERT_TRUE(isError(missing, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(missing), std::set<std::string>{"bundle"}) << missing.body;
  Reply unknown = call(*op_, "POST", "/api/v1/rollouts", json{{"bundle", "b-1"}, {"pods", {"x"}}}.dump());
  ASSERT_TRUE(isError(unknown, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(unknown), std::set<std::string>{"pods"}) << unknown.body;
  EXPECT_TRUE(isError(call(*op_, "POST", "/api/v1/rollouts", "{\"bundle\": "), 400, "invalid_argument"));
  EXPECT_EQ(writtenRows(), before);
}

TEST_F(RolloutsApiTest, ARolloutOfAnUnknownBundleNamesTheBundleField) {
  mixedFleetAndBundle();
  Reply r = call(*op_, "POST", "/api/v1/rollouts", json{{"bundle", "b-999"}}.dump());
  ASSERT_TRUE(isError(r, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(r), std::set<std::string>{"bundle"}) << r.body;
}

TEST_F(RolloutsApiTest, ARolloutWithBadFieldsInTheBodySelectorAndPolicyNamesThemAll) {
  const std::string bundle = mixedFleetAndBundle();
  Reply r = call(*op_, "POST", "/api/v1/rollouts",
                 json{{"bundle", bundle}, {"colour", "red"}, {"selector", {{"racks", {"x"}}}},
                      {"policy", {{"soak", "forever"}}}}
                     .dump());
  ASSERT_TRUE(isError(r, 422, "invalid_content"));
  EXPECT_EQ(fieldPaths(r), (std::set<std::string>{"colour", "selector.racks", "policy.soak"})) << r.body;
}

TEST_F(RolloutsApiTest, ARolloutWhoseStartOrDryRunIsNotABooleanIsRefusedNamingItAndNothingIsCreated) {
  const std::string bundle = mixedFleetAndBundle();
  const std::string before = writtenRows();
  for (const char* field : {"start", "dry_run"}) {
    Reply r = call(*op_, "POST", "/api/v1/rollouts", json{{"bundle", bundle}, {field, "yes"}}.dump());
    ASSERT_TRUE(isError(r, 422, "invalid_content")) << field;
    EXPECT_EQ(fieldPaths(r), std::set<std::string>{field}) << r.body;
  }
  EXPECT_EQ(call(*op_, "GET", "/api/v1/rollouts").doc()["items"], json::array());
  EXPECT_EQ(writtenRows(), before);
}

// ---- verbs ----

TEST_F(RolloutsApiTest, AVerbInTheWrongStateIs409AndLeavesTheRolloutAsItWas) {
  const std::string bundle = mixedFleetAndBundle();
  const std::string id = createRollout(bundle, {"t01-b01-p0001"});
  ASSERT_FALSE(id.empty());
  // Each refused verb: 409 naming the current state; state, events and audit records unchanged.
  auto refused = [&](const std::string& verb, const std::string& current) {
    const auto events = decisions(id).size();
    const std::string audits = auditCount("target = '" + id + "'");
    Reply r = call(*op_, "POST", "/api/v1/rollouts/" + id + "/" + verb);
    EXPECT_TRUE(isError(r, 409, "conflict")) << verb << " in " << current;
    EXPECT_EQ(r.doc()["error"]["details"]["state"], current) << r.body;
    EXPECT_EQ(state(id), current) << "after a refused " << verb;
    EXPECT_EQ(decisions(id).size(), events) << "after a refused " << verb;
    EXPECT_EQ(auditCount("target = '" + id + "'"), audits) << "after a refused " << verb;
  };
  auto accepted = [&](const std::string& verb, const std::string& next) {
    Reply r = call(*op_, "POST", "/api/v1/rollouts/" + id + "/" + verb);
    EXPECT_EQ(r.status, 200) << verb << ": " << r.body;
    EXPECT_EQ(r.doc().value("state", "?"), next) << verb;
  };
  EXPECT_EQ(state(id), "created");
  refused("pause", "created");
  refused("resume", "created");
  accepted("start", "running");
  refused("start", "running");
  refused("resume", "running");
  accepted("pause", "paused");
  refused("pause", "paused");
  refused("start", "paused");
  accepted("resume", "running");
  Reply abort = call(*op_, "POST", "/api/v1/rollouts/" + id + "/abort");
  ASSERT_EQ(abort.status, 200) << abort.body;
  EXPECT_TRUE(abort.doc()["state"] == "aborting" || abort.doc()["state"] == "aborted") << abort.body;
  // No agent holds a step: the controller finishes the abort on its own.
  ASSERT_TRUE(waitFor([&] { return state(id) == "aborted"; }, std::chrono::seconds(30))) << state(id);
  for (const char* verb : {"start", "pause", "resume", "abort"}) refused(verb, "aborted");
}

// A maintenance window that is closed now (it opens two hours from now, every day): the started
// rollout drains nothing, and every pod says why it waits and when the window opens.
TEST_F(RolloutsApiTest, OutsideItsMaintenanceWindowAStartedRolloutStartsNoPodAndSaysWhenItOpens) {
  const std::string bundle = mixedFleetAndBundle();
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char window[32];
  std::snprintf(window, sizeof window, "%02d:00-%02d:00", (tm.tm_hour + 2) % 24, (tm.tm_hour + 3) % 24);
  json body = {{"bundle", bundle},
               {"selector", {{"pods", {"t01-b01-p0001", "t01-b01-p0002"}}}},
               {"policy", {{"canary_pods", 0}, {"waves", {"100%"}}, {"max_concurrent_pods", 2}, {"capacity_floor", {{"max_percent_down", 100}}},
                           {"windows", {window}}}},
               {"start", true}};
  Reply r = call(*op_, "POST", "/api/v1/rollouts", body.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.doc().value("id", "");
  EXPECT_EQ(r.doc()["policy"]["windows"], json::array({window})) << r.body;
  auto reasons = [&] {
    std::vector<std::string> out;
    const json doc = call(*admin_, "GET", "/api/v1/rollouts/" + id + "/pods").doc();
    for (const auto& p : doc["items"])
      out.push_back(p.value("phase", "") + " " + p.value("waiting_reason", ""));
    return out;
  };
  ASSERT_TRUE(waitFor(
      [&] {
        auto rs = reasons();
        return rs.size() == 2 && std::all_of(rs.begin(), rs.end(), [](const std::string& s) { return s.rfind("pending window:", 0) == 0; });
      },
      std::chrono::seconds(15)))
      << call(*admin_, "GET", "/api/v1/rollouts/" + id + "/pods").body;
  for (const auto& reason : reasons()) {
    EXPECT_NE(reason.find("outside the maintenance windows (" + std::string(window) + "); the next opens "), std::string::npos)
        << reason;
    EXPECT_NE(reason.find(" UTC"), std::string::npos) << reason;
  }
  Reply view = call(*admin_, "GET", "/api/v1/rollouts/" + id);
  EXPECT_EQ(view.doc()["waiting"]["window"], 2) << view.body;
  EXPECT_EQ(view.doc()["counts"]["draining"], 0) << view.body;
  // A bad window is a 422 naming it.
  body["policy"]["windows"] = {"weekdays 22:00-06:00"};
  body["selector"]["pods"] = {"t01-b02-p0001"};
  EXPECT_EQ(fieldPaths(call(*op_, "POST", "/api/v1/rollouts", body.dump())), std::set<std::string>{"policy.windows[0]"});
}

TEST_F(RolloutsApiTest, AVerbOnAnUnknownRolloutIs404) {
  for (const char* verb : {"start", "pause", "resume", "abort", "rollback"})
    EXPECT_TRUE(isError(call(*op_, "POST", std::string("/api/v1/rollouts/ro-999/") + verb), 404, "not_found")) << verb;
  for (const char* path : {"/api/v1/rollouts/ro-999", "/api/v1/rollouts/ro-999/pods", "/api/v1/rollouts/ro-999/events"})
    EXPECT_TRUE(isError(call(*op_, "GET", path), 404, "not_found")) << path;
  EXPECT_EQ(db_->query("SELECT count(*) FROM rollouts"), "0");
}

TEST_F(RolloutsApiTest, AMisspeltVerbIs404NotAMethodError) {
  const std::string bundle = mixedFleetAndBundle();
  const std::string id = createRollout(bundle, {"t01-b01-p0001"});
  EXPECT_TRUE(isError(call(*op_, "POST", "/api/v1/rollouts/" + id + "/abrot"), 404, "not_found"));
  EXPECT_EQ(state(id), "created");
}

// ---- roles ----

TEST_F(RolloutsApiTest, AViewerReadsBundlesAndRolloutsButCannotChangeThem) {
  const std::string bundle = mixedFleetAndBundle();
  const std::string id = createRollout(bundle, {"t01-b01-p0001"});
  ASSERT_FALSE(id.empty());
  auto viewer = client(createToken("viewer", "dashboard"));
  for (const std::string& path : readPaths(bundle, id))
    EXPECT_EQ(call(*viewer, "GET", path).status, 200) << path;
  const std::string before = writtenRows();
  EXPECT_TRUE(isError(call(*viewer, "POST", "/api/v1/bundles", driverBundle("2027.01").dump()), 403,
                      "permission_denied"));
  for (bool dry_run : {true, false})
    EXPECT_TRUE(isError(call(*viewer, "POST", "/api/v1/rollouts",
                             json{{"bundle", bundle}, {"dry_run", dry_run}, {"start", true}}.dump()),
                        403, "permission_denied"))
        << "dry_run " << dry_run;
  for (const char* verb : {"start", "pause", "resume", "abort", "rollback"})
    EXPECT_TRUE(isError(call(*viewer, "POST", "/api/v1/rollouts/" + id + "/" + verb), 403, "permission_denied"))
        << verb;
  EXPECT_EQ(state(id), "created");
  EXPECT_EQ(writtenRows(), before);
}

TEST_F(RolloutsApiTest, EveryBundleAndRolloutCallWithoutATokenIs401) {
  const std::string bundle = mixedFleetAndBundle();
  const std::string id = createRollout(bundle, {"t01-b01-p0001"});
  ASSERT_FALSE(id.empty());
  auto none = client("");
  const std::string before = writtenRows();
  for (const std::string& path : readPaths(bundle, id)) {
    Reply r = call(*none, "GET", path);
    EXPECT_TRUE(isError(r, 401, "unauthenticated")) << path;
    EXPECT_EQ(r.headers["www-authenticate"], "Bearer") << path;
  }
  EXPECT_TRUE(isError(call(*none, "POST", "/api/v1/bundles", driverBundle("2027.01").dump()), 401, "unauthenticated"));
  EXPECT_TRUE(isError(call(*none, "POST", "/api/v1/rollouts", json{{"bundle", bundle}, {"dry_run", true}}.dump()), 401,
                      "unauthenticated"));
  for (const char* verb : {"start", "pause", "resume", "abort", "rollback"})
    EXPECT_TRUE(isError(call(*none, "POST", "/api/v1/rollouts/" + id + "/" + verb), 401, "unauthenticated")) << verb;
  EXPECT_EQ(call(*none, "GET", "/healthz").status, 200);
  EXPECT_EQ(state(id), "created");
  EXPECT_EQ(writtenRows(), before);
}

// ---- events and audit ----

TEST_F(RolloutsApiTest, CreateStartAndPauseAreEventsAndAuditRecordsNamingTheActor) {
  const std::string bundle = mixedFleetAndBundle();
  EXPECT_EQ(auditCount("action = 'bundle.create' AND target = '" + bundle + "' AND actor = '" + op_id_ + "'"), "1");
  const std::string id = createRollout(bundle, {"t01-b01-p0001", "t01-b02-p0001"});
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(call(*op_, "POST", "/api/v1/rollouts/" + id + "/start").status, 200);
  ASSERT_EQ(call(*op_, "POST", "/api/v1/rollouts/" + id + "/pause").status, 200);

  const json view = call(*op_, "GET", "/api/v1/rollouts/" + id).doc();
  EXPECT_EQ(view["created_by"], op_id_);
  const auto events = decisions(id);  // newest first
  std::vector<std::string> kinds;
  for (const auto& e : events) kinds.push_back(e["kind"].get<std::string>());
  EXPECT_EQ(kinds, (std::vector<std::string>{"paused", "running", "created"}));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_NE(events[0]["message"].get<std::string>().find(op_id_), std::string::npos) << events[0].dump();
  EXPECT_NE(events[1]["message"].get<std::string>().find(op_id_), std::string::npos) << events[1].dump();
  EXPECT_NE(events[2]["message"].get<std::string>().find(bundle), std::string::npos) << events[2].dump();
  for (const auto& e : events) EXPECT_GT(e["at_ms"].get<std::int64_t>(), 0);
  // The audit log (read from the database: the API does not serve it) has each with its actor.
  for (const char* action : {"rollout.create", "rollout.running", "rollout.paused"})
    EXPECT_EQ(auditCount(std::string("action = '") + action + "' AND target = '" + id + "' AND actor = '" + op_id_ + "'"),
              "1")
        << action;
}

TEST_F(RolloutsApiTest, ARolloutCreatedAndStartedAtOnceNamesWhoStartedItInItsEvents) {
  const std::string bundle = mixedFleetAndBundle();
  const std::string id = createRollout(bundle, {"t01-b01-p0001"}, /*start=*/true);
  ASSERT_FALSE(id.empty());
  const auto events = decisions(id);
  ASSERT_EQ(events.size(), 2u);
  for (const auto& e : events)
    EXPECT_NE(e["message"].get<std::string>().find(op_id_), std::string::npos) << e.dump();
}

TEST_F(RolloutsApiTest, AVerbsReasonGoesIntoItsEventAndAuditAndABadBodyChangesNothing) {
  const std::string bundle = mixedFleetAndBundle();
  const std::string id = createRollout(bundle, {"t01-b01-p0001", "t01-b02-p0001"});
  ASSERT_FALSE(id.empty());
  const std::string verbs = "/api/v1/rollouts/" + id + "/";
  // Bad bodies: 422 (400 for malformed JSON), the rollout stays where it was, no event.
  for (const std::string& bad : {std::string(R"({"reason": 7})"), std::string(R"({"why": "x"})"), std::string("[1]"),
                                 R"({"reason": ")" + std::string(1001, 'x') + R"("})"}) {
    SCOPED_TRACE(bad);
    Reply r = call(*op_, "POST", verbs + "start", bad);
    EXPECT_EQ(r.status, 422) << r.body;
    EXPECT_TRUE(r.doc().contains("error")) << r.body;
  }
  EXPECT_EQ(call(*op_, "POST", verbs + "start", "{not json").status, 400);
  EXPECT_EQ(call(*op_, "GET", "/api/v1/rollouts/" + id).doc()["state"], "created");
  EXPECT_EQ(decisions(id).size(), 1u) << "only the creation";

  ASSERT_EQ(call(*op_, "POST", verbs + "start").status, 200);  // no body: no reason
  Reply aborted = call(*op_, "POST", verbs + "abort", R"({"reason": "CX7 firmware 28.43 drops links"})");
  ASSERT_EQ(aborted.status, 200) << aborted.body;
  const auto events = decisions(id);  // newest first
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0]["kind"], "aborting");
  EXPECT_EQ(events[0]["message"], "aborted by " + op_id_ + ": CX7 firmware 28.43 drops links");
  EXPECT_EQ(events[1]["message"], "started by " + op_id_);
  EXPECT_EQ(auditCount("action = 'rollout.aborting' AND target = '" + id + "' AND details->>'reason' LIKE '%CX7 firmware 28.43%'"), "1");
}

}  // namespace
}  // namespace kiln::apitest
