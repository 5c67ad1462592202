#include "agents/oob/oob_cli.h"

#include "common/crypto.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <exception>
#include <fstream>
#include <iterator>
#include <mutex>
#include <ostream>
#include <set>
#include <sstream>
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
    "       kiln-oob bmc reset --bmc HOST[:PORT] --credential NAME --protocol redfish [--wait SECONDS] [...]\n"
    "   every command also takes a device list, one answer for all of them:\n"
    "                --bmc NAME=HOST[:PORT][,NAME=HOST[:PORT]...] [--parallel N]\n"
    "                (NAME: 1 to 64 of A-Z a-z 0-9 . _ -, unique; 1 to 64 devices; IPv6: NAME=[ADDRESS]:PORT;\n"
    "                 at most N devices at once, 1 to 32, default 4; IPMI: one at a time)\n";

constexpr std::size_t kMaxDevices = 64;

bool number(const std::string& text, int lo, int hi, int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= lo && out <= hi;
}

bool validDeviceName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

struct Device {
  std::string name;  // empty for a single --bmc HOST[:PORT]
  BmcEndpoint bmc;
};

// What the command line asks, checked before any BMC is touched.
struct Request {
  std::string command, verb;
  bool is_firmware = false, is_log = false, is_bmc = false, is_status = false, is_update = false;
  std::optional<PowerAction> action;
  std::string component, image, version;  // firmware update: `image` holds the verified bytes
  int wait_s = 0, last = -1;
  bool list = false;  // --bmc NAME=HOST[:PORT],...
  int parallel = 4;
  std::vector<Device> devices;
};

// One BMC's run: its answer (printed when `printed`: a success, or a state not reached within
// --wait), and why it failed (without "kiln-oob: ").
struct DeviceRun {
  int code = 0;
  nlohmann::json answer;
  bool printed = false;
  bool usage = false;  // the driver cannot do what was asked: bad usage
  std::string error;
};

// --bmc NAME=HOST[:PORT][,NAME=HOST[:PORT]...]: split on commas only ([v6]:port has colons).
Result<std::vector<Device>> parseDeviceList(const std::string& text, int default_port) {
  std::vector<Device> devices;
  std::set<std::string> names;
  std::size_t start = 0;
  for (std::size_t index = 1;; ++index) {
    const auto comma = text.find(',', start);
    const std::string entry = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::string where = "--bmc: device list entry " + std::to_string(index) + " '" + entry + "'";
    if (entry.empty()) return invalidArgument("--bmc: device list entry " + std::to_string(index) + " is empty");
    const auto eq = entry.find('=');
    if (eq == std::string::npos) return invalidArgument(where + ": expected NAME=HOST[:PORT]");
    const std::string name = entry.substr(0, eq);
    if (!validDeviceName(name)) return invalidArgument(where + ": NAME must be 1 to 64 of A-Z a-z 0-9 . _ -");
    if (!names.insert(name).second) return invalidArgument(where + ": device '" + name + "' is named twice");
    const std::string address = entry.substr(eq + 1);
    if (address.find('=') != std::string::npos) return invalidArgument(where + ": expected NAME=HOST[:PORT]");
    auto bmc = parseBmcAddress(address, default_port);
    if (!bmc.ok()) return invalidArgument(where + ": " + bmc.error().message);
    if (devices.size() == kMaxDevices)
      return invalidArgument("--bmc: more than " + std::to_string(kMaxDevices) + " devices");
    devices.push_back({name, *bmc});
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return devices;
}

// The arguments into a Request, or 2 (bad usage, said on `err`).
int parseRequest(const std::vector<std::string>& args, std::ostream& err, OobCliOptions& options, Request& q) {
  auto usage = [&](const std::string& why) {
    err << "kiln-oob: " << why << "\n" << kUsage;
    return 2;
  };
  if (args.size() < 2 || (args[0] != "power" && args[0] != "firmware" && args[0] != "log" && args[0] != "bmc"))
    return usage(args.empty() ? "no command" : "unknown command '" + args[0] + "'");
  q.command = args[0];
  q.is_firmware = args[0] == "firmware";
  q.is_log = args[0] == "log";
  q.is_bmc = args[0] == "bmc";
  if (q.is_log && args[1] != "list") return usage("unknown log command '" + args[1] + "' (expected list)");
  if (q.is_bmc && args[1] != "reset") return usage("unknown bmc command '" + args[1] + "' (expected reset)");
  q.verb = args[1];
  const std::string& verb = q.verb;
  if (q.is_firmware && verb != "list" && verb != "update")
    return usage("unknown firmware command '" + verb + "' (expected list or update)");
  q.is_status = verb == "status";
  q.action = parsePowerAction(verb);
  if (!q.is_firmware && !q.is_log && !q.is_bmc && !q.is_status && !q.action)
    return usage("unknown power action '" + verb + "'");
  std::string bmc_text, credential, image_path, sha256;
  int cipher = 17, wait_s = -1;
  bool parallel_given = false;
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
      q.component = v;
    else if (a == "--image")
      image_path = v;
    else if (a == "--sha256")
      sha256 = v;
    else if (a == "--version")
      q.version = v;
    else if (a == "--protocol") {
      if (v != "ipmi" && v != "redfish") return usage("--protocol: expected ipmi or redfish");
      options.protocol = v;
    } else if (a == "--cipher-suite") {
      if (!number(v, 0, 17, cipher)) return usage("--cipher-suite: expected 0 to 17");
    } else if (a == "--timeout") {
      if (!number(v, 1, 600, n)) return usage("--timeout: expected 1 to 600 seconds");
      options.ipmi.timeout = std::chrono::seconds(n);
    } else if (a == "--last" || a == "--log") {
      if (!number(v, 0, 1000, q.last)) return usage(a + ": expected 0 to 1000 entries");
      if ((a == "--last") != q.is_log) return usage(a + (q.is_log ? " is for power commands" : " is for log list"));
    } else if (a == "--wait") {
      if (!number(v, 0, 3600, wait_s)) return usage("--wait: expected 0 to 3600 seconds");
    } else if (a == "--parallel") {
      if (!number(v, 1, 32, q.parallel)) return usage("--parallel: expected 1 to 32 devices at once");
      parallel_given = true;
    } else {
      return usage("unknown option '" + a + "'");
    }
  }
  if (bmc_text.empty()) return usage("--bmc is required");
  q.list = bmc_text.find('=') != std::string::npos;
  if (parallel_given && !q.list) return usage("--parallel is for a device list: --bmc NAME=HOST[:PORT],...");
  if (credential.empty()) return usage("--credential is required (a name in the runner's credential store)");
  if (!validCredentialName(credential)) return usage("--credential: expected 1 to 64 of A-Z a-z 0-9 . _ -");
  if (q.is_firmware && options.protocol != "redfish")
    return usage("firmware list needs --protocol redfish (IPMI has no firmware inventory)");
  if (q.is_bmc && options.protocol != "redfish") return usage("bmc reset needs --protocol redfish");
  if (q.is_bmc) wait_s = wait_s < 0 ? 300 : wait_s;  // how long the BMC may take to answer again
  if (options.protocol == "ipmi" && (options.insecure || !options.ca_file.empty()))
    return usage("--ca and --insecure are for --protocol redfish");
  q.is_update = q.is_firmware && verb == "update";
  if (q.is_update && (q.component.empty() || image_path.empty() || sha256.empty() || q.version.empty()))
    return usage("firmware update needs --component, --image, --sha256 and --version");
  if (!q.is_update && !(q.component.empty() && image_path.empty() && sha256.empty() && q.version.empty()))
    return usage("--component, --image, --sha256 and --version are for firmware update");
  if (q.is_update) wait_s = wait_s < 0 ? 1800 : wait_s;  // the Task's deadline
  q.wait_s = std::max(wait_s, 0);
  const int default_port = options.protocol == "redfish" ? 443 : 623;
  if (q.list) {
    auto devices = parseDeviceList(bmc_text, default_port);
    if (!devices.ok()) return usage(devices.error().message);
    q.devices = std::move(*devices);
  } else {
    auto bmc = parseBmcAddress(bmc_text, default_port);
    if (!bmc.ok()) return usage(bmc.error().message);
    q.devices.push_back({"", *bmc});
  }
  for (auto& d : q.devices) {
    d.bmc.credential = credential;
    d.bmc.cipher_suite = cipher;
  }
  if (q.is_update) {
    // Only verified bits reach a BMC: the image is read once, its sha256 checked against the one
    // the step was given (the bundle's), and those same bytes are pushed (to every device).
    std::ifstream in(image_path, std::ios::binary);
    if (!in) return usage("cannot read the image " + image_path);
    q.image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (q.image.size() > (512u << 20)) return usage("the image " + image_path + " is larger than 512 MiB");
    std::string want = sha256;
    for (auto& ch : want) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const std::string got = sha256Hex(q.image);
    if (got != want) {
      err << "kiln-oob: refusing to push " << image_path << ": its sha256 is " << got << ", not " << want
          << " (only verified bits reach a BMC)\n";
      return 2;
    }
  }
  return 0;
}

// The command against one BMC through `power`.
DeviceRun runDevice(const Request& q, const BmcEndpoint& bmc, const OobCliOptions& options, PowerControl& power) {
  DeviceRun r;
  nlohmann::json& answer = r.answer;
  answer = {{"bmc", bmc.address + ":" + std::to_string(bmc.port)}};
  if (!q.is_firmware && !q.is_log) answer["action"] = q.is_bmc ? "bmc-" + q.verb : q.verb;
  auto fail = [&](const Error& e) {
    r.error = q.command + " " + q.verb + " " + answer["bmc"].get<std::string>() + ": " + e.message;
    // The runner's own configuration (no such credential, an unsafe credential file): bad input.
    r.code = e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kNotFound ? 2 : 1;
    return r;
  };
  auto unusable = [&](const std::string& why) {
    r.error = why;
    r.code = 2;
    r.usage = true;
    return r;
  };
  auto done = [&] {
    r.printed = true;
    return r;
  };
  if (q.is_update) {
    auto* updater = dynamic_cast<FirmwareUpdater*>(&power);
    if (updater == nullptr) return unusable("this driver cannot push firmware");
    answer["component"] = q.component;
    auto u = updater->update(bmc, q.component, q.image, q.version, std::chrono::seconds(q.wait_s), options.poll);
    if (!u.ok()) return fail(u.error());
    answer["before"] = u->before;
    answer["after"] = u->after;
    answer["pushed"] = u->pushed;
    answer["task"] = u->task.empty() ? nlohmann::json() : nlohmann::json(u->task);
    answer["task_state"] = u->task_state.empty() ? nlohmann::json() : nlohmann::json(u->task_state);
    return done();
  }
  // The BMC's newest event log entries: for `log list`, and after a power action with --log N
  // (a recovery's evidence in its step's output).
  auto logInto = [&](int n) -> std::optional<Error> {
    auto* events = dynamic_cast<EventLog*>(&power);
    if (events == nullptr) return Error(invalidArgument("this driver reads no event log"));
    auto entries = events->eventLog(bmc, static_cast<std::size_t>(n));
    if (!entries.ok()) return entries.error();
    nlohmann::json list = nlohmann::json::array();
    for (const auto& e : *entries)
      list.push_back({{"id", e.id}, {"created", e.created}, {"severity", e.severity}, {"message", e.message}});
    answer["log"] = std::move(list);
    return std::nullopt;
  };
  if (q.is_bmc) {
    auto* manager = dynamic_cast<BmcManager*>(&power);
    if (manager == nullptr) return unusable("this driver cannot reset a BMC");
    auto version = manager->resetBmc(bmc, std::chrono::seconds(q.wait_s), options.poll);
    if (!version.ok()) return fail(version.error());
    answer["firmware_version"] = *version;
    return done();
  }
  if (q.is_log) {
    if (auto e = logInto(q.last < 0 ? 50 : q.last)) return fail(*e);
    return done();
  }
  if (q.is_firmware) {
    auto* inventory = dynamic_cast<FirmwareInventory*>(&power);
    if (inventory == nullptr) return unusable("this driver has no firmware inventory");
    auto items = inventory->firmware(bmc);
    if (!items.ok()) return fail(items.error());
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : *items)
      list.push_back({{"id", f.id}, {"name", f.name}, {"version", f.version}, {"updateable", f.updateable}});
    answer["firmware"] = std::move(list);
    return done();
  }
  if (q.is_status) {
    auto s = power.status(bmc);
    if (!s.ok()) return fail(s.error());
    answer["power"] = powerStateName(*s);
    if (q.last > 0)
      if (auto e = logInto(q.last)) return fail(*e);
    return done();
  }
  // Where the tray was before: the step's output says what the action changed.
  auto before = power.status(bmc);
  if (!before.ok()) return fail(before.error());
  answer["before"] = powerStateName(*before);
  if (auto st = power.act(bmc, *q.action); !st.ok()) return fail(st.error());
  const PowerState want = *q.action == PowerAction::kOff ? PowerState::kOff : PowerState::kOn;
  // --wait: until the BMC reports the state asked for (a cycle: on again), bounded.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(q.wait_s);
  Result<PowerState> now = power.status(bmc);
  while (q.wait_s > 0 && (!now.ok() || *now != want) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(options.poll);
    now = power.status(bmc);
  }
  if (!now.ok()) return fail(now.error());
  answer["power"] = powerStateName(*now);
  if (q.wait_s > 0 && *now != want) {
    if (q.last > 0) (void)logInto(q.last);  // the evidence, even when the tray did not come back
    r.error = "power " + q.verb + " " + answer["bmc"].get<std::string>() + ": still " +
              std::string(powerStateName(*now)) + " after " + std::to_string(q.wait_s) + " s";
    r.code = 1;
    return done();
  }
  if (q.last > 0)
    if (auto e = logInto(q.last)) return fail(*e);
  return done();
}

}  // namespace

int runOobCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, OobCliOptions options,
              const std::function<std::unique_ptr<PowerControl>(const OobCliOptions&)>& make) {
  Request q;
  if (int code = parseRequest(args, err, options, q); code != 0) return code;

  if (!q.list) {
    const BmcEndpoint& bmc = q.devices.front().bmc;
    if (options.insecure)
      err << "kiln-oob: warning: --insecure: the BMC's TLS certificate is not checked (" << bmc.address << ")\n";
    auto power = make(options);
    const DeviceRun r = runDevice(q, bmc, options, *power);
    if (r.printed) out << r.answer.dump() << "\n";
    if (r.code != 0) err << "kiln-oob: " << r.error << "\n" << (r.usage ? kUsage : "");
    return r.code;
  }

  // A device list: every device gets its own driver; at most --parallel of them at once (IPMI:
  // one at a time, its process runner is shared), one answer for all, in the list's order.
  if (options.insecure) {
    err << "kiln-oob: warning: --insecure: the BMCs' TLS certificates are not checked (";
    for (std::size_t i = 0; i < q.devices.size(); ++i) err << (i ? ", " : "") << q.devices[i].bmc.address;
    err << ")\n";
  }
  std::vector<DeviceRun> runs(q.devices.size());
  std::atomic<std::size_t> next{0};
  std::mutex make_mutex;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < q.devices.size();) {
      try {
        std::unique_ptr<PowerControl> power;
        {
          std::lock_guard<std::mutex> lock(make_mutex);
          power = make(options);
        }
        runs[i] = runDevice(q, q.devices[i].bmc, options, *power);
      } catch (const std::exception& e) {
        runs[i] = DeviceRun{};
        runs[i].code = 1;
        runs[i].error = std::string("internal error: ") + e.what();
      }
    }
  };
  const std::size_t threads =
      options.protocol == "ipmi" ? 1 : std::min(q.devices.size(), static_cast<std::size_t>(q.parallel));
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }

  nlohmann::json devices = nlohmann::json::array();
  nlohmann::json failed = nlohmann::json::array();
  int code = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string& name = q.devices[i].name;
    DeviceRun& r = runs[i];
    nlohmann::json entry = r.answer.is_object() ? std::move(r.answer) : nlohmann::json::object();
    entry["device"] = name;
    if (r.code != 0) {
      entry["error"] = r.error;
      failed.push_back(name);
      err << name << ": kiln-oob: " << r.error << "\n";
      code = r.code == 2 || code == 2 ? 2 : 1;
    }
    devices.push_back(std::move(entry));
  }
  out << nlohmann::json{{"devices", std::move(devices)}, {"failed", std::move(failed)}}.dump() << "\n";
  return code;
}

}  // namespace kiln::oob
