#include "orchestrator/api/json_views.h"

#include <map>

#include "orchestrator/core/iso_time.h"

namespace kiln::api {

using nlohmann::json;

std::string isoTime(core::TimePoint t) { return core::isoTime(t); }

json toJson(const Error& e) {
  json details = json::object();
  for (const auto& [k, v] : e.details) details[k] = v;
  if (!e.fields.empty()) {
    json fields = json::array();
    for (const auto& f : e.fields) fields.push_back({{"path", f.path}, {"message", f.message}});
    details["fields"] = fields;
  } else if (e.code == ErrorCode::kInvalidContent) {
    // Every 422 names its bad fields: one made without FieldErrors names the field of its
    // details.field, or the whole body (path "").
    auto field = e.details.find("field");
    details["fields"] = json::array({{{"path", field == e.details.end() ? "" : field->second}, {"message", e.message}}});
  }
  if (!e.allowed.empty()) details["allowed_actions"] = e.allowed;
  return {{"error", {{"code", errorCodeName(e.code)}, {"message", e.message}, {"details", details}}}};
}

json toJson(const core::SiteSummary& s) {
  return {{"id", s.id}, {"buildings", s.buildings}, {"pods", s.pods}, {"hosts", s.hosts}};
}

json toJson(const core::PodSummary& p) {
  return {{"id", p.id},
          {"site", p.site},
          {"building", p.building},
          {"platform", p.platform},
          {"state", std::string(core::podStateName(p.state))},
          {"labels", p.labels},
          {"racks", p.racks},
          {"hosts_by_state", p.hosts_by_state},
          {"healthy_gpus", p.healthy_gpus}};
}

json toJson(const core::HostSummary& h) {
  json j = {{"id", h.id},       {"pod", h.pod},           {"rack", h.rack},
            {"building", h.building}, {"site", h.site},   {"platform", h.platform},
            {"tray", h.tray},   {"spare", h.spare},       {"state", std::string(core::hostStateName(h.state))},
            {"state_since", isoTime(h.state_since)},      {"state_reason", h.state_reason}};
  j["last_seen"] = h.last_seen ? json(isoTime(*h.last_seen)) : json();
  j["agent_version"] = h.agent_version.empty() ? json() : json(h.agent_version);
  return j;
}

namespace {

// A device's management endpoint (issue 32): where the out-of-band runners reach its BMC, with
// the credential's name (never a secret); null when the pod names none.
json bmcJson(const std::optional<core::BmcEndpointView>& e) {
  if (!e) return nullptr;
  return {{"address", e->address}, {"port", e->port}, {"protocol", e->protocol}, {"credential", e->credential}};
}

json managementJson(const core::ManagementSpec& m) {
  if (m.empty()) return nullptr;
  json j = {{"protocol", m.protocol}, {"credential", m.credential}};
  j["tray_bmc"] = m.tray_bmc.empty() ? json() : json(m.tray_bmc);
  j["switch_bmc"] = m.switch_bmc.empty() ? json() : json(m.switch_bmc);
  j["runner"] = m.runner.empty() ? json() : json(m.runner);
  return j;
}

}  // namespace

json toJson(const core::PodDetail& d) {
  json j = toJson(d.pod);
  j["rack_ids"] = d.racks;
  json hosts = json::array();
  json spares = json::array();
  for (const auto& h : d.hosts) {
    json hj = toJson(h);
    hj["bmc"] = bmcJson(core::trayBmcOf(d.management, h.id, h.pod, h.rack, h.tray));
    hosts.push_back(std::move(hj));
    if (h.spare) spares.push_back(h.id);
  }
  j["hosts"] = hosts;
  j["spares"] = spares;
  // Each switch tray's own versions: a tray that differs stands out by name, not only in a count.
  std::map<std::string, json> tray_versions;
  for (const auto& c : d.components) {
    auto& v = tray_versions[c.target];
    if (v.is_null()) v = json::object();
    v[c.kind] = c.version;
  }
  json trays = json::array();
  for (const auto& t : d.switch_trays) {
    auto v = tray_versions.find(t.id);
    trays.push_back({{"id", t.id},
                     {"rack", t.rack},
                     {"tray", t.tray},
                     {"bmc", bmcJson(core::switchBmcOf(d.management, t.id, d.pod.id, t.rack, t.tray))},
                     {"versions", v == tray_versions.end() ? json::object() : v->second}});
  }
  j["switch_trays"] = trays;
  j["management"] = managementJson(d.management);
  // Versions per component kind: {"driver": {"570.1": 18}, ...}: a mixed pod stands out.
  json versions = json::object();
  for (const auto& c : d.components) {
    auto& slot = versions[c.kind][c.version];
    slot = slot.is_null() ? 1 : slot.get<int>() + 1;
  }
  j["component_versions"] = versions;
  return j;
}

json toJson(const core::HostDetail& d) {
  json j = toJson(d.host);
  json gpus = json::array();
  for (const auto& g : d.gpus)
    gpus.push_back({{"id", g.id}, {"index", g.index}, {"serial", g.serial}, {"uuid", g.uuid}});
  j["gpus"] = gpus;
  j["components"] = d.components;
  j["allowed_actions"] = d.allowed_actions;
  j["bmc"] = bmcJson(core::trayBmcOf(d.management, d.host.id, d.host.pod, d.host.rack, d.host.tray));
  return j;
}

json toJson(const core::HostEvent& e) {
  return {{"id", e.id},         {"host", e.host},   {"at", isoTime(e.at)},
          {"action", e.action}, {"from", e.from_state.empty() ? json() : json(e.from_state)},
          {"to", e.to_state},   {"actor", e.actor}, {"reason", e.reason}};
}

json toJson(const core::ImportSummary& s) {
  return {{"sites_created", s.sites_created},       {"buildings_created", s.buildings_created},
          {"pods_created", s.pods_created},         {"pods_existing", s.pods_existing},
          {"racks_created", s.racks_created},       {"hosts_created", s.hosts_created},
          {"switch_trays_created", s.switch_trays_created},
          {"gpus_created", s.gpus_created},         {"components_created", s.components_created},
          {"pods_management_updated", s.pods_management_updated}};
}

json toJson(const core::TokenInfo& t) {
  json j = {{"id", t.id},
            {"name", t.name},
            {"role", core::roleName(t.role)},
            {"created_at", isoTime(t.created_at)},
            {"created_by", t.created_by}};
  j["host"] = t.host.empty() ? json() : json(t.host);
  j["revoked_at"] = t.revoked_at ? json(isoTime(*t.revoked_at)) : json();
  j["expires_at"] = t.expires_at ? json(isoTime(*t.expires_at)) : json();
  j["last_used_at"] = t.last_used_at ? json(isoTime(*t.last_used_at)) : json();
  return j;
}

json toJson(const core::CapacityPlan& p) {
  return {{"slices", p.slices},
          {"pods", p.pods},
          {"racks", p.racks},
          {"gpus", p.gpus},
          {"spare_gpus", p.spare_gpus},
          {"overhead_fraction", p.overhead_fraction},
          {"geometry_fraction", p.geometry_fraction},
          {"reserve_fraction", p.reserve_fraction}};
}

}  // namespace kiln::api
