// The fleet over HTTP: import idempotency, pagination and filters, host actions and their
// events, the capacity planner, metrics.

#include <set>

#include "orchestrator/core/fleet_generator.h"
#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

class FleetApiTest : public ApiTest {
 protected:
  // Walks every page of `path` (which has a query already, or not) with `limit`; returns the
  // ids in the order served. Fails the test on a repeated cursor or a non-200 page.
  std::vector<std::string> walk(const std::string& path, int limit) {
    std::vector<std::string> ids;
    std::string cursor;
    std::set<std::string> cursors;
    const char sep = path.find('?') == std::string::npos ? '?' : '&';
    for (int pages = 0; pages < 100000; ++pages) {
      std::string q = path + sep + "limit=" + std::to_string(limit);
      if (!cursor.empty()) q += "&cursor=" + http::urlEncode(cursor);
      Reply r = call(*admin_, "GET", q);
      if (r.status != 200) {
        ADD_FAILURE() << q << ": " << r.status << " " << r.body;
        break;
      }
      const json doc = r.doc();
      EXPECT_LE(doc["items"].size(), static_cast<std::size_t>(limit));
      for (const auto& item : doc["items"]) ids.push_back(item["id"].get<std::string>());
      if (doc["next_cursor"].is_null()) break;
      cursor = doc["next_cursor"].get<std::string>();
      if (!cursors.insert(cursor).second) {
        ADD_FAILURE() << "cursor served twice: " << cursor;
        break;
      }
      EXPECT_EQ(doc["items"].size(), static_cast<std::size_t>(limit)) << "a short page before the end";
    }
    return ids;
  }
};

json generated(int pods) {
  core::FleetGenRequest req;
  req.gpus = pods * 72;
  req.pods_per_building = 100;
  req.site_prefix = "gen";
  return core::generateFleet(req);
}

std::vector<json> podsOf(const json& fleet) {
  std::vector<json> out;
  for (const auto& s : fleet["sites"])
    for (const auto& b : s["buildings"])
      for (const auto& p : b["pods"]) {
        json pod = p;
        pod["building"] = b["name"];
        out.push_back(pod);
      }
  return out;
}

void expectSortedUnique(const std::vector<std::string>& ids) {
  for (std::size_t i = 1; i < ids.size(); ++i) ASSERT_LT(ids[i - 1], ids[i]) << "at " << i;
}

constexpr const char* kYamlFleet = R"(# a hand-written fleet file
versions: {driver: "570.133.20", gpu_vbios: 97.00.82.00.0F}
sites:
  - name: y01
    buildings:
      - name: y01-b01
        pods:
          - {name: y01-b01-p0001, platform: clemente, labels: {row: a}}
          - name: y01-b01-p0002
            platform: catalina
            state: incoming
)";

TEST_F(FleetApiTest, ImportIsIdempotentForJson) {
  const json fleet = smallFleet(4);  // 2 catalina (2 racks each), 2 clemente (1 rack)
  Reply first = call(*admin_, "POST", "/api/v1/fleet/import", fleet.dump());
  ASSERT_EQ(first.status, 201) << first.body;
  const json a = first.doc();
  EXPECT_EQ(a["sites_created"], 1);
  EXPECT_EQ(a["buildings_created"], 1);
  EXPECT_EQ(a["pods_created"], 4);
  EXPECT_EQ(a["racks_created"], 6);
  EXPECT_EQ(a["hosts_created"], 4 * 18);
  EXPECT_EQ(a["switch_trays_created"], 4 * 9);
  EXPECT_EQ(a["gpus_created"], 4 * 72);
  const std::string counts = "SELECT (SELECT count(*) FROM pods) || '/' || (SELECT count(*) FROM hosts) || '/' ||"
                             " (SELECT count(*) FROM racks) || '/' || (SELECT count(*) FROM host_events)";
  const std::string before = db_->query(counts);

  Reply second = call(*admin_, "POST", "/api/v1/fleet/import", fleet.dump());
  ASSERT_EQ(second.status, 200) << second.body;
  const json b = second.doc();
  EXPECT_EQ(b["pods_created"], 0);
  EXPECT_EQ(b["pods_existing"], 4);
  EXPECT_EQ(b["hosts_created"], 0);
  EXPECT_EQ(db_->query(counts), before);
}

TEST_F(FleetApiTest, ImportIsIdempotentForYamlAndAcrossFormats) {
  for (const char* type : {"application/yaml", "text/yaml", "application/x-yaml"}) {
    Reply r = call(*admin_, "POST", "/api/v1/fleet/import", kYamlFleet, type);
    if (std::string(type) == "application/yaml") {
      ASSERT_EQ(r.status, 201) << r.body;
      EXPECT_EQ(r.doc()["pods_created"], 2);
      EXPECT_EQ(r.doc()["racks_created"], 3);
    } else {
      EXPECT_EQ(r.status, 200) << type << ": " << r.body;
    }
  }
  EXPECT_EQ(db_->query("SELECT count(*) FROM hosts"), "36");
  EXPECT_EQ(db_->query("SELECT count(*) FROM hosts WHERE state = 'incoming'"), "18");

  // The same fleet as JSON changes nothing.
  const json same = {{"versions", {{"driver", "570.133.20"}, {"gpu_vbios", "97.00.82.00.0F"}}},
                     {"sites",
                      {{{"name", "y01"},
                        {"buildings",
                         {{{"name", "y01-b01"},
                           {"pods",
                            {{{"name", "y01-b01-p0001"}, {"platform", "clemente"}, {"labels", {{"row", "a"}}}},
                             {{"name", "y01-b01-p0002"}, {"platform", "catalina"}, {"state", "incoming"}}}}}}}}}}};
  Reply r = call(*admin_, "POST", "/api/v1/fleet/import", same.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.doc()["pods_existing"], 2);
  EXPECT_EQ(db_->query("SELECT count(*) FROM hosts"), "36");

  Reply pod = call(*admin_, "GET", "/api/v1/pods/y01-b01-p0001");
  ASSERT_EQ(pod.status, 200);
  EXPECT_EQ(pod.doc()["labels"]["row"], "a");
  EXPECT_EQ(pod.doc()["platform"], "clemente");
  EXPECT_EQ(pod.doc()["component_versions"]["driver"]["570.133.20"], 18) << pod.body;
}

// Issue 32: the fleet file names each pod's management endpoints; the pod and each host show
// their BMC's address and the credential's name, never a secret; a secret in the file is refused
// and nothing is written; a re-import updates the endpoints of known pods.
TEST_F(FleetApiTest, ManagementEndpointsComeWithTheFleetAndSecretsNever) {
  json fleet = smallFleet(2);
  fleet["management"] = {{"protocol", "redfish"},
                         {"credential", "tray-bmc"},
                         {"tray_bmc", "{host}-bmc.mgmt.example"},
                         {"switch_bmc", "{pod}-sw{tray}.mgmt.example:8443"}};
  json with_secret = fleet;
  with_secret["sites"][0]["management"] = {{"password", "hunter2-bmc"}};
  Reply refused = call(*admin_, "POST", "/api/v1/fleet/import", with_secret.dump());
  ASSERT_TRUE(isError(refused, 422, "invalid_content")) << refused.body;
  EXPECT_NE(refused.body.find("sites[0].management.password"), std::string::npos) << refused.body;
  EXPECT_EQ(refused.body.find("hunter2"), std::string::npos);
  EXPECT_EQ(db_->query("SELECT count(*) FROM pods"), "0");

  Reply first = call(*admin_, "POST", "/api/v1/fleet/import", fleet.dump());
  ASSERT_EQ(first.status, 201) << first.body;
  const json pod = call(*admin_, "GET", "/api/v1/pods/t01-b01-p0001").doc();
  EXPECT_EQ(pod["management"]["credential"], "tray-bmc");
  const json h = pod["hosts"][2];
  EXPECT_EQ(h["bmc"]["address"], h["id"].get<std::string>() + "-bmc.mgmt.example");
  EXPECT_EQ(h["bmc"]["port"], 443);
  EXPECT_EQ(h["bmc"]["protocol"], "redfish");
  EXPECT_EQ(pod["switch_trays"][0]["bmc"]["address"], "t01-b01-p0001-sw1.mgmt.example");
  EXPECT_EQ(pod["switch_trays"][0]["bmc"]["port"], 8443);
  const json host = call(*admin_, "GET", "/api/v1/hosts/" + h["id"].get<std::string>()).doc();
  EXPECT_EQ(host["bmc"], h["bmc"]);

  fleet["sites"][0]["buildings"][0]["pods"][1]["management"] = {{"protocol", "ipmi"}, {"credential", "p2-ipmi"}};
  Reply again = call(*admin_, "POST", "/api/v1/fleet/import", fleet.dump());
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.doc()["pods_management_updated"], 1);
  const json p2 = call(*admin_, "GET", "/api/v1/pods/t01-b01-p0002").doc();
  EXPECT_EQ(p2["hosts"][0]["bmc"]["protocol"], "ipmi");
  EXPECT_EQ(p2["hosts"][0]["bmc"]["port"], 623);
  EXPECT_EQ(p2["hosts"][0]["bmc"]["credential"], "p2-ipmi");
}

TEST_F(FleetApiTest, PaginationServesEveryPodAndHostOnceInOrder) {
  const json fleet = generated(300);
  importFleet(fleet);
  std::vector<std::string> expected;
  for (const auto& p : podsOf(fleet)) expected.push_back(p["name"].get<std::string>());
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(expected.size(), 300u);

  const auto pods = walk("/api/v1/pods", 37);
  expectSortedUnique(pods);
  EXPECT_EQ(pods, expected);

  const auto hosts = walk("/api/v1/hosts", 37);
  expectSortedUnique(hosts);
  ASSERT_EQ(hosts.size(), 300u * 18);
  std::set<std::string> host_pods;
  for (const auto& h : hosts) host_pods.insert(h.substr(0, h.rfind("-h")));
  EXPECT_EQ(host_pods, std::set<std::string>(expected.begin(), expected.end()));

  // Bigger and smaller pages give the same sequence.
  EXPECT_EQ(walk("/api/v1/pods", 1000), expected);
  EXPECT_EQ(walk("/api/v1/pods?building=gen01-b03", 1).size(), 100u);
}

TEST_F(FleetApiTest, HeatmapServesEveryPodInOneAnswerAsThePagesDo) {
  importFleet(smallFleet(7));
  // One pod loses a host, so its state and healthy GPUs differ from the others'.
  const std::string host = call(*admin_, "GET", "/api/v1/pods/t01-b01-p0003").doc()["hosts"][0]["id"].get<std::string>();
  ASSERT_EQ(call(*admin_, "POST", "/api/v1/hosts/" + host + "/actions", json{{"action", "fail"}, {"reason", "x"}}.dump()).status,
            200);
  Reply heat = call(*client(createToken("viewer", "console")), "GET", "/api/v1/fleet/heatmap");
  ASSERT_EQ(heat.status, 200) << heat.body;
  const json doc = heat.doc();
  ASSERT_EQ(doc["count"], 7);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < doc["columns"].size(); ++i) col[doc["columns"][i].get<std::string>()] = i;
  const json pages = call(*admin_, "GET", "/api/v1/pods?limit=100").doc()["items"];
  ASSERT_EQ(doc["rows"].size(), pages.size());
  for (std::size_t i = 0; i < pages.size(); ++i) {
    const json& row = doc["rows"][i];
    const json& pod = pages[i];
    EXPECT_EQ(row[col.at("id")], pod["id"]);
    for (const char* k : {"site", "building", "platform", "state", "healthy_gpus"}) EXPECT_EQ(row[col.at(k)], pod[k]) << k;
    EXPECT_EQ(row[col.at("labels")], pod["labels"].empty() ? json() : pod["labels"]);
    // hosts_out: the pod's hosts out of service, as /pods counts them by state.
    int out = 0;
    for (const char* st : {"draining", "maintenance", "validating", "failed", "repair", "quarantine"})
      out += pod["hosts_by_state"].value(st, 0);
    EXPECT_EQ(row[col.at("hosts_out")], out) << pod["id"];
  }
  EXPECT_EQ(doc["rows"][2][col.at("healthy_gpus")], 64 + 4) << "17 of 18 hosts serve";
  // The spares cover the failed host: the pod stays in service, and hosts_out shows the host.
  EXPECT_EQ(doc["rows"][2][col.at("state")], "in_service");
  EXPECT_EQ(doc["rows"][2][col.at("hosts_out")], 1);
  EXPECT_EQ(doc["rows"][1][col.at("hosts_out")], 0);
  // The columns before hosts_out keep their places (clients that read rows by position).
  EXPECT_EQ(doc["columns"], json({"id", "site", "building", "platform", "state", "healthy_gpus", "labels", "hosts_out"}));
  EXPECT_TRUE(isError(call(*admin_, "GET", "/api/v1/fleet/heatmap?limit=5"), 400, "invalid_argument"));
}

TEST_F(FleetApiTest, FiltersSelectPodsAndHosts) {
  const json fleet = generated(300);
  importFleet(fleet);
  std::vector<std::string> clemente, row_a, building2;
  for (const auto& p : podsOf(fleet)) {
    const std::string name = p["name"];
    if (p["platform"] == "clemente") clemente.push_back(name);
    if (p["labels"]["row"] == "a") row_a.push_back(name);
    if (p["building"] == "gen01-b02") building2.push_back(name);
  }
  for (auto* v : {&clemente, &row_a, &building2}) std::sort(v->begin(), v->end());
  ASSERT_FALSE(clemente.empty());
  ASSERT_LT(clemente.size(), 300u);

  EXPECT_EQ(walk("/api/v1/pods?platform=clemente", 37), clemente);
  EXPECT_EQ(walk("/api/v1/pods?label=row%3Da", 37), row_a);
  EXPECT_EQ(walk("/api/v1/pods?building=gen01-b02", 37), building2);
  EXPECT_EQ(walk("/api/v1/pods?site=gen01", 50).size(), 300u);
  EXPECT_TRUE(walk("/api/v1/pods?site=nope", 50).empty());
  EXPECT_EQ(walk("/api/v1/pods?state=in_service", 100).size(), 300u);

  // One drained host puts its pod in maintenance.
  const std::string pod = clemente.front();
  ASSERT_EQ(call(*admin_, "POST", "/api/v1/hosts/" + pod + "-h03/actions", R"({"action":"drain","reason":"t"})").status,
            200);
  EXPECT_EQ(walk("/api/v1/pods?state=maintenance", 37), std::vector<std::string>{pod});
  EXPECT_EQ(walk("/api/v1/pods?state=in_service&platform=clemente", 37).size(), clemente.size() - 1);

  const auto pod_hosts = walk("/api/v1/hosts?pod=" + pod, 5);
  ASSERT_EQ(pod_hosts.size(), 18u);
  for (const auto& h : pod_hosts) EXPECT_EQ(h.rfind(pod + "-h", 0), 0u) << h;
  EXPECT_EQ(walk("/api/v1/hosts?state=draining", 37), std::vector<std::string>{pod + "-h03"});
  EXPECT_EQ(walk("/api/v1/hosts?building=gen01-b02", 1000).size(), 100u * 18);
  EXPECT_EQ(walk("/api/v1/hosts?building=gen01-b02&state=available", 1000).size(), 100u * 18);
}

TEST_F(FleetApiTest, HostActionRoundTripWritesEventsAndChangesPodState) {
  importFleet(smallFleet(1));
  const std::string pod = "t01-b01-p0001", host = pod + "-h05";
  std::string op_id;
  auto op = client(createToken("operator", "sre", &op_id));

  ASSERT_EQ(call(*op, "GET", "/api/v1/pods/" + pod).doc()["state"], "in_service");
  Reply drained = call(*op, "POST", "/api/v1/hosts/" + host + "/actions", R"({"action":"drain","reason":"fw 1.3"})");
  ASSERT_EQ(drained.status, 200) << drained.body;
  EXPECT_EQ(drained.doc()["state"], "draining");
  EXPECT_EQ(drained.doc()["state_reason"], "fw 1.3");
  EXPECT_EQ(call(*op, "GET", "/api/v1/pods/" + pod).doc()["state"], "maintenance");
  const json detail = call(*op, "GET", "/api/v1/hosts/" + host).doc();
  EXPECT_EQ(detail["state"], "draining");
  EXPECT_TRUE(std::find(detail["allowed_actions"].begin(), detail["allowed_actions"].end(), "undrain") !=
              detail["allowed_actions"].end())
      << detail.dump();

  ASSERT_EQ(call(*op, "POST", "/api/v1/hosts/" + host + "/actions", R"({"action":"undrain","reason":"cancel"})").status,
            200);
  EXPECT_EQ(call(*op, "GET", "/api/v1/pods/" + pod).doc()["state"], "in_service");

  Reply events = call(*op, "GET", "/api/v1/hosts/" + host + "/events");
  ASSERT_EQ(events.status, 200) << events.body;
  const json items = events.doc()["items"];
  ASSERT_EQ(items.size(), 3u) << events.body;  // import, drain, undrain
  EXPECT_EQ(items[0]["action"], "undrain");  // newest first
  EXPECT_EQ(items[0]["from"], "draining");
  EXPECT_EQ(items[0]["to"], "available");
  EXPECT_EQ(items[1]["action"], "drain");
  EXPECT_EQ(items[1]["from"], "available");
  EXPECT_EQ(items[1]["to"], "draining");
  EXPECT_EQ(items[1]["reason"], "fw 1.3");
  EXPECT_EQ(items[1]["actor"], op_id);
  EXPECT_EQ(items[1]["host"], host);
  EXPECT_EQ(items[2]["action"], "import");
  EXPECT_TRUE(items[2]["from"].is_null());
  // Events paginate too.
  Reply first = call(*op, "GET", "/api/v1/hosts/" + host + "/events?limit=1");
  ASSERT_EQ(first.doc()["items"].size(), 1u);
  ASSERT_TRUE(first.doc()["next_cursor"].is_string()) << first.body;
  Reply second = call(*op, "GET", "/api/v1/hosts/" + host + "/events?limit=1&cursor=" +
                                      http::urlEncode(first.doc()["next_cursor"].get<std::string>()));
  ASSERT_EQ(second.doc()["items"].size(), 1u) << second.body;
  EXPECT_EQ(second.doc()["items"][0]["action"], "drain");

  // Other hosts have only their import event; the pod counts hosts by state.
  EXPECT_EQ(call(*op, "GET", "/api/v1/hosts/" + pod + "-h01/events").doc()["items"].size(), 1u);
  EXPECT_EQ(call(*op, "GET", "/api/v1/pods/" + pod).doc()["hosts_by_state"]["available"], 18);
}

TEST_F(FleetApiTest, CapacityPlanMatchesThePublishedExample) {
  // docs/FACTS.md: 32,768 active GPUs -> 512 slices, x1.02 -> 523 NVL72 racks = 37,656 GPUs.
  Reply r = call(*admin_, "GET", "/api/v1/capacity/plan?active_gpus=32768");
  ASSERT_EQ(r.status, 200) << r.body;
  const json plan = r.doc();
  EXPECT_EQ(plan["slices"], 512);
  EXPECT_EQ(plan["pods"], 523);
  EXPECT_EQ(plan["racks"], 523);
  EXPECT_EQ(plan["gpus"], 37656);
  EXPECT_EQ(plan["platform"], "clemente");
  EXPECT_NEAR(plan["overhead_fraction"].get<double>(), 4888.0 / 37656, 1e-3);
  // The platforms kilnd plans for, for the console's menu (no list of its own there).
  EXPECT_EQ(plan["platforms"], json::parse(R"(["catalina", "clemente", "san_miguel"])"));
  Reply hopper = call(*admin_, "GET", "/api/v1/capacity/plan?active_gpus=64&platform=hopper");
  EXPECT_NE(hopper.doc()["error"]["message"].get<std::string>().find("catalina, clemente, san_miguel"), std::string::npos)
      << hopper.body;

  Reply catalina = call(*admin_, "GET", "/api/v1/capacity/plan?active_gpus=32768&platform=catalina");
  ASSERT_EQ(catalina.status, 200) << catalina.body;
  EXPECT_EQ(catalina.doc()["pods"], 523);
  EXPECT_EQ(catalina.doc()["racks"], 1046);  // two racks per GB200 NVL72 domain
  EXPECT_EQ(catalina.doc()["gpus"], 37656);

  // The shortfall counts the healthy pods of the platform.
  importFleet(smallFleet(4));
  Reply with_fleet = call(*admin_, "GET", "/api/v1/capacity/plan?active_gpus=128&platform=clemente");
  EXPECT_EQ(with_fleet.doc()["healthy_pods_now"], 2) << with_fleet.body;
  EXPECT_EQ(with_fleet.doc()["pod_shortfall"], with_fleet.doc()["pods"].get<int>() - 2);

  for (const char* bad : {"", "?active_gpus=", "?active_gpus=abc", "?active_gpus=12x", "?active_gpus=1.5",
                          "?active_gpus=64&reserve_fraction=x", "?active_gpus=64&platform=hopper",
                          "?active_gpus=64&colour=red", "?active_gpus=99999999999999999999999"})
    EXPECT_TRUE(isError(call(*admin_, "GET", std::string("/api/v1/capacity/plan") + bad), 400, "invalid_argument"))
        << bad;
  for (const char* bad : {"?active_gpus=0", "?active_gpus=-64", "?active_gpus=64&reserve_fraction=1.5",
                          "?active_gpus=64&reserve_fraction=-0.1", "?active_gpus=1000000000000"})
    EXPECT_TRUE(isError(call(*admin_, "GET", std::string("/api/v1/capacity/plan") + bad), 422, "invalid_content"))
        << bad;
}

TEST_F(FleetApiTest, MetricsCountRequestsAndHostsByState) {
  importFleet(smallFleet(3));
  ASSERT_EQ(call(*admin_, "POST", "/api/v1/hosts/t01-b01-p0001-h01/actions", R"({"action":"drain","reason":"m"})")
                .status,
            200);
  call(*admin_, "GET", "/api/v1/pods");
  Reply m = call(*admin_, "GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.content_type.find("text/plain"), std::string::npos) << m.content_type;
  EXPECT_NE(m.body.find("# TYPE kiln_http_requests_total counter"), std::string::npos);
  EXPECT_NE(m.body.find(R"(kiln_http_requests_total{method="GET",route="/api/v1/pods",status="200"} 1)"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find(R"(kiln_http_requests_total{method="POST",route="/api/v1/fleet/import",status="201"} 1)"),
            std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("kiln_hosts{state=\"available\"} " + std::to_string(3 * 18 - 1) + "\n"), std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("kiln_hosts{state=\"draining\"} 1\n"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("kiln_pods{platform=\"catalina\"} 2\n"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("kiln_up 1\n"), std::string::npos);
}

TEST_F(FleetApiTest, SitesListBuildingsAndCounts) {
  importFleet(generated(150));
  Reply r = call(*admin_, "GET", "/api/v1/sites");
  ASSERT_EQ(r.status, 200);
  const json items = r.doc()["items"];
  ASSERT_EQ(items.size(), 1u) << r.body;
  EXPECT_EQ(items[0]["id"], "gen01");
  EXPECT_EQ(items[0]["buildings"], json({"gen01-b01", "gen01-b02"}));
  EXPECT_EQ(items[0]["pods"], 150);
  EXPECT_EQ(items[0]["hosts"], 150 * 18);
}

}  // namespace
}  // namespace kiln::apitest
