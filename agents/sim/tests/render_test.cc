#include "agents/sim/render.h"

#include <gtest/gtest.h>

#include <regex>

#include "agents/sim/host_sim.h"

namespace kiln::sim {
namespace {

// Minimal XML well-formedness check: one root, every start tag closed in order, attributes
// quoted, only the five predefined entities. Returns "" when well-formed, else the problem.
std::string xmlProblem(const std::string& xml) {
  std::vector<std::string> stack;
  int roots = 0;
  size_t i = 0;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      if (xml[i] == '&') {
        static const std::regex kEntity("&(amp|lt|gt|quot|apos);");
        if (!std::regex_search(xml.substr(i, 6), kEntity, std::regex_constants::match_continuous))
          return "bad entity at " + std::to_string(i);
      }
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(xml[i])))
        return "text outside root at " + std::to_string(i);
      ++i;
      continue;
    }
    size_t end = xml.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    std::string tag = xml.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.starts_with("?") || tag.starts_with("!")) continue;
    if (tag.starts_with("/")) {
      if (stack.empty() || stack.back() != tag.substr(1)) return "mismatched </" + tag + ">";
      stack.pop_back();
      continue;
    }
    static const std::regex kStart(R"(([A-Za-z_][\w.-]*)(\s+[A-Za-z_][\w.-]*="[^"<]*")*\s*(/?))");
    std::smatch m;
    if (!std::regex_match(tag, m, kStart)) return "bad start tag <" + tag + ">";
    if (stack.empty()) ++roots;
    if (m[3].str().empty()) stack.push_back(m[1].str());
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "expected one root element";
  return "";
}

std::string between(const std::string& s, const std::string& open, const std::string& close) {
  size_t a = s.find(open);
  if (a == std::string::npos) return "<missing>";
  a += open.size();
  return s.substr(a, s.find(close, a) - a);
}

TEST(RenderNvidiaSmiTest, XmlIsWellFormedAndCarriesTheFieldsParsersRead) {
  HostState s = makeDefaultState("cat-r01-t03", Platform::kCatalina);
  s.gpus[1].remap_pending = true;
  s.gpus[1].recovery_action = "Reset";
  const std::string xml = renderNvidiaSmiXml(s, "Mon Jun  2 10:00:00 2025");
  EXPECT_EQ(xmlProblem(xml), "");
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" ?>", 0), 0u);
  EXPECT_EQ(between(xml, "<driver_version>", "<"), "570.124.06");
  EXPECT_EQ(between(xml, "<cuda_version>", "<"), "12.8");
  EXPECT_EQ(between(xml, "<attached_gpus>", "<"), "4");
  for (const char* field :
       {"<serial>", "<uuid>GPU-", "<vbios_version>97.00.82.00.5F<", "<inforom_version>",
        "<img_version>", "<pci_gpu_link_info>", "<max_link_gen>5<", "<current_link_gen>5<",
        "<max_link_width>16x<", "<current_link_width>16x<",
        "<clocks_event_reason_gpu_idle>Active<",
        "<clocks_event_reason_hw_slowdown>Not Active<", "<volatile>", "<aggregate>",
        "<dram_uncorrectable>0<", "<remapped_row_failure>No<", "<state>Completed<",
        "<status>Success<", "<gpu_recovery_action>None<"}) {
    EXPECT_NE(xml.find(field), std::string::npos) << field;
  }
  EXPECT_NE(xml.find("<remapped_row_pending>Yes</remapped_row_pending>"), std::string::npos);
  EXPECT_NE(xml.find("<gpu_recovery_action>Reset</gpu_recovery_action>"), std::string::npos);
  size_t gpus = 0;
  for (size_t p = xml.find("<gpu id="); p != std::string::npos; p = xml.find("<gpu id=", p + 1))
    ++gpus;
  EXPECT_EQ(gpus, 4u);
}

// Issue 32: the trays of one pod are one NVLink domain (one cluster UUID, clique 32766); a
// fabric_split fault puts a tray in another clique.
TEST(RenderNvidiaSmiTest, TraysOfAPodShareTheirClusterAndASplitTrayReportsAnotherClique) {
  HostState a = makeDefaultState("prn-b01-p0001-h01", Platform::kCatalina);
  HostState b = makeDefaultState("prn-b01-p0001-h17", Platform::kCatalina);
  HostState other = makeDefaultState("prn-b01-p0002-h01", Platform::kCatalina);
  const std::string xa = renderNvidiaSmiXml(a, "t"), xb = renderNvidiaSmiXml(b, "t");
  EXPECT_EQ(between(xa, "<clusterUuid>", "<"), between(xb, "<clusterUuid>", "<"));
  EXPECT_NE(between(xa, "<clusterUuid>", "<"), between(renderNvidiaSmiXml(other, "t"), "<clusterUuid>", "<"));
  EXPECT_EQ(between(xb, "<cliqueId>", "<"), "32766");
  Fault split;
  split.kind = FaultKind::kFabricSplit;
  b.faults.push_back(split);
  EXPECT_EQ(between(renderNvidiaSmiXml(b, "t"), "<cliqueId>", "<"), "32767");
  EXPECT_EQ(parseFaultKind("fabric_split"), FaultKind::kFabricSplit);
}

TEST(RenderNvidiaSmiTest, XmlEscapesHostDerivedText) {
  HostState s = makeDefaultState("a&b<c>", Platform::kClemente);
  EXPECT_EQ(xmlProblem(renderNvidiaSmiXml(s, "now & then")), "");
}

TEST(RenderNvidiaSmiTest, ListPrintsOneLinePerGpuWithUuid) {
  HostState s = makeDefaultState("cat-r01-t03", Platform::kCatalina);
  std::string list = renderNvidiaSmiList(s);
  EXPECT_EQ(list.find("GPU 0: NVIDIA GB200 (UUID: " + s.gpus[0].uuid + ")\n"), 0u);
  EXPECT_NE(list.find("GPU 3: "), std::string::npos);
}

TEST(RenderDiagTest, JsonHasDcgm4LayoutWithEntityResults) {
  HostState s = makeDefaultState("cat-r01-t03", Platform::kCatalina);
  s.gpus[2].remap_pending = true;
  DiagReport report = HostSim(s).diagnose(1);
  auto j = nlohmann::json::parse(renderDiagJson(s, report));
  ASSERT_TRUE(j.contains("DCGM Diagnostic"));
  EXPECT_FALSE(j.contains("DCGM GPU Diagnostic"));
  const auto& cat = j["DCGM Diagnostic"]["test_categories"][0];
  EXPECT_EQ(cat["category"], "Deployment");
  const auto& test = cat["tests"][0];
  EXPECT_EQ(test["name"], "software");
  EXPECT_EQ(test["test_summary"]["status"], "Fail");
  ASSERT_EQ(test["results"].size(), 4u);
  const auto& r2 = test["results"][2];
  EXPECT_EQ(r2["entity_group"], "GPU");
  EXPECT_EQ(r2["entity_id"], 2);
  EXPECT_EQ(r2["status"], "Fail");
  EXPECT_EQ(r2["warnings"][0]["error_id"], kDcgmFrPendingRowRemap);
  EXPECT_EQ(test["results"][0]["status"], "Pass");
  EXPECT_FALSE(test["results"][0].contains("warnings"));
  EXPECT_EQ(j["metadata"]["Driver Version Detected"], "570.124.06");
  EXPECT_EQ(j["entity_groups"][0]["entities"][3]["serial_num"], s.gpus[3].serial);
}

TEST(RenderDiagTest, LevelsAddTheTestsFactsListsAndTextTableNamesThem) {
  HostState s = makeDefaultState("h", Platform::kCatalina);
  auto names = [&](int level) {
    std::vector<std::string> n;
    for (const auto& t : HostSim(s).diagnose(level).tests) n.push_back(t.name);
    return n;
  };
  EXPECT_EQ(names(1), std::vector<std::string>{"software"});
  EXPECT_EQ(names(2), (std::vector<std::string>{"software", "pcie", "memory"}));
  auto l3 = names(3);
  for (const char* t : {"diagnostic", "nvbandwidth", "nccl_tests", "memory_bandwidth",
                        "targeted_stress", "targeted_power"}) {
    EXPECT_NE(std::find(l3.begin(), l3.end(), t), l3.end()) << t;
  }
  auto l4 = names(4);
  EXPECT_NE(std::find(l4.begin(), l4.end(), "memtest"), l4.end());
  EXPECT_NE(std::find(l4.begin(), l4.end(), "pulse_test"), l4.end());
  std::string text = renderDiagText(HostSim(s).diagnose(2));
  EXPECT_NE(text.find("| pcie                      | Pass - All"), std::string::npos) << text;
}

TEST(RenderNvlinkTest, JsonHasEveryLinkWithFourCounters) {
  HostState s = makeDefaultState("h", Platform::kCatalina);
  s.gpus[1].links[17] = {11, 2, 3, 1};
  auto j = nlohmann::json::parse(renderNvlinkErrorsJson(s.gpus[1]));
  EXPECT_EQ(j["header"], nlohmann::json({"NVLINK Error Counts", "GPU 1"}));
  EXPECT_EQ(j["body"].size(), 18u);
  const auto& l17 = j["body"]["Link 17"]["children"];
  EXPECT_EQ(l17["CRC FLIT Error"]["value"], "11");
  EXPECT_EQ(l17["CRC Data Error"]["value"], "2");
  EXPECT_EQ(l17["Replay Error"]["value"], "3");
  EXPECT_EQ(l17["Recovery Error"]["value"], "1");
  EXPECT_EQ(j["body"]["Link 0"]["children"]["CRC FLIT Error"]["value"], "0");
}

TEST(RenderMlxTest, QueryStatusFollowsTheImageVersion) {
  HostState s = makeDefaultState("h", Platform::kCatalina);
  std::string none = renderMlxQuery(s, std::nullopt);
  EXPECT_NE(none.find("Status:           No matching image found"), std::string::npos);
  EXPECT_NE(none.find("Device Type:      ConnectX7"), std::string::npos);
  EXPECT_NE(none.find("PSID:             MT_"), std::string::npos);
  std::string newer = renderMlxQuery(s, std::string("28.44.1000"));
  EXPECT_NE(newer.find("Status:           Update required"), std::string::npos);
  EXPECT_NE(newer.find("FW             28.43.2026     28.44.1000"), std::string::npos) << newer;
  EXPECT_NE(newer.find("Found 8 device(s) requiring firmware update"), std::string::npos);
  std::string same = renderMlxQuery(s, s.versions["nic"]);
  EXPECT_NE(same.find("Status:           Up to date"), std::string::npos);
  EXPECT_EQ(same.find("Update required"), std::string::npos);
}

TEST(RenderInventoryTest, PrintsEveryComponentAndBootId) {
  HostState s = makeDefaultState("h", Platform::kCatalina);
  s.pending["bmc"] = "25.04-1";
  auto j = nlohmann::json::parse(renderInventory(s));
  for (const char* key : {"gpu_vbios", "hmc_bundle", "nic", "bmc", "sbios", "driver", "nvswitch"})
    EXPECT_EQ(j[key], s.versions[key]) << key;
  EXPECT_EQ(j["boot_id"], s.boot_id);
  EXPECT_EQ(j["pending"]["bmc"], "25.04-1");
}

TEST(RenderXidTest, KernelLogLineNamesPciAndXid) {
  HostState s = makeDefaultState("h", Platform::kCatalina);
  s.xids.push_back({2, 79, 1});
  EXPECT_EQ(renderXidLog(s),
            "NVRM: Xid (PCI:0018:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off "
            "the bus.\n");
}

}  // namespace
}  // namespace kiln::sim
