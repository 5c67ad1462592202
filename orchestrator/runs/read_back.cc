#include "orchestrator/runs/read_back.h"

#include <algorithm>
#include <set>

namespace kiln::runs {
namespace {

using nlohmann::json;

std::string joinNames(const std::vector<std::string>& names, std::size_t shown = 5) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

// The versions `firmware` (kiln-oob's list) holds for the inventory's members; the missing ones
// go to `missing` as "KIND (ID)".
std::vector<std::pair<std::string, std::string>> versionsOf(const std::map<std::string, std::string>& inventory,
                                                            const json& firmware, std::vector<std::string>& missing) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [kind, id] : inventory) {
    const json* found = nullptr;
    if (firmware.is_array())
      for (const auto& f : firmware)
        if (f.is_object() && f.value("id", json()).is_string() && f["id"].get<std::string>() == id) found = &f;
    if (found != nullptr && found->contains("version") && (*found)["version"].is_string() &&
        !(*found)["version"].get<std::string>().empty())
      out.push_back({kind, (*found)["version"].get<std::string>()});
    else
      missing.push_back(kind + " (" + id + ")");
  }
  return out;
}

}  // namespace

std::vector<std::string> deviceListNames(const std::string& list) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start < list.size()) {
    auto comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string entry = list.substr(start, comma - start);
    if (auto eq = entry.find('='); eq != std::string::npos && eq > 0) names.push_back(entry.substr(0, eq));
    start = comma + 1;
  }
  return names;
}

ReadBack readBack(const workflow::StepSpec& step, const std::string& host, const std::string& switch_bmcs,
                  const json& parsed) {
  ReadBack out;
  if (step.inventory.empty()) return out;
  if (!parsed.is_object()) {
    out.error = "the read-back is not a JSON object";
    return out;
  }
  if (step.target == workflow::Target::kBmc) {
    std::vector<std::string> missing;
    for (auto& [kind, version] : versionsOf(step.inventory, parsed.value("firmware", json()), missing))
      out.versions.push_back({host, kind, version, host});
    if (!missing.empty()) out.error = "the BMC read back no version of " + joinNames(missing);
    return out;
  }
  // Switch trays: the pod's, each once.
  const auto pod = deviceListNames(switch_bmcs);
  const std::set<std::string> ours(pod.begin(), pod.end());
  const json& devices = parsed.value("devices", json());
  if (!devices.is_array()) {
    out.error = "the read-back has no devices list (expected kiln-oob's device-list answer)";
    return out;
  }
  std::vector<std::string> foreign, failed, missing;
  std::set<std::string> answered;
  std::vector<DeviceVersion> versions;
  for (const auto& d : devices) {
    const std::string name =
        d.is_object() && d.value("device", json()).is_string() ? d["device"].get<std::string>() : "";
    if (!ours.count(name)) {
      foreign.push_back(name.empty() ? "(unnamed)" : name);
      continue;
    }
    if (!answered.insert(name).second) {
      foreign.push_back(name + " (twice)");
      continue;
    }
    if (d.contains("error")) {
      failed.push_back(name);
      continue;
    }
    std::vector<std::string> lacking;
    for (auto& [kind, version] : versionsOf(step.inventory, d.value("firmware", json()), lacking))
      versions.push_back({name, kind, version, host});
    for (const auto& m : lacking) missing.push_back(name + " " + m);
  }
  if (!foreign.empty()) {
    // An answer about hardware the step was not about: none of it is taken.
    out.error = "the read-back names devices that are not switch trays of this pod: " + joinNames(foreign) +
                " (nothing of it was recorded)";
    return out;
  }
  out.versions = std::move(versions);
  for (const auto& name : pod)
    if (!answered.count(name)) failed.push_back(name);
  std::string why;
  if (!failed.empty()) why = "no read-back of " + joinNames(failed);
  if (!missing.empty()) why += (why.empty() ? "" : "; ") + std::string("no version of ") + joinNames(missing);
  out.error = why;
  return out;
}

}  // namespace kiln::runs
