#include "orchestrator/rollouts/bundle.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "orchestrator/core/fleet_model.h"

namespace kiln::rollouts {

using nlohmann::json;

const BundleComponent* Bundle::component(const std::string& kind) const {
  for (const auto& c : components)
    if (c.kind == kind) return &c;
  return nullptr;
}

std::map<std::string, std::string> Bundle::workflowParams() const {
  std::map<std::string, std::string> p;
  for (const auto& c : components) {
    p[c.kind + "_version"] = c.version;
    p[c.kind + "_artifact"] = c.artifact;
    p[c.kind + "_sha256"] = c.sha256;
  }
  return p;
}

std::string bundleEtag(const Bundle& b) { return "\"" + sha256Hex(toJson(b).dump()).substr(0, 32) + "\""; }

json toJson(const Bundle& b) {
  json comps = json::array();
  for (const auto& c : b.components)
    comps.push_back({{"kind", c.kind}, {"version", c.version}, {"artifact", c.artifact}, {"sha256", c.sha256}});
  json pre = json::array();
  for (const auto& p : b.prerequisites) pre.push_back({{"kind", p.kind}, {"min_version", p.min_version}});
  json j = {{"id", b.id},          {"name", b.name},           {"version", b.version},
            {"platforms", b.platforms}, {"workflow", b.workflow}, {"components", comps},
            {"prerequisites", pre}};
  // Only when set: a bundle without one keeps the document (and ETag) it had before.
  if (!b.validation_workflow.empty()) j["validation_workflow"] = b.validation_workflow;
  if (!b.checksums.empty()) j["checksums"] = b.checksums;
  if (!b.signature.empty()) j["signature"] = b.signature;
  return j;
}

int compareVersions(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      na.erase(0, std::min(na.find_first_not_of('0'), na.size()));
      nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size()));
      if (na.size() != nb.size()) return na.size() < nb.size() ? -1 : 1;
      if (na != nb) return na < nb ? -1 : 1;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j] ? -1 : 1;
      ++i;
      ++j;
    }
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

const char* complianceName(Compliance c) {
  switch (c) {
    case Compliance::kCompliant: return "compliant";
    case Compliance::kNeedsUpgrade: return "needs_upgrade";
    case Compliance::kNeedsDowngrade: return "needs_downgrade";
    case Compliance::kIncompatible: return "incompatible";
  }
  return "unknown";
}

const char* bundleIs(const std::string& bundle_version, const std::string& current_version) {
  const int c = compareVersions(bundle_version, current_version);
  return c > 0 ? "newer" : c == 0 ? "same" : "older";
}

TargetCompliance targetCompliance(const Bundle& b, const std::map<std::string, std::string>& current, bool switch_tray) {
  TargetCompliance out;
  auto applies = [&](const std::string& kind) { return (kind == core::kSwitchComponent) == switch_tray; };
  for (const auto& p : b.prerequisites) {
    if (!applies(p.kind)) continue;
    auto it = current.find(p.kind);
    if (it == current.end()) {
      out.state = Compliance::kIncompatible;
      out.reasons.push_back(p.kind + " version unknown (prerequisite " + p.min_version + ")");
    } else if (compareVersions(it->second, p.min_version) < 0) {
      out.state = Compliance::kIncompatible;
      out.reasons.push_back(p.kind + " " + it->second + " is below the prerequisite " + p.min_version);
    }
  }
  if (out.state == Compliance::kIncompatible) return out;
  for (const auto& c : b.components) {
    if (!applies(c.kind)) continue;
    auto it = current.find(c.kind);
    const std::string have = it == current.end() ? "unknown" : it->second;
    if (have != c.version) {
      const bool back = it != current.end() && compareVersions(c.version, have) < 0;
      if (back) out.state = Compliance::kNeedsDowngrade;
      else if (out.state == Compliance::kCompliant) out.state = Compliance::kNeedsUpgrade;
      out.reasons.push_back(c.kind + " " + have + " -> " + c.version + (back ? " (older)" : ""));
      if (back) out.downgrades.push_back(out.reasons.back());
    }
  }
  return out;
}

PodCompliance podCompliance(const Bundle& b, const std::string& pod, const std::string& platform,
                            const std::map<std::string, std::map<std::string, std::string>>& host_versions,
                            const std::map<std::string, std::map<std::string, std::string>>& switch_versions) {
  PodCompliance out;
  out.pod = pod;
  if (std::find(b.platforms.begin(), b.platforms.end(), platform) == b.platforms.end()) {
    out.state = Compliance::kIncompatible;
    out.reasons.push_back("platform " + platform + " is not one of the bundle's");
    return out;
  }
  auto visit = [&](const std::string& id, const std::map<std::string, std::string>& v, bool sw) {
    auto t = targetCompliance(b, v, sw);
    if (!sw) {
      if (t.state == Compliance::kCompliant) ++out.hosts_compliant;
      else if (t.state == Compliance::kNeedsUpgrade) ++out.hosts_needing_upgrade;
      else if (t.state == Compliance::kNeedsDowngrade) ++out.hosts_needing_downgrade;
      else ++out.hosts_incompatible;
    }
    // The enum's order is the rank: incompatible > needs_downgrade > needs_upgrade > compliant.
    if (static_cast<int>(t.state) > static_cast<int>(out.state)) out.state = t.state;
    for (const auto& r : t.downgrades)
      if (out.downgrades.size() < 5) out.downgrades.push_back(id + ": " + r);
    if (t.state != Compliance::kCompliant && out.reasons.size() < 5)
      for (const auto& r : t.reasons) out.reasons.push_back(id + ": " + r);
  };
  for (const auto& [id, v] : host_versions) visit(id, v, false);
  for (const auto& [id, v] : switch_versions) visit(id, v, true);
  return out;
}

}  // namespace kiln::rollouts
