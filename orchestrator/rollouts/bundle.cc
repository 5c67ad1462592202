#include "orchestrator/rollouts/bundle.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/fleet_spec.h"

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

namespace {

bool isHex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<Bundle> parseBundle(const json& doc) {
  Error bad = invalidContent("invalid bundle");
  auto fail = [&](std::string path, std::string msg) { bad.fields.push_back({std::move(path), std::move(msg)}); };
  Bundle b;
  if (!doc.is_object()) return invalidContent("a bundle is an object {name, version, platforms, components, ...}");
  for (const auto& [k, _] : doc.items())
    if (k != "name" && k != "version" && k != "platforms" && k != "workflow" && k != "components" &&
        k != "prerequisites" && k != "description")
      fail(k, "unknown field");
  b.name = str(doc, "name");
  if (!core::isValidName(b.name)) fail("name", "expected a name of 1-63 characters [a-z0-9._-]");
  // A whole number is its digits; a fraction is refused: YAML reads `version: 1.10` as the
  // number 1.1, which would name another bundle.
  const bool fraction = doc.contains("version") && doc["version"].is_number_float();
  if (doc.contains("version") && doc["version"].is_number_integer()) b.version = doc["version"].dump();
  else b.version = str(doc, "version");
  if (fraction)
    fail("version", "expected a version string: quote it (\"" + doc["version"].dump() +
                        "\" as a number may have lost digits, e.g. 1.10 reads as 1.1)");
  else if (b.version.empty() || b.version.size() > 64)
    fail("version", "expected a version string");
  if (doc.contains("workflow")) {
    b.workflow = str(doc, "workflow");
    if (b.workflow.empty()) fail("workflow", "expected a workflow name");
  }
  if (!doc.contains("platforms") || !doc["platforms"].is_array() || doc["platforms"].empty()) {
    fail("platforms", "expected a list of platforms (catalina, clemente, san_miguel)");
  } else {
    for (std::size_t i = 0; i < doc["platforms"].size(); ++i) {
      const auto& p = doc["platforms"][i];
      if (!p.is_string() || !core::parsePlatform(p.get<std::string>()))
        fail("platforms[" + std::to_string(i) + "]", "expected catalina, clemente or san_miguel");
      else b.platforms.push_back(p.get<std::string>());
    }
  }
  std::set<std::string> kinds;
  if (!doc.contains("components") || !doc["components"].is_array() || doc["components"].empty()) {
    fail("components", "expected a list of components");
  } else {
    for (std::size_t i = 0; i < doc["components"].size(); ++i) {
      const json& c = doc["components"][i];
      const std::string p = "components[" + std::to_string(i) + "]";
      if (!c.is_object()) {
        fail(p, "expected {kind, version, artifact, sha256}");
        continue;
      }
      for (const auto& [k, _] : c.items())
        if (k != "kind" && k != "version" && k != "artifact" && k != "sha256") fail(p + "." + k, "unknown field");
      BundleComponent bc{str(c, "kind"), str(c, "version"), str(c, "artifact"), str(c, "sha256")};
      if (!core::isComponentKind(bc.kind))
        fail(p + ".kind", "expected gpu_vbios, hmc_bundle, nic, bmc, sbios, driver or nvswitch");
      else if (!kinds.insert(bc.kind).second)
        fail(p + ".kind", "component '" + bc.kind + "' appears twice");
      if (bc.version.empty() || bc.version.size() > 128) fail(p + ".version", "expected a version string");
      if (bc.artifact.empty()) fail(p + ".artifact", "expected the artifact's URI");
      if (!isHex64(bc.sha256)) fail(p + ".sha256", "expected 64 hex digits");
      std::transform(bc.sha256.begin(), bc.sha256.end(), bc.sha256.begin(), [](unsigned char ch) { return std::tolower(ch); });
      b.components.push_back(std::move(bc));
    }
  }
  if (doc.contains("prerequisites")) {
    if (!doc["prerequisites"].is_array()) {
      fail("prerequisites", "expected a list of {kind, min_version}");
    } else {
      for (std::size_t i = 0; i < doc["prerequisites"].size(); ++i) {
        const json& c = doc["prerequisites"][i];
        const std::string p = "prerequisites[" + std::to_string(i) + "]";
        Prerequisite pr{c.is_object() ? str(c, "kind") : "", c.is_object() ? str(c, "min_version") : ""};
        if (!core::isComponentKind(pr.kind)) fail(p + ".kind", "expected a component kind");
        if (pr.min_version.empty()) fail(p + ".min_version", "expected a version string");
        b.prerequisites.push_back(std::move(pr));
      }
    }
  }
  if (!bad.fields.empty()) {
    bad.message = "invalid bundle: " + bad.fields[0].path + ": " + bad.fields[0].message;
    return bad;
  }
  return b;
}

std::string bundleEtag(const Bundle& b) { return "\"" + sha256Hex(toJson(b).dump()).substr(0, 32) + "\""; }

json toJson(const Bundle& b) {
  json comps = json::array();
  for (const auto& c : b.components)
    comps.push_back({{"kind", c.kind}, {"version", c.version}, {"artifact", c.artifact}, {"sha256", c.sha256}});
  json pre = json::array();
  for (const auto& p : b.prerequisites) pre.push_back({{"kind", p.kind}, {"min_version", p.min_version}});
  return {{"id", b.id},          {"name", b.name},           {"version", b.version},
          {"platforms", b.platforms}, {"workflow", b.workflow}, {"components", comps},
          {"prerequisites", pre}};
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
