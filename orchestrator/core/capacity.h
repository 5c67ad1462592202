#pragma once
// Capacity planning for NVL72 fleets (docs/FACTS.md, "Sparing geometry"): a job of N active GPUs
// runs on 64-GPU slices of 72-GPU domains, plus a whole-rack reserve. Pure and thread-safe.

#include <cstdint>

#include "common/result.h"
#include "orchestrator/core/fleet_model.h"

namespace kiln::core {

struct CapacityRequest {
  std::int64_t active_gpus = 0;
  double reserve_fraction = 0.02;  // docs/FACTS.md: ~2% extra whole racks held in reserve
  Platform platform = Platform::kClemente;
};

struct CapacityPlan {
  std::int64_t slices = 0;         // ceil(active / 64)
  std::int64_t pods = 0;           // ceil(slices * (1 + reserve))
  std::int64_t racks = 0;          // pods * racks per pod
  std::int64_t gpus = 0;           // pods * 72
  std::int64_t spare_gpus = 0;     // gpus - active
  double overhead_fraction = 0;    // (gpus - active) / gpus
  double geometry_fraction = 0;    // 8 / 72 of the total
  double reserve_fraction = 0;     // the rest of the overhead
};

// Errors: kInvalidContent when active_gpus < 1 or > 100,000,000, or reserve outside [0, 1].
Result<CapacityPlan> planCapacity(const CapacityRequest& request);

}  // namespace kiln::core
