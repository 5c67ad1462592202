#include "orchestrator/rollouts/consistency.h"

#include <algorithm>

namespace kiln::rollouts {

std::vector<VersionMismatch> mixedVersions(const Bundle& bundle, const std::vector<core::ComponentVersion>& components,
                                           const std::set<std::string>& devices) {
  std::vector<VersionMismatch> out;
  for (const auto& c : components) {
    if (!devices.count(c.target)) continue;
    const BundleComponent* want = bundle.component(c.kind);
    if (want == nullptr || want->version == c.version) continue;
    out.push_back({c.target, c.kind, c.version, want->version});
  }
  std::sort(out.begin(), out.end(), [](const VersionMismatch& a, const VersionMismatch& b) {
    return a.device != b.device ? a.device < b.device : a.kind < b.kind;
  });
  return out;
}

std::string describeMismatches(const std::vector<VersionMismatch>& mismatches, std::size_t listed) {
  std::string out;
  for (std::size_t i = 0; i < mismatches.size() && i < listed; ++i) {
    const auto& m = mismatches[i];
    out += (i == 0 ? "" : ", ") + m.device + " " + m.kind + " " + m.version + " (bundle " + m.want + ")";
  }
  if (mismatches.size() > listed) out += " and " + std::to_string(mismatches.size() - listed) + " more";
  return out;
}

}  // namespace kiln::rollouts
