#pragma once
// Fault injection for the simulator: what a fault is, and the fleet-wide seeded decision of
// which hosts get one.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kiln::sim {

enum class FaultKind {
  kFlashFailure,        // the next `remaining` flashes fail
  kHang,                // the next `remaining` runs of `tool` sleep past any timeout
  kSlow,                // every duration is multiplied by `factor`
  kWeakLinkTransient,   // link counters grow for the next `remaining` NVLink checks, then stop
  kWeakLinkPersistent,  // link counters grow on every NVLink check
  kRowRemapPending,     // a GPU has an HBM row remap pending (applied at the next reset/reboot)
  kXid,                 // an Xid event on a GPU
  kFabricSplit,         // the tray's NVLink fabric joined another partition: another clique id
};

const char* faultKindName(FaultKind kind);
std::optional<FaultKind> parseFaultKind(std::string_view name);

// One injected fault. Fields a kind does not use keep their defaults.
struct Fault {
  FaultKind kind = FaultKind::kFlashFailure;
  int gpu = -1;         // GPU index, -1 = not applicable / choose
  int link = -1;        // NVLink index, -1 = not applicable / choose
  int remaining = -1;   // uses left; -1 = unlimited
  std::string tool;     // for kHang: tool name ("dcgmi", "nvfwupd", ...); empty = any tool
  double factor = 1.0;  // for kSlow
  int xid = 0;          // for kXid
  bool operator==(const Fault&) const = default;
};

nlohmann::json toJson(const Fault& fault);
Result<Fault> faultFromJson(const nlohmann::json& j);

// Fleet-wide seeding: decides from hash(seed, kind, host) alone whether `host` gets a fault of
// `kind`, so every simulated host in a fleet reaches the same answer independently and a run is
// reproducible. About `rate` of hosts (0..1) are chosen. When chosen, `templ` is returned with
// gpu/link (if left at -1 and meaningful for the kind) filled in deterministically.
// Pre-condition: gpus_per_host > 0, links_per_gpu > 0.
std::optional<Fault> seededFault(uint64_t seed, std::string_view host, double rate, const Fault& templ,
                                 int gpus_per_host, int links_per_gpu);

}  // namespace kiln::sim
