#pragma once
// Fleets for the store tests, built as the core type the store imports (core::FleetSpec), with no
// document to decode: the fleet document's decoder is the REST edge's (api/fleet_document.h).

#include <algorithm>
#include <string>
#include <vector>

#include "orchestrator/core/fleet_spec.h"

namespace kiln::db::fixture {

inline core::PodSpec podSpec(const std::string& site, const std::string& building, const std::string& id,
                             core::Platform platform) {
  core::PodSpec p;
  p.id = id;
  p.building = building;
  p.site = site;
  p.platform = platform;
  return p;
}

// The pods with their sites and buildings, each listed once, in the order the pods name them.
inline core::FleetSpec fleetOf(std::vector<core::PodSpec> pods) {
  core::FleetSpec f;
  for (auto& p : pods) {
    if (std::find(f.sites.begin(), f.sites.end(), p.site) == f.sites.end()) f.sites.push_back(p.site);
    const bool known = std::any_of(f.buildings.begin(), f.buildings.end(),
                                   [&](const core::BuildingSpec& b) { return b.id == p.building; });
    if (!known) f.buildings.push_back({p.building, p.site});
    f.pods.push_back(std::move(p));
  }
  return f;
}

}  // namespace kiln::db::fixture
