#include "orchestrator/db/rollout_codecs.h"

#include <limits>
#include <stdexcept>

#include "orchestrator/workflow/spec.h"

namespace kiln::db {

using nlohmann::json;

namespace {

// A stored field that is not what the core relies on: the read fails with its name.
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void badField(const std::string& field, const std::string& why) {
  throw BadField(field + ": " + why);
}

// `decode` reads the document; json's type errors and BadField become kInvalidContent.
template <typename T, typename Decode>
Result<T> decoded(const char* what, const json& doc, Decode decode) {
  try {
    return decode(doc);
  } catch (const std::exception& e) {  // BadField, json::exception, std::stod's
    return invalidContent(std::string("invalid stored ") + what + ": " + e.what());
  }
}

const json& object(const json& doc, const char* key) {
  const json& v = doc.at(key);
  if (!v.is_object()) badField(key, "expected an object");
  return v;
}

int whole(const json& doc, const char* key, int fallback, int lo) {
  if (!doc.contains(key)) return fallback;
  const json& v = doc.at(key);
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > std::numeric_limits<int>::max())
    badField(key, "expected a whole number >= " + std::to_string(lo));
  return v.get<int>();
}

double number(const json& doc, const char* key, double lo, double hi) {
  const double v = doc.at(key).get<double>();
  if (v < lo || v > hi) badField(key, "out of range");
  return v;
}

std::string oneOf(const json& doc, const char* key, std::initializer_list<const char*> choices) {
  const auto v = doc.at(key).get<std::string>();
  for (const char* c : choices)
    if (v == c) return v;
  badField(key, "unknown value '" + v + "'");
}

}  // namespace

json storedSelector(const rollouts::Selector& s) {
  return {{"sites", s.sites},
          {"buildings", s.buildings},
          {"platforms", s.platforms},
          {"pods", s.pods},
          {"labels", s.labels}};
}

Result<rollouts::Selector> selectorFromStored(const json& doc) {
  return decoded<rollouts::Selector>("selector", doc, [](const json& d) {
    rollouts::Selector s;
    if (d.is_null()) return s;
    using Names = std::vector<std::string>;
    s.sites = d.value("sites", Names{});
    s.buildings = d.value("buildings", Names{});
    s.platforms = d.value("platforms", Names{});
    s.pods = d.value("pods", Names{});
    s.labels = d.value("labels", std::map<std::string, std::string>{});
    return s;
  });
}

json storedPolicy(const rollouts::Policy& p) {
  json waves = json::array();
  for (const auto& w : p.waves)
    waves.push_back(w.percent ? json(std::to_string(static_cast<int>(w.value)) + "%")
                              : json(static_cast<int>(w.value)));
  json floor = json::object(), budget = json::object(), windows = json::array();
  if (p.max_pods_down_per_building) floor["max_pods_down"] = *p.max_pods_down_per_building;
  if (p.max_fraction_down_per_building) floor["max_percent_down"] = *p.max_fraction_down_per_building * 100;
  if (p.failure_budget_pods) budget["pods"] = *p.failure_budget_pods;
  if (p.failure_budget_percent) budget["percent"] = *p.failure_budget_percent;
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
  if (!p.validation_workflow.empty()) out["validation_workflow"] = p.validation_workflow;
  return out;
}

Result<rollouts::Policy> policyFromStored(const json& doc) {
  return decoded<rollouts::Policy>("policy", doc, [](const json& d) {
    rollouts::Policy p;
    if (d.is_null()) return p;
    p.canary_pods = whole(d, "canary_pods", p.canary_pods, 0);
    p.max_concurrent_pods = whole(d, "max_concurrent_pods", p.max_concurrent_pods, 1);
    p.max_rebooting_pods_per_building =
        whole(d, "max_rebooting_pods_per_building", p.max_rebooting_pods_per_building, 1);
    if (d.contains("waves")) {
      p.waves.clear();
      for (const json& w : d.at("waves").get<std::vector<json>>()) {
        const bool percent = w.is_string();
        const double v = percent ? std::stod(w.get<std::string>()) : w.get<double>();  // "25%": stod stops at '%'
        if (percent ? v <= 0 || v > 100 : v < 1) badField("waves", "expected counts >= 1 or percentages");
        p.waves.push_back({v, percent});
      }
      if (p.waves.empty()) badField("waves", "expected at least one wave");
    }
    if (d.contains("soak")) {
      const auto soak = workflow::parseDuration(d.at("soak").get<std::string>());
      if (!soak) badField("soak", "expected a duration");
      p.soak = std::chrono::duration_cast<std::chrono::seconds>(soak->value);
    }
    if (d.contains("capacity_floor")) {
      const json& c = object(d, "capacity_floor");
      p.max_fraction_down_per_building.reset();
      if (c.contains("max_pods_down")) p.max_pods_down_per_building = whole(c, "max_pods_down", 0, 1);
      if (c.contains("max_percent_down"))
        p.max_fraction_down_per_building = number(c, "max_percent_down", 0, 100) / 100.0;
    }
    if (d.contains("allocated")) p.skip_allocated = oneOf(d, "allocated", {"wait", "skip"}) == "skip";
    if (d.contains("failure_budget")) {
      const json& f = object(d, "failure_budget");
      p.failure_budget_pods.reset();
      if (f.contains("pods")) p.failure_budget_pods = whole(f, "pods", 0, 0);
      if (f.contains("percent")) p.failure_budget_percent = number(f, "percent", 0, 100);
    }
    if (d.contains("order")) p.order = oneOf(d, "order", {"spread", "name"});
    for (const auto& text : d.value("windows", std::vector<std::string>{})) {
      std::string why;
      auto w = rollouts::parseWindow(text, &why);
      if (!w) badField("windows", why);
      p.windows.push_back(*w);
    }
    p.validation_workflow = d.value("validation_workflow", std::string());
    return p;
  });
}

json storedBundle(const rollouts::Bundle& b) {
  json spec = rollouts::toJson(b);
  spec.erase("id");
  return spec;
}

Result<rollouts::Bundle> bundleFromStored(const json& doc) {
  return decoded<rollouts::Bundle>("bundle", doc, [](const json& d) {
    rollouts::Bundle b;
    b.name = d.at("name").get<std::string>();
    b.version = d.at("version").get<std::string>();
    b.platforms = d.at("platforms").get<std::vector<std::string>>();
    b.workflow = d.value("workflow", b.workflow);
    b.validation_workflow = d.value("validation_workflow", std::string());
    for (const json& c : d.at("components").get<std::vector<json>>())
      b.components.push_back({c.at("kind").get<std::string>(), c.at("version").get<std::string>(),
                              c.at("artifact").get<std::string>(), c.at("sha256").get<std::string>()});
    for (const json& c : d.value("prerequisites", std::vector<json>{}))
      b.prerequisites.push_back({c.at("kind").get<std::string>(), c.at("min_version").get<std::string>()});
    b.checksums = d.value("checksums", std::string());
    b.signature = d.value("signature", std::string());
    return b;
  });
}

}  // namespace kiln::db
