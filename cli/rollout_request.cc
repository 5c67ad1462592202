#include "cli/rollout_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "cli/api_call.h"
#include "cli/time_text.h"
#include "common/yaml_json.h"
#include "orchestrator/rollouts/policy.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

// Every value of a repeated flag, each split on commas, duplicates dropped, order kept.
Result<std::vector<std::string>> nameList(const ParsedCommand& cmd, const std::string& flag) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& value : cmd.values(flag)) {
    std::size_t start = 0;
    while (true) {
      const auto comma = value.find(',', start);
      const std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.empty()) return invalidArgument("--" + flag + " needs a name or a comma-separated list, not '" + value + "'");
      if (seen.insert(item).second) out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

// "10%" -> "10%", "5" -> 5: the server's wave forms (a cumulative percentage or pod count).
Result<json> waveList(const std::string& text) {
  json waves = json::array();
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const bool percent = !item.empty() && item.back() == '%';
    const std::string number = percent ? item.substr(0, item.size() - 1) : item;
    double d = 0;
    auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), d);
    const bool parsed = !number.empty() && ec == std::errc() && p == number.data() + number.size() && std::isfinite(d);
    if (percent && parsed && d > 0 && d <= 100) {
      waves.push_back(item);
    } else if (!percent && parsed && d >= 1 && d == std::floor(d) && d <= 1e9) {
      waves.push_back(static_cast<std::int64_t>(d));
    } else {
      return invalidArgument("--waves needs cumulative percentages or pod counts like 10%,50%,100% or 5,20,100; '" +
                             item + "' is neither");
    }
    if (comma == std::string::npos) return waves;
    start = comma + 1;
  }
}

Result<json> readPolicyFile(const std::string& file, const System& system) {
  auto text = system.read_file(file);
  if (!text.ok()) return invalidArgument(text.error().message);
  const auto first = text->find_first_not_of(" \t\r\n");
  json doc;
  if (first != std::string::npos && (*text)[first] == '{') {
    doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return invalidArgument("--policy-file " + file + " is not valid JSON");
  } else {
    auto parsed = yamlToJson(*text);
    if (!parsed.ok()) return invalidArgument("--policy-file " + file + ": " + parsed.error().message);
    doc = std::move(*parsed);
  }
  // A whole rollout body or a file with a `policy:` section works too.
  if (doc.is_object() && doc.contains("policy") && doc["policy"].is_object()) doc = doc["policy"];
  if (!doc.is_object()) return invalidArgument("--policy-file " + file + " must hold a policy object (canary_pods, waves, ...)");
  return doc;
}

Status eitherOr(const ParsedCommand& cmd, const char* a, const char* b) {
  if (cmd.has(a) && cmd.has(b)) return invalidArgument(std::string("give --") + a + " or --" + b + ", not both");
  return Ok{};
}

}  // namespace

std::vector<FlagSpec> selectorFlags() {
  return {
      {.name = "site", .value_name = "S", .help = "only pods of this site (repeat, or a comma list)", .repeated = true},
      {.name = "building", .value_name = "B", .help = "only pods of this building (repeat, or a comma list)", .repeated = true},
      {.name = "platform", .value_name = "P", .help = "only pods of this platform: catalina, clemente, san_miguel",
       .repeated = true},
      {.name = "pod", .value_name = "P", .help = "only these pods (repeat, or a comma list)", .repeated = true},
      {.name = "label", .type = FlagType::kKeyValue, .value_name = "K=V", .help = "only pods with this label (repeat: all must match)",
       .repeated = true},
  };
}

std::vector<FlagSpec> policyFlags() {
  return {
      {.name = "canary",
       .type = FlagType::kInt,
       .value_name = "N",
       .help = "canary pods first (default 1)",
       .min = 0,
       .max = 1000},
      {.name = "waves",
       .value_name = "LIST",
       .help = "cumulative waves after the canary, e.g. 10%,50%,100% (default) or 5,20,100"},
      {.name = "soak", .value_name = "D", .help = "wait D after each wave before the next (default 10m; 0s for none)"},
      {.name = "max-concurrent",
       .type = FlagType::kInt,
       .value_name = "N",
       .help = "pods in flight at once (default 2)",
       .min = 1,
       .max = 10000},
      {.name = "max-down",
       .type = FlagType::kInt,
       .value_name = "N",
       .help = "capacity floor: at most N pods of a building out of service at once",
       .min = 1,
       .max = 100000},
      {.name = "max-percent-down",
       .type = FlagType::kNumber,
       .value_name = "X",
       .help = "capacity floor: at most X% of a building's pods out of service (default 25)",
       .min = 0.001,
       .max = 100},
      {.name = "allocated",
       .value_name = "wait|skip",
       .help = "pods running jobs: wait for the scheduler (default) or skip them"},
      {.name = "failure-budget",
       .type = FlagType::kInt,
       .value_name = "N",
       .help = "halt when more than N pods fail (default 1)",
       .min = 0,
       .max = 1000000},
      {.name = "failure-budget-percent",
       .type = FlagType::kNumber,
       .value_name = "X",
       .help = "halt when more than X% of the pods fail",
       .min = 0,
       .max = 100},
      {.name = "max-rebooting",
       .type = FlagType::kInt,
       .value_name = "N",
       .help = "pods flashing and rebooting at once per building (default 2; power swings)",
       .min = 1,
       .max = 10000},
      {.name = "order",
       .value_name = "spread|name",
       .help = "pod order: round-robin over buildings (default) or by name"},
      {.name = "window",
       .value_name = "SPEC",
       .help = "start new pods only inside this UTC maintenance window, e.g. 'mon-fri 22:00-06:00' (repeat for more; "
               "pods in flight finish after it closes)",
       .repeated = true},
      {.name = "validation-workflow",
       .value_name = "NAME",
       .help = "the workflow that validates each upgraded pod (default: the bundle's, else pre-job-health)"},
      {.name = "policy-file",
       .value_name = "FILE",
       .help = "a policy object in YAML or JSON; flags override its fields"},
  };
}

Result<json> selectorFromFlags(const ParsedCommand& cmd) {
  json selector = json::object();
  const std::pair<const char*, const char*> lists[] = {
      {"site", "sites"}, {"building", "buildings"}, {"platform", "platforms"}, {"pod", "pods"}};
  for (const auto& [flag, key] : lists) {
    if (!cmd.has(flag)) continue;
    auto names = nameList(cmd, flag);
    if (!names.ok()) return names.error();
    selector[key] = *names;
  }
  if (cmd.has("label")) {
    json labels = json::object();
    for (const auto& kv : cmd.values("label")) {
      const auto eq = kv.find('=');  // parseArgs checked the K=V shape
      const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
      if (labels.contains(key) && labels[key] != value)
        return invalidArgument("--label " + key + " given twice with different values");
      labels[key] = value;
    }
    selector["labels"] = labels;
  }
  return selector;
}

Result<json> policyFromFlags(const ParsedCommand& cmd, const System& system) {
  for (auto [a, b] : {std::pair{"max-down", "max-percent-down"}, std::pair{"failure-budget", "failure-budget-percent"}})
    if (auto st = eitherOr(cmd, a, b); !st.ok()) return st.error();
  json policy = json::object();
  if (cmd.has("policy-file")) {
    auto doc = readPolicyFile(cmd.value("policy-file"), system);
    if (!doc.ok()) return doc.error();
    policy = std::move(*doc);
  }
  if (cmd.has("canary")) policy["canary_pods"] = cmd.integer("canary", 1);
  if (cmd.has("waves")) {
    auto waves = waveList(cmd.value("waves"));
    if (!waves.ok()) return waves.error();
    policy["waves"] = *waves;
  }
  if (cmd.has("soak")) {
    const std::string soak = cmd.value("soak");
    if (soak == "0" || soak == "0s") {
      policy["soak"] = "0s";
    } else {
      auto d = parseDuration(soak);
      if (!d.ok()) return invalidArgument("--soak: " + d.error().message);
      policy["soak"] = soak;
    }
  }
  if (cmd.has("max-concurrent")) policy["max_concurrent_pods"] = cmd.integer("max-concurrent", 2);
  if (cmd.has("max-down")) policy["capacity_floor"] = {{"max_pods_down", cmd.integer("max-down", 1)}};
  if (cmd.has("max-percent-down")) policy["capacity_floor"] = {{"max_percent_down", cmd.number("max-percent-down", 25)}};
  if (cmd.has("allocated")) {
    const std::string a = cmd.value("allocated");
    if (a != "wait" && a != "skip") return invalidArgument("--allocated must be wait or skip, not '" + a + "'");
    policy["allocated"] = a;
  }
  if (cmd.has("failure-budget")) policy["failure_budget"] = {{"pods", cmd.integer("failure-budget", 1)}};
  if (cmd.has("failure-budget-percent"))
    policy["failure_budget"] = {{"percent", cmd.number("failure-budget-percent", 0)}};
  if (cmd.has("max-rebooting")) policy["max_rebooting_pods_per_building"] = cmd.integer("max-rebooting", 2);
  if (cmd.has("order")) {
    const std::string o = cmd.value("order");
    if (o != "spread" && o != "name") return invalidArgument("--order must be spread or name, not '" + o + "'");
    policy["order"] = o;
  }
  if (cmd.has("validation-workflow")) {
    if (cmd.value("validation-workflow").empty()) return invalidArgument("--validation-workflow needs a workflow name");
    policy["validation_workflow"] = cmd.value("validation-workflow");
  }
  if (cmd.has("window")) {
    json windows = json::array();
    for (const auto& spec : cmd.values("window")) {
      std::string why;
      if (!rollouts::parseWindow(spec, &why)) return invalidArgument("--window '" + spec + "': " + why);
      windows.push_back(spec);
    }
    policy["windows"] = windows;
  }
  return policy;
}

Result<ApiRequest> rolloutRequest(const ParsedCommand& cmd, const System& system, bool dry_run) {
  auto selector = selectorFromFlags(cmd);
  if (!selector.ok()) return selector.error();
  auto policy = policyFromFlags(cmd, system);
  if (!policy.ok()) return policy.error();
  json body = {{"bundle", cmd.value("bundle")}, {"selector", *selector}, {"policy", *policy}};
  if (dry_run) body["dry_run"] = true;
  else if (cmd.has("start")) body["start"] = true;
  if (!dry_run && cmd.has("allow-downgrade")) {
    // kilnd refuses a plan that moves any component back unless it says so, with a reason.
    if (!cmd.has("reason") || cmd.value("reason").empty())
      return invalidArgument("--allow-downgrade needs --reason TEXT: why these pods go back to older versions (audited)");
    body["allow_downgrade"] = true;
    body["reason"] = cmd.value("reason");
  }
  ApiRequest req;
  req.method = "POST";
  req.path = std::string(kApiPrefix) + "/rollouts";
  req.body = body.dump();
  return req;
}

}  // namespace kiln::cli
