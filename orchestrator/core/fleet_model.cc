#include "orchestrator/core/fleet_model.h"

#include <cstdio>
#include <ostream>

#include "common/result.h"

namespace kiln::core {
namespace {

constexpr PlatformGeometry kCatalina{"GB200", 2, 72, 18, 4, 2, 9, 18};
constexpr PlatformGeometry kClemente{"GB300", 1, 72, 18, 4, 2, 9, 18};
constexpr PlatformGeometry kSanMiguel{"VR200", 1, 72, 18, 4, 2, 9, 18};

std::string suffixed(std::string_view base, const char* fmt, int n) {
  char buf[16];
  std::snprintf(buf, sizeof buf, fmt, n);
  std::string out(base);
  out += buf;
  return out;
}

}  // namespace

std::string_view platformName(Platform p) {
  switch (p) {
    case Platform::kCatalina: return "catalina";
    case Platform::kClemente: return "clemente";
    case Platform::kSanMiguel: return "san_miguel";
  }
  return "unknown";
}

std::optional<Platform> parsePlatform(std::string_view name) {
  for (Platform p : allPlatforms())
    if (platformName(p) == name) return p;
  return std::nullopt;
}

const std::vector<Platform>& allPlatforms() {
  static const std::vector<Platform> all = {Platform::kCatalina, Platform::kClemente,
                                            Platform::kSanMiguel};
  return all;
}

const PlatformGeometry& geometry(Platform p) {
  switch (p) {
    case Platform::kCatalina: return kCatalina;
    case Platform::kClemente: return kClemente;
    case Platform::kSanMiguel: return kSanMiguel;
  }
  KILN_CHECK(false && "unknown platform");
}

bool isComponentKind(std::string_view kind) {
  if (kind == kSwitchComponent) return true;
  for (auto k : kHostComponents)
    if (k == kind) return true;
  return false;
}

PodLayout expandPod(std::string_view pod_id, Platform platform) {
  const PlatformGeometry& g = geometry(platform);
  PodLayout out;
  for (int r = 1; r <= g.racks_per_pod; ++r) out.racks.push_back({suffixed(pod_id, "-r%d", r), r});
  const int trays_per_rack = g.compute_trays / g.racks_per_pod;
  const int spares_per_rack = g.spare_trays / g.racks_per_pod;
  for (int t = 1; t <= g.compute_trays; ++t) {
    const int rack = (t - 1) / trays_per_rack;  // 0-based
    const int pos_in_rack = (t - 1) % trays_per_rack;
    const bool spare = pos_in_rack >= trays_per_rack - spares_per_rack;
    out.hosts.push_back({suffixed(pod_id, "-h%02d", t), out.racks[rack].id, t, spare});
  }
  for (int s = 1; s <= g.switch_trays; ++s) {
    const int rack = (s - 1) % g.racks_per_pod;
    out.switch_trays.push_back({suffixed(pod_id, "-s%d", s), out.racks[rack].id, s});
  }
  return out;
}

std::string gpuId(std::string_view host_id, int index) { return suffixed(host_id, "-g%d", index); }

}  // namespace kiln::core

namespace kiln::core {

namespace {
struct PodStateName {
  PodState state;
  std::string_view name;
};
constexpr std::array kPodStateNames = {
    PodStateName{PodState::kInService, "in_service"}, PodStateName{PodState::kDegraded, "degraded"},
    PodStateName{PodState::kMaintenance, "maintenance"}, PodStateName{PodState::kIncoming, "incoming"},
    PodStateName{PodState::kDown, "down"},             PodStateName{PodState::kRetired, "retired"},
};
}  // namespace

std::string_view podStateName(PodState s) {
  for (const auto& n : kPodStateNames)
    if (n.state == s) return n.name;
  return "unknown";
}

std::optional<PodState> parsePodState(std::string_view name) {
  for (const auto& n : kPodStateNames)
    if (n.name == name) return n.state;
  return std::nullopt;
}

const std::vector<PodState>& allPodStates() {
  static const std::vector<PodState> all = [] {
    std::vector<PodState> v;
    for (const auto& n : kPodStateNames) v.push_back(n.state);
    return v;
  }();
  return all;
}

std::ostream& operator<<(std::ostream& os, PodState s) { return os << podStateName(s); }

bool podInService(PodState s) { return s == PodState::kInService || s == PodState::kDegraded; }

const std::vector<PodState>& inServicePodStates() {
  static const std::vector<PodState> states = [] {
    std::vector<PodState> v;
    for (auto s : allPodStates())
      if (podInService(s)) v.push_back(s);
    return v;
  }();
  return states;
}

std::string podStateSqlList(const std::vector<PodState>& states) {
  std::string out = "(";
  for (auto s : states) out += (out.size() == 1 ? "'" : ", '") + std::string(podStateName(s)) + "'";
  return out + ")";
}

PodState podState(const std::map<HostState, int>& by_state, const PlatformGeometry& g) {
  auto count = [&](HostState s) {
    auto it = by_state.find(s);
    return it == by_state.end() ? 0 : it->second;
  };
  int total = 0;
  for (const auto& [_, n] : by_state) total += n;
  const int serving = count(HostState::kAvailable) + count(HostState::kAllocated);
  if (total > 0 && count(HostState::kRetired) == total) return PodState::kRetired;
  if (count(HostState::kDraining) + count(HostState::kMaintenance) + count(HostState::kValidating) > 0)
    return PodState::kMaintenance;
  if (serving == 0 && count(HostState::kIncoming) + count(HostState::kBurnIn) > 0) return PodState::kIncoming;
  if (serving * g.gpus_per_tray >= g.active_gpus_per_pod()) return PodState::kInService;
  if (serving > 0) return PodState::kDegraded;
  return PodState::kDown;
}

}  // namespace kiln::core
