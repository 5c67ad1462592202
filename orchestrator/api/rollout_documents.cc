#include "orchestrator/api/rollout_documents.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/artifact_ref.h"
#include "orchestrator/core/fleet_model.h"
#include "orchestrator/core/fleet_spec.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::api {

using nlohmann::json;
using rollouts::Bundle;
using rollouts::BundleComponent;
using rollouts::Policy;
using rollouts::Prerequisite;
using rollouts::Selector;
using rollouts::WaveSize;

namespace {

bool isHex64(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<WaveSize> parseWave(const json& v) {
  if (v.is_number() && v.get<double>() >= 1) return WaveSize{v.get<double>(), false};
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (!s.empty() && s.back() == '%') {
      try {
        double d = std::stod(s.substr(0, s.size() - 1));
        if (d > 0 && d <= 100) return WaveSize{d, true};
      } catch (...) {
      }
    }
  }
  return std::nullopt;
}

}  // namespace

Result<Bundle> parseBundle(const json& doc) {
  Error bad = invalidContent("invalid bundle");
  auto fail = [&](std::string path, std::string msg) { bad.fields.push_back({std::move(path), std::move(msg)}); };
  Bundle b;
  if (!doc.is_object()) return invalidContent("a bundle is an object {name, version, platforms, components, ...}");
  for (const auto& [k, _] : doc.items())
    if (k != "name" && k != "version" && k != "platforms" && k != "workflow" && k != "components" &&
        k != "prerequisites" && k != "description" && k != "checksums" && k != "signature" &&
        k != "validation_workflow")
      fail(k, "unknown field");
  b.name = str(doc, "name");
  if (!core::isValidName(b.name)) fail("name", "expected a name of 1-63 characters [a-z0-9._-]");
  // A whole number is its digits; a fraction is refused: YAML reads `version: 1.10` as the
  // number 1.1, which would name another bundle.
  const bool fraction = doc.contains("version") && doc["version"].is_number_float();
  if (doc.contains("version") && doc["version"].is_number_integer())
    b.version = doc["version"].dump();
  else
    b.version = str(doc, "version");
  if (fraction)
    fail("version", "expected a version string: quote it (\"" + doc["version"].dump() +
                        "\" as a number may have lost digits, e.g. 1.10 reads as 1.1)");
  else if (b.version.empty() || b.version.size() > 64)
    fail("version", "expected a version string");
  if (doc.contains("workflow")) {
    b.workflow = str(doc, "workflow");
    if (b.workflow.empty()) fail("workflow", "expected a workflow name");
  }
  if (doc.contains("validation_workflow")) {
    b.validation_workflow = str(doc, "validation_workflow");
    if (b.validation_workflow.empty()) fail("validation_workflow", "expected a workflow name (omit it for pre-job-health)");
  }
  if (!doc.contains("platforms") || !doc["platforms"].is_array() || doc["platforms"].empty()) {
    fail("platforms", "expected a list of platforms (catalina, clemente, san_miguel)");
  } else {
    for (std::size_t i = 0; i < doc["platforms"].size(); ++i) {
      const auto& p = doc["platforms"][i];
      if (!p.is_string() || !core::parsePlatform(p.get<std::string>()))
        fail("platforms[" + std::to_string(i) + "]", "expected catalina, clemente or san_miguel");
      else
        b.platforms.push_back(p.get<std::string>());
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
      if (!isHex64(bc.sha256)) fail(p + ".sha256", "expected 64 hex digits");
      // What the install workflow's artifact params hold and the agents fetch (issue 31); a bad
      // sha256 is named on its own field only.
      const std::string digest = isHex64(bc.sha256) ? bc.sha256 : std::string(64, '0');
      if (bc.artifact.empty())
        fail(p + ".artifact", "expected the artifact's https:// or http:// URL or absolute path");
      else if (auto a = parseArtifactValue(bc.artifact + "#sha256=" + digest); !a.ok())
        fail(p + ".artifact", a.error().message);
      std::transform(bc.sha256.begin(), bc.sha256.end(), bc.sha256.begin(),
                     [](unsigned char ch) { return std::tolower(ch); });
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
  // The signed checksum list; the rollout service checks it against the site's keys.
  auto text = [&](const char* key, std::string& into, const char* expected) {
    if (!doc.contains(key)) return;
    if (doc[key].is_string())
      into = doc[key].get<std::string>();
    else
      fail(key, expected);
  };
  text("checksums", b.checksums, "expected the SHA256SUMS text listing the components' sha256");
  text("signature", b.signature, "expected an ASCII-armored detached OpenPGP signature of checksums");
  if (!bad.fields.empty()) {
    bad.message = "invalid bundle: " + bad.fields[0].path + ": " + bad.fields[0].message;
    return bad;
  }
  return b;
}

Result<Policy> parsePolicy(const json& doc) {
  Policy p;
  if (doc.is_null()) return p;
  Error bad = invalidContent("invalid policy");
  auto fail = [&](const std::string& path, const std::string& m) { bad.fields.push_back({"policy." + path, m}); };
  if (!doc.is_object()) return invalidContent("policy must be an object");
  static const std::set<std::string> known = {"canary_pods",
                                              "waves",
                                              "soak",
                                              "max_concurrent_pods",
                                              "capacity_floor",
                                              "allocated",
                                              "failure_budget",
                                              "max_rebooting_pods_per_building",
                                              "order",
                                              "windows",
                                              "validation_workflow"};
  for (const auto& [k, _] : doc.items())
    if (!known.count(k)) fail(k, "unknown field");
  auto intField = [&](const char* key, int& out, int lo, int hi) {
    if (!doc.contains(key)) return;
    const json& v = doc[key];
    if (!v.is_number_integer() || v.get<int>() < lo || v.get<int>() > hi)
      fail(key, "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
    else
      out = v.get<int>();
  };
  intField("canary_pods", p.canary_pods, 0, 1000);
  intField("max_concurrent_pods", p.max_concurrent_pods, 1, 10000);
  intField("max_rebooting_pods_per_building", p.max_rebooting_pods_per_building, 1, 10000);
  if (doc.contains("waves")) {
    if (!doc["waves"].is_array() || doc["waves"].empty()) {
      fail("waves", "expected a list like [\"10%\", \"50%\", \"100%\"] or [5, 20, 100]");
    } else {
      p.waves.clear();
      for (std::size_t i = 0; i < doc["waves"].size(); ++i) {
        auto w = parseWave(doc["waves"][i]);
        if (!w)
          fail("waves[" + std::to_string(i) + "]", "expected a count (>= 1) or a percentage like \"25%\"");
        else
          p.waves.push_back(*w);
      }
    }
  }
  if (doc.contains("validation_workflow")) {
    const json& v = doc["validation_workflow"];
    if (!v.is_string() || v.get<std::string>().empty())
      fail("validation_workflow", "expected a workflow name (omit it for the bundle's or pre-job-health)");
    else
      p.validation_workflow = v.get<std::string>();
  }
  if (doc.contains("soak")) {
    auto d = doc["soak"].is_string() ? workflow::parseDuration(doc["soak"].get<std::string>()) : std::nullopt;
    if (!d)
      fail("soak", "expected a duration like 30m");
    else
      p.soak = std::chrono::duration_cast<std::chrono::seconds>(d->value);
  }
  if (doc.contains("capacity_floor")) {
    const json& c = doc["capacity_floor"];
    p.max_fraction_down_per_building.reset();
    if (!c.is_object()) {
      fail("capacity_floor", "expected {max_pods_down: N} or {max_percent_down: X}");
    } else {
      for (const auto& [k, _] : c.items())
        if (k != "max_pods_down" && k != "max_percent_down") fail("capacity_floor." + k, "unknown field");
      if (c.contains("max_pods_down")) {
        if (!c["max_pods_down"].is_number_integer() || c["max_pods_down"].get<int>() < 1)
          fail("capacity_floor.max_pods_down", "expected a whole number >= 1");
        else
          p.max_pods_down_per_building = c["max_pods_down"].get<int>();
      }
      if (c.contains("max_percent_down")) {
        if (!c["max_percent_down"].is_number() || c["max_percent_down"].get<double>() <= 0 ||
            c["max_percent_down"].get<double>() > 100)
          fail("capacity_floor.max_percent_down", "expected a percentage in (0, 100]");
        else
          p.max_fraction_down_per_building = c["max_percent_down"].get<double>() / 100.0;
      }
    }
  }
  if (doc.contains("allocated")) {
    if (doc["allocated"] == "wait")
      p.skip_allocated = false;
    else if (doc["allocated"] == "skip")
      p.skip_allocated = true;
    else
      fail("allocated", "expected wait or skip");
  }
  if (doc.contains("failure_budget")) {
    const json& f = doc["failure_budget"];
    p.failure_budget_pods.reset();
    if (!f.is_object()) {
      fail("failure_budget", "expected {pods: K} or {percent: X}");
    } else {
      for (const auto& [k, _] : f.items())
        if (k != "pods" && k != "percent") fail("failure_budget." + k, "unknown field");
      if (f.contains("pods")) {
        if (!f["pods"].is_number_integer() || f["pods"].get<int>() < 0)
          fail("failure_budget.pods", "expected a whole number >= 0");
        else
          p.failure_budget_pods = f["pods"].get<int>();
      }
      if (f.contains("percent")) {
        if (!f["percent"].is_number() || f["percent"].get<double>() < 0 || f["percent"].get<double>() > 100)
          fail("failure_budget.percent", "expected a percentage in [0, 100]");
        else
          p.failure_budget_percent = f["percent"].get<double>();
      }
      if (!f.contains("pods") && !f.contains("percent")) fail("failure_budget", "expected pods or percent");
    }
  }
  if (doc.contains("order")) {
    if (doc["order"] != "spread" && doc["order"] != "name")
      fail("order", "expected spread or name");
    else
      p.order = doc["order"].get<std::string>();
  }
  if (doc.contains("windows")) {
    const json& ws = doc["windows"];
    if (!ws.is_array()) {
      fail("windows", "expected a list like [\"mon-fri 22:00-06:00\", \"sat,sun 00:00-24:00\"] ([]: any time)");
    } else {
      for (std::size_t i = 0; i < ws.size(); ++i) {
        std::string why = "expected a string like \"mon-fri 22:00-06:00\"";
        auto w = ws[i].is_string() ? rollouts::parseWindow(ws[i].get<std::string>(), &why) : std::nullopt;
        if (!w)
          fail("windows[" + std::to_string(i) + "]", why);
        else
          p.windows.push_back(*w);
      }
    }
  }
  if (!bad.fields.empty()) {
    bad.message = "invalid policy: " + bad.fields[0].path + ": " + bad.fields[0].message;
    return bad;
  }
  return p;
}

json toJson(const Policy& p) {
  json waves = json::array();
  for (const auto& w : p.waves) {
    if (w.percent)
      waves.push_back(std::to_string(static_cast<int>(w.value)) + "%");
    else
      waves.push_back(static_cast<int>(w.value));
  }
  json floor = json::object();
  if (p.max_pods_down_per_building) floor["max_pods_down"] = *p.max_pods_down_per_building;
  if (p.max_fraction_down_per_building) floor["max_percent_down"] = *p.max_fraction_down_per_building * 100;
  json budget = json::object();
  if (p.failure_budget_pods) budget["pods"] = *p.failure_budget_pods;
  if (p.failure_budget_percent) budget["percent"] = *p.failure_budget_percent;
  json windows = json::array();
  for (const auto& w : p.windows) windows.push_back(w.text);
  json out = {{"canary_pods", p.canary_pods},
              {"waves", waves},
              {"soak", workflow::formatDuration({std::chrono::duration_cast<std::chrono::milliseconds>(p.soak)})},
              {"max_concurrent_pods", p.max_concurrent_pods},
              {"capacity_floor", floor},
              {"allocated", p.skip_allocated ? "skip" : "wait"},
              {"failure_budget", budget},
              {"max_rebooting_pods_per_building", p.max_rebooting_pods_per_building},
              {"order", p.order},
              {"windows", windows}};
  if (!p.validation_workflow.empty()) out["validation_workflow"] = p.validation_workflow;  // only when chosen
  return out;
}

Result<Selector> parseSelector(const json& doc) {
  Selector s;
  if (doc.is_null()) return s;
  if (!doc.is_object()) return invalidContent("selector must be an object");
  Error bad = invalidContent("invalid selector");
  auto list = [&](const char* key, std::vector<std::string>& out) {
    if (!doc.contains(key)) return;
    if (!doc[key].is_array()) {
      bad.fields.push_back({std::string("selector.") + key, "expected a list of names"});
      return;
    }
    for (const auto& v : doc[key]) {
      if (!v.is_string())
        bad.fields.push_back({std::string("selector.") + key, "expected a list of names"});
      else
        out.push_back(v.get<std::string>());
    }
  };
  for (const auto& [k, _] : doc.items())
    if (k != "sites" && k != "buildings" && k != "platforms" && k != "pods" && k != "labels")
      bad.fields.push_back({"selector." + k, "unknown field"});
  list("sites", s.sites);
  list("buildings", s.buildings);
  list("platforms", s.platforms);
  list("pods", s.pods);
  if (doc.contains("labels")) {
    if (!doc["labels"].is_object())
      bad.fields.push_back({"selector.labels", "expected a map"});
    else
      for (const auto& [k, v] : doc["labels"].items()) s.labels[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  if (!bad.fields.empty()) {
    bad.message = "invalid selector: " + bad.fields[0].path + ": " + bad.fields[0].message;
    return bad;
  }
  return s;
}

json toJson(const Selector& s) {
  return {{"sites", s.sites},
          {"buildings", s.buildings},
          {"platforms", s.platforms},
          {"pods", s.pods},
          {"labels", s.labels}};
}

}  // namespace kiln::api
