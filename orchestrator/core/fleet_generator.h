#pragma once
// A realistic synthetic fleet file (`kilnctl fleet generate`, benchmarks, demos): pods of 72
// GPUs in buildings of at most 20,736 GPUs (288 pods; docs/FACTS.md: building fabrics of up to
// 20,736 GPUs), 8 buildings per site, a mix of catalina (GB200) and clemente (GB300) pods.
// Pure and deterministic for a given request.

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace kiln::core {

struct FleetGenRequest {
  std::int64_t gpus = 0;            // rounded up to whole pods of 72
  int buildings_per_site = 8;
  int pods_per_building = 288;      // 20,736 GPUs
  double clemente_share = 0.5;      // the rest catalina
  std::string site_prefix = "site";
  bool with_versions = true;        // fleet-level component versions
};

// {"versions": {...}, "sites": [{"name", "buildings": [{"name", "pods": [...]}]}]}
nlohmann::json generateFleet(const FleetGenRequest& req);

}  // namespace kiln::core
