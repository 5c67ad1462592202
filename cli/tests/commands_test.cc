// Each command against a fake transport: the request it builds, what it prints, its exit code.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/api_call.h"
#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using testing::CliHarness;
using Query = std::vector<std::pair<std::string, std::string>>;

const char* kPodPage = R"({"items": [
  {"id": "prn-b01-p0001", "site": "prn", "building": "prn-b01", "platform": "clemente", "state": "in_service",
   "labels": {"row": "a"}, "racks": 1, "hosts_by_state": {"available": 18}, "healthy_gpus": 72},
  {"id": "prn-b01-p0002", "site": "prn", "building": "prn-b01", "platform": "catalina", "state": "degraded",
   "labels": {}, "racks": 2, "hosts_by_state": {"available": 17, "failed": 1}, "healthy_gpus": 68}],
  "next_cursor": null})";

std::string page(const std::vector<std::string>& ids, const std::string& next) {
  json items = json::array();
  for (const auto& id : ids) items.push_back({{"id", id}});
  return json{{"items", items}, {"next_cursor", next.empty() ? json() : json(next)}}.dump();
}

TEST(PodsCommandTest, ListSendsEveryFilterPercentEncoded) {
  CliHarness h;
  h.transport.reply(200, kPodPage);
  auto r = h.run({"pods", "list", "--site", "prn one", "--building", "prn-b01", "--platform", "clemente", "--state",
                  "degraded", "--label", "row=a&b", "--limit", "5"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(h.transport.requests.size(), 1u);
  const ApiRequest& req = h.transport.requests[0];
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.path, "/api/v1/pods");
  EXPECT_EQ(req.query, (Query{{"limit", "5"}, {"site", "prn one"}, {"building", "prn-b01"}, {"platform", "clemente"},
                              {"state", "degraded"}, {"label", "row=a&b"}}));
  EXPECT_EQ(req.pathAndQuery(),
            "/api/v1/pods?limit=5&site=prn%20one&building=prn-b01&platform=clemente&state=degraded&label=row%3Da%26b");
}

TEST(PodsCommandTest, ListPrintsAnAlignedTable) {
  CliHarness h;
  h.transport.reply(200, kPodPage);
  auto r = h.run({"pods", "list"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "ID             PLATFORM  STATE       HEALTHY_GPUS  HOSTS                  BUILDING  SITE  LABELS\n"
            "prn-b01-p0001  clemente  in_service  72            available=18           prn-b01   prn   row=a\n"
            "prn-b01-p0002  catalina  degraded    68            available=17 failed=1  prn-b01   prn   -\n");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(h.transport.requests[0].query.empty());
}

TEST(PodsCommandTest, JsonPrintsTheServersDocument) {
  CliHarness h;
  h.transport.reply(200, kPodPage);
  auto r = h.run({"pods", "list", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(json::parse(r.out), json::parse(kPodPage));
}

TEST(PodsCommandTest, AllFollowsCursorsAndMergesItems) {
  CliHarness h;
  h.transport.reply(200, page({"p1", "p2"}, "c1"));
  h.transport.reply(200, page({"p3"}, "c2"));
  h.transport.reply(200, page({"p4"}, ""));
  auto r = h.run({"pods", "list", "--all", "--json", "--platform", "catalina"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(h.transport.requests.size(), 3u);
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/pods?limit=1000&platform=catalina");
  EXPECT_EQ(h.transport.requests[1].pathAndQuery(), "/api/v1/pods?limit=1000&platform=catalina&cursor=c1");
  EXPECT_EQ(h.transport.requests[2].pathAndQuery(), "/api/v1/pods?limit=1000&platform=catalina&cursor=c2");
  const json out = json::parse(r.out);
  EXPECT_EQ(out, (json{{"items", json::array({{{"id", "p1"}}, {{"id", "p2"}}, {{"id", "p3"}}, {{"id", "p4"}}})}}));
}

TEST(PodsCommandTest, AllKeepsAGivenPageSizeAndStartCursor) {
  CliHarness h;
  h.transport.reply(200, page({"p2"}, "c2"));
  h.transport.reply(200, page({"p3"}, ""));
  auto r = h.run({"pods", "list", "--all", "--limit", "1", "--cursor", "c1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/pods?limit=1&cursor=c1");
  EXPECT_EQ(h.transport.requests[1].pathAndQuery(), "/api/v1/pods?limit=1&cursor=c2");
  EXPECT_NE(r.out.find("p3"), std::string::npos);
}

TEST(PodsCommandTest, AllStopsWhenTheServerRepeatsACursor) {
  CliHarness h;
  h.transport.reply(200, page({"p1"}, "c1"));
  h.transport.reply(200, page({"p2"}, "c1"));
  auto r = h.run({"pods", "list", "--all"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("same cursor twice"), std::string::npos);
  EXPECT_EQ(h.transport.requests.size(), 2u);
}

TEST(PodsCommandTest, AFailingLaterPageFailsTheWholeList) {
  CliHarness h;
  h.transport.reply(200, page({"p1"}, "c1"));
  h.transport.fail("cannot reach http://127.0.0.1:8080: connection refused");
  auto r = h.run({"pods", "list", "--all", "--json"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.out, "");
}

TEST(PodsCommandTest, OnePageTableNotesTheNextCursor) {
  CliHarness h;
  h.transport.reply(200, page({"p1"}, "abc"));
  auto r = h.run({"pods", "list"});
  ASSERT_EQ(r.code, kExitOk);
  EXPECT_EQ(r.err, "(more: add --all, or --cursor abc)\n");
}

TEST(PodsCommandTest, ShowEncodesTheIdAndPrintsHostsAndVersions) {
  CliHarness h;
  h.transport.reply(200, R"({"id": "p1", "platform": "catalina", "rack_ids": ["p1-r1", "p1-r2"], "spares": ["p1-h17"],
    "management": {"protocol": "redfish", "credential": "tray-bmc", "tray_bmc": "{host}-bmc", "switch_bmc": null,
                   "runner": "oob-b01"},
    "hosts": [{"id": "p1-h01", "tray": 1, "spare": false, "state": "available",
               "bmc": {"address": "p1-h01-bmc", "port": 443, "protocol": "redfish", "credential": "tray-bmc"}},
              {"id": "p1-h17", "tray": 17, "spare": true, "state": "failed", "state_reason": "xid 79"}],
    "switch_trays": [{"id": "s1", "tray": 1, "versions": {"nvswitch": "36.2601.0001"},
                      "bmc": {"address": "127.0.0.1", "port": 8643, "protocol": "redfish", "credential": "tray-bmc"}},
                     {"id": "s2", "tray": 2, "versions": {}}],
    "component_versions": {"driver": {"570.1": 17, "565.9": 1}}})");
  auto r = h.run({"pods", "show", "p1/x y"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/pods/p1%2Fx%20y");
  EXPECT_NE(r.out.find("racks:           p1-r1,p1-r2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("switch_trays:    2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("p1-h17  17    spare  failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("driver     565.9    1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("management:      redfish, credential tray-bmc, runner oob-b01\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("p1-h01-bmc:443 (redfish, credential tray-bmc)"), std::string::npos) << r.out;
  // Each switch tray with its own version (a tray never read back shows "-").
  EXPECT_NE(r.out.find("s1  1     36.2601.0001  127.0.0.1:8643 (redfish, credential tray-bmc)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("s2  2     -"), std::string::npos) << r.out;
}

TEST(HostsCommandTest, ListSendsFilters) {
  CliHarness h;
  h.transport.reply(200, R"({"items": [{"id": "h1", "pod": "p1", "tray": 3, "spare": false, "state": "draining",
    "state_since": "2026-01-02T03:04:05.000Z", "state_reason": "rollout r1"}], "next_cursor": null})");
  auto r = h.run({"hosts", "list", "--pod", "p1", "--building", "b1", "--site", "s1", "--state", "draining"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/hosts?pod=p1&building=b1&site=s1&state=draining");
  EXPECT_EQ(r.out,
            "ID  POD  TRAY  SPARE  STATE     SINCE                     REASON\n"
            "h1  p1   3     -      draining  2026-01-02T03:04:05.000Z  rollout r1\n");
}

TEST(HostsCommandTest, ShowPrintsGpusComponentsAndAllowedActions) {
  CliHarness h;
  h.transport.reply(200, R"({"id": "h1", "state": "available", "agent_version": "0.3.0", "allowed_actions": ["allocate", "drain"],
    "gpus": [{"index": 0, "id": "h1-g0", "serial": "S0", "uuid": "GPU-0"}], "components": {"driver": "570.1"}})");
  auto r = h.run({"hosts", "show", "h1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/hosts/h1");
  EXPECT_NE(r.out.find("allowed_actions:  allocate, drain\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("agent_version:    0.3.0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0      h1-g0  S0      GPU-0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("driver     570.1\n"), std::string::npos) << r.out;
}

TEST(HostsCommandTest, EventsPagesThroughTheHostsEvents) {
  CliHarness h;
  h.transport.reply(200, R"({"items": [{"id": 2, "at": "t2", "action": "drain", "from": "available", "to": "draining",
    "actor": "tok1", "reason": "r"}], "next_cursor": "2"})");
  h.transport.reply(200, R"({"items": [{"id": 1, "at": "t1", "action": "import", "from": null, "to": "available",
    "actor": "tok0", "reason": ""}], "next_cursor": null})");
  auto r = h.run({"hosts", "events", "h1", "--all"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/hosts/h1/events?limit=1000");
  EXPECT_EQ(h.transport.requests[1].pathAndQuery(), "/api/v1/hosts/h1/events?limit=1000&cursor=2");
  EXPECT_EQ(r.out,
            "AT  ACTION  FROM       TO         ACTOR  REASON\n"
            "t2  drain   available  draining   tok1   r\n"
            "t1  import  -          available  tok0   -\n");
}

TEST(HostsCommandTest, ActionPostsActionReasonAndTarget) {
  CliHarness h;
  h.transport.reply(200, R"({"id": "h1", "state": "available"})");
  auto r = h.run({"hosts", "action", "h1", "override", "--reason", "validated by hand", "--to", "available"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const ApiRequest& req = h.transport.requests[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.pathAndQuery(), "/api/v1/hosts/h1/actions");
  EXPECT_EQ(req.content_type, "application/json");
  EXPECT_EQ(json::parse(req.body), (json{{"action", "override"}, {"reason", "validated by hand"}, {"to", "available"}}));
  EXPECT_NE(r.out.find("state:          available\n"), std::string::npos) << r.out;

  h.transport.reply(200, R"({"id": "h1", "state": "draining"})");
  ASSERT_EQ(h.run({"hosts", "action", "h1", "drain"}).code, kExitOk);
  EXPECT_EQ(json::parse(h.transport.requests[1].body), (json{{"action", "drain"}}));
}

TEST(HostsCommandTest, ConflictShowsStateAndAllowedActionsAndExitsOne) {
  CliHarness h;
  h.transport.reply(409, R"({"error": {"code": "conflict", "message": "cannot undrain a host in state available",
    "details": {"state": "available", "allowed_actions": ["allocate", "drain", "fail"]}}})");
  auto r = h.run({"hosts", "action", "h1", "undrain"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "kilnctl: cannot undrain a host in state available (HTTP 409 conflict)\n"
            "  allowed actions: allocate, drain, fail\n"
            "  state: available\n");
}

TEST(CapacityCommandTest, PlanSendsTheQueryAndPrintsPercentages) {
  CliHarness h;
  h.transport.reply(200, R"({"active_gpus": 32768, "platform": "clemente", "slices": 512, "pods": 523, "racks": 523,
    "gpus": 37656, "spare_gpus": 4888, "overhead_fraction": 0.1298, "geometry_fraction": 0.1111,
    "reserve_fraction": 0.0187, "healthy_pods_now": 500, "pod_shortfall": 23})");
  auto r = h.run({"capacity", "plan", "--active-gpus", "32768", "--reserve-fraction", "0.02", "--platform", "clemente"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(),
            "/api/v1/capacity/plan?active_gpus=32768&reserve_fraction=0.02&platform=clemente");
  EXPECT_NE(r.out.find("pods:              523\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("overhead:          13.0%\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  slice geometry:  11.1%\n"), std::string::npos) << r.out;

  h.transport.reply(200, "{}");
  ASSERT_EQ(h.run({"capacity", "plan", "--active-gpus", "64"}).code, kExitOk);
  EXPECT_EQ(h.transport.requests[1].pathAndQuery(), "/api/v1/capacity/plan?active_gpus=64");
}

TEST(TokenCommandTest, CreateListRevoke) {
  CliHarness h;
  h.transport.reply(201, R"({"id": "t9", "name": "ci", "role": "agent", "host": "h1", "token": "kiln_secret"})");
  auto created = h.run({"token", "create", "--role", "agent", "--name", "ci", "--host", "h1"});
  ASSERT_EQ(created.code, kExitOk) << created.err;
  EXPECT_EQ(h.transport.requests[0].method, "POST");
  EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/tokens");
  EXPECT_EQ(json::parse(h.transport.requests[0].body), (json{{"role", "agent"}, {"name", "ci"}, {"host", "h1"}}));
  EXPECT_NE(created.out.find("token:       kiln_secret\n"), std::string::npos) << created.out;

  h.transport.reply(200, R"({"items": [{"id": "t9", "name": "ci", "role": "agent", "host": "h1",
    "created_at": "c", "created_by": "admin", "revoked_at": null, "expires_at": "e", "last_used_at": null}],
    "next_cursor": null})");
  auto listed = h.run({"token", "list"});
  ASSERT_EQ(listed.code, kExitOk) << listed.err;
  EXPECT_EQ(h.transport.requests[1].method, "GET");
  EXPECT_EQ(h.transport.requests[1].pathAndQuery(), "/api/v1/tokens");
  EXPECT_EQ(listed.out,
            "ID  NAME  ROLE   HOST  CREATED_AT  CREATED_BY  REVOKED_AT  EXPIRES_AT  LAST_USED_AT\n"
            "t9  ci    agent  h1    c           admin       -           e           -\n");

  h.transport.reply(200, R"({"id": "t9", "revoked": true})");
  auto revoked = h.run({"token", "revoke", "t9"});
  ASSERT_EQ(revoked.code, kExitOk) << revoked.err;
  EXPECT_EQ(h.transport.requests[2].method, "DELETE");
  EXPECT_EQ(h.transport.requests[2].pathAndQuery(), "/api/v1/tokens/t9");
  EXPECT_EQ(revoked.out, "revoked token t9\n");
}

TEST(FleetImportCommandTest, SendsTheFileAsIsWithItsContentType) {
  struct Case {
    std::string path, content, type;
  } cases[] = {
      {"fleet.yaml", "sites: []\n", "application/yaml"},
      {"fleet.yml", "sites: []\n", "application/yaml"},
      {"fleet.json", "{\"sites\": []}", "application/json"},
      {"fleet.txt", "  {\"sites\": []}", "application/json"},
      {"fleet.txt", "sites: []\n", "application/yaml"},
      {"-", "sites: []\n", "application/yaml"},
  };
  for (const auto& c : cases) {
    CliHarness h;
    if (c.path == "-") h.fs.stdin_text = c.content;
    else h.fs.files[c.path] = c.content;
    h.transport.reply(201, R"({"pods_created": 2, "hosts_created": 36})");
    auto r = h.run({"fleet", "import", c.path});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    ASSERT_EQ(h.transport.requests.size(), 1u);
    EXPECT_EQ(h.transport.requests[0].method, "POST");
    EXPECT_EQ(h.transport.requests[0].pathAndQuery(), "/api/v1/fleet/import");
    EXPECT_EQ(h.transport.requests[0].body, c.content);
    EXPECT_EQ(h.transport.requests[0].content_type, c.type) << c.path;
    EXPECT_EQ(r.out, "pods_created:   2\nhosts_created:  36\n");
  }
}

TEST(FleetImportCommandTest, InvalidFleetPrintsEveryFieldErrorAndExitsOne) {
  CliHarness h;
  h.fs.files["bad.yaml"] = "sites: x\n";
  h.transport.reply(422, R"({"error": {"code": "invalid_content", "message": "invalid fleet file: 2 problems",
    "details": {"fields": [{"path": "sites[0].buildings[1].pods[3].platform", "message": "unknown platform 'gb9'"},
                           {"path": "sites[0].name", "message": "is required"}]}}})");
  auto r = h.run({"fleet", "import", "bad.yaml"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "kilnctl: invalid fleet file: 2 problems (HTTP 422 invalid_content)\n"
            "  sites[0].buildings[1].pods[3].platform: unknown platform 'gb9'\n"
            "  sites[0].name: is required\n");
}

TEST(ApiErrorTest, ServerBadRequestIsAFailedCallNotAUsageError) {
  CliHarness h;
  h.transport.reply(400, R"({"error": {"code": "invalid_argument", "message": "platform must be one of catalina, clemente, san_miguel", "details": {}}})");
  auto r = h.run({"pods", "list", "--platform", "gb9"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err,
            "kilnctl: platform must be one of catalina, clemente, san_miguel (HTTP 400 invalid_argument)\n");
}

TEST(ApiErrorTest, UnreachableServerExitsOneWithTheReason) {
  CliHarness h;
  h.transport.fail("cannot reach http://127.0.0.1:8080: Connection refused");
  auto r = h.run({"token", "list"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "kilnctl: cannot reach http://127.0.0.1:8080: Connection refused\n");
}

TEST(ApiErrorTest, NonJsonBodiesAreShownShortened) {
  EXPECT_EQ(renderApiError(502, "<html>Bad Gateway</html>\n"),
            "kilnctl: the server answered HTTP 502: <html>Bad Gateway</html>\n");
  EXPECT_EQ(renderApiError(500, ""), "kilnctl: the server answered HTTP 500\n");
  const std::string long_body(1000, 'x');
  EXPECT_EQ(renderApiError(503, long_body).size(), std::string("kilnctl: the server answered HTTP 503: ").size() + 303 + 1);
  CliHarness h;
  h.transport.reply(200, "not json");
  auto r = h.run({"hosts", "show", "h1"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kilnctl: the server answered HTTP 200 with a body that is not JSON\n");
}

TEST(ConnectionTest, TheTransportGetsTheResolvedSettings) {
  CliHarness h;
  h.fs.env["KILN_TOKEN"] = "env-token";
  h.fs.env["KILN_URL"] = "http://env:1";
  h.transport.reply(200, R"({"items": [], "next_cursor": null})");
  auto r = h.run({"pods", "list", "--url", "https://kiln.example:8443/", "--ca-file", "/ca.pem", "--timeout", "5"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_TRUE(h.settings);
  EXPECT_EQ(h.settings->url, "https://kiln.example:8443");
  EXPECT_EQ(h.settings->token, "env-token");
  EXPECT_EQ(h.settings->ca_file, "/ca.pem");
  EXPECT_EQ(h.settings->timeout, std::chrono::milliseconds(5000));
}

TEST(ConnectionTest, OfflineCommandsNeedNoServerNorValidSettings) {
  CliHarness h;
  auto r = h.run({"--url", "ftp://not-http", "fleet", "generate", "--gpus", "72"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transports_made, 0);
}

}  // namespace
}  // namespace kiln::cli
