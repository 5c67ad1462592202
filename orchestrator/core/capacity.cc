#include "orchestrator/core/capacity.h"

#include <cmath>

namespace kiln::core {

Result<CapacityPlan> planCapacity(const CapacityRequest& req) {
  if (req.active_gpus < 1 || req.active_gpus > 100'000'000)
    return invalidContent("active_gpus must be between 1 and 100000000");
  if (!(req.reserve_fraction >= 0.0 && req.reserve_fraction <= 1.0))
    return invalidContent("reserve_fraction must be between 0 and 1");
  const PlatformGeometry& g = geometry(req.platform);
  const std::int64_t per_slice = g.active_gpus_per_pod();
  CapacityPlan p;
  p.slices = (req.active_gpus + per_slice - 1) / per_slice;
  // Round the reserve up to whole pods; the small epsilon keeps 512 * 1.0 from becoming 513
  // through floating-point noise.
  p.pods = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(p.slices) * (1.0 + req.reserve_fraction) - 1e-9));
  p.racks = p.pods * g.racks_per_pod;
  p.gpus = p.pods * g.gpus_per_pod;
  p.spare_gpus = p.gpus - req.active_gpus;
  p.overhead_fraction = static_cast<double>(p.spare_gpus) / static_cast<double>(p.gpus);
  p.geometry_fraction =
      static_cast<double>(g.gpus_per_pod - per_slice) / static_cast<double>(g.gpus_per_pod);
  p.reserve_fraction = p.overhead_fraction - p.geometry_fraction;
  return p;
}

}  // namespace kiln::core
