#include "agents/oob/oob_cli.h"

#include "common/crypto.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <iterator>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

namespace kiln::oob {
namespace {

constexpr const char* kUsage =
    "usage: kiln-oob power status|on|off|cycle|reset --bmc HOST[:PORT] --credential NAME\n"
    "                [--protocol ipmi|redfish] [--credentials FILE] [--timeout SECONDS] [--wait SECONDS]\n"
    "                [--log N] [--cipher-suite N] (IPMI) [--ca FILE] [--insecure] [--auth session|basic] (Redfish)\n"
    "       kiln-oob firmware list --bmc HOST[:PORT] --credential NAME --protocol redfish [...]\n"
    "       kiln-oob log list --bmc HOST[:PORT] --credential NAME [--last N] [...]\n"
    "       kiln-oob firmware update --component ID --image FILE --sha256 HEX --version V\n"
    "                --bmc HOST[:PORT] --credential NAME --protocol redfish [--wait SECONDS] [...]\n"
    "       kiln-oob bmc reset --bmc HOST[:PORT] --credential NAME --protocol redfish [--wait SECONDS] [...]\n";

bool number(const std::string& text, int lo, int hi, int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= lo && out <= hi;
}

}  // namespace

int runOobCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, OobCliOptions options,
              const std::function<std::unique_ptr<PowerControl>(const OobCliOptions&)>& make) {
  auto usage = [&](const std::string& why) {
    err << "kiln-oob: " << why << "\n" << kUsage;
    return 2;
  };
  if (args.size() < 2 || (args[0] != "power" && args[0] != "firmware" && args[0] != "log" && args[0] != "bmc"))
    return usage(args.empty() ? "no command" : "unknown command '" + args[0] + "'");
  const bool is_firmware = args[0] == "firmware";
  const bool is_log = args[0] == "log";
  const bool is_bmc = args[0] == "bmc";
  if (is_log && args[1] != "list") return usage("unknown log command '" + args[1] + "' (expected list)");
  if (is_bmc && args[1] != "reset") return usage("unknown bmc command '" + args[1] + "' (expected reset)");
  const std::string verb = args[1];
  if (is_firmware && verb != "list" && verb != "update")
    return usage("unknown firmware command '" + verb + "' (expected list or update)");
  const bool is_status = verb == "status";
  const auto action = parsePowerAction(verb);
  if (!is_firmware && !is_log && !is_bmc && !is_status && !action) return usage("unknown power action '" + verb + "'");
  std::string bmc_text, credential, component, image_path, sha256, version;
  int cipher = 17, wait_s = -1, last = -1;
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--insecure") {
      options.insecure = true;
      continue;
    }
    if (i + 1 >= args.size()) return usage(a.rfind("--", 0) == 0 ? a + " needs a value" : "unexpected '" + a + "'");
    const std::string& v = args[++i];
    int n = 0;
    if (a == "--bmc")
      bmc_text = v;
    else if (a == "--credential")
      credential = v;
    else if (a == "--credentials")
      options.credentials_file = v;
    else if (a == "--ca")
      options.ca_file = v;
    else if (a == "--auth") {
      if (v != "session" && v != "basic") return usage("--auth: expected session or basic");
      options.redfish_sessions = v == "session";
    } else if (a == "--component")
      component = v;
    else if (a == "--image")
      image_path = v;
    else if (a == "--sha256")
      sha256 = v;
    else if (a == "--version")
      version = v;
    else if (a == "--protocol") {
      if (v != "ipmi" && v != "redfish") return usage("--protocol: expected ipmi or redfish");
      options.protocol = v;
    } else if (a == "--cipher-suite") {
      if (!number(v, 0, 17, cipher)) return usage("--cipher-suite: expected 0 to 17");
    } else if (a == "--timeout") {
      if (!number(v, 1, 600, n)) return usage("--timeout: expected 1 to 600 seconds");
      options.ipmi.timeout = std::chrono::seconds(n);
    } else if (a == "--last" || a == "--log") {
      if (!number(v, 0, 1000, last)) return usage(a + ": expected 0 to 1000 entries");
      if ((a == "--last") != is_log) return usage(a + (is_log ? " is for power commands" : " is for log list"));
    } else if (a == "--wait") {
      if (!number(v, 0, 3600, wait_s)) return usage("--wait: expected 0 to 3600 seconds");
    } else {
      return usage("unknown option '" + a + "'");
    }
  }
  if (bmc_text.empty()) return usage("--bmc is required");
  if (credential.empty()) return usage("--credential is required (a name in the runner's credential store)");
  if (!validCredentialName(credential)) return usage("--credential: expected 1 to 64 of A-Z a-z 0-9 . _ -");
  if (is_firmware && options.protocol != "redfish")
    return usage("firmware list needs --protocol redfish (IPMI has no firmware inventory)");
  if (is_bmc && options.protocol != "redfish") return usage("bmc reset needs --protocol redfish");
  if (is_bmc) wait_s = wait_s < 0 ? 300 : wait_s;  // how long the BMC may take to answer again
  if (options.protocol == "ipmi" && (options.insecure || !options.ca_file.empty()))
    return usage("--ca and --insecure are for --protocol redfish");
  const bool is_update = is_firmware && verb == "update";
  if (is_update && (component.empty() || image_path.empty() || sha256.empty() || version.empty()))
    return usage("firmware update needs --component, --image, --sha256 and --version");
  if (!is_update && !(component.empty() && image_path.empty() && sha256.empty() && version.empty()))
    return usage("--component, --image, --sha256 and --version are for firmware update");
  if (is_update) wait_s = wait_s < 0 ? 1800 : wait_s;  // the Task's deadline
  wait_s = std::max(wait_s, 0);
  auto bmc = parseBmcAddress(bmc_text, options.protocol == "redfish" ? 443 : 623);
  if (!bmc.ok()) return usage(bmc.error().message);
  bmc->credential = credential;
  bmc->cipher_suite = cipher;

  if (options.insecure)
    err << "kiln-oob: warning: --insecure: the BMC's TLS certificate is not checked (" << bmc->address << ")\n";
  auto power = make(options);
  nlohmann::json answer = {{"bmc", bmc->address + ":" + std::to_string(bmc->port)}};
  if (!is_firmware && !is_log) answer["action"] = is_bmc ? "bmc-" + verb : verb;
  auto fail = [&](const Error& e) {
    err << "kiln-oob: " << args[0] << " " << verb << " " << answer["bmc"].get<std::string>() << ": " << e.message
        << "\n";
    // The runner's own configuration (no such credential, an unsafe credential file): bad input.
    return e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kNotFound ? 2 : 1;
  };
  if (is_update) {
    // Only verified bits reach a BMC: the image is read once, its sha256 checked against the one
    // the step was given (the bundle's), and those same bytes are pushed.
    std::ifstream in(image_path, std::ios::binary);
    if (!in) return usage("cannot read the image " + image_path);
    std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (image.size() > (512u << 20)) return usage("the image " + image_path + " is larger than 512 MiB");
    std::string want = sha256;
    for (auto& ch : want) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::string got = sha256Hex(image);
    if (got != want) {
      err << "kiln-oob: refusing to push " << image_path << ": its sha256 is " << got << ", not " << want
          << " (only verified bits reach a BMC)\n";
      return 2;
    }
    auto* updater = dynamic_cast<FirmwareUpdater*>(power.get());
    if (updater == nullptr) return usage("this driver cannot push firmware");
    answer["component"] = component;
    auto r = updater->update(*bmc, component, image, version, std::chrono::seconds(wait_s), options.poll);
    if (!r.ok()) return fail(r.error());
    answer["before"] = r->before;
    answer["after"] = r->after;
    answer["pushed"] = r->pushed;
    answer["task"] = r->task.empty() ? nlohmann::json() : nlohmann::json(r->task);
    answer["task_state"] = r->task_state.empty() ? nlohmann::json() : nlohmann::json(r->task_state);
    out << answer.dump() << "\n";
    return 0;
  }
  // The BMC's newest event log entries: for `log list`, and after a power action with --log N
  // (a recovery's evidence in its step's output).
  auto logInto = [&](int n) -> std::optional<Error> {
    auto* events = dynamic_cast<EventLog*>(power.get());
    if (events == nullptr) return Error(invalidArgument("this driver reads no event log"));
    auto entries = events->eventLog(*bmc, static_cast<std::size_t>(n));
    if (!entries.ok()) return entries.error();
    nlohmann::json list = nlohmann::json::array();
    for (const auto& e : *entries)
      list.push_back({{"id", e.id}, {"created", e.created}, {"severity", e.severity}, {"message", e.message}});
    answer["log"] = std::move(list);
    return std::nullopt;
  };
  if (is_bmc) {
    auto* manager = dynamic_cast<BmcManager*>(power.get());
    if (manager == nullptr) return usage("this driver cannot reset a BMC");
    auto version = manager->resetBmc(*bmc, std::chrono::seconds(wait_s), options.poll);
    if (!version.ok()) return fail(version.error());
    answer["firmware_version"] = *version;
    out << answer.dump() << "\n";
    return 0;
  }
  if (is_log) {
    if (auto e = logInto(last < 0 ? 50 : last)) return fail(*e);
    out << answer.dump() << "\n";
    return 0;
  }
  if (is_firmware) {
    auto* inventory = dynamic_cast<FirmwareInventory*>(power.get());
    if (inventory == nullptr) return usage("this driver has no firmware inventory");
    auto items = inventory->firmware(*bmc);
    if (!items.ok()) return fail(items.error());
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : *items)
      list.push_back({{"id", f.id}, {"name", f.name}, {"version", f.version}, {"updateable", f.updateable}});
    answer["firmware"] = std::move(list);
    out << answer.dump() << "\n";
    return 0;
  }
  if (is_status) {
    auto s = power->status(*bmc);
    if (!s.ok()) return fail(s.error());
    answer["power"] = powerStateName(*s);
    if (last > 0)
      if (auto e = logInto(last)) return fail(*e);
    out << answer.dump() << "\n";
    return 0;
  }
  // Where the tray was before: the step's output says what the action changed.
  auto before = power->status(*bmc);
  if (!before.ok()) return fail(before.error());
  answer["before"] = powerStateName(*before);
  if (auto st = power->act(*bmc, *action); !st.ok()) return fail(st.error());
  const PowerState want = *action == PowerAction::kOff ? PowerState::kOff : PowerState::kOn;
  // --wait: until the BMC reports the state asked for (a cycle: on again), bounded.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  Result<PowerState> now = power->status(*bmc);
  while (wait_s > 0 && (!now.ok() || *now != want) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(options.poll);
    now = power->status(*bmc);
  }
  if (!now.ok()) return fail(now.error());
  answer["power"] = powerStateName(*now);
  if (wait_s > 0 && *now != want) {
    if (last > 0) (void)logInto(last);  // the evidence, even when the tray did not come back
    out << answer.dump() << "\n";
    err << "kiln-oob: power " << verb << " " << answer["bmc"].get<std::string>() << ": still " << powerStateName(*now)
        << " after " << wait_s << " s\n";
    return 1;
  }
  if (last > 0)
    if (auto e = logInto(last)) return fail(*e);
  out << answer.dump() << "\n";
  return 0;
}

}  // namespace kiln::oob
