#pragma once
// The physical fleet model: platforms and the geometry of one NVL72 pod (docs/FACTS.md, "The fleet
// Kiln is built for"), and the expansion of a pod into racks, compute trays (hosts), NVLink
// switch trays and GPUs. Pure and thread-safe.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <map>

#include "common/component_kinds.h"
#include "orchestrator/core/host_lifecycle.h"

namespace kiln::core {

enum class Platform { kCatalina, kClemente, kSanMiguel };

std::string_view platformName(Platform p);
std::optional<Platform> parsePlatform(std::string_view name);
const std::vector<Platform>& allPlatforms();

struct PlatformGeometry {
  std::string_view gpu_model;
  int racks_per_pod;
  int gpus_per_pod;        // 72: one NVLink domain
  int compute_trays;       // 18 hosts per pod
  int gpus_per_tray;       // 4
  int spare_trays;         // 2 trays = 8 GPUs are in-rack spares
  int switch_trays;        // 9 NVLink switch trays
  int nvlink_links_per_gpu;
  int active_gpus_per_pod() const { return gpus_per_pod - spare_trays * gpus_per_tray; }  // 64
};

// docs/FACTS.md: Catalina = GB200 NVL72 as 2 racks x 36 GPUs; Clemente = GB300 NVL72 in 1 rack;
// San Miguel = Vera Rubin NVL72 in 1 rack. 18 compute trays of 4 GPUs, 9 switch trays,
// 64-GPU slice + 8 spare GPUs per domain, 18 NVLink5 links per GPU.
const PlatformGeometry& geometry(Platform p);

// Component kinds carried per host (firmware and driver) and per switch tray.
// hmc_bundle = the HMC/EROT/CPLD package nvfwupd pushes per tray.
// (One list for every layer: common/component_kinds.h.)
inline constexpr const auto& kHostComponents = components::kHostKinds;
inline constexpr std::string_view kSwitchComponent = components::kSwitchKind;
bool isComponentKind(std::string_view kind);

struct RackLayout {
  std::string id;
  int index;  // 1-based
};
struct HostLayout {
  std::string id;
  std::string rack_id;
  int tray;  // 1-based across the pod
  bool spare;
};
struct SwitchTrayLayout {
  std::string id;
  std::string rack_id;
  int tray;
};
struct PodLayout {
  std::vector<RackLayout> racks;
  std::vector<HostLayout> hosts;
  std::vector<SwitchTrayLayout> switch_trays;
};

// Names are derived from the pod id so that a pod always expands to the same ids:
// rack "<pod>-r1", host "<pod>-h01".."<pod>-h18", switch tray "<pod>-s1".."<pod>-s9",
// GPU "<host>-g0".."<host>-g3". The spares are the last compute tray of each rack.
PodLayout expandPod(std::string_view pod_id, Platform platform);
std::string gpuId(std::string_view host_id, int index);

}  // namespace kiln::core

namespace kiln::core {
// A pod's state from its hosts' states (stored on the pod so lists can filter on it):
// retired (all hosts retired), incoming (new hardware not yet in service), maintenance (a host
// draining, in maintenance or validating), in_service (>= 64 GPUs can serve jobs: the spares
// cover the rest), degraded (fewer), down (none).
enum class PodState { kInService, kDegraded, kMaintenance, kIncoming, kDown, kRetired };
std::string_view podStateName(PodState s);
std::optional<PodState> parsePodState(std::string_view name);
const std::vector<PodState>& allPodStates();  // in the order GET /pods documents them
// Writes podStateName (test failures print the name).
std::ostream& operator<<(std::ostream& os, PodState s);
// In service (in_service or degraded: some GPUs serve jobs): the pods a rollout plans and the
// building's capacity counts as up.
bool podInService(PodState s);
const std::vector<PodState>& inServicePodStates();
// "('in_service', 'degraded')": a set of pod states as an SQL list of text literals.
std::string podStateSqlList(const std::vector<PodState>& states);

PodState podState(const std::map<HostState, int>& hosts_by_state, const PlatformGeometry& g);
}  // namespace kiln::core
