#include "orchestrator/core/fleet_generator.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace kiln::core {

nlohmann::json generateFleet(const FleetGenRequest& req) {
  using nlohmann::json;
  const std::int64_t pods = (req.gpus + 71) / 72;
  json fleet = json::object();
  if (req.with_versions)
    fleet["versions"] = {{"gpu_vbios", "97.00.82.00.0F"}, {"hmc_bundle", "GB200-P4059-0301-1.3.1"},
                         {"nic", "28.43.1014"},           {"bmc", "25.04-1"},
                         {"sbios", "2.4.0"},              {"driver", "570.133.20"},
                         {"nvswitch", "1.3.0"}};
  json sites = json::array();
  std::int64_t made = 0;
  int building_no = 0;
  char name[64];
  // Every k-th pod is clemente so the mix is even across buildings (deterministic).
  const int clemente_every = req.clemente_share <= 0 ? 0 : static_cast<int>(1.0 / req.clemente_share + 0.5);
  for (int s = 1; made < pods; ++s) {
    std::snprintf(name, sizeof name, "%s%02d", req.site_prefix.c_str(), s);
    json site = {{"name", name}, {"buildings", json::array()}};
    const std::string site_name = name;
    for (int b = 1; b <= req.buildings_per_site && made < pods; ++b) {
      ++building_no;
      std::snprintf(name, sizeof name, "%s-b%02d", site_name.c_str(), b);
      const std::string bname = name;
      json building = {{"name", bname}, {"pods", json::array()}};
      for (int p = 1; p <= req.pods_per_building && made < pods; ++p, ++made) {
        std::snprintf(name, sizeof name, "%s-p%04d", bname.c_str(), p);
        const bool clemente = clemente_every > 0 && (made % clemente_every) == 0;
        building["pods"].push_back({{"name", name},
                                    {"platform", clemente ? "clemente" : "catalina"},
                                    {"labels", {{"row", std::string(1, static_cast<char>('a' + (p - 1) / 36))}}}});
      }
      site["buildings"].push_back(std::move(building));
    }
    sites.push_back(std::move(site));
  }
  fleet["sites"] = std::move(sites);
  return fleet;
}

}  // namespace kiln::core
