#include "orchestrator/api/fleet_document.h"

#include <algorithm>
#include <set>

#include "orchestrator/core/management.h"

namespace kiln::api {
namespace {

using core::HostState;
using core::isComponentKind;
using core::isValidName;
using core::parsePlatform;
using core::PodSpec;
using nlohmann::json;

class Validator {
 public:
  void fail(const std::string& path, std::string message) {
    if (errors_.size() < kMaxFieldErrors) errors_.push_back({path, std::move(message)});
    ++count_;
  }
  bool ok() const { return count_ == 0; }
  Error error() const {
    Error e = invalidContent("fleet file is invalid: " + std::to_string(count_) +
                             " problem(s), first: " + errors_.front().path + ": " + errors_.front().message);
    e.fields = errors_;
    return e;
  }

  // Checks that `obj` is an object with only `allowed` keys.
  bool object(const json& obj, const std::string& path, std::initializer_list<const char*> allowed) {
    if (!obj.is_object()) {
      fail(path.empty() ? "$" : path, "expected an object");
      return false;
    }
    for (const auto& [key, _] : obj.items()) {
      bool known = false;
      for (const char* a : allowed) known = known || key == a;
      if (!known) fail(join(path, key), "unknown field");
    }
    return true;
  }

  const json* list(const json& obj, const std::string& path, const char* key, bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) fail(join(path, key), "is required");
      return nullptr;
    }
    if (!it->is_array()) {
      fail(join(path, key), "expected a list");
      return nullptr;
    }
    return &*it;
  }

  std::string name(const json& obj, const std::string& path) {
    auto it = obj.find("name");
    if (it == obj.end()) {
      fail(join(path, "name"), "is required");
      return {};
    }
    if (!it->is_string() || !isValidName(it->get_ref<const std::string&>())) {
      fail(join(path, "name"), "expected a name of 1-63 characters [a-z0-9._-] starting with a letter or digit");
      return {};
    }
    return it->get<std::string>();
  }

  std::map<std::string, std::string> stringMap(const json& obj, const std::string& path, const char* key,
                                               bool components) {
    std::map<std::string, std::string> out;
    auto it = obj.find(key);
    if (it == obj.end()) return out;
    const std::string p = join(path, key);
    if (!it->is_object()) {
      fail(p, "expected a map of strings");
      return out;
    }
    for (const auto& [k, v] : it->items()) {
      if (components && !isComponentKind(k)) {
        fail(join(p, k),
             "unknown component (expected gpu_vbios, hmc_bundle, nic, bmc, sbios, driver or "
             "nvswitch)");
        continue;
      }
      if (v.is_string() && !v.get_ref<const std::string&>().empty() && v.get_ref<const std::string&>().size() <= 128) {
        out[k] = v.get<std::string>();
      } else if (v.is_number()) {
        out[k] = v.dump();
      } else {
        fail(join(p, k), "expected a non-empty string of at most 128 characters");
      }
    }
    return out;
  }

  // A management block (core/management.h): string fields of managementKeys() only. A key that
  // looks like a secret is refused with a pointed message: no secret is ever imported.
  core::ManagementSpec management(const json& obj, const std::string& path) {
    core::ManagementSpec m;
    auto it = obj.find("management");
    if (it == obj.end()) return m;
    const std::string p = join(path, "management");
    if (!it->is_object()) {
      fail(p, "expected a map (protocol, credential, tray_bmc, switch_bmc, runner)");
      return m;
    }
    for (const auto& [k, v] : it->items()) {
      if (core::secretLikeKey(k)) {
        fail(join(p, k),
             "secrets are not imported: keep them in the out-of-band runners' credential store and name the entry in "
             "`credential`");
        continue;
      }
      const auto& keys = core::managementKeys();
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        fail(join(p, k), "unknown field (expected protocol, credential, tray_bmc, switch_bmc or runner)");
        continue;
      }
      if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
        fail(join(p, k), "expected a non-empty string");
        continue;
      }
      const std::string s = v.get<std::string>();
      if (k == "protocol") m.protocol = s;
      else if (k == "credential") m.credential = s;
      else if (k == "tray_bmc") m.tray_bmc = s;
      else if (k == "runner") m.runner = s;
      else m.switch_bmc = s;
    }
    return m;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string at(const std::string& path, const char* key, std::size_t i) {
    return join(path, key) + "[" + std::to_string(i) + "]";
  }

 private:
  std::vector<FieldError> errors_;
  std::size_t count_ = 0;
};

void inherit(std::map<std::string, std::string>& inner, const std::map<std::string, std::string>& outer) {
  for (const auto& [k, v] : outer) inner.emplace(k, v);  // emplace keeps the inner value
}

}  // namespace

Result<core::FleetSpec> parseFleetSpec(const json& doc) {
  Validator v;
  core::FleetSpec fleet;
  if (!v.object(doc, "", {"sites", "versions", "name", "description", "management"})) return v.error();
  const auto fleet_versions = v.stringMap(doc, "", "versions", true);
  const auto fleet_management = v.management(doc, "");
  std::set<std::string> site_names, building_names, pod_names;

  const json* sites = v.list(doc, "", "sites", true);
  if (sites && sites->empty()) v.fail("sites", "expected at least one site");
  for (std::size_t si = 0; sites && si < sites->size(); ++si) {
    const json& site = (*sites)[si];
    const std::string sp = Validator::at("", "sites", si);
    if (!v.object(site, sp, {"name", "buildings", "versions", "management"})) continue;
    const std::string site_name = v.name(site, sp);
    if (!site_name.empty() && !site_names.insert(site_name).second)
      v.fail(sp + ".name", "duplicate site '" + site_name + "'");
    auto site_versions = v.stringMap(site, sp, "versions", true);
    inherit(site_versions, fleet_versions);
    const auto site_management = core::inheritManagement(v.management(site, sp), fleet_management);
    fleet.sites.push_back(site_name);

    const json* buildings = v.list(site, sp, "buildings", true);
    for (std::size_t bi = 0; buildings && bi < buildings->size(); ++bi) {
      const json& b = (*buildings)[bi];
      const std::string bp = Validator::at(sp, "buildings", bi);
      if (!v.object(b, bp, {"name", "pods", "versions", "management"})) continue;
      const std::string bname = v.name(b, bp);
      if (!bname.empty() && !building_names.insert(bname).second)
        v.fail(bp + ".name", "duplicate building '" + bname + "'");
      auto b_versions = v.stringMap(b, bp, "versions", true);
      inherit(b_versions, site_versions);
      const auto b_management = core::inheritManagement(v.management(b, bp), site_management);
      fleet.buildings.push_back({bname, site_name});

      const json* pods = v.list(b, bp, "pods", true);
      for (std::size_t pi = 0; pods && pi < pods->size(); ++pi) {
        const json& p = (*pods)[pi];
        const std::string pp = Validator::at(bp, "pods", pi);
        if (!v.object(p, pp, {"name", "platform", "labels", "state", "versions", "management"})) continue;
        PodSpec pod;
        pod.id = v.name(p, pp);
        if (!pod.id.empty() && !pod_names.insert(pod.id).second) v.fail(pp + ".name", "duplicate pod '" + pod.id + "'");
        pod.building = bname;
        pod.site = site_name;
        auto plat = p.find("platform");
        if (plat == p.end()) {
          v.fail(pp + ".platform", "is required");
        } else if (!plat->is_string() || !parsePlatform(plat->get_ref<const std::string&>())) {
          v.fail(pp + ".platform", "expected one of catalina, clemente, san_miguel");
        } else {
          pod.platform = *parsePlatform(plat->get_ref<const std::string&>());
        }
        if (auto st = p.find("state"); st != p.end()) {
          if (st->is_string() && *st == "available")
            pod.initial_state = HostState::kAvailable;
          else if (st->is_string() && *st == "incoming")
            pod.initial_state = HostState::kIncoming;
          else
            v.fail(pp + ".state", "expected available or incoming");
        }
        pod.labels = v.stringMap(p, pp, "labels", false);
        for (const auto& [k, _] : pod.labels)
          if (!isValidName(k)) v.fail(pp + ".labels." + k, "label names follow the name rules");
        pod.versions = v.stringMap(p, pp, "versions", true);
        inherit(pod.versions, b_versions);
        pod.management = core::inheritManagement(v.management(p, pp), b_management);
        for (const auto& [field, message] : core::validateManagement(pod.management))
          v.fail(pp + ".management." + field, message);
        fleet.pods.push_back(std::move(pod));
      }
    }
  }
  if (!v.ok()) return v.error();
  return fleet;
}

}  // namespace kiln::api
