#pragma once
// Firmware/driver bundles and compliance (docs/DESIGN.md "Rollouts"). Pure and thread-safe.
//
//   name: gb200-fw-2026.11
//   version: "1.4.0"
//   platforms: [catalina]
//   workflow: firmware-upgrade            # default
//   components:
//     - {kind: hmc_bundle, version: "GB200-P4059-0301-1.4.0", artifact: "https://.../x.fwpkg", sha256: "<64 hex>"}
//     - {kind: driver, version: "580.65.06", artifact: "...", sha256: "..."}
//   prerequisites:
//     - {kind: bmc, min_version: "25.04-1"}
//   checksums: |                          # optional (issue 31): SHA256SUMS text listing every
//     <64 hex>  x.fwpkg                   # component's sha256, and
//   signature: |                          # its ASCII-armored detached OpenPGP signature
//     -----BEGIN PGP SIGNATURE----- ...

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"

namespace kiln::rollouts {

struct BundleComponent {
  std::string kind;  // gpu_vbios | hmc_bundle | nic | bmc | sbios | driver | nvswitch
  std::string version;
  std::string artifact;
  std::string sha256;
  bool operator==(const BundleComponent&) const = default;
};

struct Prerequisite {
  std::string kind;
  std::string min_version;
  bool operator==(const Prerequisite&) const = default;
};

struct Bundle {
  std::string id;  // assigned by the store
  std::string name, version;
  std::vector<std::string> platforms;
  std::string workflow = "firmware-upgrade";
  // The workflow that validates a pod after this bundle's upgrade (issue 32); empty: kilnd's
  // default (pre-job-health on each host). A pod-scope one runs on the pod's upgraded hosts
  // together, e.g. nvlink-domain-validation (the NVLink domain as a whole).
  std::string validation_workflow;
  std::vector<BundleComponent> components;
  std::vector<Prerequisite> prerequisites;
  // The signed checksum list (common/artifact_trust.h): "" and "" for an unsigned bundle.
  std::string checksums;
  std::string signature;
  bool operator==(const Bundle&) const = default;

  const BundleComponent* component(const std::string& kind) const;
  // Params for the install workflow: <kind>_version, <kind>_artifact, <kind>_sha256.
  std::map<std::string, std::string> workflowParams() const;
};

// The bundle's document: what its ETag hashes, what GET /bundles answers and the store keeps (less
// the id). `checksums` and `signature` appear only when non-empty, so an unsigned bundle's
// document (and ETag) is what it was before signed bundles. The strict decoder of a bundle document is the REST edge's (api/rollout_documents.h).
nlohmann::json toJson(const Bundle& b);
// The bundle's entity tag (ETag header, If-Match on POST /bundles): a hash of its content, quoted.
std::string bundleEtag(const Bundle& b);

// Compares version strings by their numeric and text runs ("570.133.20" < "580.65.06",
// "1.9" < "1.10", "25.04-1" < "25.04-2"): <0, 0, >0.
int compareVersions(const std::string& a, const std::string& b);

// kNeedsDowngrade: some component runs a NEWER version than the bundle's, so applying the
// bundle would move it back (issue 18: a downgrade is never called an upgrade). It outranks
// kNeedsUpgrade; kIncompatible outranks both.
enum class Compliance { kCompliant, kNeedsUpgrade, kNeedsDowngrade, kIncompatible };
const char* complianceName(Compliance c);

// Where a target's version of a component stands against the bundle's: "newer" (the bundle
// would upgrade it), "same", "older" (the bundle would downgrade it).
const char* bundleIs(const std::string& bundle_version, const std::string& current_version);

// One component kind of a pod against the bundle: how many targets run each version.
struct ComponentCompliance {
  std::string kind, version;  // version: the bundle's
  std::vector<std::pair<std::string, int>> current;  // version -> targets
};

struct TargetCompliance {
  Compliance state = Compliance::kCompliant;
  std::vector<std::string> reasons;  // "driver 570.133.20 -> 580.65.06", "bmc 24.1 below 25.04-1"
  std::vector<std::string> downgrades;  // the reasons that move a component back ("... (older)")
};

// One host (or switch tray): its current versions by component kind against the bundle.
// `switch_tray` selects which components apply (nvswitch only vs everything else).
TargetCompliance targetCompliance(const Bundle& b, const std::map<std::string, std::string>& current,
                                  bool switch_tray);

struct PodCompliance {
  std::string pod;
  Compliance state = Compliance::kCompliant;
  std::vector<std::string> reasons;
  int hosts_compliant = 0, hosts_needing_upgrade = 0, hosts_incompatible = 0;
  int hosts_needing_downgrade = 0;
  std::vector<std::string> downgrades;  // the reasons that move a component back, e.g. "nic 28.45.1200 -> 28.44.1036 (older)"
  std::vector<ComponentCompliance> components;  // from the fleet's version counts (complianceFromCounts)
};

// A pod: incompatible if its platform is not in the bundle or any target is incompatible;
// needs upgrade if any target does; else compliant.
PodCompliance podCompliance(const Bundle& b, const std::string& pod, const std::string& platform,
                            const std::map<std::string, std::map<std::string, std::string>>& host_versions,
                            const std::map<std::string, std::map<std::string, std::string>>& switch_versions);

}  // namespace kiln::rollouts
