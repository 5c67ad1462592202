#include "orchestrator/rollouts/rollout_internal.h"

#include <map>

#include "common/artifact_ref.h"
#include "orchestrator/rollouts/controller.h"

namespace kiln::rollouts {

using nlohmann::json;

const core::Actor kController{"system", "rollout controller"};

Result<LoadedRollout> loadRollout(BundleCatalog& bundles, RolloutRecords& rollouts, const std::string& id) {
  auto row = rollouts.getRollout(id);
  if (!row.ok()) return row.error();
  auto b = bundles.getBundle(row->bundle_id);
  if (!b.ok()) return b.error();
  if (!*b) return notFound("no bundle '" + row->bundle_id + "'");
  return LoadedRollout{*row, (*b)->bundle};
}

json installParams(const Bundle& b, const std::vector<std::string>& declared) {
  std::map<std::string, std::string> p = b.workflowParams();
  for (const auto& c : b.components) {
    p["target_" + c.kind] = c.version;
    if (c.artifact.empty()) continue;
    // Artifact params (issue 31): the location with its sha256; the agent fetches and checks it.
    const std::string artifact = artifactValue({c.artifact, c.sha256});
    if (c.kind == "hmc_bundle" || ((c.kind == "gpu_vbios" || c.kind == "sbios") && !p.count("tray_package")))
      p["tray_package"] = artifact;
    if (c.kind == "nic") p["nic_image"] = artifact;
    if (c.kind == "bmc") p["bmc_image"] = artifact;            // tray-bmc-firmware (issue 32)
    if (c.kind == "nvswitch") p["nvswitch_image"] = artifact;  // switch-tray-firmware (issue 32)
  }
  p["artifact_checksums"] = b.checksums;
  p["artifact_signature"] = b.signature;
  json out = json::object();
  for (const auto& name : declared)
    if (auto it = p.find(name); it != p.end()) out[name] = it->second;
  return out;
}

std::vector<double> podSeconds(const std::vector<RolloutPodRow>& rows) {
  std::vector<double> out;
  for (const auto& p : rows)
    if (p.started_at && p.finished_at && (p.phase == PodPhase::kSucceeded || p.phase == PodPhase::kFailed))
      out.push_back(std::chrono::duration<double>(*p.finished_at - *p.started_at).count());
  return out;
}

std::string schedulerReason(const std::string& rollout, const Bundle& bundle) {
  return "kiln: " + rollout + " " + bundle.workflow + " " + bundle.name + " " + bundle.version;
}

}  // namespace kiln::rollouts
